"""The true answers of count queries on a table (the ground truth of every experiment), and
dense answers turned into a GroupedEstimate."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ppdp.data.schema import Schema
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.query.binding import BoundQuery, bind
from ppdp.query.cube import count_histogram
from ppdp.query.syntax import Query
from ppdp.table.table import Table


def grouped(schema: Schema, group_by: Sequence[str], values: np.ndarray,
            stderr: np.ndarray | None, *, keep: np.ndarray | None = None,
            exact: bool = False,
            interval: Callable[[float, float | None], Estimate] = Estimate.with_stderr,
            ) -> GroupedEstimate:
    """Turn dense arrays over the group columns' domains into a GroupedEstimate.

    ``keep`` marks the keys to report (default: those with a non-zero estimate).
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
        groups.append((key, estimate))
    return GroupedEstimate(tuple(group_by), tuple(groups))


def exact_count(table: Table, query: str | Query) -> Estimate | GroupedEstimate:
    """The true answer of a count query on a table."""
    bound = bind(query, table.schema, table_name=table.name)
    counts = count_histogram(table.cube, bound.predicate, bound.group_by)
    if bound.group_by:
        return grouped(table.schema, bound.group_by, counts, None, exact=True)
    return Estimate.exact(float(counts))


def exact_counts(table: Table, queries: Iterable[str | Query]) -> np.ndarray:
    """True answers of many ungrouped count queries, sharing contingency tables."""
    cube = table.cube
    result = []
    for query in queries:
        bound = bind(query, table.schema, table_name=table.name)
        _require_ungrouped(bound)
        result.append(float(count_histogram(cube, bound.predicate, ())))
    return np.asarray(result, dtype=np.float64)


def _require_ungrouped(bound: BoundQuery) -> None:
    if bound.group_by:
        raise ValueError(f"batch counting takes ungrouped queries; {bound.query.text!r} has "
                         f"GROUP BY (use count() for it)")
