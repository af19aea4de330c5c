"""Counting the tuples of a whole domain that satisfy a condition, without enumerating it.

The domain D = D_1 x .. x D_l of a table can be far too large to list (Adult's nine attributes
span 648,023,040 tuples), yet estimators of randomized releases need n_D, the number of its
tuples satisfying a query (alpha-beta, Section 4.1, Algorithm 3). ``count_domain`` follows the
paper's three ideas:

1. an atomic condition on a few attributes is evaluated by brute force over the product of
   their domains only (vectorised by broadcasting, never materialising the other attributes);
2. conjuncts over disjoint sets of attributes are independent: their counts multiply;
3. conjuncts that share attributes are made independent by fixing the shared attributes: each
   shared attribute becomes an axis of the result and is summed at the end (the paper's
   "substitute every constant a in D_i").

Negation is a complement and a disjunction that is too large to enumerate at once is counted by
inclusion-exclusion. Attributes the condition does not mention contribute the product of their
domain sizes. Counts may also be *weighted* by a product distribution over the attributes
(alpha-beta Section 4.4.2): then each tuple counts as the product of its values' weights.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ppdp.errors import QueryError
from ppdp.query.predicates import AllOf, AnyOf, Const, Negation, Predicate

MAX_ENUMERATED_CELLS = 1 << 25
"""The largest product of domain sizes enumerated at once (about 33 million tuples)."""

MAX_INCLUSION_EXCLUSION_TERMS = 12
"""The most disjuncts counted by inclusion-exclusion (2^12 - 1 terms)."""

__all__ = ["MAX_ENUMERATED_CELLS", "count_domain"]


def count_domain(predicate: Predicate, sizes: Mapping[str, int], dims: Sequence[str] = (),
                 weights: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """The number of domain tuples satisfying ``predicate``, per value combination of ``dims``.

    ``sizes``: every attribute of the domain with its domain size; ``dims``: GROUP BY columns
    (the result has one axis per dim, in order; a 0-d array without dims). ``weights``: optional
    per-attribute weight vectors (one entry per domain value); a tuple then counts as the
    product of its values' weights, so with probability vectors the result is the probability of
    the condition under that product distribution. Exact in float64 up to 2^53.

    Raises QueryError when a part of the condition that cannot be split further spans more than
    ``MAX_ENUMERATED_CELLS`` value combinations, saying which attributes and how many.
    """
    dims = tuple(dims)
    for column in (*predicate.columns, *dims):
        if column not in sizes:
            raise QueryError(f"column {column!r} is not an attribute of the domain")
    counter = _Counter(dict(sizes), {c: np.asarray(w, dtype=np.float64)
                                     for c, w in (weights or {}).items()})
    mentioned = predicate.columns | set(dims)
    free = math.prod(counter.total(c) for c in sizes if c not in mentioned)
    return counter.count(predicate, dims) * free


class _Counter:
    def __init__(self, sizes: dict[str, int], weights: dict[str, np.ndarray]) -> None:
        self.sizes = sizes
        self.weights = weights
        for column, vector in weights.items():
            if column not in sizes:
                raise ValueError(f"weights given for {column!r}, which is not an attribute of "
                                 f"the domain")
            if vector.shape != (sizes[column],):
                raise ValueError(f"weights of {column!r} need {sizes[column]} entries, got "
                                 f"{vector.shape}")

    def total(self, column: str) -> float:
        """The weight of a whole attribute: its size, or the sum of its weights."""
        vector = self.weights.get(column)
        return float(self.sizes[column]) if vector is None else float(vector.sum())

    def count(self, predicate: Predicate, dims: tuple[str, ...]) -> np.ndarray:
        """Weighted count over assignments of ``predicate.columns | dims``, per key of dims."""
        if isinstance(predicate, Const):
            return self._dim_weights(dims) * float(predicate.value)
        unused = tuple(d for d in dims if d not in predicate.columns)
        if unused:
            # Dims the condition does not mention only repeat its counts, key by key.
            kept = tuple(d for d in dims if d in predicate.columns)
            return (_expand(self.count(predicate, kept), kept, dims)
                    * _expand(self._dim_weights(unused), unused, dims))
        if isinstance(predicate, Negation):
            return (self._dim_weights(dims) * self._rest(predicate.columns, dims)
                    - self.count(predicate.item, dims))
        if isinstance(predicate, AllOf):
            components = _components(predicate.items, set(dims))
            if len(components) > 1:
                return self._product(components, dims)
        cells = math.prod(self.sizes[c] for c in predicate.columns | set(dims))
        if cells <= MAX_ENUMERATED_CELLS:
            return self._enumerate(predicate, dims)
        if isinstance(predicate, AnyOf) and len(predicate.items) <= MAX_INCLUSION_EXCLUSION_TERMS:
            return self._inclusion_exclusion(predicate, dims)
        if isinstance(predicate, AllOf):
            shared = _most_shared(predicate.items, set(dims))
            if shared is not None:
                counts = self.count(predicate, (*dims, shared))
                return counts.sum(axis=-1)
        columns = sorted(predicate.columns | set(dims))
        raise QueryError(
            f"counting the domain for this condition needs the product of the domains of "
            f"{columns} ({cells:,} value combinations), more than the {MAX_ENUMERATED_CELLS:,} "
            f"that are enumerated at once; split the condition into parts on fewer or smaller "
            f"attributes, or coarsen their domains")

    def _dim_weights(self, dims: tuple[str, ...]) -> np.ndarray:
        """Each key's own weight: 1 per key unweighted, the product of its values' weights."""
        result = np.ones(tuple(self.sizes[d] for d in dims))
        for axis, column in enumerate(dims):
            vector = self.weights.get(column)
            if vector is not None:
                view = [1] * len(dims)
                view[axis] = -1
                result = result * vector.reshape(view)
        return result

    def _rest(self, columns: frozenset[str], dims: tuple[str, ...]) -> float:
        return math.prod(self.total(c) for c in columns if c not in dims)

    def _product(self, components: list[list[Predicate]], dims: tuple[str, ...]) -> np.ndarray:
        """Conjuncts independent given the dims: multiply their counts key by key."""
        result = self._dim_weights(dims)
        for items in components:
            part = items[0] if len(items) == 1 else AllOf(tuple(items))
            kept = tuple(d for d in dims if d in part.columns)
            counts = self.count(part, kept)
            # count() already weighs each kept dim by its key's weight, and result does too.
            own = self._dim_weights(kept)
            # A key of weight 0 counts 0 whatever the quotient; avoid dividing by it.
            counts = np.divide(counts, own, out=np.zeros_like(counts), where=own != 0)
            result = result * _expand(counts, kept, dims)
        return result

    def _enumerate(self, predicate: Predicate, dims: tuple[str, ...]) -> np.ndarray:
        """Brute force over the product of the mentioned attributes' domains (broadcast)."""
        columns = tuple(dims) + tuple(sorted(predicate.columns - set(dims)))
        n = len(columns)
        grids = {}
        for axis, column in enumerate(columns):
            view = [1] * n
            view[axis] = self.sizes[column]
            grids[column] = np.arange(self.sizes[column]).reshape(view)
        shape = tuple(self.sizes[c] for c in columns)
        truth = np.broadcast_to(predicate.evaluate(grids, 0), shape).astype(np.float64)
        for axis, column in enumerate(columns):
            vector = self.weights.get(column)
            if vector is not None:
                view = [1] * n
                view[axis] = -1
                truth = truth * vector.reshape(view)
        return truth.sum(axis=tuple(range(len(dims), n)))

    def _inclusion_exclusion(self, predicate: AnyOf, dims: tuple[str, ...]) -> np.ndarray:
        items = predicate.items
        result = np.zeros(tuple(self.sizes[d] for d in dims))
        for size in range(1, len(items) + 1):
            sign = 1.0 if size % 2 else -1.0
            for subset in itertools.combinations(items, size):
                part = subset[0] if size == 1 else AllOf(subset)
                missing = predicate.columns - part.columns - set(dims)
                counts = self.count(part, dims) * math.prod(self.total(c) for c in missing)
                result = result + sign * counts
        return result


def _components(items: Sequence[Predicate], fixed: set[str]) -> list[list[Predicate]]:
    """Conjuncts grouped by shared attributes, ignoring the fixed (dim) attributes."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for index, item in enumerate(items):
        for column in item.columns - fixed:
            if column in owner:
                parent[find(index)] = find(owner[column])
            else:
                owner[column] = index
    groups: dict[int, list[Predicate]] = {}
    for index, item in enumerate(items):
        groups.setdefault(find(index), []).append(item)
    return list(groups.values())


def _most_shared(items: Sequence[Predicate], fixed: set[str]) -> str | None:
    """The attribute (not yet fixed) that the most conjuncts mention, if several share one."""
    counts: dict[str, int] = {}
    for item in items:
        for column in item.columns - fixed:
            counts[column] = counts.get(column, 0) + 1
    shared = [c for c, k in counts.items() if k > 1]
    return max(sorted(shared), key=lambda c: counts[c]) if shared else None


def _expand(counts: np.ndarray, kept: tuple[str, ...], dims: tuple[str, ...]) -> np.ndarray:
    """Counts over ``kept`` (a sub-sequence of ``dims``) reshaped to broadcast over dims."""
    view = [counts.shape[kept.index(d)] if d in kept else 1 for d in dims]
    return counts.reshape(view)
