"""Mondrian's generalized values: each class generalized, per quasi-identifier, to the
lowest hierarchy node over its range (that node covers every value between the ends), to the
range ``[lo, hi]`` of a number, of ordered text or of ISO dates (chronological as text), or to
the set ``{a, b}`` of the other values it holds (text, booleans); numbered in a canonical order
(`Covers`), whatever the order the classes are found in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ppdp.data.hierarchy import BoundHierarchy
from ppdp.data.schema import Column
from ppdp.mechanisms.mondrian.partition import _Partition
from ppdp.query.codes import sorted_distinct

if TYPE_CHECKING:
    import scipy.sparse as sp



ROWS = "rows"


LABEL = "label"


VALUE = "value"


def cover_file(position: int) -> str:
    """File stem of the covers of the quasi-identifier at ``position`` (0-based)."""
    return f"cover_{position + 1}"


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


class Covers:
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
        pairs = (sorted_distinct(partition.classes.astype(np.int64) * self.column.size + codes)
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
