"""Error measures of the SPLU-Gen evaluation (Section 6.1): relative error and its averages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["average_relative_error", "by_band", "error_above_selectivity", "relative_errors"]


def _pair(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    true = np.asarray(truth, dtype=np.float64).reshape(-1)
    est = np.asarray(estimate, dtype=np.float64).reshape(-1)
    if true.shape != est.shape:
        raise ValueError(f"truth and estimate differ in length: {true.size} and {est.size}")
    if not np.all(true > 0):
        bad = true[~(true > 0)][0]
        raise ValueError(f"relative errors need true counts > 0; found {bad:g}")
    return true, est


def relative_errors(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> np.ndarray:
    """|true - estimate| / true for each query (Section 6.1); true counts must be positive."""
    true, est = _pair(truth, estimate)
    return np.abs(true - est) / true


def average_relative_error(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> float:
    """The mean relative error E / Q over Q queries (Section 6.1); NaN for no queries."""
    errors = relative_errors(truth, estimate)
    return float(errors.mean()) if errors.size else float("nan")


def by_band(truth: npt.ArrayLike, estimate: npt.ArrayLike, n_rows: int,
            edges: Sequence[float]) -> list[tuple[float, float, int, float]]:
    """Average relative error per selectivity band [lo, hi) (Section 6.2.1, Fig. 8).

    Selectivity is truth / ``n_rows``; ``edges`` are increasing band limits, e.g.
    ``[0.005, 0.01, 0.02, 0.03, 0.04, 0.05]``. Each item is (lo, hi, number of queries,
    average relative error, NaN for an empty band).
    """
    if n_rows <= 0:
        raise ValueError(f"n_rows must be positive, got {n_rows}")
    limits = np.asarray(edges, dtype=np.float64)
    if limits.ndim != 1 or limits.size < 2 or np.any(np.diff(limits) <= 0):
        raise ValueError(f"edges must be at least two increasing numbers, got {list(edges)}")
    errors = relative_errors(truth, estimate)
    selectivity = np.asarray(truth, dtype=np.float64).reshape(-1) / n_rows
    band = np.searchsorted(limits, selectivity, side="right") - 1
    inside = (band >= 0) & (band < limits.size - 1)
    counts = np.bincount(band[inside], minlength=limits.size - 1)
    sums = np.bincount(band[inside], weights=errors[inside], minlength=limits.size - 1)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return [(float(limits[i]), float(limits[i + 1]), int(counts[i]), float(means[i]))
            for i in range(limits.size - 1)]


def error_above_selectivity(truth: npt.ArrayLike, estimate: npt.ArrayLike, n_rows: int,
                            minimum: float) -> tuple[int, float]:
    """Number of queries with selectivity >= ``minimum`` and their average relative error.

    Small Domain Randomization, Section 6.1: errors are reported for the queries of the pool
    that pass a minimum selectivity s (0.1 %, 0.5 %, 1 %); selectivity is truth / ``n_rows``.
    """
    if n_rows <= 0:
        raise ValueError(f"n_rows must be positive, got {n_rows}")
    true = np.asarray(truth, dtype=np.float64).reshape(-1)
    est = np.asarray(estimate, dtype=np.float64).reshape(-1)
    if true.shape != est.shape:
        raise ValueError(f"truth and estimate differ in length: {true.size} and {est.size}")
    passing = (true > 0) & (true >= minimum * n_rows)
    if not passing.any():
        return 0, float("nan")
    return int(passing.sum()), average_relative_error(true[passing], est[passing])
