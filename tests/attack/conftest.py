"""Fixtures of the attack tests: Adult, and the best any guess from the quasi-identifiers can
do, computed with pandas (independently of ppdp.attack)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

import ppdp


@pytest.fixture(scope="session")
def adult() -> ppdp.Table:
    """Adult (30,162 rows), sensitive occupation, the codebook's domains."""
    return ppdp.datasets.adult(sensitive="occupation")


def best_guess_accuracy(table: ppdp.Table, quasi: Sequence[str], attribute: str,
                        rows: np.ndarray) -> float:
    """Expected accuracy on ``rows`` of guessing, for each combination of the
    quasi-identifiers, a most frequent value among all rows holding it (ties broken
    uniformly): what an adversary holding the table itself can reach."""
    frame = pd.DataFrame({c: np.asarray(table.codes[c]) for c in (*quasi, attribute)})
    counts = frame.groupby([*quasi, attribute]).size().rename("n").reset_index()
    best = counts.groupby(list(quasi))["n"].transform("max")
    counts["tied"] = counts["n"] == best
    ties = counts[counts["tied"]].groupby(list(quasi)).size().rename("ties").reset_index()
    winners = counts[counts["tied"]].merge(ties, on=list(quasi))
    chosen = frame.iloc[rows].merge(winners[[*quasi, attribute, "ties"]],
                                    on=[*quasi, attribute], how="left")
    return float((1 / chosen["ties"]).fillna(0).mean())


def difference_margin(n: int, standard_errors: float = 10) -> float:
    """``standard_errors`` standard errors of a difference of two accuracies on the same n
    targets: each is a mean of n values in [0, 1] (variance at most 1/(4n)), so the
    difference has a standard deviation of at most 2 * 0.5 / sqrt(n) = 1/sqrt(n) however the
    two are correlated."""
    return standard_errors / np.sqrt(n)


def single_margin(n: int, standard_errors: float = 3) -> float:
    """``standard_errors`` standard errors of one accuracy on n targets (a mean of n values in
    [0, 1]: standard deviation at most 0.5 / sqrt(n))."""
    return standard_errors * 0.5 / np.sqrt(n)
