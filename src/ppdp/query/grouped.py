"""Answers over GROUP BY domains turned into a GroupedEstimate, and the check that a batch of
queries holds ungrouped ones only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from ppdp.data.schema import Schema
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.query.binding import BoundQuery


def grouped(schema: Schema, group_by: Sequence[str], values: np.ndarray,
            stderr: np.ndarray | None, *, keep: np.ndarray | None = None,
            exact: bool = False,
            interval: Callable[[float, float | None], Estimate] = Estimate.with_stderr,
            unconverged: np.ndarray | None = None) -> GroupedEstimate:
    """Turn dense arrays over the group columns' domains into a GroupedEstimate.

    ``keep`` marks the keys to report (default: those with a non-zero estimate);
    ``unconverged`` the keys whose estimator did not converge (``Estimate.converged``).
    """
    keep = values != 0 if keep is None else keep
    domains = [schema[c].domain for c in group_by]
    groups = []
    for index in zip(*np.nonzero(keep), strict=True):
        key = {c: domains[i][j] for i, (c, j) in enumerate(zip(group_by, index, strict=True))}
        value = float(values[index])
        if exact:
            estimate = Estimate.exact(value)
        else:
            estimate = interval(value, None if stderr is None else float(stderr[index]))
        if unconverged is not None and unconverged[index]:
            estimate = replace(estimate, converged=False)
        groups.append((key, estimate))
    return GroupedEstimate(tuple(group_by), tuple(groups))


def require_ungrouped(bound: BoundQuery) -> None:
    if bound.group_by:
        raise ValueError(f"batch counting takes ungrouped queries; {bound.query.text!r} has "
                         f"GROUP BY (use count() for it)")
