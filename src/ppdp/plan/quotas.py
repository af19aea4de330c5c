"""Exact quotas of rows by keyed draws: which rows of each value get which label
(a sub-table of Perturbation Partitioning, a block of a group mechanism), the same for any
batching of the rows."""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ppdp.plan.keyed import KeyedStream
from ppdp.plan.rows import Pass, Taken
from ppdp.plan.sorted_search import GroupedSortedSearch


class QuotaAssignment:
    """Labels rows so that exactly ``counts[i, v]`` of the rows of value v get label i.

    The rows of each value are taken in a keyed random order, by the key (h, r) of row r, where
    h is the row's 64-bit draw from ``stream``; the first ``counts[0, v]`` get label
    0, the next ``counts[1, v]`` label 1, and so on. The order is found without sorting all rows:
    a first pass counts each value's rows in 2^b bins of h, a second collects the few rows of the
    bins where a label changes and finds there the key where it changes (its threshold); the
    kernel then labels a row by looking its draw up among its value's thresholds
    (`GroupedSortedSearch`). Any batching gives the same labels.

    The second pass is rarely needed: the draws are uniform, so the key where label i + 1
    starts among a value's n_v rows (position s) is the (s + 1)-th smallest of n_v uniforms,
    Beta(s + 1, n_v - s) distributed, and the first pass also collects the rows of the bins
    that hold its central 1 - 2 * 10^-6 (when those are few: `_PREDICTED_ROWS`). Only when a
    threshold falls outside them does the second pass run.

    ``value_of(codes)`` gives each row's value in ``0 .. m - 1`` (m = counts.shape[1]).
    """

    _MAX_CELLS = 1 << 22
    _COLLECTED_ROWS = 1 << 18
    _PREDICTED_ROWS = 1 << 22
    """Most rows the first pass collects in the bins predicted to hold thresholds (about 100
    MB); beyond, the second pass always runs (as with many labels: blocks of 10^9 rows)."""
    _MISSED = 1e-6

    def __init__(self, stream: KeyedStream, counts: np.ndarray,
                 value_of: Callable[[Mapping[str, np.ndarray]], np.ndarray],
                 columns: Sequence[str]) -> None:
        self.stream = stream
        self.counts = np.asarray(counts, dtype=np.int64)
        self.value_of = value_of
        self.columns = tuple(columns)
        labels, m = self.counts.shape
        self.label_dtype = np.min_scalar_type(max(labels - 1, 0))
        # Bins enough that the second pass collects about 2^18 rows (those of the bins where a
        # label changes: labels - 1 bins of a value's n_v / 2^b rows each), and no more: each
        # batch of the first pass adds up a histogram of every bin (2^22 bins: 10 ms a batch).
        bins_a_value = max(labels - 1, 1) * self.counts.sum() / self._COLLECTED_ROWS
        self._bin_bits = int(np.clip(math.ceil(math.log2(max(bins_a_value, 2))), 1,
                                     min(16, math.floor(math.log2(self._MAX_CELLS / m)))))
        self._binned = np.zeros(m << self._bin_bits, dtype=np.int64)
        self._boundary: dict[str, np.ndarray] = {}
        self._collecting = self._predicted_cells()
        self._search: GroupedSortedSearch | None = None
        self._label_of_slot = np.zeros(0, dtype=self.label_dtype)
        self._collected: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._thresholds: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._stage = 0
        self._lock = threading.Lock()

    # The two passes share update/finish: the first bins, the second collects.
    def update(self, start: int, codes: Mapping[str, np.ndarray]) -> None:
        values = np.asarray(self.value_of(codes), dtype=np.int64)
        draws = self.stream.raw(start, len(values))
        cells = (values << self._bin_bits) | (draws >> np.uint64(64 - self._bin_bits)) \
            .astype(np.int64)
        # Batches may come from two threads at once (`in_halves`): only adding up is locked.
        if self._stage == 0:
            binned = np.bincount(cells, minlength=len(self._binned))
            with self._lock:
                self._binned += binned
        if not self._collecting.size:
            return
        hit = self._collecting[cells]
        if hit.any():
            rows = np.flatnonzero(hit)
            found = (cells[rows], draws[rows], rows + start)
            with self._lock:
                self._collected.append(found)

    def taken(self) -> Taken:
        cells = np.flatnonzero(self._binned)
        if self._collected:
            collected = [np.concatenate(column) for column in zip(*self._collected, strict=True)]
        else:
            collected = [np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.int64)]
        return Taken(cells, self._binned[cells],
                     dict(zip(("cell", "key", "row"), collected, strict=True)))

    def merge(self, taken: Taken) -> None:
        with self._lock:
            if self._stage == 0:
                # A histogram's non-empty cells are distinct.
                self._binned[taken.cells] += taken.counts
            if len(taken.rows["row"]):
                self._collected.append((taken.rows["cell"], taken.rows["key"],
                                        taken.rows["row"]))

    def __getstate__(self) -> dict[str, Any]:
        # A copy (such as one a Spark task takes its batches into) has a lock of its own.
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def finish(self) -> None:
        if self._stage == 0:
            self._find_boundaries()
        else:
            self._find_thresholds()
        self._stage += 1

    @property
    def needed(self) -> bool:
        return self._stage == 0 or self._thresholds is None

    @property
    def passes(self) -> list[Pass]:
        """The passes this assignment may need (itself, twice: the second runs only when
        `needed`); none for a single label, which every row gets (its quotas are the rows of
        each value)."""
        return [self, self] if self.counts.shape[0] > 1 else []

    def _predicted_cells(self) -> np.ndarray:
        """Whether each bin is to be collected in the first pass: it holds the central
        1 - 2 * `_MISSED` of some threshold's distribution (see the class); none when those
        bins hold more than `_PREDICTED_ROWS` rows in all."""
        # Deferred: SciPy takes 0.3 s to import, which a command that counts from a release
        # (and imports this module with the release's) would pay for nothing.
        from scipy.special import betaincinv

        labels, m = self.counts.shape
        totals = self.counts.sum(axis=0)
        starts = np.cumsum(self.counts, axis=0)[:-1].T  # (m, labels - 1)
        value = np.repeat(np.arange(m), labels - 1)
        flat = starts.reshape(-1)
        inside = (flat > 0) & (flat < totals[value])
        value, flat = value[inside], flat[inside]
        bins = 1 << self._bin_bits
        # The Beta quantile from scipy.special: scipy.stats, which gives the same, takes
        # 0.6 s to import, a tenth of publishing 10^7 rows.
        first, last = (np.floor(betaincinv(flat + 1, totals[value] - flat, q) * bins)
                       .astype(np.int64).clip(0, bins - 1)
                       for q in (self._MISSED, 1 - self._MISSED))
        if np.sum((last - first + 1) * totals[value] / bins) > self._PREDICTED_ROWS:
            return np.zeros(0, dtype=bool)
        predicted = np.zeros(m << self._bin_bits, dtype=bool)
        for cell, end in zip((value << self._bin_bits) + first,
                             (value << self._bin_bits) + last + 1, strict=True):
            predicted[cell:end] = True
        return predicted

    def _find_boundaries(self) -> None:
        labels, m = self.counts.shape
        binned = self._binned.reshape(m, -1)
        totals = binned.sum(axis=1)
        if not np.array_equal(totals, self.counts.sum(axis=0)):
            raise ValueError("the quotas do not add up to the rows of each value")
        # Position where label i + 1 starts in each value's order, i = 0 .. labels - 2.
        starts = np.cumsum(self.counts, axis=0)[:-1].T  # (m, labels - 1)
        cumulative = np.cumsum(binned, axis=1)
        value = np.repeat(np.arange(m), labels - 1)
        flat = starts.reshape(-1)
        inside = (flat > 0) & (flat < totals[value])
        bins = np.array([np.searchsorted(cumulative[v], s, side="right")
                         for v, s in zip(value[inside], flat[inside], strict=True)],
                        dtype=np.int64)
        before = np.where(bins > 0, cumulative[value[inside], np.maximum(bins - 1, 0)], 0)
        cells = (value[inside] << self._bin_bits) | bins
        self._boundary = {"inside": inside, "value": value, "flat": flat, "cell": cells,
                          "offset": flat[inside] - before}
        self._binned = np.zeros(0, dtype=np.int64)
        if self._collecting.size and self._collecting[cells].all():
            # Every threshold lies in a bin the first pass collected: no second pass.
            self._find_thresholds()
            self._collecting = np.zeros(0, dtype=bool)
            return
        self._collected = []
        self._collecting = np.zeros(m << self._bin_bits, dtype=bool)
        self._collecting[cells] = True

    def _find_thresholds(self) -> None:
        labels, m = self.counts.shape
        boundary = self._boundary
        # A label that starts at position 0 starts before every row of its value; one that
        # starts after the last row, after every row of it.
        first = boundary["flat"] <= 0
        key = np.where(first, np.uint64(0), np.iinfo(np.uint64).max).astype(np.uint64)
        row = np.where(first, -1, np.iinfo(np.int64).max).astype(np.int64)
        if self._collected:
            cells, keys, rows = (np.concatenate(parts) for parts in zip(*self._collected,
                                                                        strict=True))
        else:
            cells = rows = np.zeros(0, dtype=np.int64)
            keys = np.zeros(0, dtype=np.uint64)
        order = np.lexsort((rows, keys, cells))
        cells, keys, rows = cells[order], keys[order], rows[order]
        where = np.flatnonzero(boundary["inside"])
        for index, cell, offset in zip(where, boundary["cell"], boundary["offset"], strict=True):
            begin = np.searchsorted(cells, cell, side="left")
            key[index], row[index] = keys[begin + offset], rows[begin + offset]
        offsets = np.arange(m + 1) * (labels - 1)
        self._thresholds = (key, row, offsets)
        # Each value's thresholds are sorted (by draw, then row id): searched value by value.
        self._search = GroupedSortedSearch([key[a:b] for a, b in itertools.pairwise(offsets)],
                                           side="left")
        self._label_of_slot = self._search.position.astype(self.label_dtype)
        self._collected = []

    def labels(self, start: int, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        """Each row's label (call after both passes)."""
        if self.counts.shape[0] == 1:
            return np.zeros(len(next(iter(codes.values()))) if codes else 0,
                            dtype=self.label_dtype)
        assert self._thresholds is not None, "run both passes first"
        keys_at, _, offsets = self._thresholds
        values = np.asarray(self.value_of(codes))
        draws = self.stream.raw(start, len(values))
        # The count of the row's value's thresholds with a draw below the row's.
        assert self._search is not None
        slots, searched = self._search.search(values, draws)
        label = self._label_of_slot[slots]
        if len(keys_at) and searched.size:
            # A draw equal to the next threshold's (rare: 64-bit draws) passes it when the row
            # id is not below the threshold's; only those rows are looked at again (a draw
            # equal to a threshold is among the few the search looked up).
            value = values[searched].astype(np.int64)
            at = offsets[value] + label[searched]
            tied = searched[(at < offsets[value + 1])
                            & (keys_at[np.minimum(at, len(keys_at) - 1)] == draws[searched])]
            if tied.size:
                label[tied] = self._past_ties(values[tied].astype(np.int64), draws[tied],
                                              tied + start, label[tied])
        return label

    def _past_ties(self, values: np.ndarray, keys: np.ndarray, rows: np.ndarray,
                   label: np.ndarray) -> np.ndarray:
        """Labels of rows whose key may equal thresholds of their value: each threshold with
        an equal key and a row id not above the row's is passed."""
        assert self._thresholds is not None
        keys_at, rows_at, offsets = self._thresholds
        while True:
            index = offsets[values] + label
            tied = index < offsets[values + 1]
            tied[tied] = keys_at[index[tied]] == keys[tied]
            tied[tied] = rows[tied] >= rows_at[index[tied]]
            if not tied.any():
                return label
            label[tied] += 1
