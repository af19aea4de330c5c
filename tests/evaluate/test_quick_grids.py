"""Every quick experiment's parameter grid is feasible on its own samples, whatever the seed.

The quick attack sweep draws 2,000 rows of Adult; its grid holds gamma = 7 and l = 7, which
need Prof-specialty (13.4 % of the rows) at most 285 times. A uniform sample exceeds that for
about one seed in nine; the sample with proportional quotas never does. The other quick
experiments that draw samples (`sdr_axes`, `size`: resamples of 10,000-30,000 rows) are
checked on the group sizes of their grids, the condition on counts each of those mechanisms
checks first (``f_max * size <= N``). The experiments on whole tables draw no sample.
Samples are drawn and their grids published once each, never the experiments themselves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ppdp import datasets
from ppdp.evaluate.attack_sweep import Sweep, attack_sweep, default_sweeps
from ppdp.evaluate.experiments import ATTACK_QUICK_ROWS, Config
from ppdp.evaluate.experiments.attack import attack_table
from ppdp.evaluate.experiments.sdr import AXES_QUICK_SIZES, AXES_SETTINGS
from ppdp.evaluate.experiments.size import QUICK_SIZES, SIZE_SETTINGS
from ppdp.evaluate.experiments.tables import load_table
from ppdp.evaluate.sampling import proportional_quotas, proportional_sample
from ppdp.mechanisms import SPLUGen
from ppdp.mechanisms.grouping import largest_feasible_size
from ppdp.mechanisms.presence import association_group_size
from ppdp.table.table import Table

SEEDS = range(20)


def quick_config(seed: int, data: Path | None = None) -> Config:
    return Config(True, np.random.default_rng(seed), lambda _: None, data)


def test_proportional_quotas_round_each_share_and_add_up() -> None:
    counts = np.array([4038, 3, 0, 26121])
    quotas = proportional_quotas(counts, 2000)
    assert quotas.sum() == 2000
    exact = counts * 2000 / counts.sum()
    assert np.all((quotas == np.floor(exact)) | (quotas == np.ceil(exact)))
    # Largest remainders: 267.75 and 1732.05 -> 268 and 1732; 0.199 rounds down.
    assert quotas.tolist() == [268, 0, 0, 1732]
    # Equal remainders go to the smaller code.
    assert proportional_quotas(np.array([1, 1, 1]), 2).tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match=r"must be 0\.\.3"):
        proportional_quotas(np.array([1, 1, 1]), 4)


def test_proportional_sample_keeps_the_shares_and_distinct_rows() -> None:
    table = datasets.adult(observed_domains=True, sensitive="occupation")
    sample = proportional_sample(table, 500, "occupation", np.random.default_rng(3))
    size = table.schema["occupation"].size
    assert np.bincount(sample.codes["occupation"], minlength=size).tolist() == \
        proportional_quotas(np.bincount(table.codes["occupation"], minlength=size),
                            500).tolist()
    # The same generator draws the same sample.
    other = proportional_sample(table, 500, "occupation", np.random.default_rng(3))
    assert all(np.array_equal(sample.codes[c], other.codes[c]) for c in sample.schema.names)


def test_a_uniform_sample_breaks_the_attack_grid_for_some_seeds() -> None:
    """The defect: 2,000 rows drawn uniformly hold Prof-specialty more than 2000/7 times for
    some of these seeds, and gamma = 7 is then refused."""
    table = datasets.adult(observed_domains=True, sensitive="occupation")
    size = table.schema["occupation"].size
    largest = [largest_feasible_size(table.codes["occupation"][np.random.default_rng(seed).choice(
        table.n_rows, ATTACK_QUICK_ROWS, replace=False)], size) for seed in SEEDS]
    assert min(largest) < 7 <= largest_feasible_size(table.codes["occupation"], size)


@pytest.mark.parametrize("seed", SEEDS)
def test_attack_quick_grid_publishes_on_every_seed(seed: int) -> None:
    """The quick attack sweep publishes on the quick sample of this seed. Each sweep runs
    from weak to strong privacy, and the strongest setting is the one a sample can fail
    (the largest group size gamma, l, ceil(1/beta), k; the smallest rho2 and gamma): the
    seed's sample publishes it, and seed 0's every setting."""
    table = attack_table(quick_config(seed))
    assert table.n_rows == ATTACK_QUICK_ROWS
    for sweep in default_sweeps(True):
        for value in sweep.values if seed == 0 else sweep.values[-1:]:
            sweep.build(value).publish(table, random_state=seed)


@pytest.fixture(scope="module")
def tables(shared_datasets: Path) -> dict[str, Table]:
    """The resampled experiments' tables, read once."""
    wanted = {(d, s) for d, s, *_ in AXES_SETTINGS} | {(d, s) for d, s, _ in SIZE_SETTINGS}
    return {f"{d}/{s}": load_table(shared_datasets, d, s) for d, s in wanted}


@pytest.mark.parametrize("seed", SEEDS)
def test_resampled_quick_grids_stay_feasible(seed: int, tables: dict[str, Table]) -> None:
    """sdr_axes (Anatomy's l = L on balanced Adult; on FARS Anatomy is infeasible by design
    and skipped) and size (ambiguity's and Mondrian's ceil(1/beta)) on resamples of their
    quick sizes."""
    rng = np.random.default_rng(seed)
    grids = [(dataset, sensitive, AXES_QUICK_SIZES, max(levels))
             for dataset, sensitive, _, levels, _ in AXES_SETTINGS if dataset == "adult"]
    grids += [(dataset, sensitive, QUICK_SIZES, association_group_size(beta))
              for dataset, sensitive, beta in SIZE_SETTINGS]
    for dataset, sensitive, sizes, group in grids:
        source = tables[f"{dataset}/{sensitive}"]
        for n in sizes:
            codes = source.resample(n, random_state=rng).codes[sensitive]
            assert largest_feasible_size(codes, source.schema[sensitive].size) >= group, (
                dataset, n)


def test_an_infeasible_setting_is_skipped_and_said_why() -> None:
    """A setting the sample cannot meet is skipped with the mechanism's reason; the others
    are measured."""
    table = attack_table(quick_config(0))
    sweep = Sweep("splu", "gamma", (2, 20), lambda v: SPLUGen(gamma=int(v)), ("small_counts",))
    result = attack_sweep(table, [sweep], runs=2, rng=np.random.default_rng(0))
    assert {row["value"] for row in result.rows} == {2.0}
    (line,) = result.skipped
    assert line.startswith("splu gamma = 20 skipped: gamma=20 is infeasible for column "
                           "'occupation'")
    assert "the largest feasible gamma is 7" in line
