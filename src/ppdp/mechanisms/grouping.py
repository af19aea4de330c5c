"""Partitioning rows into groups of distinct sensitive values (decoy groups, anatomized groups).

SPLU-Gen Section 3.1 Step 2 asks for a deterministic partition of the rows into groups of gamma
rows holding gamma distinct sensitive values; Anatomy (Xiao & Tao 2006) asks for the same with
l. Both use this construction.

1. Basic layout: sort the rows by value and put the i-th row of that order into group
   ``i mod r``, ``r = floor(N / size)``. A value occupies consecutive positions, so when it
   occurs at most ``r`` times (the eligibility condition) its rows land in distinct groups.
   When N is not a multiple of ``size`` the first ``N mod r`` groups take one row more; no row
   is dropped.
2. Mixing: that layout makes each value share groups only with the few values next to it in
   the order, while SPLU-Gen's estimator (Section 5.1) assumes that whether a row sits in a
   group holding s does not depend on anything else about the row, its own value included. (On
   Adult with gamma = 5 the basic layout biases the estimate of women in sales by several
   standard errors.) So the partition is then mixed by rounds of swaps: the groups are paired
   at random, one member of each pair's groups is drawn, and the two members trade groups
   wherever neither group then holds a value twice. Swaps keep every group's size and
   distinctness, and drive the partition towards a uniformly random valid one.

Rows of one value enter the layout in a pseudo-random order, so membership carries no trace of
the input's row order. All randomness here comes from a fixed seed: the same table always
yields the same partition, as Step 2 requires. The partition is never published.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.errors import InfeasibleError
from ppdp.table import code_dtype

_LAYOUT_SEED = 0x5EED_DEC0
MIXING_ROUNDS = 64


@dataclass(frozen=True)
class DistinctValueGroups:
    """The partition: ``members[g, :sizes[g]]`` are the rows of group g (padding is -1)."""

    members: np.ndarray
    sizes: np.ndarray

    @property
    def n_groups(self) -> int:
        return len(self.sizes)

    @property
    def n_rows(self) -> int:
        return int(self.sizes.sum())

    def group_of_rows(self) -> np.ndarray:
        """The group of every row, in the table's row order."""
        groups = np.empty(self.n_rows, dtype=np.int32)
        # Filled slots are the first sizes[g] of each row: row-major order is group by group.
        groups[self.members[self.members >= 0]] = np.repeat(
            np.arange(self.n_groups, dtype=np.int32), self.sizes)
        return groups


def largest_feasible_size(values: np.ndarray, domain_size: int) -> int:
    """The largest group size for which every value fits in distinct groups: floor(N / max f)."""
    if len(values) == 0:
        return 0
    return int(len(values) // np.bincount(values, minlength=domain_size).max())


def distinct_value_groups(values: np.ndarray, size: int, *, domain_size: int, column: str,
                          symbol: str, domain: Sequence[object] | None = None,
                          mixing_rounds: int = MIXING_ROUNDS) -> DistinctValueGroups:
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
    mixer = np.random.default_rng(_LAYOUT_SEED)
    rows = np.arange(n_rows, dtype=np.int32 if n_rows < 2**31 else np.int64)
    mixer.shuffle(rows)
    # Values are small unsigned integers: numpy's stable sort is a radix sort for them.
    rows = rows[np.argsort(values[rows], kind="stable")]
    width = -(-n_rows // n_groups)
    padded = np.full(width * n_groups, -1, dtype=rows.dtype)
    padded[:n_rows] = rows
    # Slot-major layout (slot, group): every step of the mixing is then a contiguous pass.
    slots = padded.reshape(width, n_groups)[:, mixer.permutation(n_groups)]
    _mix(slots, values, domain_size, mixer, mixing_rounds)
    members = np.ascontiguousarray(slots.T)
    return DistinctValueGroups(members=members, sizes=(members >= 0).sum(axis=1))


def _mix(slots: np.ndarray, values: np.ndarray, domain_size: int, rng: np.random.Generator,
         rounds: int) -> None:
    """Swap members between paired groups, in place, keeping every group distinct.

    Round t pairs group i of the first half with group (i + shift_t) mod half of the second
    half, for a random shift; the groups were put in random order beforehand.
    """
    width, n_groups = slots.shape
    half = n_groups // 2
    if half == 0:
        return
    sizes = (slots >= 0).sum(axis=0)
    # Values of each slot; padding gets a value no row has, so it never blocks a swap.
    slot_values = values[np.maximum(slots, 0)].astype(code_dtype(domain_size + 1))
    slot_values[slots < 0] = domain_size
    first = np.arange(half)
    for _ in range(rounds):
        offset = int(rng.integers(0, n_groups - 2 * half + 1))
        shift = int(rng.integers(0, half))
        a = offset + first
        b = offset + half + (first + shift) % half
        values_b = np.roll(slot_values[:, offset + half:offset + 2 * half], -shift, axis=1)
        slot_a = (rng.random(half) * sizes[a]).astype(np.int64)
        slot_b = (rng.random(half) * sizes[b]).astype(np.int64)
        value_a = slot_values[slot_a, a]
        value_b = values_b[slot_b, first]
        allowed = value_a != value_b
        for j in range(width):
            allowed &= (values_b[j] != value_a) & (slot_values[j, a] != value_b)
        a, b, slot_a, slot_b = a[allowed], b[allowed], slot_a[allowed], slot_b[allowed]
        slots[slot_a, a], slots[slot_b, b] = slots[slot_b, b], slots[slot_a, a].copy()
        slot_values[slot_a, a], slot_values[slot_b, b] = value_b[allowed], value_a[allowed]
