"""Mondrian multidimensional generalization (LeFevre, DeWitt and Ramakrishnan, "Mondrian
multidimensional k-anonymity", ICDE 2006), strict partitioning, with optional distinct
l-diversity (Machanavajjhala et al. 2006); the generalization baseline the ambiguity paper
compares with (Section 8).

Mondrian cuts the rows top-down: a partition is cut at the median of the quasi-identifier with
the widest normalised range, and the cut is kept when both halves hold at least k rows (and,
for l >= 2, at least l distinct sensitive values); a partition that no attribute can cut
becomes an equivalence class. Each class publishes, per quasi-identifier, one generalized value
covering the values of its rows.

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

Estimation assumes values uniform over each class's generalized value (over the domain values
it covers) and independent between attributes inside a class (see ``group_product``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from ppdp.errors import InfeasibleError, SchemaError
from ppdp.guarantees import GeneralizationGuarantee, mondrian_guarantee
from ppdp.hierarchy import BoundHierarchy, Hierarchy
from ppdp.mechanisms.base import (
    Mechanism,
    Parameter,
    require_integer,
    require_sensitive,
    shuffled_positions,
)
from ppdp.mechanisms.group_product import GroupProduct
from ppdp.query import BoundQuery
from ppdp.randomness import RandomState, make_rng
from ppdp.release import Release, rows_from_arrow
from ppdp.table import Column, Schema, Table, code_dtype

ROWS = "rows"
LABEL = "label"
VALUE = "value"

HISTOGRAM_CELLS_PER_ROW = 2
"""Medians come from per-partition rank histograms while they have at most this many cells
per row (few partitions), else from sorting."""


def cover_file(position: int) -> str:
    """File stem of the covers of the quasi-identifier at ``position`` (0-based)."""
    return f"cover_{position + 1}"


# ---------------------------------------------------------------------------------------------
# Partitioning


def mondrian_partition(ranks: Sequence[np.ndarray], sensitive: np.ndarray, *, k: int,
                       l: int = 1,  # noqa: E741 - the usual symbol
                       n_ranks: Sequence[int] | None = None) -> np.ndarray:
    """The equivalence class of every row (ids ``0 .. classes - 1``, in input row order).

    Strict Mondrian (LeFevre et al. 2006, median cuts, Section 4) on ``ranks`` (one array per
    quasi-identifier: each row's position in that attribute's order, ``0 .. n_ranks - 1``;
    ``n_ranks`` defaults to the largest rank + 1). Each class holds at least ``k`` rows and,
    when ``l >= 2``, at least ``l`` distinct values of ``sensitive``.
    """
    return _partition(ranks, sensitive, k=k, l=l, n_ranks=n_ranks).classes


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
               n_ranks: Sequence[int] | None = None) -> _Partition:
    """``mondrian_partition`` with each class's rank ranges, after checking the input."""
    k = require_integer("k", k, 1)
    l = require_integer("l", l, 1)  # noqa: E741
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
    present = int(np.count_nonzero(np.bincount(codes, minlength=n_values)))
    if l > present:
        raise InfeasibleError(f"l = {l} needs {l} distinct sensitive values but there are "
                              f"{present}; l must be at most {present}")
    return _levels(arrays, [int(n) for n in n_ranks], codes, n_values, k, l)


def _compact(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Values as codes ``0 .. n - 1`` (kept as they are when already small integers)."""
    if values.dtype.kind in "iu" and (not len(values) or (
            values.min() >= 0 and values.max() < max(len(values), 1 << 16))):
        return values.astype(np.int64), int(values.max()) + 1 if len(values) else 1
    unique, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), len(unique)


def _levels(ranks: Sequence[np.ndarray], n_ranks: Sequence[int], sensitive: np.ndarray,
            n_sensitive: int, k: int, l: int) -> _Partition:  # noqa: E741
    """Top-down median cuts, all open partitions of a level at once."""
    n_rows = len(sensitive)
    widest = max(n_ranks)
    scale = np.maximum(np.asarray(n_ranks, dtype=np.float64) - 1, 1)
    index = np.int32 if n_rows < 2**31 else np.int64
    classes = np.empty(n_rows, dtype=index)
    lows, highs = [], []
    n_classes = 0
    # The open partitions hold their rows contiguously, partition after partition: ``perm``
    # gives the input row, ``current`` its ranks (one record per row) and ``values`` its
    # sensitive value. They are carried along as the rows move, so every pass reads them in
    # order; gathering them from the input order at each level would be random access.
    perm = np.arange(n_rows, dtype=index)
    current = np.stack([r.astype(code_dtype(widest), copy=False) for r in ranks], axis=1)
    values = sensitive.astype(code_dtype(n_sensitive)) if l >= 2 else None
    sizes = np.asarray([n_rows], dtype=np.int64)
    while len(sizes):
        count = len(sizes)
        starts = np.cumsum(sizes) - sizes
        part = np.repeat(np.arange(count, dtype=index), sizes)
        low = np.minimum.reduceat(current, starts, axis=0)
        high = np.maximum.reduceat(current, starts, axis=0)
        span = (high - low) / scale
        order = np.argsort(-span, axis=1, kind="stable")
        cut_dim, threshold = _cuts(current, part, sizes, order, span, values, n_sensitive,
                                   widest, k, l)
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


def _cuts(current: np.ndarray, part: np.ndarray, sizes: np.ndarray, order: np.ndarray,
          span: np.ndarray, values: np.ndarray | None, n_values: int, widest: int,
          k: int, l: int) -> tuple[np.ndarray, np.ndarray]:  # noqa: E741
    """For each open partition the dimension it is cut on (-1: none) and the rank threshold
    above which a row goes right, trying dimensions in decreasing normalised span."""
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
        if len(tried) == count:
            rows = None
            local = part
            rank = current[np.arange(len(part)), np.repeat(dim, sizes)]
        else:
            rows = np.flatnonzero(pending[part])
            lookup = np.full(count, -1, dtype=part.dtype)
            lookup[tried] = np.arange(len(tried))
            local = lookup[part[rows]]
            rank = current[rows, dim[part[rows]]]
        tried_sizes = sizes[tried]
        tried_starts = np.cumsum(tried_sizes) - tried_sizes
        positions = np.arange(len(tried))
        key_type = np.int32 if len(tried) * widest < 2**31 else np.int64
        key = local.astype(key_type) * key_type(widest) + rank
        half = tried_sizes // 2
        if len(tried) * widest <= HISTOGRAM_CELLS_PER_ROW * len(key):
            # Few partitions: a histogram of ranks per partition gives the median (the
            # first rank whose running count passes size // 2) without sorting.
            histogram = np.bincount(key, minlength=len(tried) * widest).reshape(-1, widest)
            through = np.cumsum(histogram, axis=1)
            median = np.count_nonzero(through <= half[:, None], axis=1)
            at = histogram[positions, median]
            below = through[positions, median] - at
        else:
            # Rows are grouped by partition, so sorting partition * R + rank sorts each
            # partition's ranks in place; its median is at start + size // 2.
            key.sort()
            median = key[tried_starts + half].astype(np.int64) - positions * widest
            bounds = (positions * widest + median).astype(key.dtype)
            first = np.searchsorted(key, bounds, side="left")
            below = first - tried_starts
            at = np.searchsorted(key, bounds, side="right") - first
        del key
        above = tried_sizes - below - at
        ok_a = (below + at >= k) & (above >= k)  # rank <= m | rank > m
        ok_b = (below >= k) & (at + above >= k)  # rank < m | rank >= m
        if l >= 2:
            assert values is not None
            row_median = median.astype(rank.dtype)[local]
            # 0: below the median, 1: at it, 2: above.
            category = (rank >= row_median).astype(np.int8) + (rank > row_median)
            cell = local.astype(np.int64) * 3 + category
            a_left, a_right, b_left, b_right = _distinct_sides(
                cell, values if rows is None else values[rows], len(tried), n_values)
            ok_a &= (a_left >= l) & (a_right >= l)
            ok_b &= (b_left >= l) & (b_right >= l)
        cut = ok_a | ok_b
        chosen = tried[cut]
        cut_dim[chosen] = dim[chosen]
        threshold[chosen] = np.where(ok_a[cut], median[cut], median[cut] - 1)
        pending[chosen] = False
    return cut_dim, threshold


def _distinct_sides(cell: np.ndarray, values: np.ndarray, count: int, n_values: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct sensitive values on the left and right of cuts A (<= m | > m) and
    B (< m | >= m), per partition, from each row's cell ``partition * 3 + category``."""
    if count * 3 * n_values <= max(4 * len(cell), 1 << 20):
        present = np.bincount(cell * n_values + values,
                              minlength=count * 3 * n_values).reshape(count, 3, n_values) > 0
        below, at, above = present[:, 0], present[:, 1], present[:, 2]
        return ((below | at).sum(axis=1), above.sum(axis=1), below.sum(axis=1),
                (at | above).sum(axis=1))
    # Many partitions times many values: count the distinct triples instead.
    triples = np.unique(cell * n_values + values)
    local, category = triples // (3 * n_values), (triples // n_values) % 3
    value = triples % n_values

    def distinct(right: np.ndarray) -> np.ndarray:
        keys = np.unique((local * 2 + right) * n_values + value)
        return np.bincount(keys // n_values, minlength=2 * count).reshape(count, 2)

    a, b = distinct(category == 2), distinct(category >= 1)
    return a[:, 0], a[:, 1], b[:, 0], b[:, 1]


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


def _generalize_hierarchy(bound: BoundHierarchy, low: np.ndarray, high: np.ndarray
                          ) -> tuple[np.ndarray, list[str], list[np.ndarray], list[int]]:
    """Each class's lowest common ancestor of its lowest- and highest-ranked values."""
    column = bound.column
    code_by_rank = np.argsort(bound.rank)
    first, last = code_by_rank[low], code_by_rank[high]
    single = first == last
    level = np.where(single, 0, -1)
    node = np.where(single, first, -1)
    for depth, ids in enumerate(bound.nodes, start=1):
        common = (level < 0) & (ids[first] == ids[last])
        level[common] = depth
        node[common] = ids[first][common]
    # Every level has at most one node per code, so level * size + node is a unique key.
    keys, node_of_class = np.unique(level * column.size + node, return_inverse=True)
    labels, covers, levels = [], [], []
    for key in keys.tolist():
        depth, index = divmod(key, column.size)
        labels.append(_value_label(column.domain[index]) if depth == 0
                      else bound.labels[depth - 1][index])
        covers.append(bound.cover(depth, index))
        levels.append(depth)
    return node_of_class.reshape(-1), labels, covers, levels


def _generalize_range(column: Column, low: np.ndarray, high: np.ndarray
                      ) -> tuple[np.ndarray, list[str], list[np.ndarray]]:
    """Each class's range ``[lo, hi]`` of a numeric, ordered or date column (codes follow the
    column's order, so a range of codes is a range of values)."""
    keys, node_of_class = np.unique(low * column.size + high, return_inverse=True)
    labels, covers = [], []
    for key in keys.tolist():
        lo, hi = divmod(key, column.size)
        labels.append(_value_label(column.domain[lo]) if lo == hi
                      else f"[{column.domain[lo]}, {column.domain[hi]}]")
        covers.append(np.arange(lo, hi + 1, dtype=np.int64))
    return node_of_class.reshape(-1), labels, covers


def _generalize_set(column: Column, classes: np.ndarray, codes: np.ndarray, n_classes: int
                    ) -> tuple[np.ndarray, list[str], list[np.ndarray]]:
    """Each class's set of the values its rows hold (a string column without hierarchy)."""
    pairs = np.unique(classes.astype(np.int64) * column.size + codes)
    pair_class, pair_code = pairs // column.size, pairs % column.size
    counts = np.bincount(pair_class, minlength=n_classes)
    starts = np.cumsum(counts) - counts
    # Equal sets are found through a 128-bit set hash (XOR of fixed random words per value),
    # then checked value by value; a collision falls back to exact grouping.
    words = np.random.default_rng(20060403).integers(
        0, np.iinfo(np.int64).max, size=(2, column.size), dtype=np.int64, endpoint=True)
    hashes = np.stack([np.bitwise_xor.reduceat(w[pair_code], starts) for w in words], axis=1)
    _, first, set_of_class = np.unique(hashes, axis=0, return_index=True, return_inverse=True)
    set_of_class = set_of_class.reshape(-1)
    representative = first[set_of_class]
    offsets = np.arange(len(pairs)) - starts[pair_class]
    same = (np.array_equal(counts, counts[representative]) and np.array_equal(
        pair_code, pair_code[starts[representative[pair_class]] + offsets]))
    if not same:
        groups: dict[tuple[int, ...], int] = {}
        set_of_class = np.asarray([
            groups.setdefault(tuple(pair_code[s:s + c].tolist()), len(groups))
            for s, c in zip(starts.tolist(), counts.tolist(), strict=True)])
        first = np.unique(set_of_class, return_index=True)[1]
    labels, covers = [], []
    for index in first.tolist():
        cover = pair_code[starts[index]:starts[index] + counts[index]]
        values = [column.domain[c] for c in cover.tolist()]
        labels.append(_value_label(values[0]) if len(values) == 1
                      else "{" + ", ".join(map(str, values)) + "}")
        covers.append(cover)
    return set_of_class, labels, covers


def _distinct_labels(node_of_class: np.ndarray, labels: list[str], covers: list[np.ndarray],
                     levels: Sequence[int] | None) -> tuple[np.ndarray, Generalized]:
    """Merge nodes with the same label and cover; rename a label that would denote two
    different covers (with its hierarchy level, then a counter), keeping the first as is."""
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
    return remap[node_of_class], Generalized.from_covers(names, [covers[j] for j in kept])


# ---------------------------------------------------------------------------------------------
# The mechanism


@dataclass(frozen=True)
class _Anonymized:
    """A table's classes and the generalized value of each class per quasi-identifier."""

    quasi: tuple[str, ...]
    sensitive: str
    partition: _Partition
    generalized: dict[str, Generalized]
    node_of_class: dict[str, np.ndarray]
    hierarchies: tuple[str, ...]


class Mondrian(Mechanism):
    """Mondrian: strict multidimensional median partitioning into k-anonymous (and
    distinct l-diverse) classes, published as generalized rows."""

    name = "mondrian"
    summary = ("Mondrian: k-anonymous (optionally l-diverse) multidimensional generalization "
               "of the quasi-identifiers")
    parameters = (
        Parameter("k", int, "anonymity k (>= 1): rows sharing each generalized combination"),
        Parameter("l", int, "distinct l-diversity (>= 1; 1 = none): distinct sensitive values "
                            "per class", default=1),
    )

    def __init__(self, *, k: int, l: int = 1,  # noqa: E741 - the usual symbol
                 hierarchies: Mapping[str, Hierarchy] | None = None) -> None:
        self.k = require_integer("k", k, 1)
        self.l = require_integer("l", l, 1)
        hierarchies = dict(hierarchies or {})
        for column, hierarchy in hierarchies.items():
            if not isinstance(hierarchy, Hierarchy):
                raise ValueError(f"the hierarchy for {column!r} must be a Hierarchy "
                                 f"(ppdp.hierarchy.read_hierarchy), got "
                                 f"{type(hierarchy).__name__}")
        self.hierarchies = hierarchies

    def guarantee(self) -> GeneralizationGuarantee:
        return mondrian_guarantee(k=self.k, l=self.l)

    def ranks(self, table: Table) -> list[np.ndarray]:
        """Each quasi-identifier's rank per row: hierarchy depth-first order when one is
        given, else the domain order (numeric for numbers, the declared order for ordered
        text, alphabetical for other text)."""
        return self._ranks(table, self._bind(table))

    @staticmethod
    def _ranks(table: Table, bound: Mapping[str, BoundHierarchy]) -> list[np.ndarray]:
        ranks = []
        for name in table.schema.quasi_identifiers:
            codes = table.codes[name]
            # A lookup table of the codes' own width keeps the per-row ranks small.
            ranks.append(bound[name].rank.astype(codes.dtype)[codes] if name in bound
                         else codes)
        return ranks

    def partition(self, table: Table) -> np.ndarray:
        """The equivalence class of every row, in the table's row order."""
        return self._anonymize(table).partition.classes

    def generalize(self, table: Table) -> pa.Table:
        """The generalized rows in the table's own order (for the data holder's checks;
        ``publish`` shuffles them)."""
        result = self._anonymize(table)
        classes = result.partition.classes
        columns = {name: pa.array(list(result.generalized[name].labels), pa.string()).take(
            pa.array(result.node_of_class[name][classes])) for name in result.quasi}
        column = table.schema[result.sensitive]
        columns[result.sensitive] = pa.array(list(column.domain)).take(
            pa.array(table.codes[result.sensitive].astype(np.int32)))
        return pa.table(columns)

    def publish(self, table: Table, *, random_state: RandomState = None) -> MondrianRelease:
        self.check_memory(table)
        result = self._anonymize(table)
        classes = result.partition.classes
        # The shuffle is the only random draw: the partition is deterministic.
        shuffle = shuffled_positions(table.n_rows, make_rng(random_state))
        shuffled = classes[shuffle]
        del classes
        rows = {name: result.node_of_class[name][shuffled].astype(np.int32)
                for name in result.quasi}
        sensitive = table.codes[result.sensitive][shuffle]
        schema = table.schema.select([*result.quasi, result.sensitive])
        parameters = {"k": self.k, "l": self.l, "hierarchies": list(result.hierarchies)}
        return MondrianRelease(schema, parameters, table.n_rows, result.generalized, rows,
                               sensitive)

    def _bind(self, table: Table) -> dict[str, BoundHierarchy]:
        unknown = sorted(set(self.hierarchies) - set(table.schema.names))
        if unknown:
            raise SchemaError(f"hierarchies given for columns not in the table: {unknown} "
                              f"(columns: {', '.join(table.schema.names)})")
        return {name: self.hierarchies[name].bind(table.schema[name])
                for name in table.schema.quasi_identifiers if name in self.hierarchies}

    def _anonymize(self, table: Table) -> _Anonymized:
        (sensitive,) = require_sensitive(table, "Mondrian", exactly_one=True)
        quasi = table.schema.quasi_identifiers
        if not quasi:
            raise SchemaError("Mondrian needs at least one quasi-identifier column to "
                              "generalize")
        bound = self._bind(table)
        if self.k > table.n_rows:
            raise InfeasibleError(f"k = {self.k} exceeds the number of rows "
                                  f"({table.n_rows}); k must be at most {table.n_rows}")
        column = table.schema[sensitive]
        present = int(np.count_nonzero(np.bincount(table.codes[sensitive],
                                                   minlength=column.size)))
        if self.l > present:
            raise InfeasibleError(f"l = {self.l} needs {self.l} distinct values of "
                                  f"{sensitive!r} in every class, but the table holds "
                                  f"{present}; l must be at most {present}")
        ranks = self._ranks(table, bound)
        partition = _partition(ranks, table.codes[sensitive], k=self.k, l=self.l,
                               n_ranks=[table.schema[name].size for name in quasi])
        del ranks
        generalized, node_of_class = {}, {}
        for d, name in enumerate(quasi):
            column = table.schema[name]
            low, high = partition.low[d], partition.high[d]
            levels: list[int] | None = None
            if name in bound:
                nodes, labels, covers, levels = _generalize_hierarchy(bound[name], low, high)
            elif column.kind in ("int", "float") or column.ordered or column.iso_dates:
                nodes, labels, covers = _generalize_range(column, low, high)
            else:
                nodes, labels, covers = _generalize_set(column, partition.classes,
                                                        table.codes[name], partition.n_classes)
            node_of_class[name], generalized[name] = _distinct_labels(nodes, labels, covers,
                                                                      levels)
        return _Anonymized(quasi, sensitive, partition, generalized, node_of_class,
                           tuple(name for name in quasi if name in bound))


# ---------------------------------------------------------------------------------------------
# The release


class MondrianRelease(Release):
    """Generalized rows (a label per quasi-identifier, the true sensitive value), shuffled, and
    per quasi-identifier the domain values each label covers."""

    mechanism = "mondrian"

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 generalized: Mapping[str, Generalized], rows: Mapping[str, np.ndarray],
                 sensitive: np.ndarray) -> None:
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
            key = np.zeros(self.n_rows, dtype=np.int64)
            bound = 1
            for name in self.quasi:
                n_nodes = self.generalized[name].n_nodes
                if bound * n_nodes >= 2**62:
                    # Renumbering keeps the combined key below n_rows (it costs a sort).
                    key = np.unique(key, return_inverse=True)[1].reshape(-1)
                    bound = int(key.max()) + 1 if self.n_rows else 1
                key = key * n_nodes + self.rows[name]
                bound *= n_nodes
            key = np.unique(key, return_inverse=True)[1].reshape(-1)
            n_classes = int(key.max()) + 1 if self.n_rows else 0
            nodes = {}
            for name in self.quasi:
                node = np.zeros(n_classes, dtype=np.int64)
                node[key] = self.rows[name]
                nodes[name] = node
            self._class_cache = (key, nodes, n_classes)
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

    def risk(self) -> dict[str, Any]:
        """k, l, NCP and the number of equivalence classes of this release."""
        return {"k": self.k_anonymity(), "l": self.l_diversity(), "ncp": self.ncp(),
                "classes": self._classes[2]}

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
            key, nodes, n_classes = self._classes
            sizes = self.schema.sizes()
            factors = {name: sp.csr_array(self.generalized[name].matrix(sizes[name])[nodes[name]])
                       for name in self.quasi}
            counts = sp.coo_array((np.ones(self.n_rows), (key, self.sensitive_codes)),
                                  shape=(n_classes, sizes[self.sensitive]))
            factors[self.sensitive] = sp.csr_array(counts.tocsr())
            self._product = GroupProduct(factors, sizes)
        return self._product

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        estimator = self._estimator()
        return [(np.asarray(estimator.estimate(q.predicate, q.group_by), dtype=np.float64), None)
                for q in queries]

    # -- files ------------------------------------------------------------------------------

    def _tables(self) -> dict[str, pa.Table]:
        arrays, names = [], []
        for name in self.quasi:
            labels = pa.array(list(self.generalized[name].labels), pa.string())
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(self.rows[name]), labels))
            names.append(name)
        column = self.schema[self.sensitive]
        arrays.append(pa.DictionaryArray.from_arrays(
            pa.array(self.sensitive_codes.astype(np.int32)), pa.array(list(column.domain))))
        names.append(self.sensitive)
        tables = {ROWS: pa.table(arrays, names=names)}
        for position, name in enumerate(self.quasi):
            generalized = self.generalized[name]
            node = np.repeat(np.arange(generalized.n_nodes), generalized.cover_sizes)
            tables[cover_file(position)] = pa.table({
                LABEL: pa.array(list(generalized.labels), pa.string()).take(pa.array(node)),
                VALUE: pa.array(list(self.schema[name].domain)).take(
                    pa.array(generalized.codes)),
            })
        return tables

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> MondrianRelease:
        (sensitive,) = schema.sensitive
        quasi = schema.quasi_identifiers
        hierarchies = parameters.get("hierarchies", [])
        if not isinstance(hierarchies, list) or not set(hierarchies) <= set(quasi):
            raise ValueError("parameter 'hierarchies' must list quasi-identifiers")
        rows_table = tables[ROWS]
        if rows_table.num_rows != n_rows:
            raise ValueError(f"expected {n_rows} rows, found {rows_table.num_rows}")
        generalized, rows = {}, {}
        for position, name in enumerate(quasi):
            generalized[name] = _read_covers(schema[name], tables[cover_file(position)])
            if name not in rows_table.column_names:
                raise ValueError(f"column {name!r} is missing")
            labels = pa.array(list(generalized[name].labels), pa.string())
            found = pc.index_in(_plain(rows_table.column(name), pa.string()), value_set=labels)
            if found.null_count:
                missing = pc.unique(pc.filter(_plain(rows_table.column(name), pa.string()),
                                              pc.is_null(found))).to_pylist()[:5]
                raise ValueError(f"labels of {name!r} without a cover: {missing}")
            rows[name] = found.to_numpy(zero_copy_only=False).astype(np.int32)
        codes = rows_from_arrow(schema.select([sensitive]), rows_table.select([sensitive]),
                                n_rows)[sensitive]
        return cls(schema, parameters, n_rows, generalized, rows, codes)


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
