"""Estimates of count queries: a value with its standard error and 95 % interval where the
mathematics gives one, and the estimates of a GROUP BY query, one per key."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ppdp.frames import as_frame, check_library

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """An estimated count with its standard error and 95 % interval where the maths gives one.

    Intervals are the normal approximation ``value ± 1.96·stderr`` (lower end clipped at 0)
    unless a mechanism knows an exact one. ``converged`` is False where an iterative
    estimator stopped at its iteration limit (SPLU-Gen's ``estimator = "paper"``, which then
    also warns with `ppdp.errors.ConvergenceWarning`): the value is its last iterate.
    """

    value: float
    stderr: float | None = None
    ci95: tuple[float, float] | None = None
    converged: bool = True

    def __repr__(self) -> str:
        # converged shown only where False: every other estimate reads as it always has.
        flag = "" if self.converged else ", converged=False"
        return (f"Estimate(value={self.value!r}, stderr={self.stderr!r}, ci95={self.ci95!r}"
                f"{flag})")

    @classmethod
    def exact(cls, value: float) -> Estimate:
        return cls(float(value), 0.0, (float(value), float(value)))

    @classmethod
    def with_stderr(cls, value: float, stderr: float | None) -> Estimate:
        if stderr is None or not math.isfinite(stderr):
            return cls(float(value), None, None)
        half = Z95 * stderr
        return cls(float(value), float(stderr), (max(0.0, value - half), value + half))

    def to_dict(self) -> dict[str, Any]:
        """``estimate``, ``stderr`` and ``ci95``, and ``converged: false`` where the estimator
        did not converge (absent otherwise, so that every other answer reads as before)."""
        data: dict[str, Any] = {"estimate": self.value, "stderr": self.stderr,
                                "ci95": list(self.ci95) if self.ci95 is not None else None}
        if not self.converged:
            data["converged"] = False
        return data


@dataclass(frozen=True)
class GroupedEstimate:
    """Estimates of a GROUP BY query, one per key (a dict from group column to value)."""

    columns: tuple[str, ...]
    groups: tuple[tuple[dict[str, Any], Estimate], ...]

    def __len__(self) -> int:
        return len(self.groups)

    @property
    def converged(self) -> bool:
        """Whether every group's estimate converged (see `Estimate`)."""
        return all(e.converged for _, e in self.groups)

    def __getitem__(self, key: Mapping[str, Any] | tuple[Any, ...] | Any) -> Estimate:
        if not isinstance(key, Mapping):
            values = key if isinstance(key, tuple) else (key,)
            key = dict(zip(self.columns, values, strict=True))
        for group, estimate in self.groups:
            if group == dict(key):
                return estimate
        return Estimate.exact(0.0) if self._all_exact() else Estimate(0.0)

    def _all_exact(self) -> bool:
        return all(e.stderr == 0.0 for _, e in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {"groups": [{"key": key, **estimate.to_dict()} for key, estimate in self.groups]}

    def to_frame(self, library: str = "pandas") -> Any:
        """The groups as a data frame of one row per key: the group columns, then
        ``estimate``, ``stderr``, ``ci95_low`` and ``ci95_high`` (missing where the release
        gives none); ``library`` is ``"pandas"``, ``"polars"`` or ``"arrow"``.

        One table to sort, join and plot, in the user's library, instead of pairs of keys
        and estimates."""
        check_library(library)
        keys = {c: pa.array([key[c] for key, _ in self.groups]) for c in self.columns}
        return as_frame(estimates_table(keys, [e for _, e in self.groups]), library)


FRAME_COLUMNS = ("estimate", "stderr", "ci95_low", "ci95_high")
"""The columns of answers in a data frame, after the columns that say which answer it is."""


def estimates_table(keys: Mapping[str, pa.Array], estimates: Sequence[Estimate]) -> pa.Table:
    """Answers as an Arrow table: the ``keys`` columns (a group's values, a query's text),
    then `FRAME_COLUMNS`, null where an estimate has no standard error or interval."""
    lows = [None if e.ci95 is None else e.ci95[0] for e in estimates]
    highs = [None if e.ci95 is None else e.ci95[1] for e in estimates]
    answers = [pa.array(values, type=pa.float64()) for values in (
        [e.value for e in estimates], [e.stderr for e in estimates], lows, highs)]
    return pa.table([*keys.values(), *answers], names=[*keys, *FRAME_COLUMNS])
