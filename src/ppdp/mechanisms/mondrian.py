"""Mondrian multidimensional generalization (LeFevre, DeWitt and Ramakrishnan, "Mondrian
multidimensional k-anonymity", ICDE 2006), strict partitioning, with optional l-diversity of
one of two kinds; the generalization baseline the ambiguity paper compares with (Section 8).

* distinct (Machanavajjhala et al. 2006): every class holds at least l distinct sensitive
  values;
* frequency (Xiao and Tao, "Anatomy", VLDB 2006, their l-diverse partition): no sensitive
  value makes up more than 1/l of a class, so that an individual's association with a
  sensitive value, given its presence, is at most 1/l (the ambiguity paper's beta-association
  with beta = 1/l, Theorem 5.2).

Mondrian cuts the rows top-down: a partition is cut at the median of the quasi-identifier with
the widest normalised range, and the cut is kept when both halves hold at least k rows (and,
for l >= 2, are l-diverse); a partition that no attribute can cut becomes an equivalence
class. Each class publishes, per quasi-identifier, one generalized value covering the values
of its rows.

Every quasi-identifier is cut in a total order of its values: the depth-first order of its
hierarchy when one is given (``ppdp.hierarchy``), else the order of its domain (its codes),
which is numeric for numbers, False before True for booleans, the declared order for ordered
text (an ordered categorical) and alphabetical for other text. A class is generalized to the
lowest hierarchy node over its range (that node covers every value between the ends), to the
range ``[lo, hi]`` of a number, of ordered text or of ISO dates (chronological as text), or to
the set ``{a, b}`` of the other values it holds (text, booleans).

The recursion runs level by level over all open partitions at once: their rows stay contiguous
in one permutation, ranges are ``reduceat`` reductions, the medians come from one sort of
``partition * R + rank`` per attempted dimension (or, while the partitions are few, from a
histogram of those keys), and cut partitions are split by a stable counting sort, so a level
costs a few passes over the rows and no Python loop runs per row or per partition.

A source larger than memory (``Mondrian.publish_source``) is cut the same way in two stages.
While a partition holds more than `LOCAL_ROWS` rows, its cut is decided from its histograms
(counts by rank per quasi-identifier; for l >= 2, the counts of each sensitive value below,
at and above each median), gathered for all open partitions of a level in one pass over the
source, each row finding its partition by descending the cuts made so far. One more pass spills
the rows of every smaller partition to a file of its own, and each is partitioned in memory as
above. Both stages decide a cut with the same function (`_choose_cuts`), and a partition's cuts
depend on its rows alone, so the classes are those of the in-memory recursion. Generalized
values are numbered in a canonical order (`_Covers`), whatever the order the classes are found
in.

Rows are published in a keyed random order (stream ``"mondrian"`` of `ppdp.keyed`, by row id)
and written in parts of that order (`ppdp.plans`), so that ``publish(table).save(directory)``
and ``publish_source`` write the same files from the same ``random_state``.

Estimation assumes values uniform over each class's generalized value (over the domain values
it covers) and independent between attributes inside a class (see ``group_product``).
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.errors import InfeasibleError, SchemaError
from ppdp.guarantees import GeneralizationGuarantee, mondrian_guarantee
from ppdp.hierarchy import BoundHierarchy, Hierarchy
from ppdp.keyed import KeyedStream, make_key
from ppdp.mechanisms.ambiguity_groups import presence_probability
from ppdp.mechanisms.base import (
    Mechanism,
    Parameter,
    Progress,
    require_integer,
    require_sensitive,
    require_unit_interval,
)
from ppdp.plans import part_count, part_of, rank_order, split_parts
from ppdp.query import BoundQuery
from ppdp.randomness import RandomState
from ppdp.release import (
    Release,
    check_target,
    part_names,
    require_replaceable_release,
    rows_from_arrow,
    write_metadata,
    write_parquet,
)
from ppdp.sources import DEFAULT_BATCH_ROWS, Source, TableSource
from ppdp.storage import commit_directory, staged_directory
from ppdp.table import Column, Schema, Table, code_dtype

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ppdp.mechanisms.group_product import GroupProduct

ROWS = "rows"
LABEL = "label"
VALUE = "value"

HISTOGRAM_CELLS_PER_ROW = 2
"""Medians come from per-partition rank histograms while they have at most this many cells
per row (few partitions), else from sorting."""


DIVERSITIES = ("distinct", "frequency")
"""The kinds of l-diversity: at least l distinct sensitive values per class, or no sensitive
value in more than 1/l of a class's rows."""


def require_diversity(value: Any) -> str:
    """The kind of l-diversity, checked (one of `DIVERSITIES`)."""
    if value not in DIVERSITIES:
        raise ValueError(f"diversity must be 'distinct' or 'frequency', got {value!r}")
    return str(value)


def cover_file(position: int) -> str:
    """File stem of the covers of the quasi-identifier at ``position`` (0-based)."""
    return f"cover_{position + 1}"


# ---------------------------------------------------------------------------------------------
# Partitioning


def mondrian_partition(ranks: Sequence[np.ndarray], sensitive: np.ndarray, *, k: int,
                       l: int = 1,  # noqa: E741 - the usual symbol
                       n_ranks: Sequence[int] | None = None,
                       diversity: str = "distinct") -> np.ndarray:
    """The equivalence class of every row (ids ``0 .. classes - 1``, in input row order).

    Strict Mondrian (LeFevre et al. 2006, median cuts, Section 4) on ``ranks`` (one array per
    quasi-identifier: each row's position in that attribute's order, ``0 .. n_ranks - 1``;
    ``n_ranks`` defaults to the largest rank + 1). Each class holds at least ``k`` rows and,
    when ``l >= 2``, at least ``l`` distinct values of ``sensitive`` (``diversity="distinct"``)
    or no value of ``sensitive`` in more than 1/l of its rows (``"frequency"``).
    """
    return _partition(ranks, sensitive, k=k, l=l, n_ranks=n_ranks, diversity=diversity).classes


@dataclass(frozen=True)
class _Partition:
    """The classes of the rows, and each class's smallest and largest rank per attribute."""

    classes: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def n_classes(self) -> int:
        return self.low.shape[1]


def _partition(ranks: Sequence[np.ndarray], sensitive: np.ndarray, *, k: int, l: int,  # noqa: E741
               n_ranks: Sequence[int] | None = None, diversity: str = "distinct") -> _Partition:
    """``mondrian_partition`` with each class's rank ranges, after checking the input."""
    k = require_integer("k", k, 1)
    l = require_integer("l", l, 1)  # noqa: E741
    diversity = require_diversity(diversity)
    sensitive = np.asarray(sensitive)
    n_rows = len(sensitive)
    if not len(ranks):
        raise SchemaError("Mondrian needs at least one quasi-identifier")
    arrays = [np.asarray(r) for r in ranks]
    for array in arrays:
        if array.shape != (n_rows,) or (n_rows and array.dtype.kind not in "iu"):
            raise ValueError("ranks must be integer arrays, one value per row")
        if n_rows and array.min() < 0:
            raise ValueError("ranks must be non-negative")
    if n_ranks is None:
        n_ranks = [int(a.max()) + 1 if n_rows else 1 for a in arrays]
    if len(n_ranks) != len(arrays) or any(
            n_rows and int(a.max()) >= n for a, n in zip(arrays, n_ranks, strict=True)):
        raise ValueError("every rank must be below its attribute's n_ranks")
    if k > n_rows:
        raise InfeasibleError(f"k = {k} exceeds the number of rows ({n_rows}); k must be at "
                              f"most {n_rows}")
    codes, n_values = _compact(sensitive)
    counts = np.bincount(codes, minlength=n_values)
    if diversity == "frequency":
        # The table is the union of its classes: a value above 1/l of it is above 1/l of some
        # class. (There are rows: k >= 1 of them.)
        largest = int(counts.max())
        if largest * l > n_rows:
            raise InfeasibleError(f"l = {l} (frequency) allows a sensitive value in at most 1/{l} "
                                  f"of the rows, but the most frequent is in {largest} of "
                                  f"{n_rows}; l must be at most {n_rows // largest}")
    else:
        present = int(np.count_nonzero(counts))
        if l > present:
            raise InfeasibleError(f"l = {l} needs {l} distinct sensitive values but there are "
                                  f"{present}; l must be at most {present}")
    return _levels(arrays, [int(n) for n in n_ranks], codes, n_values, k, l, diversity)


def _compact(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Values as codes ``0 .. n - 1`` (kept as they are when already small integers)."""
    if values.dtype.kind in "iu" and (not len(values) or (
            values.min() >= 0 and values.max() < max(len(values), 1 << 16))):
        return values.astype(np.int64), int(values.max()) + 1 if len(values) else 1
    unique, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), len(unique)


def _levels(ranks: Sequence[np.ndarray], n_ranks: Sequence[int], sensitive: np.ndarray,
            n_sensitive: int, k: int, l: int, diversity: str) -> _Partition:  # noqa: E741
    """Top-down median cuts, all open partitions of a level at once."""
    n_rows = len(sensitive)
    widest = max(n_ranks)
    index = np.int32 if n_rows < 2**31 else np.int64
    classes = np.empty(n_rows, dtype=index)
    lows, highs = [], []
    n_classes = 0
    # The open partitions hold their rows contiguously, partition after partition: ``perm``
    # gives the input row, ``current`` its ranks (one record per row) and ``values`` its
    # sensitive value. They are carried along as the rows move, so every pass reads them in
    # order; gathering them from the input order at each level would be random access.
    perm = np.arange(n_rows, dtype=index)
    current = _rank_matrix(ranks, widest)
    values = sensitive.astype(code_dtype(n_sensitive)) if l >= 2 else None
    sizes = np.asarray([n_rows], dtype=np.int64)
    while len(sizes):
        count = len(sizes)
        starts = np.cumsum(sizes) - sizes
        part = np.repeat(np.arange(count, dtype=index), sizes)
        low = np.minimum.reduceat(current, starts, axis=0)
        high = np.maximum.reduceat(current, starts, axis=0)
        cut_dim, threshold = _choose_cuts(
            low, high, n_ranks, sizes, k, l, diversity,
            _row_medians(current, part, sizes, values, n_sensitive, widest, diversity))
        final = cut_dim < 0
        if final.any():
            in_final = final[part]
            class_id = (np.cumsum(final) - 1 + n_classes).astype(index)
            classes[perm[in_final]] = class_id[part[in_final]]
            lows.append(low[final])
            highs.append(high[final])
            n_classes += int(np.count_nonzero(final))
            if in_final.all():
                break
            kept = np.flatnonzero(~in_final)
            perm, current = perm[kept], _take(current, kept)
            if values is not None:
                values = values[kept]
        # Right side: rank above the threshold (the median for "<= m | > m", median - 1 for
        # "< m | >= m").
        cut = ~final
        side = (current[np.arange(len(perm)), np.repeat(cut_dim[cut], sizes[cut])]
                > np.repeat(threshold[cut], sizes[cut]))
        target, sizes = _split(side, sizes[cut])
        perm, current = _place(perm, target), _place(current, target)
        if values is not None:
            values = _place(values, target)
    return _Partition(classes, np.concatenate(lows).T.astype(np.int64),
                      np.concatenate(highs).T.astype(np.int64))


def _rank_matrix(ranks: Sequence[np.ndarray], widest: int) -> np.ndarray:
    """The ranks as one record per row (rows x attributes), in the narrowest code type."""
    return np.stack([r.astype(code_dtype(widest), copy=False) for r in ranks], axis=1)


MedianCounts = tuple[np.ndarray, np.ndarray, np.ndarray,
                     tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None]
"""Per tried partition: its median rank on the tried dimension, its rows below and at the
median, and (for l >= 2) the diversity of the left and right sides of cuts A and B
(`_side_diversity`)."""


def _choose_cuts(low: np.ndarray, high: np.ndarray, n_ranks: Sequence[int], sizes: np.ndarray,
                 k: int, l: int, diversity: str,  # noqa: E741
                 at_median: Callable[[np.ndarray, np.ndarray], MedianCounts]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """For each open partition the dimension it is cut on (-1: none) and the rank threshold
    above which a row goes right (LeFevre et al. 2006, Section 4, strict partitioning).

    ``low`` and ``high`` (partitions x attributes) are each partition's rank range;
    dimensions are tried in decreasing span normalised by the domain, each at its median
    (``at_median(tried partitions, their dimensions)``); a cut "<= m | > m" or "< m | >= m" is
    allowable when both sides hold at least k rows and, for l >= 2, are l-diverse: l distinct
    sensitive values (``diversity="distinct"``) or no sensitive value in more than 1/l of the
    side's rows (``"frequency"``). The in-memory recursion and the aggregated top levels both
    decide here.
    """
    scale = np.maximum(np.asarray(n_ranks, dtype=np.float64) - 1, 1)
    span = (high - low) / scale
    order = np.argsort(-span, axis=1, kind="stable")
    count = len(sizes)
    columns = np.arange(count)
    cut_dim = np.full(count, -1, dtype=np.int64)
    threshold = np.zeros(count, dtype=np.int64)
    pending = np.ones(count, dtype=bool)
    for attempt in range(order.shape[1]):
        dim = order[:, attempt]
        # Dimensions come in decreasing span: once it is 0, no later one can be cut either.
        pending &= span[columns, dim] > 0
        tried = np.flatnonzero(pending)
        if not len(tried):
            break
        median, below, at, sides = at_median(tried, dim[tried])
        above = sizes[tried] - below - at
        ok_a = (below + at >= k) & (above >= k)  # rank <= m | rank > m
        ok_b = (below >= k) & (at + above >= k)  # rank < m | rank >= m
        if l >= 2:
            assert sides is not None
            a_left, a_right, b_left, b_right = sides
            if diversity == "frequency":
                # The largest count of a value times l must not pass the side's size (integers:
                # a share compared with 1/l in floating point could round either way).
                ok_a &= (a_left * l <= below + at) & (a_right * l <= above)
                ok_b &= (b_left * l <= below) & (b_right * l <= at + above)
            else:
                ok_a &= (a_left >= l) & (a_right >= l)
                ok_b &= (b_left >= l) & (b_right >= l)
        cut = ok_a | ok_b
        chosen = tried[cut]
        cut_dim[chosen] = dim[chosen]
        threshold[chosen] = np.where(ok_a[cut], median[cut], median[cut] - 1)
        pending[chosen] = False
    return cut_dim, threshold


def _histogram_median(histogram: np.ndarray, sizes: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's median rank (the first whose running count passes size // 2) and its counts
    below and at the median, from counts by rank (partitions x ranks)."""
    through = np.cumsum(histogram, axis=1)
    median = np.count_nonzero(through <= (sizes // 2)[:, None], axis=1)
    positions = np.arange(len(sizes))
    at = histogram[positions, median]
    return median, through[positions, median] - at, at


def _row_medians(current: np.ndarray, part: np.ndarray, sizes: np.ndarray,
                 values: np.ndarray | None, n_values: int, widest: int, diversity: str
                 ) -> Callable[[np.ndarray, np.ndarray], MedianCounts]:
    """``at_median`` of `_choose_cuts` over the rows of a level (grouped by partition)."""
    count = len(sizes)

    def at_median(tried: np.ndarray, dim: np.ndarray) -> MedianCounts:
        if len(tried) == count:
            rows = None
            local = part
            rank = current[np.arange(len(part)), np.repeat(dim, sizes)]
        else:
            lookup = np.full(count, -1, dtype=part.dtype)
            lookup[tried] = np.arange(len(tried))
            local = lookup[part]
            rows = np.flatnonzero(local >= 0)
            local = local[rows]
            rank = current[rows, dim[local]]
        tried_sizes = sizes[tried]
        key_type = np.int32 if len(tried) * widest < 2**31 else np.int64
        key = local.astype(key_type) * key_type(widest) + rank
        if len(tried) * widest <= HISTOGRAM_CELLS_PER_ROW * len(key):
            # Few partitions: a histogram of ranks per partition gives the median without
            # sorting.
            histogram = np.bincount(key, minlength=len(tried) * widest).reshape(-1, widest)
            median, below, at = _histogram_median(histogram, tried_sizes)
        else:
            # Rows are grouped by partition, so sorting partition * R + rank sorts each
            # partition's ranks in place; its median is at start + size // 2.
            positions = np.arange(len(tried))
            tried_starts = np.cumsum(tried_sizes) - tried_sizes
            key.sort()
            median = key[tried_starts + tried_sizes // 2].astype(np.int64) - positions * widest
            bounds = (positions * widest + median).astype(key.dtype)
            first = np.searchsorted(key, bounds, side="left")
            below = first - tried_starts
            at = np.searchsorted(key, bounds, side="right") - first
        del key
        if values is None:
            return median, below, at, None
        row_median = median.astype(rank.dtype)[local]
        # 0: below the median, 1: at it, 2: above.
        category = (rank >= row_median).astype(np.int8) + (rank > row_median)
        cell = local.astype(np.int64) * 3 + category
        return median, below, at, _side_diversity(
            cell, values if rows is None else values[rows], len(tried), n_values, diversity)

    return at_median


def _place(array: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``array`` with row i moved to ``target[i]``."""
    if array.ndim == 2:
        # Moving each row as one opaque record is several times faster than a 2-d scatter.
        moved = _place(array.view(np.dtype((np.void, array.shape[1] * array.itemsize)))
                       .reshape(-1), target)
        return moved.view(array.dtype).reshape(array.shape)
    result = np.empty_like(array)
    result[target] = array
    return result


def _take(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The given rows of ``array`` (moved as opaque records when 2-d, see ``_place``)."""
    if array.ndim == 2:
        records = array.view(np.dtype((np.void, array.shape[1] * array.itemsize))).reshape(-1)
        return records[rows].view(array.dtype).reshape(-1, array.shape[1])
    return array[rows]


def _side_diversity(cell: np.ndarray, values: np.ndarray, count: int, n_values: int,
                    diversity: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The diversity of the left and right sides of cuts A (<= m | > m) and B (< m | >= m),
    per partition, from each row's cell ``partition * 3 + category``: the number of distinct
    sensitive values (``diversity="distinct"``) or the count of the most frequent one
    (``"frequency"``)."""
    if count * 3 * n_values <= max(4 * len(cell), 1 << 20):
        counts = np.bincount(cell * n_values + values,
                             minlength=count * 3 * n_values).reshape(count, 3, n_values)
        return _side_statistics(counts[:, 0], counts[:, 1], counts[:, 2], diversity)
    # Many partitions times many values: sort the (partition, category, value) triples
    # instead, counting their repeats.
    triples, repeats = np.unique(cell * n_values + values, return_counts=True)
    local, category = triples // (3 * n_values), (triples // n_values) % 3
    value = triples % n_values

    def by_side(right: np.ndarray) -> np.ndarray:
        keys, inverse = np.unique((local * 2 + right) * n_values + value, return_inverse=True)
        side = keys // n_values
        if diversity == "distinct":
            return np.bincount(side, minlength=2 * count).reshape(count, 2)
        # Each value's count on a side; keys are sorted, so a side's values are consecutive.
        totals = np.bincount(inverse.reshape(-1), weights=repeats).astype(np.int64)
        first = np.flatnonzero(np.diff(side, prepend=-1))
        largest = np.zeros(2 * count, dtype=np.int64)
        largest[side[first]] = np.maximum.reduceat(totals, first)
        return largest.reshape(count, 2)

    a, b = by_side(category == 2), by_side(category >= 1)
    return a[:, 0], a[:, 1], b[:, 0], b[:, 1]


def _side_statistics(below: np.ndarray, at: np.ndarray, above: np.ndarray, diversity: str
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The diversity of each side of cuts A and B (see `_side_diversity`), from the counts of
    each sensitive value below, at and above the median (partitions x values; for distinct
    l-diversity, booleans of which values occur do as well)."""
    def measure(side: np.ndarray) -> np.ndarray:
        return side.max(axis=1) if diversity == "frequency" else np.count_nonzero(side, axis=1)

    return measure(below + at), measure(above), measure(below), measure(at + above)


def _split(side: np.ndarray, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each row goes so that every partition (consecutive blocks of ``totals`` rows)
    becomes its left then its right child, in the same order within each child (a stable
    counting sort), and the children's sizes (left, right, left, right, ...)."""
    index = np.int32 if len(side) < 2**31 else np.int64
    starts = np.cumsum(totals) - totals
    right = np.add.reduceat(side, starts, dtype=np.int64)
    left = totals - right
    # A left row goes after the rows of earlier partitions and the left rows before it: its
    # position minus the right rows up to it, plus the right rows of earlier partitions. A
    # right row goes after all left rows up to its partition's and the right rows before it.
    # Per-partition offsets are repeated (rows are grouped) and the sums made in place, with
    # no branches: at 10^7 rows, temporaries and mispredictions cost more than arithmetic.
    rights = np.cumsum(side, dtype=index)
    target = np.arange(len(side), dtype=index)
    target -= rights
    target += np.repeat((np.cumsum(right) - right).astype(index), totals)
    rights += np.repeat((np.cumsum(left) - 1).astype(index), totals)
    rights -= target
    rights *= side
    target += rights
    return target, np.stack([left, right], axis=1).reshape(-1)


# ---------------------------------------------------------------------------------------------
# Generalized values


@dataclass(frozen=True)
class Generalized:
    """The generalized values of one quasi-identifier: a label per node and the codes each
    covers (``codes[indptr[j]:indptr[j + 1]]`` for node j, ascending)."""

    labels: tuple[str, ...]
    indptr: np.ndarray
    codes: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.labels)

    @property
    def cover_sizes(self) -> np.ndarray:
        return np.diff(self.indptr)

    def cover(self, node: int) -> np.ndarray:
        return self.codes[self.indptr[node]:self.indptr[node + 1]]

    def matrix(self, domain_size: int) -> sp.csr_array:
        """Nodes x domain, ``1 / |cover|`` on every covered value (uniform within a node)."""
        import scipy.sparse as sp  # at query time: publishing does not need it

        sizes = self.cover_sizes
        return sp.csr_array((np.repeat(1.0 / sizes, sizes), self.codes, self.indptr),
                            shape=(self.n_nodes, domain_size))

    @classmethod
    def from_covers(cls, labels: Sequence[str], covers: Sequence[np.ndarray]) -> Generalized:
        sizes = np.asarray([len(c) for c in covers], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        codes = (np.concatenate(covers).astype(np.int64) if covers
                 else np.zeros(0, dtype=np.int64))
        return cls(tuple(labels), indptr, codes)


def _value_label(value: Any) -> str:
    return str(value)


class _Covers:
    """The generalized values of one quasi-identifier's classes, gathered from any number of
    partitions and numbered in one canonical order, so that a release does not depend on the
    order its classes were found in.

    A class's value is its key: the lowest hierarchy node over its range (``level * size +
    node``), its range of codes (``low * size + high``) for a number, ordered text or dates,
    or else the set of codes its rows hold (an id per distinct set).
    """

    def __init__(self, column: Column, bound: BoundHierarchy | None) -> None:
        self.column = column
        self.bound = bound
        self.by_values = bound is None and not (
            column.kind in ("int", "float") or column.ordered or column.iso_dates)
        self._keys = np.zeros(0, dtype=np.int64)
        self._sets: dict[bytes, int] = {}
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None

    def of_partition(self, partition: _Partition, position: int, codes: np.ndarray
                     ) -> np.ndarray:
        """Each class's key; ``codes`` are the rows' codes of this attribute (at
        ``position`` among the quasi-identifiers), in the partition's row order."""
        pairs = (np.unique(partition.classes.astype(np.int64) * self.column.size + codes)
                 if self.by_values else None)
        return self.add(partition.low[position], partition.high[position], pairs)

    def add(self, low: np.ndarray, high: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
        """Each class's key, from its lowest and highest rank and, for a set, ``pairs``: the
        sorted distinct ``class * size + code`` of its rows."""
        if self.by_values:
            assert pairs is not None
            return self._set_keys(pairs, len(low))
        if self.bound is not None:
            keys = _hierarchy_keys(self.bound, low, high)
        else:
            keys = np.asarray(low, dtype=np.int64) * self.column.size + high
        self.add_keys(keys)
        return keys

    def add_keys(self, keys: np.ndarray) -> None:
        """Add the keys of classes found elsewhere (a hierarchy node or a range, see `add`)."""
        self._keys = np.union1d(self._keys, keys)

    def add_sets(self, sets: Iterable[bytes]) -> None:
        """Add the sets of classes found elsewhere, each as its sorted codes (64-bit) in
        bytes, as `sets` gives them."""
        for cover in sets:
            self._sets.setdefault(cover, len(self._sets))

    def sets(self) -> list[bytes]:
        """Every set added, as its sorted codes (64-bit) in bytes: a set's key is its
        position here."""
        return list(self._sets)

    def _set_keys(self, pairs: np.ndarray, n_classes: int) -> np.ndarray:
        size = self.column.size
        pair_class, pair_code = pairs // size, pairs % size
        counts = np.bincount(pair_class, minlength=n_classes)
        starts = np.cumsum(counts) - counts
        # Classes with equal sets are grouped through a 128-bit set hash (XOR of fixed random
        # words per value), then checked value by value; after a collision every class is
        # looked up on its own. The exact set is what names it.
        words = np.random.default_rng(20060403).integers(
            0, np.iinfo(np.int64).max, size=(2, size), dtype=np.int64, endpoint=True)
        hashes = np.stack([np.bitwise_xor.reduceat(w[pair_code], starts) for w in words],
                          axis=1)
        _, first, group = np.unique(hashes, axis=0, return_index=True, return_inverse=True)
        group = group.reshape(-1)
        representative = first[group]
        offsets = np.arange(len(pairs)) - starts[pair_class]
        if not (np.array_equal(counts, counts[representative]) and np.array_equal(
                pair_code, pair_code[starts[representative[pair_class]] + offsets])):
            first = group = np.arange(n_classes)
        ids = np.asarray([self._sets.setdefault(pair_code[start:start + count].tobytes(),
                                                len(self._sets))
                          for start, count in zip(starts[first].tolist(),
                                                  counts[first].tolist(), strict=True)],
                         dtype=np.int64)
        return ids[group]

    def finish(self) -> Generalized:
        """The generalized values of every class added, labelled, in canonical order (keys
        ascending; sets by their sorted codes)."""
        levels: list[int] | None = None
        if self.by_values:
            sets = [np.frombuffer(cover, dtype=np.int64) for cover in self._sets]
            order = sorted(range(len(sets)), key=lambda i: sets[i].tolist())
            covers = [sets[i] for i in order]
            labels = [_set_label(self.column, cover) for cover in covers]
            keys = np.arange(len(sets), dtype=np.int64)
        elif self.bound is not None:
            keys = self._keys
            labels, covers, levels = _hierarchy_nodes(self.bound, keys)
        else:
            keys = self._keys
            labels, covers = _range_nodes(self.column, keys)
        remap, generalized = _distinct_labels(labels, covers, levels)
        if self.by_values:
            node = np.empty(len(order), dtype=np.int64)
            node[order] = remap
            remap = node
        self._lookup = (keys, remap)
        return generalized

    def nodes(self, keys: np.ndarray) -> np.ndarray:
        """The generalized value (node) of each key, once ``finish`` has run."""
        assert self._lookup is not None
        known, node = self._lookup
        return node[np.searchsorted(known, keys)].astype(np.int32)


def _hierarchy_keys(bound: BoundHierarchy, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Each class's lowest common ancestor of its lowest- and highest-ranked values, as
    ``level * size + node`` (every level has at most one node per code)."""
    code_by_rank = np.argsort(bound.rank)
    first, last = code_by_rank[low], code_by_rank[high]
    single = first == last
    level = np.where(single, 0, -1)
    node = np.where(single, first, -1)
    for depth, ids in enumerate(bound.nodes, start=1):
        common = (level < 0) & (ids[first] == ids[last])
        level[common] = depth
        node[common] = ids[first][common]
    return (level * bound.column.size + node).astype(np.int64)


def _hierarchy_nodes(bound: BoundHierarchy, keys: np.ndarray
                     ) -> tuple[list[str], list[np.ndarray], list[int]]:
    """The label, cover and level of each hierarchy node key."""
    column = bound.column
    labels, covers, levels = [], [], []
    for key in keys.tolist():
        depth, index = divmod(key, column.size)
        labels.append(_value_label(column.domain[index]) if depth == 0
                      else bound.labels[depth - 1][index])
        covers.append(bound.cover(depth, index))
        levels.append(depth)
    return labels, covers, levels


def _range_nodes(column: Column, keys: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    """The label ``[lo, hi]`` and cover of each range key of a numeric, ordered or date
    column (codes follow the column's order, so a range of codes is a range of values)."""
    labels, covers = [], []
    for key in keys.tolist():
        lo, hi = divmod(key, column.size)
        labels.append(_value_label(column.domain[lo]) if lo == hi
                      else f"[{column.domain[lo]}, {column.domain[hi]}]")
        covers.append(np.arange(lo, hi + 1, dtype=np.int64))
    return labels, covers


def _set_label(column: Column, cover: np.ndarray) -> str:
    """The label of a set of values: the value alone, or ``{a, b}``."""
    values = [column.domain[c] for c in cover.tolist()]
    return (_value_label(values[0]) if len(values) == 1
            else "{" + ", ".join(map(str, values)) + "}")


def _distinct_labels(labels: list[str], covers: list[np.ndarray],
                     levels: Sequence[int] | None) -> tuple[np.ndarray, Generalized]:
    """Merge nodes with the same label and cover; rename a label that would denote two
    different covers (with its hierarchy level, then a counter), keeping the first as is.
    Returns the merged node of each input node, and the merged nodes."""
    merged: dict[tuple[str, bytes], int] = {}
    remap = np.empty(len(labels), dtype=np.int64)
    kept: list[int] = []
    for j, (label, cover) in enumerate(zip(labels, covers, strict=True)):
        key = (label, cover.tobytes())
        if key not in merged:
            merged[key] = len(kept)
            kept.append(j)
        remap[j] = merged[key]
    names = [labels[j] for j in kept]
    repeated = Counter(names)
    used = set(names)
    seen: set[str] = set()
    for position, j in enumerate(kept):
        label = names[position]
        if repeated[label] > 1 and label in seen:
            base = f"{label} (level {levels[j]})" if levels is not None else label
            candidate, counter = base, 1
            while candidate in used:
                counter += 1
                candidate = f"{base} #{counter}"
            names[position] = candidate
            used.add(candidate)
        seen.add(label)
    return remap, Generalized.from_covers(names, [covers[j] for j in kept])


# ---------------------------------------------------------------------------------------------
# The mechanism


STREAM = "mondrian"
"""The keyed stream of the release order: rows are published in the order of their 64-bit
draws (ties by row id), which is the only random choice Mondrian makes."""


@dataclass(frozen=True)
class _Setup:
    """A checked input's quasi-identifiers, sensitive column and bound hierarchies."""

    schema: Schema
    sensitive: str
    bound: dict[str, BoundHierarchy]

    @property
    def quasi(self) -> tuple[str, ...]:
        return self.schema.quasi_identifiers

    @property
    def n_ranks(self) -> list[int]:
        return [self.schema[name].size for name in self.quasi]

    @property
    def published(self) -> Schema:
        return self.schema.select([*self.quasi, self.sensitive])

    def parameters(self, k: int, l: int, diversity: str) -> dict[str, Any]:  # noqa: E741
        return {"k": k, "l": l, "diversity": diversity,
                "hierarchies": [n for n in self.quasi if n in self.bound]}

    def ranks(self, codes: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return _ranks(self.quasi, self.bound, codes)

    def covers(self) -> dict[str, _Covers]:
        return {name: _Covers(self.schema[name], self.bound.get(name)) for name in self.quasi}


def _ranks(quasi: Sequence[str], bound: Mapping[str, BoundHierarchy],
           codes: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Each quasi-identifier's rank per row, from its codes."""
    ranks = []
    for name in quasi:
        values = codes[name]
        # A lookup table of the codes' own width keeps the per-row ranks small.
        ranks.append(bound[name].rank.astype(values.dtype)[values] if name in bound
                     else values)
    return ranks


@dataclass(frozen=True)
class _Anonymized:
    """A table's classes and the generalized value of each class per quasi-identifier."""

    setup: _Setup
    partition: _Partition
    generalized: dict[str, Generalized]
    node_of_class: dict[str, np.ndarray]


class Mondrian(Mechanism):
    """Mondrian: strict multidimensional median partitioning into k-anonymous (and
    l-diverse, distinct or frequency) classes, published as generalized rows."""

    name = "mondrian"
    summary = ("Mondrian: k-anonymous (optionally l-diverse) multidimensional generalization "
               "of the quasi-identifiers")
    parameters = (
        Parameter("k", int, "anonymity k (>= 1): rows sharing each generalized combination"),
        Parameter("l", int, "l-diversity (>= 1; 1 = none) of the kind 'diversity' names",
                  default=1),
        Parameter("diversity", str, "'distinct' (at least l distinct sensitive values per "
                                    "class) or 'frequency' (no sensitive value in more than "
                                    "1/l of a class's rows: association at most 1/l)",
                  default="distinct"),
    )

    def __init__(self, *, k: int, l: int = 1,  # noqa: E741 - the usual symbol
                 diversity: str = "distinct",
                 hierarchies: Mapping[str, Hierarchy] | None = None) -> None:
        self.k = require_integer("k", k, 1)
        self.l = require_integer("l", l, 1)
        self.diversity = require_diversity(diversity)
        hierarchies = dict(hierarchies or {})
        for column, hierarchy in hierarchies.items():
            if not isinstance(hierarchy, Hierarchy):
                raise ValueError(f"the hierarchy for {column!r} must be a Hierarchy "
                                 f"(ppdp.hierarchy.read_hierarchy), got "
                                 f"{type(hierarchy).__name__}")
        self.hierarchies = hierarchies

    def guarantee(self) -> GeneralizationGuarantee:
        return mondrian_guarantee(k=self.k, l=self.l, diversity=self.diversity)

    def ranks(self, table: Table) -> list[np.ndarray]:
        """Each quasi-identifier's rank per row: hierarchy depth-first order when one is
        given, else the domain order (numeric for numbers, the declared order for ordered
        text, alphabetical for other text)."""
        return _ranks(table.schema.quasi_identifiers, self._bind(table.schema), table.codes)

    def partition(self, table: Table) -> np.ndarray:
        """The equivalence class of every row, in the table's row order."""
        return self._anonymize(table).partition.classes

    def generalize(self, table: Table) -> pa.Table:
        """The generalized rows in the table's own order (for the data holder's checks;
        ``publish`` shuffles them)."""
        result = self._anonymize(table)
        classes = result.partition.classes
        sensitive = result.setup.sensitive
        columns = {name: pa.array(list(result.generalized[name].labels), pa.string()).take(
            pa.array(result.node_of_class[name][classes])) for name in result.setup.quasi}
        columns[sensitive] = pa.array(list(table.schema[sensitive].domain)).take(
            pa.array(table.codes[sensitive].astype(np.int32)))
        return pa.table(columns)

    def publish(self, table: Table, *, random_state: RandomState = None) -> MondrianRelease:
        self.check_memory(table)
        result = self._anonymize(table)
        setup = result.setup
        draws = KeyedStream(make_key(random_state), STREAM).raw(0, table.n_rows)
        order = rank_order(draws)
        classes = result.partition.classes[order]
        rows = {name: result.node_of_class[name][classes] for name in setup.quasi}
        del classes
        release = MondrianRelease(setup.published,
                                  setup.parameters(self.k, self.l, self.diversity),
                                  table.n_rows, result.generalized, rows,
                                  table.codes[setup.sensitive][order])
        parts = part_count(table.n_rows)
        release.part_rows = tuple(
            int(n) for n in np.bincount(part_of(draws, parts), minlength=parts))
        return release

    def publish_source(self, source: Source, directory: str | os.PathLike[str], *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       overwrite: bool = False, progress: Progress | None = None) -> Path:
        """Publish a source that need not fit in memory into a release directory: the same
        files as ``publish(table).save(directory)`` with the same ``random_state``.

        Partitions of more than `LOCAL_ROWS` rows are cut from histograms, one pass over the
        source per level (two for l >= 2 when the counts by sensitive value are too many, see
        `JOINT_CELLS`); then one pass spills the rows of each smaller partition to a file of
        its own, and each is partitioned in memory (`_publish_hybrid`).
        ``progress(stage, done, total)`` is told how far each pass has got.
        """
        target = Path(directory)
        check_target(target, overwrite)
        return _publish_hybrid(self._setup(source), self.k, self.l, self.diversity, source,
                               target, key=make_key(random_state),
                               batch_rows=batch_rows or DEFAULT_BATCH_ROWS, overwrite=overwrite,
                               report=progress or _no_progress)

    def _bind(self, schema: Schema) -> dict[str, BoundHierarchy]:
        unknown = sorted(set(self.hierarchies) - set(schema.names))
        if unknown:
            raise SchemaError(f"hierarchies given for columns not in the table: {unknown} "
                              f"(columns: {', '.join(schema.names)})")
        return {name: self.hierarchies[name].bind(schema[name])
                for name in schema.quasi_identifiers if name in self.hierarchies}

    def _setup(self, data: Table | Source) -> _Setup:
        """The input's roles and hierarchies, checked, and k and l checked against it."""
        (sensitive,) = require_sensitive(data, "Mondrian", exactly_one=True)
        if not data.schema.quasi_identifiers:
            raise SchemaError("Mondrian needs at least one quasi-identifier column to "
                              "generalize")
        bound = self._bind(data.schema)
        if self.k > data.n_rows:
            raise InfeasibleError(f"k = {self.k} exceeds the number of rows "
                                  f"({data.n_rows}); k must be at most {data.n_rows}")
        source = TableSource(data) if isinstance(data, Table) else data
        counts = source.histogram([sensitive])
        if self.diversity == "frequency":
            # Every class meeting the bound means the whole table meets it (it is their union).
            code = int(np.argmax(counts))
            largest = int(counts[code])
            if largest * self.l > data.n_rows:
                value = data.schema[sensitive].domain[code]
                raise InfeasibleError(
                    f"l = {self.l} (frequency) allows each value of {sensitive!r} in at most "
                    f"1/{self.l} = {1 / self.l:.4g} of a class, but {value!r} makes up "
                    f"{largest / data.n_rows:.4g} of the table ({largest} of {data.n_rows} "
                    f"rows); l must be at most {data.n_rows // largest}")
        else:
            present = int(np.count_nonzero(counts))
            if self.l > present:
                raise InfeasibleError(f"l = {self.l} needs {self.l} distinct values of "
                                      f"{sensitive!r} in every class, but the table holds "
                                      f"{present}; l must be at most {present}")
        return _Setup(data.schema, sensitive, bound)

    def _anonymize(self, table: Table) -> _Anonymized:
        setup = self._setup(table)
        partition = _partition(setup.ranks(table.codes), table.codes[setup.sensitive], k=self.k,
                               l=self.l, n_ranks=setup.n_ranks, diversity=self.diversity)
        generalized, node_of_class = {}, {}
        for position, (name, covers) in enumerate(setup.covers().items()):
            keys = covers.of_partition(partition, position, table.codes[name])
            generalized[name] = covers.finish()
            node_of_class[name] = covers.nodes(keys)
        return _Anonymized(setup, partition, generalized, node_of_class)


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


# ---------------------------------------------------------------------------------------------
# Sources larger than memory

LOCAL_ROWS = 10_000_000
"""A partition of at most this many rows is partitioned in memory (`_partition`, about 1 GB of
working memory per 10^7 rows); larger ones are cut from histograms gathered over the source."""

JOINT_CELLS = 1 << 24
"""For l >= 2, the histogram pass of a level also counts ranks by sensitive value while that
takes at most this many cells (partitions x ranks of every attribute x values), so one pass
decides the level; beyond, a second pass counts the values around the medians
(`_values_around`)."""

_DRAW, _ROW, _SENSITIVE = "draw", "row", "s"


def _column(position: int) -> str:
    """Spill file column of the quasi-identifier at ``position`` (names of the input's columns
    could clash with the spill's own)."""
    return f"q{position}"


@dataclass
class _Top:
    """The partitions cut by aggregation, as a tree: partition j's rows go to its right child
    when their rank on ``dim[j]`` exceeds ``threshold[j]``; a partition not cut is its own
    child. ``leaves`` are the partitions finished in memory (with their rows), ``classes``
    those of more than `LOCAL_ROWS` rows that no cut divides, with their keys (`_Covers`)."""

    dim: list[int] = field(default_factory=lambda: [0])
    threshold: list[int] = field(default_factory=lambda: [0])
    child: list[list[int]] = field(default_factory=lambda: [[0, 0]])
    depth: int = 0
    leaves: list[int] = field(default_factory=list)
    leaf_rows: list[int] = field(default_factory=list)
    classes: dict[int, np.ndarray] = field(default_factory=dict)

    def cut(self, node: int, dim: int, threshold: int) -> tuple[int, int]:
        """Cut a partition; its two new children (left, right)."""
        children = (len(self.dim), len(self.dim) + 1)
        for child in children:
            self.dim.append(0)
            self.threshold.append(0)
            self.child.append([child, child])
        self.dim[node], self.threshold[node] = dim, threshold
        self.child[node] = list(children)
        return children

    def descend(self, ranks: np.ndarray) -> np.ndarray:
        """The partition (a leaf of the tree) of each row, from its ranks (rows x attributes)."""
        dim, threshold = np.asarray(self.dim), np.asarray(self.threshold)
        child = np.asarray(self.child, dtype=np.int32).reshape(-1)
        node = np.zeros(len(ranks), dtype=np.int32)
        # Gathering from the flat ranks by row * attributes + dimension is faster than 2-d
        # indexing; it runs once per level of the tree for every row of every pass.
        flat = ranks.reshape(-1)
        first = np.arange(0, ranks.size, ranks.shape[1], dtype=np.int64)
        for _ in range(self.depth):
            right = flat[first + dim[node]] > threshold[node]
            node = child[2 * node + right]
        return node


def _publish_hybrid(setup: _Setup, k: int, l: int, diversity: str,  # noqa: E741
                    source: Source, target: Path, *, key: int, batch_rows: int,
                    overwrite: bool, report: Progress) -> Path:
    """Mondrian over a source, written as a release: the partitions of more than `LOCAL_ROWS`
    rows cut from histograms (`_cut_top`), the rows of each smaller one spilled (Arrow IPC) and
    partitioned in memory, the rows spilled again by part of the release order, and each part
    written in that order, as `Mondrian.publish` orders them.

    Memory holds a batch, the histograms of one level, one leaf partition and one part.
    """
    covers = setup.covers()
    top = _cut_top(setup, k, l, diversity, source.n_rows, covers,
                   _SourceCounts(setup, source, batch_rows, report), LOCAL_ROWS)
    quasi = setup.quasi
    n_rows = source.n_rows
    parts = part_count(n_rows)
    draw_fields = [pa.field(_SENSITIVE, pa.from_numpy_dtype(setup.schema[setup.sensitive].dtype)),
                   pa.field(_DRAW, pa.uint64()), pa.field(_ROW, pa.int64())]
    leaf_schema = pa.schema([*(pa.field(_column(d), pa.from_numpy_dtype(setup.schema[n].dtype))
                               for d, n in enumerate(quasi)), *draw_fields])
    part_schema = pa.schema([*(pa.field(_column(d), pa.int64()) for d in range(len(quasi))),
                             *draw_fields])
    # The spill files have a staging directory of their own, never committed: it is removed
    # whatever happens, and the release's staging directory holds only the release.
    with staged_directory(target) as staging, staged_directory(target) as spill:
        with _SpillFiles(spill, "part", part_schema) as by_part:
            with _SpillFiles(spill, "leaf", leaf_schema) as by_leaf:
                _spill(setup, source, batch_rows, top, key, by_leaf, by_part, parts, report)
            done, total = 0, sum(top.leaf_rows)
            for position in range(len(top.leaves)):
                done += _finish_leaf(setup, k, l, diversity, covers, by_leaf.take(position),
                                     by_part, parts)
                report("partitioning", done, total)
        generalized = {name: c.finish() for name, c in covers.items()}
        names = part_names(ROWS, parts)
        digests = {}
        for index, name in enumerate(names):
            digests[name] = write_parquet(staging / name, _part_table(
                setup, covers, generalized, by_part.take(index)))
            report("writing parts", index + 1, parts)
        _write_release(staging, setup, k, l, diversity, n_rows, generalized, digests)
        commit_directory(staging, target, overwrite=overwrite,
                         replaceable=require_replaceable_release)
    return target


def _write_release(staging: Path, setup: _Setup, k: int, l: int,  # noqa: E741
                   diversity: str, n_rows: int, generalized: Mapping[str, Generalized],
                   digests: dict[str, str]) -> None:
    """Beside the parts of the rows (already written, their digests in ``digests``), the
    generalized values' tables, then ``release.json``."""
    names = part_names(ROWS, part_count(n_rows))
    files: dict[str, str | list[str]] = {ROWS: names[0] if len(names) == 1 else names}
    for stem, table in _cover_tables(setup.published, generalized).items():
        files[stem] = f"{stem}.parquet"
        digests[files[stem]] = write_parquet(staging / files[stem], table)
    write_metadata(staging, MondrianRelease.mechanism, setup.parameters(k, l, diversity),
                   n_rows, setup.published, files, digests)


def _leaf_keys(setup: _Setup, k: int, l: int, diversity: str,  # noqa: E741
               covers: Mapping[str, _Covers], leaf: pa.Table) -> dict[str, np.ndarray]:
    """Partition a leaf's rows (codes in columns `_column` and `_SENSITIVE`) in memory: each
    row's class keys (`_Covers`), by spill column."""
    quasi = setup.quasi
    codes = {name: leaf.column(_column(d)).to_numpy() for d, name in enumerate(quasi)}
    partition = _partition(setup.ranks(codes), leaf.column(_SENSITIVE).to_numpy(), k=k, l=l,
                           n_ranks=setup.n_ranks, diversity=diversity)
    return {_column(d): covers[name].of_partition(partition, d, codes[name])[
        partition.classes] for d, name in enumerate(quasi)}


def _finish_leaf(setup: _Setup, k: int, l: int, diversity: str,  # noqa: E741
                 covers: Mapping[str, _Covers], leaf: pa.Table | None, by_part: _SpillFiles,
                 parts: int) -> int:
    """Partition a spilled leaf in memory and spill its rows, with their classes' keys, by
    part of the release order; the number of its rows."""
    assert leaf is not None
    columns = _leaf_keys(setup, k, l, diversity, covers, leaf)
    values = leaf.column(_SENSITIVE).to_numpy()
    draws = leaf.column(_DRAW).to_numpy()
    by_part.append(part_of(draws, parts), {**columns, _SENSITIVE: values, _DRAW: draws,
                                           _ROW: leaf.column(_ROW).to_numpy()})
    return len(values)


class _LevelCounts(Protocol):
    """Where `_cut_top` gets the counts of a level's open partitions (``lookup``: each tree
    node's position among them, -1 for others): passes over a source (`_SourceCounts`) or
    aggregations where the rows are."""

    def ranks(self, top: _Top, lookup: np.ndarray, count: int, n_values: int, stage: str
              ) -> list[np.ndarray]:
        """As `_rank_histograms`."""
        ...

    def around(self, top: _Top, lookup: np.ndarray, median: np.ndarray, diversity: str,
               stage: str) -> np.ndarray:
        """As `_values_around`."""
        ...


@dataclass(frozen=True)
class _SourceCounts:
    """A level's counts from passes over a source, ``batch_rows`` at a time."""

    setup: _Setup
    source: Source
    batch_rows: int
    report: Progress

    def ranks(self, top: _Top, lookup: np.ndarray, count: int, n_values: int, stage: str
              ) -> list[np.ndarray]:
        return _rank_histograms(self.setup, self.source, self.batch_rows, top, lookup, count,
                                n_values, self.report, stage)

    def around(self, top: _Top, lookup: np.ndarray, median: np.ndarray, diversity: str,
               stage: str) -> np.ndarray:
        return _values_around(self.setup, self.source, self.batch_rows, top, lookup, median,
                              diversity, self.report, stage)


def _cut_top(setup: _Setup, k: int, l: int, diversity: str,  # noqa: E741
             n_rows: int, covers: Mapping[str, _Covers], counts: _LevelCounts,
             local_rows: int) -> _Top:
    """Cut every partition of more than ``local_rows`` rows as `_levels` would, deciding each
    level's cuts (`_choose_cuts`) from histograms of its open partitions (``counts``: one
    pass over the rows, for l >= 2 two when the counts by sensitive value would not fit in
    `JOINT_CELLS`)."""
    top = _Top()
    if n_rows <= local_rows:
        top.leaves.append(0)
        top.leaf_rows.append(n_rows)
        return top
    open_nodes = [0]
    while open_nodes:
        level = top.depth + 1
        lookup = np.full(len(top.dim), -1, dtype=np.intp)
        lookup[open_nodes] = np.arange(len(open_nodes))
        count = len(open_nodes)
        n_values = setup.schema[setup.sensitive].size
        joint = l >= 2 and count * sum(setup.n_ranks) * n_values <= JOINT_CELLS
        by_rank = counts.ranks(top, lookup, count, n_values if joint else 1,
                               f"cutting level {level}")
        histograms = [c.sum(axis=2) for c in by_rank]
        sizes = histograms[0].sum(axis=1)
        low = np.stack([np.argmax(h > 0, axis=1) for h in histograms], axis=1)
        high = np.stack([h.shape[1] - 1 - np.argmax(h[:, ::-1] > 0, axis=1)
                         for h in histograms], axis=1)
        median, below, at = (np.stack(counts, axis=1) for counts in zip(
            *(_histogram_median(h, sizes) for h in histograms), strict=True))
        around = None
        if joint:
            around = _values_around_in(by_rank, median)
        elif l >= 2:
            around = counts.around(top, lookup, median, diversity,
                                   f"l-diversity at level {level}")
        del by_rank
        cut_dim, threshold = _choose_cuts(low, high, setup.n_ranks, sizes, k, l, diversity,
                                          _counted_medians(median, below, at, around, diversity))
        final = np.flatnonzero(cut_dim < 0)
        if len(final):
            # For a set, the values a class holds are those its histogram counts (ranks are
            # codes when there is no hierarchy).
            keys = np.stack([covers[name].add(
                low[final, d], high[final, d],
                np.flatnonzero(histograms[d][final] > 0) if covers[name].by_values else None)
                for d, name in enumerate(setup.quasi)], axis=1)
            for j, class_keys in zip(final.tolist(), keys, strict=True):
                top.classes[open_nodes[j]] = class_keys
        next_open = []
        for j in np.flatnonzero(cut_dim >= 0).tolist():
            dim, cut = int(cut_dim[j]), int(threshold[j])
            left_rows = int(histograms[dim][j, :cut + 1].sum())
            for child, rows in zip(top.cut(open_nodes[j], dim, cut),
                                   (left_rows, int(sizes[j]) - left_rows), strict=True):
                if rows > local_rows:
                    next_open.append(child)
                else:
                    top.leaves.append(child)
                    top.leaf_rows.append(rows)
        top.depth = level
        open_nodes = next_open
    return top


def _counted_medians(median: np.ndarray, below: np.ndarray, at: np.ndarray,
                     around: np.ndarray | None, diversity: str
                     ) -> Callable[[np.ndarray, np.ndarray], MedianCounts]:
    """``at_median`` of `_choose_cuts` from every open partition's median and counts below and
    at it on every attribute (partitions x attributes) and, for l >= 2, the counts of the
    sensitive values around each median (`_values_around`)."""

    def at_median(tried: np.ndarray, dim: np.ndarray) -> MedianCounts:
        sides = None if around is None else _side_statistics(
            *(around[tried, dim, category] for category in range(3)), diversity)
        return median[tried, dim], below[tried, dim], at[tried, dim], sides

    return at_median


def _open_rows(setup: _Setup, source: Source, batch_rows: int, top: _Top, lookup: np.ndarray,
               report: Progress, stage: str, *, sensitive: bool = False
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The rows of each batch in open partitions: their partition (``lookup``: the position
    among the open ones, -1 for others), ranks (rows x attributes) and sensitive codes when
    asked."""
    columns = (*setup.quasi, setup.sensitive) if sensitive else setup.quasi
    done = 0
    for _, codes in source.batches(batch_rows, columns):
        done += len(codes[setup.quasi[0]])
        yield _open_batch(setup, top, lookup, codes, sensitive=sensitive)
        report(stage, done, source.n_rows)


def _open_batch(setup: _Setup, top: _Top, lookup: np.ndarray, codes: Mapping[str, np.ndarray],
                *, sensitive: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows of a batch (codes by column) in open partitions, as `_open_rows` gives them."""
    ranks = _rank_matrix(setup.ranks(codes), max(setup.n_ranks))
    local = lookup[top.descend(ranks)]
    values = codes[setup.sensitive] if sensitive else None
    if not (local >= 0).all():
        inside = np.flatnonzero(local >= 0)
        local, ranks = local[inside], ranks[inside]
        values = values[inside] if values is not None else None
    return local, ranks, values


def _rank_histograms(setup: _Setup, source: Source, batch_rows: int, top: _Top,
                     lookup: np.ndarray, count: int, n_values: int, report: Progress,
                     stage: str) -> list[np.ndarray]:
    """Counts by rank of each quasi-identifier in each open partition, and by sensitive value
    when ``n_values`` is its domain's size (partitions x ranks x n_values; 1: not by value)."""
    n_ranks = setup.n_ranks
    flat = [np.zeros(count * n * n_values, dtype=np.int64) for n in n_ranks]
    for local, ranks, values in _open_rows(setup, source, batch_rows, top, lookup, report,
                                           stage, sensitive=n_values > 1):
        for d, n in enumerate(n_ranks):
            cell = local * n + ranks[:, d]
            if values is not None:
                cell = cell * n_values + values
            flat[d] += np.bincount(cell, minlength=len(flat[d]))
    return [h.reshape(count, n, n_values) for h, n in zip(flat, n_ranks, strict=True)]


def _values_around_in(counts: Sequence[np.ndarray], median: np.ndarray) -> np.ndarray:
    """`_values_around` from counts by rank and sensitive value (`_rank_histograms`)."""
    count, dims = median.shape
    positions = np.arange(count)
    around = np.empty((count, dims, 3, counts[0].shape[2]), dtype=np.int64)
    for d, joint in enumerate(counts):
        at = joint[positions, median[:, d]]
        through = np.cumsum(joint, axis=1)[positions, median[:, d]]
        around[:, d, 0] = through - at
        around[:, d, 1] = at
        around[:, d, 2] = joint.sum(axis=1) - through
    return around


def _values_around(setup: _Setup, source: Source, batch_rows: int, top: _Top,
                   lookup: np.ndarray, median: np.ndarray, diversity: str, report: Progress,
                   stage: str) -> np.ndarray:
    """How many rows of each sensitive value lie below, at and above each open partition's
    median on each attribute (partitions x attributes x 3 x values); for distinct
    l-diversity, only whether any do (booleans)."""
    count, dims = median.shape
    n_values = setup.schema[setup.sensitive].size
    cells = count * 3 * n_values
    # Distinct values need only which values occur: booleans take an eighth of the memory.
    frequency = diversity == "frequency"
    around = np.zeros((dims, cells), dtype=np.int64 if frequency else bool)
    for local, ranks, values in _open_rows(setup, source, batch_rows, top, lookup, report,
                                           stage, sensitive=True):
        assert values is not None
        for d in range(dims):
            rank, row_median = ranks[:, d], median[local, d]
            # 0: below the median, 1: at it, 2: above (as `_row_medians` counts them).
            category = (rank >= row_median).astype(np.int64) + (rank > row_median)
            cell = (local * 3 + category) * n_values + values
            found = np.bincount(cell, minlength=cells)
            if frequency:
                around[d] += found
            else:
                around[d] |= found > 0
    return around.reshape(dims, count, 3, n_values).transpose(1, 0, 2, 3)


def _spill(setup: _Setup, source: Source, batch_rows: int, top: _Top, key: int,
           by_leaf: _SpillFiles, by_part: _SpillFiles, parts: int, report: Progress) -> None:
    """One pass over the source: each row, with its draw of the release order and its id, to
    its leaf's spill file, or, in a class cut by aggregation alone, with the class's keys to
    its part's."""
    quasi = setup.quasi
    leaf_of = np.full(len(top.dim), -1, dtype=np.intp)
    leaf_of[top.leaves] = np.arange(len(top.leaves))
    class_keys = np.zeros((len(top.dim), len(quasi)), dtype=np.int64)
    for node, keys in top.classes.items():
        class_keys[node] = keys
    stream = KeyedStream(key, STREAM)
    widest = max(setup.n_ranks)
    done = 0
    for start, codes in source.batches(batch_rows, (*quasi, setup.sensitive)):
        count = len(codes[setup.sensitive])
        node = top.descend(_rank_matrix(setup.ranks(codes), widest))
        leaf = leaf_of[node]
        columns = {_SENSITIVE: codes[setup.sensitive], _DRAW: stream.raw(start, count),
                   _ROW: np.arange(start, start + count, dtype=np.int64)}
        inside = leaf >= 0
        by_leaf.append(leaf[inside], {**{_column(d): codes[name][inside]
                                         for d, name in enumerate(quasi)},
                                      **{name: v[inside] for name, v in columns.items()}})
        if not inside.all():
            rows = np.flatnonzero(~inside)
            keys = class_keys[node[rows]]
            by_part.append(part_of(columns[_DRAW][rows], parts),
                           {**{_column(d): keys[:, d] for d in range(len(quasi))},
                            **{name: v[rows] for name, v in columns.items()}})
        done += count
        report("spilling rows", done, source.n_rows)


class _SpillFiles:
    """Rows spilled by group (a leaf partition, a part of the release) to Arrow IPC files,
    appended batch by batch, each taken back whole once all are written."""

    def __init__(self, folder: Path, prefix: str, schema: pa.Schema) -> None:
        self.folder, self.prefix, self.schema = folder, prefix, schema
        self._writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}

    def __enter__(self) -> _SpillFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def _path(self, group: int) -> Path:
        return self.folder / f"{self.prefix}-{group}.arrow"

    def append(self, groups: np.ndarray, columns: Mapping[str, np.ndarray]) -> None:
        """Append each row to its group's file, the rows of a group in their order."""
        order = np.argsort(groups, kind="stable")
        ordered = groups[order]
        batch = pa.record_batch([pa.array(np.asarray(columns[f.name])[order], type=f.type)
                                 for f in self.schema], schema=self.schema)
        bounds = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(ordered)]
        for first, end in itertools.pairwise(bounds):
            if end > first:
                group = int(ordered[first])
                if group not in self._writers:
                    self._writers[group] = pa.ipc.new_file(self._path(group), self.schema)
                self._writers[group].write_batch(batch.slice(first, end - first))

    def take(self, group: int) -> pa.Table | None:
        """A group's rows (None if it has none), its file removed."""
        path = self._path(group)
        if not path.exists():
            return None
        with pa.OSFile(str(path)) as handle:
            table = pa.ipc.open_file(handle).read_all()
        path.unlink()
        return table


def _part_table(setup: _Setup, covers: Mapping[str, _Covers],
                generalized: Mapping[str, Generalized], spilled: pa.Table | None) -> pa.Table:
    """One part of the published rows from its spill file, in release order."""
    quasi = setup.quasi
    if spilled is None:
        rows = {name: np.zeros(0, dtype=np.int32) for name in quasi}
        return _rows_table(setup.published, generalized, rows, np.zeros(0, dtype=np.int32))
    order = rank_order(spilled.column(_DRAW).to_numpy(), spilled.column(_ROW).to_numpy())
    rows = {name: covers[name].nodes(spilled.column(_column(d)).to_numpy()[order])
            for d, name in enumerate(quasi)}
    return _rows_table(setup.published, generalized, rows,
                       spilled.column(_SENSITIVE).to_numpy()[order])


# ---------------------------------------------------------------------------------------------
# The release


class MondrianRelease(Release):
    """Generalized rows (a label per quasi-identifier, the true sensitive value), shuffled, and
    per quasi-identifier the domain values each label covers."""

    mechanism = "mondrian"

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 generalized: Mapping[str, Generalized], rows: Mapping[str, np.ndarray],
                 sensitive: np.ndarray) -> None:
        # Releases written before the frequency kind existed were distinct l-diverse.
        parameters = {**parameters,
                      "diversity": require_diversity(parameters.get("diversity", "distinct"))}
        super().__init__(schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        self.quasi = schema.quasi_identifiers
        self.generalized = dict(generalized)
        self.rows = {name: np.asarray(rows[name], dtype=np.int32) for name in self.quasi}
        self.sensitive_codes = np.asarray(sensitive)
        self._class_cache: tuple[np.ndarray, dict[str, np.ndarray], int] | None = None
        self._product: GroupProduct | None = None

    # -- equivalence classes ----------------------------------------------------------------

    @property
    def _classes(self) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
        """Class of every published row (a distinct combination of labels), each class's
        node per quasi-identifier, and the number of classes."""
        if self._class_cache is None:
            self._class_cache = classes_of_rows(self.generalized, self.rows, self.n_rows)
        return self._class_cache

    def k_anonymity(self) -> int:
        """The smallest number of rows sharing a combination of generalized values."""
        key, _, n_classes = self._classes
        return int(np.bincount(key, minlength=n_classes).min()) if n_classes else 0

    def l_diversity(self) -> int:
        """The smallest number of distinct sensitive values in a class."""
        key, _, n_classes = self._classes
        if not n_classes:
            return 0
        size = self.schema[self.sensitive].size
        pairs = np.unique(key * size + self.sensitive_codes)
        return int(np.bincount(pairs // size, minlength=n_classes).min())

    def ncp(self) -> float:
        """Normalized certainty penalty (Xu et al., "Utility-based anonymization", KDD 2006)
        averaged over rows and quasi-identifiers, in [0, 1]: (hi - lo) / (max - min) of the
        domain for a number without hierarchy, else |cover| / |domain| (0 for one value)."""
        if not self.n_rows:
            return 0.0
        hierarchies = set(self.parameters.get("hierarchies", ()))
        total = 0.0
        for name in self.quasi:
            column = self.schema[name]
            generalized = self.generalized[name]
            sizes = generalized.cover_sizes
            if column.kind in ("int", "float") and name not in hierarchies:
                values = column.values.astype(np.float64)
                width = values[-1] - values[0]
                low = values[generalized.codes[generalized.indptr[:-1]]]
                high = values[generalized.codes[generalized.indptr[1:] - 1]]
                penalty = (high - low) / width if width > 0 else np.zeros(len(sizes))
            else:
                penalty = np.where(sizes > 1, sizes / column.size, 0.0)
            total += float(penalty[self.rows[name]].mean())
        return total / len(self.quasi)

    def class_labels(self) -> dict[str, np.ndarray]:
        """Every equivalence class's generalized value (its node) per quasi-identifier."""
        return dict(self._classes[1])

    def class_sizes(self) -> np.ndarray:
        """|G| for every equivalence class."""
        key, _, n_classes = self._classes
        return np.bincount(key, minlength=n_classes)

    def association(self) -> np.ndarray:
        """For every class G, the largest association probability c / |G| of a sensitive
        value with an individual of G given presence, c the count of G's most frequent
        sensitive value (ambiguity paper, Definition 4.2 and Theorem 5.2; the sensitive values
        are published with the generalized rows, so c and |G| are public)."""
        key, _, n_classes = self._classes
        if not n_classes:
            return np.zeros(0)
        size = self.schema[self.sensitive].size
        pairs, counts = np.unique(key.astype(np.int64) * size + self.sensitive_codes,
                                  return_counts=True)
        # Pairs are sorted by class, and every class holds at least one.
        first = np.flatnonzero(np.diff(pairs // size, prepend=-1))
        return np.maximum.reduceat(counts, first) / self.class_sizes()

    def presence(self) -> np.ndarray:
        """For every class G, the presence probability of an individual whose
        quasi-identifiers fall in G's generalized values: ``|G| / prod_i |cover_i(G)|``
        (ambiguity paper, Definition 4.1 and Theorem 5.1), where ``|cover_i(G)|`` is the number
        of domain values G's generalized value of quasi-identifier i covers (published in the
        cover files); capped at 1, as for ambiguity's groups."""
        _, nodes, _ = self._classes
        covers = np.stack([self.generalized[name].cover_sizes[nodes[name]]
                           for name in self.quasi], axis=1)
        return presence_probability(self.class_sizes(), covers)

    def risk(self, *, alpha: float | None = None, beta: float | None = None
             ) -> dict[str, Any]:
        """k, distinct l, NCP, the number of classes, and the ambiguity paper's measures
        (Section 5): the largest presence (`presence`), the share of classes whose presence is
        1 (``|G| >= prod_i |cover_i(G)|``), the largest association (`association`) and, when
        ``alpha`` or ``beta`` is given, the share of classes above it."""
        presence, association = self.presence(), self.association()

        def largest(values: np.ndarray) -> float:
            return float(values.max()) if len(values) else 0.0

        def share(classes: np.ndarray) -> float:
            return float(classes.mean()) if len(classes) else 0.0

        measures: dict[str, Any] = {
            "k": self.k_anonymity(), "l": self.l_diversity(), "ncp": self.ncp(),
            "classes": self._classes[2], "presence_max": largest(presence),
            "presence_certain_share": share(presence >= 1.0),
            "association_max": largest(association)}
        # As for ambiguity's groups, a class within rounding of a bound counts as within it.
        if alpha is not None:
            alpha = require_unit_interval("alpha", alpha)
            measures.update({"alpha": alpha, "presence_over_alpha_share": share(
                presence > alpha * (1 + 1e-12))})
        if beta is not None:
            beta = require_unit_interval("beta", beta)
            measures.update({"beta": beta, "association_over_beta_share": share(
                association > beta * (1 + 1e-12))})
        return measures

    def covers(self, column: str) -> dict[str, tuple[Any, ...]]:
        """The domain values each label of a quasi-identifier covers."""
        generalized = self.generalized[column]
        domain = self.schema[column].domain
        return {label: tuple(domain[c] for c in generalized.cover(j).tolist())
                for j, label in enumerate(generalized.labels)}

    def generalized_rows(self) -> pa.Table:
        """The published rows as plain labels and sensitive values (for external checkers)."""
        columns = {name: pa.array(list(self.generalized[name].labels), pa.string()).take(
            pa.array(self.rows[name])) for name in self.quasi}
        column = self.schema[self.sensitive]
        columns[self.sensitive] = pa.array(list(column.domain)).take(
            pa.array(self.sensitive_codes.astype(np.int32)))
        return pa.table(columns)

    # -- estimation -------------------------------------------------------------------------

    def _estimator(self) -> GroupProduct:
        # Built on the first query, not at publishing time.
        if self._product is None:
            from ppdp.mechanisms.group_product import GroupProduct

            sizes = self.schema.sizes()
            matrices = {name: self.generalized[name].matrix(sizes[name]) for name in self.quasi}
            self._product = GroupProduct(class_factors(
                matrices, self._classes, self.sensitive, self.sensitive_codes, sizes), sizes)
        return self._product

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        estimator = self._estimator()
        return [(np.asarray(estimator.estimate(q.predicate, q.group_by), dtype=np.float64), None)
                for q in queries]

    # -- files ------------------------------------------------------------------------------

    def _tables(self) -> dict[str, Any]:
        rows = _rows_table(self.schema, self.generalized, self.rows, self.sensitive_codes)
        return {ROWS: split_parts(rows, self.part_rows),
                **_cover_tables(self.schema, self.generalized)}

    @classmethod
    def scanned_on_spark(cls, stems: Iterable[str]) -> frozenset[str]:
        return frozenset({ROWS})

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: Mapping[str, Sequence[Path]]
                    ) -> MondrianRelease:
        """Loaded with ``engine="spark"``: the rows stay in their files, every count a Spark
        job; the covers are read (`ppdp.spark.mondrian_count`)."""
        from ppdp.spark.mondrian_count import load_mondrian

        return load_mondrian(schema, parameters, n_rows, tables, scans[ROWS])

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> MondrianRelease:
        (sensitive,) = schema.sensitive
        generalized = read_generalized(schema, parameters, tables)
        rows_table = tables[ROWS]
        if rows_table.num_rows != n_rows:
            raise ValueError(f"expected {n_rows} rows, found {rows_table.num_rows}")
        rows = {}
        for name in schema.quasi_identifiers:
            if name not in rows_table.column_names:
                raise ValueError(f"column {name!r} is missing")
            labels = pa.array(list(generalized[name].labels), pa.string())
            rows[name] = label_nodes(name, rows_table.column(name), labels)
        codes = rows_from_arrow(schema.select([sensitive]), rows_table.select([sensitive]),
                                n_rows)[sensitive]
        return cls(schema, parameters, n_rows, generalized, rows, codes)


def read_generalized(schema: Schema, parameters: Mapping[str, Any],
                     tables: Mapping[str, pa.Table]) -> dict[str, Generalized]:
    """Every quasi-identifier's generalized values, from its cover table, checked."""
    quasi = schema.quasi_identifiers
    hierarchies = parameters.get("hierarchies", [])
    if not isinstance(hierarchies, list) or not set(hierarchies) <= set(quasi):
        raise ValueError("parameter 'hierarchies' must list quasi-identifiers")
    return {name: _read_covers(schema[name], tables[cover_file(position)])
            for position, name in enumerate(quasi)}


def classes_of_rows(generalized: Mapping[str, Generalized], rows: Mapping[str, np.ndarray],
                    n_rows: int) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """The class of every published row (its distinct combination of generalized values, one
    node per quasi-identifier in ``rows``), each class's node per quasi-identifier, and the
    number of classes."""
    key = np.zeros(n_rows, dtype=np.int64)
    bound = 1
    for name in rows:
        n_nodes = generalized[name].n_nodes
        if bound * n_nodes >= 2**62:
            # Renumbering keeps the combined key below n_rows (it costs a sort).
            key = np.unique(key, return_inverse=True)[1].reshape(-1)
            bound = int(key.max()) + 1 if n_rows else 1
        key = key * n_nodes + rows[name]
        bound *= n_nodes
    key = np.unique(key, return_inverse=True)[1].reshape(-1)
    n_classes = int(key.max()) + 1 if n_rows else 0
    nodes = {}
    for name in rows:
        node = np.zeros(n_classes, dtype=np.int64)
        node[key] = rows[name]
        nodes[name] = node
    return key, nodes, n_classes


def class_factors(matrices: Mapping[str, sp.csr_array],
                  classes: tuple[np.ndarray, dict[str, np.ndarray], int], sensitive: str,
                  sensitive_codes: np.ndarray, sizes: Mapping[str, int]
                  ) -> dict[str, sp.csr_array]:
    """The `GroupProduct` factors of classes (`classes_of_rows`): per quasi-identifier, each
    class's row of its node in ``matrices`` (`Generalized.matrix`, uniform over the cover);
    for the sensitive column, each class's counts of its rows' values."""
    import scipy.sparse as sp

    key, nodes, n_classes = classes
    factors = {name: sp.csr_array(matrix[nodes[name]]) for name, matrix in matrices.items()}
    counts = sp.coo_array((np.ones(len(key)), (key, sensitive_codes)),
                          shape=(n_classes, sizes[sensitive]))
    factors[sensitive] = sp.csr_array(counts.tocsr())
    return factors


def label_nodes(name: str, column: pa.ChunkedArray | pa.Array, labels: pa.Array) -> np.ndarray:
    """The node of each published label of a quasi-identifier (its position in ``labels``),
    refusing a label without a cover."""
    plain = _plain(column, pa.string())
    found = pc.index_in(plain, value_set=labels)
    if found.null_count:
        missing = pc.unique(pc.filter(plain, pc.is_null(found))).to_pylist()[:5]
        raise ValueError(f"labels of {name!r} without a cover: {missing}")
    return found.to_numpy(zero_copy_only=False).astype(np.int32)


def _rows_table(schema: Schema, generalized: Mapping[str, Generalized],
               rows: Mapping[str, np.ndarray], sensitive: np.ndarray) -> pa.Table:
    """Published rows as Arrow: each quasi-identifier's labels, the sensitive values."""
    arrays, names = [], []
    for name in schema.quasi_identifiers:
        labels = pa.array(list(generalized[name].labels), pa.string())
        arrays.append(pa.DictionaryArray.from_arrays(pa.array(rows[name]), labels))
        names.append(name)
    (name,) = schema.sensitive
    arrays.append(pa.DictionaryArray.from_arrays(pa.array(sensitive.astype(np.int32)),
                                                 pa.array(list(schema[name].domain))))
    names.append(name)
    return pa.table(arrays, names=names)


def _cover_tables(schema: Schema, generalized: Mapping[str, Generalized]
                  ) -> dict[str, pa.Table]:
    """Per quasi-identifier, the domain values each label covers (one row per pair)."""
    tables = {}
    for position, name in enumerate(schema.quasi_identifiers):
        values = generalized[name]
        node = np.repeat(np.arange(values.n_nodes), values.cover_sizes)
        tables[cover_file(position)] = pa.table({
            LABEL: pa.array(list(values.labels), pa.string()).take(pa.array(node)),
            VALUE: pa.array(list(schema[name].domain)).take(pa.array(values.codes)),
        })
    return tables


def _plain(array: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if not array.type.equals(kind):
        try:
            array = pc.cast(array, kind)
        except pa.ArrowException as exc:
            raise ValueError(f"expected {kind} values, found {array.type}") from exc
    return array


def _read_covers(column: Column, table: pa.Table) -> Generalized:
    """A cover table (label, value) checked against the column's domain."""
    if set(table.column_names) != {LABEL, VALUE}:
        raise ValueError(f"the covers of {column.name!r} must have columns {LABEL!r} and "
                         f"{VALUE!r}, found {table.column_names}")
    labels = _plain(table.column(LABEL), pa.string())
    if labels.null_count:
        raise ValueError(f"the covers of {column.name!r} hold an empty label")
    domain = pa.array(list(column.domain))
    values = _plain(table.column(VALUE), domain.type)
    codes = pc.index_in(values, value_set=domain)
    if codes.null_count:
        raise ValueError(f"the covers of {column.name!r} hold values outside its domain")
    names = pc.unique(labels)
    node = pc.index_in(labels, value_set=names).to_numpy(zero_copy_only=False).astype(np.int64)
    code = codes.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((code, node))
    node, code = node[order], code[order]
    if len(code) > 1 and np.any((np.diff(node) == 0) & (np.diff(code) == 0)):
        raise ValueError(f"the covers of {column.name!r} repeat a value under one label")
    sizes = np.bincount(node, minlength=len(names))
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Generalized(tuple(names.to_pylist()), indptr, code)
