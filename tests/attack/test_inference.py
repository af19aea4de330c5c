"""Attribute inference by learning from the release (ppdp.attack.inference)."""

from __future__ import annotations

import numpy as np

import ppdp
from ppdp.attack.targets import build_targets
from ppdp.mechanisms.dbr.release import DbrRelease
from tests.attack.conftest import best_guess_accuracy, difference_margin


def identity_release(table: ppdp.Table) -> DbrRelease:
    """The source's rows published as they are, in a rows release."""
    return DbrRelease(table.schema, {}, table.n_rows, dict(table.codes))


def test_identity_release_reaches_the_best_guess(adult: ppdp.Table) -> None:
    """On the table itself the classifier memorises every row: its accuracy is the best that
    any guess from the quasi-identifiers can reach (computed with pandas), exactly."""
    report = ppdp.attack(identity_release(adult), adult, attacks=["inference"],
                         random_state=3)
    result = report["inference"]
    targets = build_targets(identity_release(adult), adult, random_state=3)
    expected = best_guess_accuracy(adult, targets.quasi, "occupation", targets.evaluation)
    assert abs(result.success - expected) < 1e-12
    assert result.details["ceiling"] == result.success
    # Each individual's risk is the share of its own value among the rows like it.
    rows = np.flatnonzero(np.asarray(adult.codes["sex"]) == 0)[:50]
    for row in rows:
        same = np.all([np.asarray(adult.codes[c]) == adult.codes[c][row]
                       for c in targets.quasi], axis=0)
        own = np.asarray(adult.codes["occupation"])[same] == adult.codes["occupation"][row]
        assert abs(result.risk[row] - own.mean()) < 1e-12


def test_far_above_the_baseline_on_a_weak_release(adult: ppdp.Table) -> None:
    """rho2 = 0.99 keeps 99 % of the values: the attack learns almost the table, far (more
    than ten standard errors of the difference) above the population-trained classifier."""
    release = ppdp.UniformPerturbation(rho1=1 / 13, rho2=0.99).publish(adult, random_state=1)
    result = ppdp.attack(release, adult, attacks=["inference"], random_state=1)["inference"]
    margin = difference_margin(result.details["targets"])
    assert result.success > result.baseline + margin
    assert result.success <= result.details["ceiling"] + 1e-12
    assert result.bound is None


def test_anatomy_claims_its_bound_and_alphabeta_needs_an_attribute(adult: ppdp.Table) -> None:
    """Anatomy states 1/l; an alpha-beta view marks no column sensitive, so the attribute is
    named (or the attack says why it does not apply)."""
    sample = adult.take(np.arange(3000))
    anatomy = ppdp.Anatomy(l=4).publish(sample, random_state=2)
    assert ppdp.attack(anatomy, sample, attacks=["inference"],
                       random_state=2)["inference"].bound == 0.25
    plain = sample.with_roles(sensitive=[]).declare_observed_domains(warn=False)
    view = ppdp.AlphaBeta(k=10, gamma=0.5).publish(plain, random_state=2)
    assert "no attribute to infer" in ppdp.attack(
        view, plain, attacks=["inference"], random_state=2).not_applicable["inference"]
    named = ppdp.attack(view, plain, attacks=["inference"], sensitive="occupation",
                        random_state=2)
    assert named["inference"].details["training_rows"] == view.n_rows
