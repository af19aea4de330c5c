"""Counting from groups whose attributes are published one by one (ambiguity, generalization).

Ambiguity (Section 6, Example 6.1) and generalization (Section 1, Theorem 6.1) answer a count
query the same way: inside a group the published values of each attribute are taken as
independent of the other attributes and uniform over the group's values, so a group j adds

    c_j(C_S) * prod_i l_ij / m_ij

where ``c_j(C_S)`` counts the group's rows whose sensitive value meets the sensitive condition,
``m_ij`` is the number of values of attribute i the group publishes and ``l_ij`` how many of
them meet the condition on attribute i. (Algorithm 1 as printed adds the per-attribute terms;
the intended estimate, Example 6.1's 7/18, multiplies them.)

Each attribute is held as a sparse (groups x domain) matrix of weights: a row of a
quasi-identifier sums to 1 (``1/m_ij`` on every published value), a row of the sensitive
attribute holds the group's counts. A conjunction of single-column conditions is then one
sparse product per attribute. Other conditions (OR across columns, NOT) are rewritten as signed
sums of such conjunctions (inclusion-exclusion), which the product model answers exactly; only
conditions that compare columns with each other are refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ppdp.errors import QueryError
from ppdp.query.cube import MAX_CUBE_CELLS
from ppdp.query.predicates import AllOf, AnyOf, ColumnSet, Const, Negation, Predicate

MAX_TERMS = 4096
"""The most conjunctions a condition is rewritten into (OR of many columns grows as 2^k)."""

Box = dict[str, np.ndarray]


class GroupProduct:
    """Estimates counts from per-group, per-attribute weight matrices (see the module doc)."""

    def __init__(self, factors: Mapping[str, sp.csr_array], sizes: Mapping[str, int]) -> None:
        self.factors = {c: sp.csr_array(m, dtype=np.float64) for c, m in factors.items()}
        self.sizes = dict(sizes)
        shapes = {m.shape[0] for m in self.factors.values()}
        if len(shapes) > 1:
            raise ValueError(f"factor matrices disagree on the number of groups: {shapes}")
        self.n_groups = shapes.pop() if shapes else 0

    def estimate(self, predicate: Predicate, group_by: Sequence[str] = ()) -> np.ndarray:
        """The estimated count for each value combination of ``group_by`` (0-d if none)."""
        group_by = tuple(group_by)
        for column in (*predicate.columns, *group_by):
            if column not in self.factors:
                raise QueryError(f"column {column!r} is not published by this release")
        shape = tuple(self.sizes[c] for c in group_by)
        if np.prod(shape, dtype=np.float64) > MAX_CUBE_CELLS:
            raise QueryError(f"GROUP BY {list(group_by)} spans {np.prod(shape):.3g} value "
                             f"combinations, too many to estimate densely")
        result = np.zeros(shape)
        for sign, box in _signed_boxes(predicate):
            result += sign * self._box(box, group_by)
        return result

    def _box(self, box: Box, group_by: tuple[str, ...]) -> np.ndarray:
        weight = np.ones(self.n_groups)
        for column, factor in self.factors.items():
            if column in group_by:
                continue
            lut = box.get(column)
            weight *= factor.sum(axis=1) if lut is None else factor @ lut.astype(np.float64)
        if not group_by:
            return np.asarray(weight.sum())
        # Row-wise Kronecker product of the grouped attributes' (masked) rows, weighted.
        combined = sp.csr_array(sp.diags_array(weight) @ self._masked(group_by[0], box))
        for column in group_by[1:]:
            combined = _rowwise_kron(combined, self._masked(column, box))
        totals = np.asarray(combined.sum(axis=0)).reshape(-1)
        return totals.reshape(tuple(self.sizes[c] for c in group_by))

    def _masked(self, column: str, box: Box) -> sp.csr_array:
        factor = self.factors[column]
        lut = box.get(column)
        if lut is None:
            return factor
        return sp.csr_array(factor @ sp.diags_array(lut.astype(np.float64)))


def _rowwise_kron(left: sp.csr_array, right: sp.csr_array) -> sp.csr_array:
    """Row j of the result is kron(left[j], right[j]) (columns: left index * width + right)."""
    left, right = left.tocsr(), right.tocsr()
    left.sort_indices()
    right.sort_indices()
    n_rows = left.shape[0]
    left_counts, right_counts = np.diff(left.indptr), np.diff(right.indptr)
    pairs = left_counts * right_counts
    total = int(pairs.sum())
    if total > MAX_CUBE_CELLS * 4:
        raise QueryError("GROUP BY over these columns needs too many combinations per group")
    row_of_pair = np.repeat(np.arange(n_rows), pairs)
    start = np.repeat(np.cumsum(pairs) - pairs, pairs)
    within = np.arange(total) - start
    width = right_counts[row_of_pair]
    safe_width = np.maximum(width, 1)
    left_pos = left.indptr[row_of_pair] + within // safe_width
    right_pos = right.indptr[row_of_pair] + within % safe_width
    columns = left.indices[left_pos].astype(np.int64) * right.shape[1] + right.indices[right_pos]
    data = left.data[left_pos] * right.data[right_pos]
    indptr = np.concatenate([[0], np.cumsum(pairs)])
    return sp.csr_array((data, columns, indptr), shape=(n_rows, left.shape[1] * right.shape[1]))


def _signed_boxes(predicate: Predicate) -> list[tuple[int, Box]]:
    """The predicate as a signed sum of conjunctions of single-column conditions."""
    if isinstance(predicate, Const):
        return [(1, {})] if predicate.value else []
    if isinstance(predicate, ColumnSet):
        return [(1, {predicate.column: predicate.lut})]
    if isinstance(predicate, AllOf):
        terms: list[tuple[int, Box]] = [(1, {})]
        for item in predicate.items:
            terms = [(s1 * s2, _intersect(b1, b2))
                     for s1, b1 in terms for s2, b2 in _signed_boxes(item)]
            terms = _check(t for t in terms if not _empty(t[1]))
        return terms
    if isinstance(predicate, Negation):
        return _check([(1, {}), *((-s, b) for s, b in _signed_boxes(predicate.item))])
    if isinstance(predicate, AnyOf):
        return _signed_boxes(Negation(AllOf(tuple(Negation(i) for i in predicate.items))))
    raise QueryError(f"this release estimates conditions that compare columns with literals; "
                     f"the condition on {sorted(predicate.columns)} relates columns to each "
                     f"other (within a group the columns are published separately)")


def _intersect(first: Box, second: Box) -> Box:
    merged = dict(first)
    for column, lut in second.items():
        merged[column] = merged[column] & lut if column in merged else lut
    return merged


def _empty(box: Box) -> bool:
    return any(not lut.any() for lut in box.values())


def _check(terms: Iterable[tuple[int, Box]]) -> list[tuple[int, Box]]:
    result = list(terms)
    if len(result) > MAX_TERMS:
        raise QueryError(f"the condition expands into more than {MAX_TERMS} conjunctions; "
                         f"split it into several queries")
    return result
