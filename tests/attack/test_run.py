"""The entry point: ``ppdp.attack(release, table, ...)`` (ppdp.attack.run)."""

from __future__ import annotations

import numpy as np
import pytest

import ppdp
import ppdp.attack.inference
from ppdp.attack import ATTACKS, run_attacks


@pytest.fixture(scope="module")
def sample() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation").take(np.arange(2000))


def test_callable_entry_point_and_applicability(sample: ppdp.Table) -> None:
    """The package is callable (also once its modules are imported, as ppdp.attack.inference
    is here); each result states adversary, source and cost; attacks that do not apply say
    why."""
    release = ppdp.SPLUGen(gamma=3).publish(sample, random_state=1)
    assert ppdp.attack.inference.NAME == "inference"
    report = ppdp.attack(release, sample, random_state=1)
    assert [r.attack for r in report.results] == ["inference", "small_counts"]
    assert set(report.not_applicable) == set(ATTACKS) - {"inference", "small_counts"}
    for result in report.results:
        assert result.adversary and result.source
        assert result.risk is not None and result.risk.shape == (sample.n_rows,)
    again = run_attacks(release, sample, random_state=1)
    assert [r.success for r in again.results] == [r.success for r in report.results]


def test_laplace_has_no_applicable_attack(sample: ppdp.Table) -> None:
    session = ppdp.LaplaceCounts(epsilon=1.0).publish(sample, random_state=1)
    report = ppdp.attack(session, sample, random_state=1)
    assert not report.results and set(report.not_applicable) == set(ATTACKS)
    assert "noisy answers" in report.not_applicable["inference"]


def test_bad_input(sample: ppdp.Table) -> None:
    release = ppdp.Anatomy(l=3).publish(sample, random_state=1)
    with pytest.raises(ValueError, match="unknown attack 'nope'"):
        ppdp.attack(release, sample, attacks=["nope"])
    with pytest.raises(ValueError, match="published from"):
        ppdp.attack(release, sample.take(np.arange(100)))
    with pytest.raises(ValueError, match="does not publish 'salary'"):
        ppdp.attack(release, sample, sensitive="salary")
