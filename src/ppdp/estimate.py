"""Estimates of count queries: a value with its standard error and 95 % interval where the
mathematics gives one, and the estimates of a GROUP BY query, one per key."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """An estimated count with its standard error and 95 % interval where the maths gives one.

    Intervals are the normal approximation ``value ± 1.96·stderr`` (lower end clipped at 0)
    unless a mechanism knows an exact one.
    """

    value: float
    stderr: float | None = None
    ci95: tuple[float, float] | None = None

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
        return {"estimate": self.value, "stderr": self.stderr,
                "ci95": list(self.ci95) if self.ci95 is not None else None}


@dataclass(frozen=True)
class GroupedEstimate:
    """Estimates of a GROUP BY query, one per key (a dict from group column to value)."""

    columns: tuple[str, ...]
    groups: tuple[tuple[dict[str, Any], Estimate], ...]

    def __len__(self) -> int:
        return len(self.groups)

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
