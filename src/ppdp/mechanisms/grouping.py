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
3. Rows: which row of a value takes which of that value's places is drawn at random, so
   membership carries no trace of the input's row order.

Rows of one value are interchangeable in steps 1 and 2, so these steps move values only (one
byte per place for domains up to 255 values) and step 3 puts the rows in at the end. All
randomness here comes from fixed seeds: the same table always yields the same partition, as
Step 2 requires. The partition is never published.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ppdp.data.schema import code_dtype
from ppdp.errors import InfeasibleError

_LAYOUT_SEED = 0x5EED_DEC0
MIXING_ROUNDS = 64
_PAIRS_PER_STEP = 1 << 16
"""Pairs of groups handled by one vectorised step of a mixing round: the step's arrays (a few
bytes per pair) then stay in a core's cache."""
_SORT_CHUNK = 1 << 18
"""Values sorted at a time by ``_sorted_by_value`` (its temporaries: 8 bytes per value)."""


@dataclass(frozen=True)
class DistinctValueGroups:
    """The partition: ``members[g, :sizes[g]]`` are the rows of group g and
    ``values[g, :sizes[g]]`` their values (padding: -1 in ``members``, the domain size in
    ``values``)."""

    members: np.ndarray
    values: np.ndarray
    sizes: np.ndarray

    @property
    def n_groups(self) -> int:
        return len(self.sizes)

    @property
    def n_rows(self) -> int:
        return int(self.sizes.sum())

    def group_of_rows(self, labels: np.ndarray | None = None) -> np.ndarray:
        """The group of every row, in the table's row order; ``labels[g]`` instead of g when
        labels are given."""
        if labels is None:
            labels = np.arange(self.n_groups, dtype=np.int32)
        groups = np.empty(self.n_rows, dtype=labels.dtype)
        # Filled slots are the first sizes[g] of each row: row-major order is group by group.
        groups[self.members[self.members >= 0]] = np.repeat(labels, self.sizes)
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
    # Steps 1-2 and the row order of step 3 share nothing: the row order is drawn on a second
    # core meanwhile (numpy releases the GIL in both), from a generator of its own so that the
    # partition stays the same whatever the threads' timing.
    with ThreadPoolExecutor(max_workers=1) as worker:
        shuffled = worker.submit(_rows_by_value, values, frequencies,
                                 np.random.default_rng([_LAYOUT_SEED, 1]))
        held = _mixed_layout(frequencies, n_groups, np.random.default_rng(_LAYOUT_SEED),
                             mixing_rounds)
        rows = shuffled.result()
    # Group-major from here on. The places of each value, group by group (padding, the
    # largest code, last), take that value's rows in their shuffled order.
    held = np.ascontiguousarray(held.T)
    places = _sorted_by_value(held.reshape(-1),
                              np.append(frequencies, held.size - n_rows))
    members = np.empty(held.size, dtype=rows.dtype)
    members[places[:n_rows]] = rows
    members[places[n_rows:]] = -1
    sizes = held.shape[1] - (held[:, -1] == domain_size)
    return DistinctValueGroups(members=members.reshape(held.shape), values=held, sizes=sizes)


def _rows_by_value(values: np.ndarray, frequencies: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """The row ids sorted by value, those of each value in a random order."""
    rows = _sorted_by_value(values, frequencies)
    ends = np.cumsum(frequencies)
    # One shuffle per value present more than once: each is a small array, cheap to shuffle
    # in cache, where shuffling all rows and sorting them again would cost twice as much.
    for value in np.flatnonzero(frequencies > 1):
        rng.shuffle(rows[ends[value] - frequencies[value]:ends[value]])
    return rows


def _sorted_by_value(values: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """The positions of ``values`` ordered by value, stably (``np.argsort(values,
    kind="stable")``), as int32 where that fits: sorted chunk by chunk, each chunk's positions
    of a value put after those of the chunks before, so that no int64 array of all positions is
    ever held."""
    order = np.empty(len(values), dtype=np.int32 if len(values) < 2**31 else np.int64)
    following = np.cumsum(frequencies) - frequencies
    for start in range(0, len(values), _SORT_CHUNK):
        chunk = values[start:start + _SORT_CHUNK]
        local = np.argsort(chunk, kind="stable")
        counts = np.bincount(chunk, minlength=len(frequencies))
        # The k-th position of value v in this chunk goes to following[v] + k.
        targets = np.repeat(following - (np.cumsum(counts) - counts), counts)
        targets += np.arange(len(chunk))
        order[targets] = local + start
        following += counts
    return order


def _mixed_layout(frequencies: np.ndarray, n_groups: int, rng: np.random.Generator,
                  rounds: int) -> np.ndarray:
    """The values of the basic layout, mixed: ``held[j, g]`` is the value in place j of group
    g (slot-major, so that every step of the mixing is a contiguous pass).

    Padding (a value no row has, the domain size) fills the last places of the groups that take
    one row less; it never moves, so ``held[-1]`` says which groups those are.
    """
    domain_size = len(frequencies)
    n_rows = int(frequencies.sum())
    width = -(-n_rows // n_groups)
    counts = np.append(frequencies, width * n_groups - n_rows)
    held = np.repeat(np.arange(domain_size + 1, dtype=code_dtype(domain_size + 1)), counts)
    # The groups in random order, so that the pairings of the rounds below are random too
    # (``take`` keeps the rows contiguous, where fancy indexing would interleave them).
    held = np.take(held.reshape(width, n_groups), rng.permutation(n_groups), axis=1)
    _mix(held, held[-1] != domain_size, rng, rounds)
    return held


def _mix(held: np.ndarray, full: np.ndarray, rng: np.random.Generator, rounds: int) -> None:
    """Swap members between paired groups, in place, keeping every group distinct.

    ``held``: the values, slot-major; ``full``: the groups without padding. Round t pairs group
    i of the first half with group (i + shift_t) mod half of the second half, for a random
    shift, and draws one member of each group uniformly.
    """
    width, n_groups = held.shape
    half = n_groups // 2
    if half == 0:
        return
    sizes = np.where(full, width, width - 1)
    for _ in range(rounds):
        offset = int(rng.integers(0, n_groups - 2 * half + 1))
        shift = int(rng.integers(0, half))
        # Pair i joins groups offset + i and offset + half + (i + shift) mod half: the pairs
        # before and after i = half - shift each join two contiguous ranges of groups.
        wrap = half - shift
        for start in [*range(0, wrap, _PAIRS_PER_STEP), *range(wrap, half, _PAIRS_PER_STEP)]:
            pairs = min(_PAIRS_PER_STEP, (wrap if start < wrap else half) - start)
            first = slice(offset + start, offset + start + pairs)
            second = slice(offset + half + (start + shift) % half,
                           offset + half + (start + shift) % half + pairs)
            _swap(held[:, first], held[:, second], _draw_slots(rng, sizes[first], width),
                  _draw_slots(rng, sizes[second], width))


def _draw_slots(rng: np.random.Generator, sizes: np.ndarray, width: int) -> np.ndarray:
    """One member of each group drawn uniformly, as its slot; groups have ``width`` or
    ``width - 1`` members (``sizes``).

    A slot is u mod (the group's size) for u uniform on 0 .. span - 1, where span is a multiple
    of both sizes: exactly uniform, one byte per draw for widths up to 16.
    """
    if (sizes == width).all():
        return rng.integers(0, width, size=len(sizes), dtype=code_dtype(width))
    span = width * (width - 1)
    dtype = code_dtype(span)
    return rng.integers(0, span, size=len(sizes), dtype=dtype) % sizes.astype(dtype)


def _swap(group_a: np.ndarray, group_b: np.ndarray, slot_a: np.ndarray,
          slot_b: np.ndarray) -> None:
    """Exchange, in place, the values in ``slot_a`` of each column of ``group_a`` and
    ``slot_b`` of the same column of ``group_b`` wherever neither group then holds a value
    twice (a column is a group, its values one per slot)."""
    places = np.arange(group_a.shape[0], dtype=slot_a.dtype)[:, None]
    drawn_a, drawn_b = slot_a == places, slot_b == places
    # One value per column is drawn: its masked maximum.
    value_a = (group_a * drawn_a).max(axis=0)
    value_b = (group_b * drawn_b).max(axis=0)
    # Equal values clash too (the group holding one holds the other).
    clash = (group_a == value_b).any(axis=0)
    clash |= (group_b == value_a).any(axis=0)
    change = (value_a ^ value_b) * ~clash
    group_a ^= drawn_a * change
    group_b ^= drawn_b * change
