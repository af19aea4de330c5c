"""Partitioning rows into groups of distinct sensitive values (decoy groups, anatomized groups).

SPLU-Gen Section 3.1 Step 2 asks for any deterministic partition of the rows into groups of
gamma rows with gamma distinct sensitive values; Anatomy (Xiao & Tao 2006) asks for the same
with l. Both use this construction: order the rows by (frequency of their value, descending;
value; row position) and put the i-th row of that order into group ``i mod r`` with
``r = floor(N / size)``. A value occurs at most ``r`` times exactly when the table is eligible,
and then its rows sit in consecutive positions, hence in distinct groups. When N is not a
multiple of ``size``, the first ``N mod r`` groups take one row more; no row is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.errors import InfeasibleError


@dataclass(frozen=True)
class DistinctValueGroups:
    """The partition: ``order[g + k*n_groups]`` is the k-th row of group g."""

    order: np.ndarray
    n_groups: int

    @property
    def n_rows(self) -> int:
        return len(self.order)

    def group_sizes(self) -> np.ndarray:
        """Rows per group: ``N // r`` or one more."""
        base, extra = divmod(self.n_rows, self.n_groups)
        return base + (np.arange(self.n_groups) < extra)

    def group_of_rows(self) -> np.ndarray:
        """The group of every row, in the table's row order."""
        groups = np.empty(self.n_rows, dtype=np.int32)
        groups[self.order] = np.arange(self.n_rows, dtype=np.int64) % self.n_groups
        return groups


def largest_feasible_size(values: np.ndarray, domain_size: int) -> int:
    """The largest group size for which every value fits in distinct groups: floor(N / max f)."""
    if len(values) == 0:
        return 0
    return int(len(values) // np.bincount(values, minlength=domain_size).max())


def distinct_value_groups(values: np.ndarray, size: int, *, domain_size: int, column: str,
                          symbol: str, domain: Sequence[object] | None = None
                          ) -> DistinctValueGroups:
    """Partition rows into ``floor(N/size)`` groups, each holding distinct values.

    Raises InfeasibleError, naming the largest feasible size, when the most frequent value
    occurs more than ``N / size`` times (the eligibility condition of SPLU-Gen Section 3.1 and
    of Anatomy).
    """
    n_rows = len(values)
    frequencies = np.bincount(values, minlength=domain_size)
    n_groups = n_rows // size
    top = int(np.argmax(frequencies)) if n_rows else 0
    if n_groups == 0 or frequencies[top] > n_groups:
        shown = domain[top] if domain is not None else top
        largest = largest_feasible_size(values, domain_size)
        advice = (f"the largest feasible {symbol} is {largest}" if largest >= 2
                  else f"no {symbol} >= 2 is feasible: the column is dominated by one value")
        raise InfeasibleError(
            f"{symbol}={size} is infeasible for column {column!r}: its most frequent value "
            f"{shown!r} occurs {int(frequencies[top])} times in {n_rows} rows, more than "
            f"N/{symbol} = {n_rows / size:.1f} groups of {size} distinct values can hold; "
            f"{advice}")
    # Rank values by (frequency descending, value); a stable sort of the rows by that rank keeps
    # the row position as the last key. Ranks are small integers, so numpy sorts them by radix.
    value_rank = np.empty(domain_size, dtype=np.int64)
    value_rank[np.lexsort((np.arange(domain_size), -frequencies))] = np.arange(domain_size)
    row_rank = value_rank.astype(values.dtype)[values]
    order = np.argsort(row_rank, kind="stable").astype(np.int32 if n_rows < 2**31 else np.int64)
    return DistinctValueGroups(order=order, n_groups=n_groups)
