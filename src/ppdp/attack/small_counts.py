"""Small-count reconstruction on SPLU-Gen (Fu et al., J. Biomed. Inform. 2014, Section 4.2,
Lemma 2, and Section 5.3, Theorem 4).

SPLU-Gen's small-sum privacy: every true count f in 1..a is estimated with a relative error
above epsilon with probability at least T_P, so within epsilon with probability at most
1 - T_P. Theorem 4 models the estimate of a value's count as its published count,
Binomial(gamma f, 1/gamma).

The adversary estimates every cell (combination of the quasi-identifiers, sensitive value)
from the release in two ways: by the cell's published count (Theorem 2's estimate, the one
Theorem 4 models), and by the published counts of the cell's rows unmixed by the value-level
transition of the decoy layout (``SpluRelease.value_model``: ``x = R^-T y``, unbiased but
noisier on tiny cells). Success: the larger of the two shares of cells with a true count in
1..a estimated within relative error epsilon (the adversary's best; its standard error is
that of a binomial share over the cells); bound: 1 - T_P;
baseline: the same share for the estimate without the release, the cell's rows times the
value's share in the population half. With no quasi-identifier (``columns=()``) a cell is a
value alone and the published count is Theorem 4's own adversary.

Per individual: the adversary's estimated share of the individual's own value among the rows
with its quasi-identifiers (clipped to [0, 1]), by the better of the two estimates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ppdp.attack.report import AttackResult
from ppdp.attack.targets import Targets, joint_keys
from ppdp.mechanisms.splu.guarantee import splu_guarantee

NAME = "small_counts"
EPSILON = 0.3
A = 3
"""Defaults of epsilon and a: the paper's Example 2, as ``ppdp guarantee splu``."""
ADVERSARY = ("knows the quasi-identifiers of the rows; estimates every (quasi-identifier "
             "combination, value) count by its published count or by unmixing them")
SOURCE = ("SPLU-Gen (Fu et al., J. Biomed. Inform. 2014), Section 4.2 (Lemma 2), Section 5.3 "
          "(Theorem 4)")


def applies(targets: Targets) -> str | None:
    """Why the attack does not apply (None: it applies)."""
    if targets.release.mechanism != "splu":
        return "only SPLU-Gen promises small-sum privacy"
    if targets.sensitive not in targets.release.schema.sensitive:
        return "the attribute attacked is not one of the release's sensitive columns"
    return None


def run(targets: Targets, *, epsilon: float = EPSILON, a: int = A,
        columns: Sequence[str] | None = None) -> list[AttackResult]:
    """Estimate every cell of ``columns`` (default: every quasi-identifier) and the attribute
    attacked; the share of small cells within epsilon."""
    start = time.perf_counter()
    release: Any = targets.release
    attribute = targets.sensitive
    assert attribute is not None
    columns = list(targets.quasi if columns is None else columns)
    n_values = targets.sizes[attribute]
    truth = targets.codes[attribute].astype(np.int64)
    published = np.asarray(release.codes[attribute], dtype=np.int64)
    source_keys, release_keys = joint_keys([targets.codes, release.codes], columns,
                                           targets.sizes)
    cells, cell_of_row = np.unique(source_keys, return_inverse=True)
    cell_of_row = cell_of_row.reshape(-1)
    where = np.minimum(np.searchsorted(cells, release_keys), len(cells) - 1)
    observed = np.bincount(where * n_values + published,
                           minlength=len(cells) * n_values).reshape(len(cells), n_values)
    actual = np.bincount(cell_of_row * n_values + truth,
                         minlength=len(cells) * n_values).reshape(len(cells), n_values)
    estimates = {"published": observed.astype(np.float64)}
    if columns:
        # A value alone is estimated by its published count (Theorem 2); cells need unmixing.
        estimates["unmixed"] = release.value_model([attribute]).unmix(estimates["published"])
    small = (actual >= 1) & (actual <= a)

    def share_within(estimate: np.ndarray, cells: np.ndarray) -> float:
        close = np.abs(estimate - actual) <= epsilon * actual * (1 + 1e-12)
        return float(close[cells].mean()) if cells.any() else float("nan")

    shares = {name: share_within(estimate, small) for name, estimate in estimates.items()}
    best = max(shares, key=lambda name: -1.0 if np.isnan(shares[name]) else shares[name])
    seconds = time.perf_counter() - start
    population = np.bincount(truth[targets.population], minlength=n_values)
    prior = np.outer(actual.sum(axis=1), population / population.sum())
    guarantee = splu_guarantee(gamma=int(release.parameters["gamma"]), epsilon=epsilon, a=a)
    by_count = {f"f={f}": {"cells": int((actual == f).sum()),
                           "share_within": share_within(estimates[best], actual == f),
                           "bound": 1 - probability}
                for f, probability in (guarantee.privacy_by_count or ())}
    rows_in_cell = actual.sum(axis=1)[cell_of_row]
    risk = np.clip(estimates[best][cell_of_row, truth] / rows_in_cell, 0.0, 1.0)
    return [AttackResult(
        NAME, f"share of counts 1..{a} estimated within relative error {epsilon:g}",
        shares[best], share_within(prior, small), 1 - float(guarantee.T_P or 0.0), ADVERSARY,
        SOURCE, seconds,
        {"estimator": best, "stderr": _binomial_stderr(shares[best], int(small.sum())),
         **{f"share_{name}": share for name, share in shares.items()}, "epsilon": epsilon,
         "a": a, "T_P": guarantee.T_P, "small_cells": int(small.sum()), "columns": columns,
         "by_count": by_count},
        risk, f"the adversary's estimated share of the individual's own {attribute} among "
              f"the rows with its quasi-identifiers")]


def _binomial_stderr(share: float, cells: int) -> float:
    """The standard error of a share of ``cells`` taken as independent trials."""
    return float(np.sqrt(share * (1 - share) / cells)) if cells else float("nan")
