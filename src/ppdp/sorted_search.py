"""Where many values fall among a few sorted edges: numpy's searchsorted, through a table.

Kernels place every row's draw among a handful of edges (DBR's cumulative distribution, the
quota thresholds of `ppdp.plans.QuotaAssignment`). numpy's binary search costs 20-40 ns a value
there (branches it cannot predict, measured on 2^18 values against 15 and 200 edges); a table
indexed by a value's leading bits answers almost every value with one lookup (about 4 ns), and
sends the values of the few bins that hold an edge to the binary search. The answers are
numpy's, exactly.
"""

from __future__ import annotations

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
