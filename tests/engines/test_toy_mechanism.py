"""A new row-local mechanism is one module and one registry entry: the toy mechanism of
`tests/engines/toy_mechanism.py` (docs/architecture.md's worked example), registered by name,
publishes on every engine with the same files, loads, counts the same on every engine, and its
estimator is right."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import ppdp
from ppdp.plan import order
from ppdp.plan.engine import get_engine, publish
from ppdp.plan.registry import MECHANISM_MODULES, register_mechanism
from ppdp.release.load import load_release
from tests.engines.conftest import ENGINES
from tests.engines.toy_mechanism import CoinFlip, CoinRelease

SEED = 7
ROWS_PER_PART = 5_000
QUERIES = ["occupation = 'Sales'", "sex = 'Female' AND occupation IN ('Sales', 'Tech-support')",
           "SELECT COUNT(*) FROM t WHERE occupation = 'Craft-repair' GROUP BY sex"]


@pytest.fixture
def coin() -> Iterator[None]:
    """The one registry entry the toy mechanism needs (removed after the test)."""
    register_mechanism("coin", "tests.engines.toy_mechanism")
    yield
    del MECHANISM_MODULES["coin"]


@pytest.fixture(scope="module")
def adult_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("toy") / "adult.parquet"
    pq.write_table(ppdp.datasets.adult().to_arrow(), path)
    return path


def test_the_registry_entry_makes_it_a_mechanism(coin: None) -> None:
    assert ppdp.get_mechanism("coin") is CoinFlip
    assert "coin" in [name for name in MECHANISM_MODULES]


@pytest.mark.parametrize("engine", ENGINES)
def test_it_runs_on_every_engine_like_any_mechanism(engine: str, engine_session: Any,
                                                     coin: None, adult_file: Path,
                                                     tmp_path: Path) -> None:
    def saved(on: str, folder: str) -> Path:
        data = get_engine(on).open(adult_file, sensitive="occupation",
                                   domains={c.name: list(c.domain)
                                            for c in ppdp.datasets.adult().schema.columns})
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(order, "ROWS_PER_PART", ROWS_PER_PART)
            return publish(CoinFlip(), data, engine=on, random_state=SEED).save(
                tmp_path / folder)

    def files(directory: Path) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(directory.iterdir())}

    reference = saved("memory", "reference")
    assert files(saved(engine, engine)) == files(reference)
    loaded = load_release(reference, engine=engine)
    assert isinstance(loaded, CoinRelease)
    in_memory = load_release(reference, engine="memory")
    for query in QUERIES:
        assert numbers(loaded.count(query)) == pytest.approx(
            numbers(in_memory.count(query)), rel=1e-9)


def numbers(answer: Any) -> list[float]:
    """An answer's estimates and standard errors, group by group."""
    estimates = [answer] if isinstance(answer, ppdp.Estimate) else \
        [estimate for _, estimate in answer.groups]
    return [x for e in estimates for x in (e.value, e.stderr)]


def test_its_estimator_is_unbiased_within_its_standard_error(coin: None) -> None:
    """Over 40 publications, the mean estimate of each query is within 4 standard errors of the
    mean (its stderr over 40 runs) of the truth."""
    table = ppdp.datasets.adult(sensitive="occupation")
    runs = [CoinFlip().publish(table, random_state=seed) for seed in range(40)]
    for query in QUERIES[:2]:
        truth = table.count(query).value
        estimates = np.array([release.count(query).value for release in runs])
        stderrs = np.array([release.count(query).stderr for release in runs])
        mean_error = estimates.mean() - truth
        assert abs(mean_error) <= 4 * stderrs.mean() / np.sqrt(len(runs))
        # The reported standard error is the spread of the estimates, within sampling noise
        # of a standard deviation from 40 draws (about 11 % relative: 1/sqrt(2 * 39)).
        assert estimates.std(ddof=1) == pytest.approx(stderrs.mean(), rel=0.35)
