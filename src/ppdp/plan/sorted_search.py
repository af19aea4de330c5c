"""Where many values fall among a few sorted edges: numpy's searchsorted, through a table.

Kernels place every row's draw among a handful of edges (DBR's cumulative distribution, the
quota thresholds of `ppdp.plans.QuotaAssignment`). numpy's binary search costs 20-40 ns a value
there (branches it cannot predict, measured on 2^18 values against 15 and 200 edges); a table
indexed by a value's leading bits answers almost every value with one lookup (about 4 ns), and
sends the values of the few bins that hold an edge to the binary search. The answers are
numpy's, exactly.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

_BIN_BITS = 16
"""Bins of the table: 2^16 (256 KB of answers; a bin holds an edge for at most edges/2^16 of
uniform values)."""

_UNKNOWN = -1


class SortedSearch:
    """``np.searchsorted(edges, values, side)`` for many values: 64-bit unsigned values, or
    floats (most of them in [0, 1): values outside it are answered by the binary search)."""

    def __init__(self, edges: np.ndarray, side: Literal["left", "right"] = "left") -> None:
        self.edges = np.asarray(edges)
        self.side: Literal["left", "right"] = side
        bins = np.arange(1 << _BIN_BITS, dtype=np.uint64)
        first: np.ndarray  # each bin's first and last value, in the edges' type
        last: np.ndarray
        if self.edges.dtype == np.uint64:
            width = 64 - _BIN_BITS
            first = bins << np.uint64(width)
            last = first | np.uint64((1 << width) - 1)
        elif self.edges.dtype == np.float64:
            first = bins * 2.0 ** -_BIN_BITS
            last = np.nextafter((bins + 1) * 2.0 ** -_BIN_BITS, 0.0)
        else:
            raise TypeError(f"edges of type {self.edges.dtype} (uint64 or float64 expected)")
        below = np.searchsorted(self.edges, first, side="left")
        # A bin that holds no edge gives all its values the same answer, on either side: the
        # edges below it. The values of the others are searched.
        empty = np.searchsorted(self.edges, last, side="right") == below
        self._answers = np.where(empty, below, _UNKNOWN).astype(np.int64)
        if self.edges.dtype == np.float64:
            # Floats below 0, from 1 on, and NaN fall into the end bins: search them.
            self._answers[[0, -1]] = _UNKNOWN

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """Each value's position among the edges (int64), as `np.searchsorted` gives it."""
        return self.search(values)[0]

    def search(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each value's position among the edges, and the positions (in ``values``) of the
        values that were searched: every value equal to an edge is among them."""
        values = np.asarray(values)
        if values.dtype != self.edges.dtype:
            return (np.searchsorted(self.edges, values.astype(self.edges.dtype),
                                    side=self.side), np.arange(len(values)))
        if values.dtype == np.uint64:
            bins = (values >> np.uint64(64 - _BIN_BITS)).astype(np.intp)
        else:
            # fmax and fmin send NaN to bin 0 (clip would keep it NaN).
            with np.errstate(over="ignore"):
                scaled = values * float(1 << _BIN_BITS)
            bins = np.fmin(np.fmax(scaled, 0.0), float((1 << _BIN_BITS) - 1)).astype(np.intp)
        answers = self._answers[bins]
        unknown = np.flatnonzero(answers == _UNKNOWN)
        if unknown.size:
            answers[unknown] = np.searchsorted(self.edges, values[unknown], side=self.side)
        return answers, unknown


class GroupedSortedSearch:
    """``np.searchsorted(edges[g], value, side)`` for many (group g, 64-bit value) pairs:
    each group has its own sorted edges (the quota thresholds of each sensitive value, the
    perturbation outcomes of each sub-table).

    As `SortedSearch`, through a table: one row of 2^b bins of leading bits per group
    (b from 8 to 16, so that the table holds at most 2^21 bins, 8 MB), the few values of bins that
    hold an edge placed by a binary search among that bin's edges alone (vectorised, at
    most log2 of the most edges in a bin steps).

    Answers are *slots*: group g's answers ``0 .. len(edges[g])`` are slots
    ``base[g] .. base[g] + len(edges[g])``, so that one array indexed by slot can map each
    answer of each group to what it means (`position` gives the answer within the group).
    """

    _MAX_BINS = 1 << 21

    def __init__(self, edges: list[np.ndarray], side: Literal["left", "right"] = "left"
                 ) -> None:
        groups = len(edges)
        sizes = np.array([len(e) for e in edges], dtype=np.int64)
        self.edges = np.concatenate([np.asarray(e, dtype=np.uint64) for e in edges]) \
            if groups else np.zeros(0, dtype=np.uint64)
        self.side: Literal["left", "right"] = side
        starts = np.concatenate([[0], np.cumsum(sizes)])
        self.base = starts[:-1] + np.arange(groups)
        """Slot of each group's answer 0."""
        self.position = np.arange(int(sizes.sum()) + groups) - np.repeat(self.base, sizes + 1)
        """Each slot's answer within its group."""
        self._bits = int(np.clip(math.floor(math.log2(self._MAX_BINS / max(groups, 1))), 8,
                                 _BIN_BITS))
        group = np.repeat(np.arange(groups), sizes)
        if not _sorted_within(self.edges, group):
            raise ValueError("each group's edges must be sorted")
        cells = (group << self._bits) | (self.edges >> np.uint64(64 - self._bits)) \
            .astype(np.int64)
        in_cell = np.bincount(cells, minlength=groups << self._bits)
        # Position (in ``edges``) of each bin's first edge, or of the first edge after it.
        self._first = np.cumsum(in_cell) - in_cell
        self._count = in_cell
        # A bin that holds no edge gives all its values one answer: its group's edges below.
        cell_group = np.arange(groups << self._bits) >> self._bits
        self._answers = np.where(in_cell == 0, self._first - starts[cell_group]
                                 + self.base[cell_group], _UNKNOWN).astype(np.int32)

    def search(self, groups: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each (group, value)'s slot, and the positions of the values that were searched:
        every value equal to an edge of its group is among them."""
        values = np.asarray(values, dtype=np.uint64)
        cells = np.left_shift(groups, self._bits, dtype=np.intp)
        cells |= (values >> np.uint64(64 - self._bits)).astype(np.intp)
        answers = self._answers[cells]
        unknown = np.flatnonzero(answers == _UNKNOWN)
        if unknown.size:
            cell, value = cells[unknown], values[unknown]
            low = self._first[cell]
            high = low + self._count[cell]
            # Binary search within each value's bin: the edges before low are below it, those
            # from high on above it.
            while True:
                open_ = low < high
                if not open_.any():
                    break
                middle = (low + high) // 2
                edge = self.edges[np.minimum(middle, len(self.edges) - 1)]
                below = edge < value if self.side == "left" else edge <= value
                low = np.where(open_ & below, middle + 1, low)
                high = np.where(open_ & ~below, middle, high)
            group = np.asarray(groups)[unknown]
            # Position in ``edges`` to slot: one more slot per group before it.
            answers[unknown] = low + group
        return answers, unknown


def _sorted_within(edges: np.ndarray, group: np.ndarray) -> bool:
    """Whether the edges of each group (consecutive) are in non-decreasing order."""
    same = group[1:] == group[:-1]
    return bool(np.all(edges[1:][same] >= edges[:-1][same]))
