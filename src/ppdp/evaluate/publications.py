"""Repeated publications of one mechanism: each one's errors on a pool of queries, its
publishing time and what its release measurably gives (`measured_privacy`).

Every experiment and ``ppdp compare`` report a point as the mean over several publications
with its spread, so a mechanism is published, answered and measured the same way everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdp.risk.measured import measured_privacy
from ppdp.table.table import Table

__all__ = ["Publications", "mean_std", "publish_and_score"]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (NaN for fewer than two values)."""
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else float("nan")


@dataclass
class Publications:
    """Errors of several publications of one mechanism on one pool, and publishing times."""

    errors: list[Any] = field(default_factory=list)
    """What ``score`` made of each publication's estimates."""
    seconds: list[float] = field(default_factory=list)
    estimates: np.ndarray | None = None
    """The estimates of the last publication."""
    privacy: list[Any] = field(default_factory=list)
    """What the last publication measurably gives (`measured_privacy`)."""
    privacy_by_run: list[list[Any]] = field(default_factory=list)
    """What each publication measurably gives (with ``measure_each``; else the last's)."""
    release: Any = None
    """The last release."""

    def record(self, row: dict[str, Any], name: str) -> None:
        """Mean and standard deviation of the error, median publishing time and the measured
        privacy, into ``row``."""
        row[f"{name}_error"], row[f"{name}_error_std"] = mean_std(self.errors) \
            if self.errors else (float("nan"), float("nan"))
        row[f"{name}_publish_s"] = float(np.median(self.seconds)) if self.seconds \
            else float("nan")
        for measured in self.privacy:
            row.update(measured.columns(name))


def publish_and_score(mechanism: Any, table: Table, queries: Sequence[Any], runs: int,
                      rng: np.random.Generator, score: Callable[[np.ndarray], Any], *,
                      measure_each: bool = False,
                      each_run: Callable[[int], None] | None = None) -> Publications:
    """Publish ``runs`` times, answer the queries, score each publication's estimates and
    measure the privacy of the last one (of every one with ``measure_each``: measuring may
    cost as much as publishing); ``each_run(done)`` is told after every publication."""
    result = Publications()
    for run in range(runs):
        start = time.perf_counter()
        release = mechanism.publish(table, random_state=rng)
        result.seconds.append(time.perf_counter() - start)
        result.estimates, _ = release.count_all(queries)
        result.errors.append(score(result.estimates))
        if measure_each or run == runs - 1:
            result.privacy_by_run.append(measured_privacy(mechanism, release, table))
        result.release = release
        if each_run is not None:
            each_run(run + 1)
    result.privacy = result.privacy_by_run[-1] if runs else []
    return result
