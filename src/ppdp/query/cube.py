"""Dense contingency tables over the codes of rows, cached, and counting a predicate
from them (a conjunction of single-column conditions is read off a table; anything else is
evaluated on the rows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ppdp.errors import QueryError
from ppdp.query.predicates import Const, Predicate

MAX_CUBE_CELLS = 1 << 24


class Cube:
    """Dense contingency tables over sets of columns of some rows, computed once and cached.

    ``weights`` (optional, one per row) makes every cell a sum of weights instead of a count.
    """

    def __init__(self, codes: Mapping[str, np.ndarray], sizes: Mapping[str, int],
                 n_rows: int, weights: np.ndarray | None = None) -> None:
        self.codes = codes
        self.sizes = dict(sizes)
        self.n_rows = n_rows
        self.weights = weights
        self._cache: dict[tuple[str, ...], np.ndarray] = {}
        # count_histogram's answers by (predicate identity, dims), each with its predicate so
        # that the identity cannot pass to another object.
        self.counted: dict[tuple[int, tuple[str, ...]], tuple[Predicate, np.ndarray]] = {}

    def fits(self, columns: Sequence[str]) -> bool:
        return int(np.prod([self.sizes[c] for c in columns], dtype=np.float64)) <= MAX_CUBE_CELLS

    def histogram(self, columns: Sequence[str], mask: np.ndarray | None = None) -> np.ndarray:
        """Counts over the product of the columns' domains (of the rows where mask holds)."""
        columns = tuple(columns)
        if mask is None:
            key = tuple(sorted(columns))
            if key not in self._cache:
                self._cache[key] = self._histogram(key, None)
            cached = self._cache[key]
            return np.transpose(cached, [key.index(c) for c in columns])
        return self._histogram(columns, mask)

    def _histogram(self, columns: tuple[str, ...], mask: np.ndarray | None) -> np.ndarray:
        shape = tuple(self.sizes[c] for c in columns)
        if not columns:
            total = (self.n_rows if mask is None else int(np.count_nonzero(mask))) \
                if self.weights is None else float(self.weights[mask].sum() if mask is not None
                                                   else self.weights.sum())
            return np.asarray(total)
        if not self.fits(columns):
            raise QueryError(f"the columns {list(columns)} span {np.prod(shape):.3g} value "
                             f"combinations, too many to count densely")
        key = flat_key(self.codes, columns, self.sizes, mask)
        weights = self.weights if mask is None or self.weights is None else self.weights[mask]
        counts = np.bincount(key, weights=weights, minlength=int(np.prod(shape)))
        return counts.reshape(shape)

    def histogram_where(self, predicate: Predicate, dims: Sequence[str]) -> np.ndarray:
        """Counts over the product of the domains of ``dims`` of the rows where ``predicate``
        holds, evaluated row by row."""
        return self.histogram(dims, predicate.evaluate(self.codes, self.n_rows))

    def class_histograms(self, predicates: Sequence[Predicate], dims: Sequence[str]
                         ) -> list[tuple[int, np.ndarray]]:
        """Counts over ``dims`` of each class of rows that satisfy the same predicates.

        A class is the set of predicates its rows satisfy, as bits (predicate i is bit i);
        returns ``(class, counts)`` by ascending class, for the classes that hold rows, leaving
        out the rows that satisfy none.
        """
        membership = np.zeros(self.n_rows, dtype=np.int64)
        for bit, predicate in enumerate(predicates):
            membership |= predicate.evaluate(self.codes, self.n_rows).astype(np.int64) << bit
        return [(int(member), self.histogram(dims, membership == member))
                for member in np.unique(membership[membership > 0])]


def flat_key(codes: Mapping[str, np.ndarray], columns: Sequence[str],
             sizes: Mapping[str, int], mask: np.ndarray | None = None) -> np.ndarray:
    """Row-major cell index of every (masked) row in the product of the columns' domains."""
    key: np.ndarray | None = None
    for column in columns:
        values = codes[column] if mask is None else codes[column][mask]
        key = values.astype(np.int64) if key is None else key * sizes[column] + values
    assert key is not None
    return key


def count_histogram(cube: Cube, predicate: Predicate, dims: Sequence[str]) -> np.ndarray:
    """How many rows satisfy the predicate, for each combination of values of ``dims``.

    Conjunctions of single-column conditions are answered from cached contingency tables;
    anything else is evaluated on the rows (on the cells of a contingency table for a
    `ScanCube`).
    """
    dims = tuple(dims)
    known = cube.counted.get((id(predicate), dims))
    if known is not None and known[0] is predicate:
        return known[1]
    counts = np.asarray(_count_histogram(cube, predicate, dims))
    if len(cube.counted) >= _COUNTED:
        cube.counted.clear()
    counts.flags.writeable = False  # shared by every query of the same text
    cube.counted[(id(predicate), dims)] = (predicate, counts)
    return counts


_COUNTED = 1 << 14
"""Most answers of `count_histogram` kept per cube: a condition asked again (the same text is
parsed and bound into the same predicate) is counted once."""


def _count_histogram(cube: Cube, predicate: Predicate, dims: tuple[str, ...]) -> np.ndarray:
    if isinstance(predicate, Const):
        full = cube.histogram(dims)
        return full if predicate.value else np.zeros_like(full)
    box = predicate.box()
    if box is not None and cube.fits(tuple(set(box) | set(dims))):
        only_box = [c for c in box if c not in dims]
        counts = cube.histogram(tuple(only_box) + dims)
        for axis, column in enumerate(only_box):
            counts = np.take(counts, np.flatnonzero(box[column]), axis=axis)
        counts = counts.sum(axis=tuple(range(len(only_box))))
        for axis, column in enumerate(dims):
            if column in box:
                view = [1] * len(dims)
                view[axis] = -1
                counts = counts * box[column].reshape(view)
        return counts
    return cube.histogram_where(predicate, dims)
