"""How accurate a release's counts are, by the size of the true count.

The queries are SPLU-Gen's pools on the source (Section 6.1: small counts 1 to 10, large
counts of selectivity 0.5 to 5 %), answered by the release and counted exactly on the source.
Per band of true counts (`ppdp.evaluate.compare.BANDS`): the number of queries, their mean
relative error |true - estimate| / true with a 95 % Student t interval across the queries, and
the share of true counts inside the release's own 95 % intervals (`coverage_95`) where it
reports a standard error for every query of the band (else null: no interval to check).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from ppdp.evaluate.compare import BANDS
from ppdp.evaluate.workloads import splu_pools
from ppdp.release.base import Release
from ppdp.table.table import Table

__all__ = ["POOL_SIZE", "accuracy_by_band"]

POOL_SIZE = 500
"""Queries drawn for each of the two pools (compare's quick pools hold 200, its full ones
1,000): enough for a band's interval to be a few percent of its error, in about a second on
Adult."""


def accuracy_by_band(release: Release, table: Table, rng: np.random.Generator
                     ) -> tuple[dict[str, Any], int]:
    """The ``accuracy`` of a certificate and how many queries had no standard error.

    ``table``: the source with the release's columns, roles and domains."""
    try:
        with warnings.catch_warnings():
            # A pool left short is said in the description (its number of queries).
            warnings.simplefilter("ignore")
            small, large = splu_pools(table, size=POOL_SIZE, random_state=rng)
    except ValueError as exc:
        return {"queries": f"None: SPLU-Gen's query pools do not apply to this release "
                           f"({exc})", "bands": []}, 0
    queries = [*small.queries, *large.queries]
    truth = np.concatenate([small.truth, large.truth]).astype(np.float64)
    description = (f"SPLU-Gen's query pools on the source (Section 6.1): {len(small)} small "
                   f"counts (true count 1-10) and {len(large)} large counts (selectivity "
                   f"0.5-5 %), drawn at random")
    if not queries:
        return {"queries": description, "bands": []}, 0
    frame = release.count_all(queries, frame="arrow")
    estimate = frame.column("estimate").to_numpy(zero_copy_only=False).astype(np.float64)
    low = _filled(frame.column("ci95_low"))
    high = _filled(frame.column("ci95_high"))
    stderr = _filled(frame.column("stderr"))
    errors = np.abs(truth - estimate) / truth
    bands = []
    for band_low, band_high in BANDS:
        inside = (truth >= band_low) & (truth <= band_high)
        if not inside.any():
            continue
        mean, interval = _mean_interval(errors[inside])
        has_interval = ~np.isnan(low[inside]) & ~np.isnan(high[inside])
        coverage = None
        if has_interval.all():
            covered = (low[inside] <= truth[inside]) & (truth[inside] <= high[inside])
            coverage = float(covered.mean())
        bands.append({"low": band_low, "high": band_high if math.isfinite(band_high) else None,
                      "queries": int(inside.sum()), "mean_relative_error": mean,
                      "interval": interval, "coverage_95": coverage})
    return {"queries": description, "bands": bands}, int(np.isnan(stderr).sum())


def _filled(column: Any) -> np.ndarray:
    """An Arrow column of numbers as floats, NaN where missing."""
    return np.asarray(column.to_pylist(), dtype=np.float64)


def _mean_interval(values: np.ndarray) -> tuple[float, list[float | None]]:
    """Mean and 95 % Student t interval across the values (no interval for one value)."""
    mean = float(values.mean())
    if values.size < 2:
        return mean, [None, None]
    half = float(student_t.ppf(0.975, values.size - 1) * values.std(ddof=1)
                 / math.sqrt(values.size))
    return mean, [mean - half, mean + half]
