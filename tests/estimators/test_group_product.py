"""Tests of GroupProduct, the per-group product estimator shared by ambiguity and
generalization (ambiguity paper, Section 6): a group j adds ``sum_v prod_c F_c[j, v_c]`` over
the value tuples v that meet the condition.

Expected values are computed by enumerating every tuple of the product domain, so they do not
depend on the rewriting into signed boxes (inclusion-exclusion) that the estimator performs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.errors import QueryError
from ppdp.estimators.group_product import GroupProduct, _rowwise_kron, _signed_boxes
from ppdp.query.predicates import (
    AllOf,
    AnyOf,
    ColumnSet,
    Const,
    Negation,
    Predicate,
    RowCondition,
)

# -- _rowwise_kron ------------------------------------------------------------------------------


def random_sparse(rng: np.random.Generator, n_rows: int, n_columns: int,
                  density: float) -> sp.csr_array:
    dense = rng.uniform(0.5, 2.0, size=(n_rows, n_columns))
    dense[rng.random((n_rows, n_columns)) >= density] = 0.0
    if n_rows > 1:
        dense[rng.integers(n_rows)] = 0.0  # at least one empty row
    return sp.csr_array(dense)


@pytest.mark.parametrize("seed", range(6))
def test_rowwise_kron_matches_numpy_kron_row_by_row(seed: int) -> None:
    """Row j of the row-wise Kronecker product is kron(A[j], B[j]) (GROUP BY over two
    attributes combines their per-group weights independently)."""
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 9))
    left = random_sparse(rng, n_rows, int(rng.integers(1, 6)), float(rng.uniform(0.1, 0.9)))
    right = random_sparse(rng, n_rows, int(rng.integers(1, 6)), float(rng.uniform(0.1, 0.9)))
    expected_left, expected_right = left.toarray(), right.toarray()
    result = _rowwise_kron(left, right)
    assert result.shape == (n_rows, left.shape[1] * right.shape[1])
    dense = result.toarray()
    for j in range(n_rows):
        np.testing.assert_allclose(dense[j], np.kron(expected_left[j], expected_right[j]),
                                   rtol=0, atol=1e-12)


def test_rowwise_kron_of_unsorted_and_all_empty_rows() -> None:
    """Unsorted column indices and matrices without any entry give the same Kronecker rows."""
    # Row 0 lists its columns in reverse order; row 1 is empty; row 2 has one entry.
    left = sp.csr_array((np.array([3.0, 2.0, 5.0]), np.array([2, 0, 1]), np.array([0, 2, 2, 3])),
                        shape=(3, 3))
    right = sp.csr_array((np.array([7.0, 1.0, 4.0]), np.array([1, 0, 1]), np.array([0, 2, 3, 3])),
                         shape=(3, 2))
    expected = [np.kron(left.toarray()[j], right.toarray()[j]) for j in range(3)]
    np.testing.assert_array_equal(_rowwise_kron(left, right).toarray(), np.array(expected))
    empty = sp.csr_array((4, 3))
    assert _rowwise_kron(empty, sp.csr_array(np.ones((4, 2)))).nnz == 0
    assert _rowwise_kron(empty, empty).shape == (4, 9)


# -- GroupProduct against enumeration ----------------------------------------------------------


@st.composite
def factors_and_predicates(draw):
    n_columns = draw(st.integers(2, 4))
    names = [f"c{i}" for i in range(n_columns)]
    sizes = {name: draw(st.integers(1, 4)) for name in names}
    n_groups = draw(st.integers(1, 5))
    weight = st.one_of(st.just(0.0), st.floats(0.0, 3.0, allow_nan=False))
    factors = {name: np.asarray(draw(st.lists(st.lists(weight, min_size=sizes[name],
                                                       max_size=sizes[name]),
                                              min_size=n_groups, max_size=n_groups)),
                                dtype=np.float64).reshape(n_groups, sizes[name])
               for name in names}

    def predicate(depth: int) -> Predicate:
        kind = draw(st.sampled_from(["column", "const"] if depth == 0 else
                                    ["column", "const", "all", "any", "not"]))
        if kind == "column":
            name = draw(st.sampled_from(names))
            lut = np.asarray(draw(st.lists(st.booleans(), min_size=sizes[name],
                                           max_size=sizes[name])), dtype=bool)
            return ColumnSet(name, lut)
        if kind == "const":
            return Const(draw(st.booleans()))
        if kind == "not":
            return Negation(predicate(depth - 1))
        items = tuple(predicate(depth - 1) for _ in range(draw(st.integers(1, 3))))
        return AllOf(items) if kind == "all" else AnyOf(items)

    group_by = tuple(draw(st.permutations(names))[:draw(st.integers(0, 2))])
    return names, sizes, factors, predicate(draw(st.integers(0, 3))), group_by


def brute_force(names: list[str], sizes: dict[str, int], factors: dict[str, np.ndarray],
                predicate: Predicate, group_by: tuple[str, ...]) -> np.ndarray:
    """For every tuple v of the product domain and every group j, add
    prod_c F_c[j, v_c] * [predicate(v)] to the cell of v's GROUP BY values."""
    tuples = list(itertools.product(*(range(sizes[n]) for n in names)))
    codes = {n: np.asarray([t[i] for t in tuples], dtype=np.int64)
             for i, n in enumerate(names)}
    holds = predicate.evaluate(codes, len(tuples))
    assert holds.shape == (len(tuples),)
    n_groups = next(iter(factors.values())).shape[0]
    result = np.zeros(tuple(sizes[c] for c in group_by))
    for t, ok in zip(tuples, holds, strict=True):
        if not ok:
            continue
        value = dict(zip(names, t, strict=True))
        for j in range(n_groups):
            weight = 1.0
            for n in names:
                weight *= factors[n][j, value[n]]
            result[tuple(value[c] for c in group_by)] += weight
    return result


@settings(max_examples=200, deadline=None)
@given(factors_and_predicates())
def test_estimate_equals_the_sum_over_the_product_domain(case) -> None:
    """The estimate equals sum_j sum_{v meets C} prod_c F_c[j, v_c] for any predicate built
    from single-column conditions, AND, OR, NOT and constants, ungrouped and grouped (the
    signed-box rewriting is exact under the product model)."""
    names, sizes, factors, predicate, group_by = case
    estimator = GroupProduct({n: sp.csr_array(f) for n, f in factors.items()}, sizes)
    expected = brute_force(names, sizes, factors, predicate, group_by)
    result = estimator.estimate(predicate, group_by)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-9)
    ungrouped = estimator.estimate(predicate)
    assert ungrouped.shape == ()
    assert float(ungrouped) == pytest.approx(float(expected.sum()), rel=1e-9, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(factors_and_predicates())
def test_signed_boxes_reproduce_the_predicate_pointwise(case) -> None:
    """The inclusion-exclusion terms sum to the predicate's indicator on every value tuple."""
    names, sizes, _, predicate, _ = case
    tuples = list(itertools.product(*(range(sizes[n]) for n in names)))
    codes = {n: np.asarray([t[i] for t in tuples], dtype=np.int64)
             for i, n in enumerate(names)}
    total = np.zeros(len(tuples))
    for sign, box in _signed_boxes(predicate):
        inside = np.ones(len(tuples), dtype=bool)
        for column, lut in box.items():
            inside &= lut[codes[column]]
        total += sign * inside
    np.testing.assert_array_equal(total, predicate.evaluate(codes, len(tuples)).astype(float))


def test_single_group_example_by_hand() -> None:
    """One group with weights 1/2 on two ages and counts 2, 1 on two diseases: the count of
    (age 0 AND disease 1) is 1 * 1/2, and grouping by age splits the total 3 evenly."""
    estimator = GroupProduct({"age": sp.csr_array(np.array([[0.5, 0.5, 0.0]])),
                              "disease": sp.csr_array(np.array([[2.0, 1.0]]))},
                             {"age": 3, "disease": 2})
    age0 = ColumnSet("age", np.array([True, False, False]))
    disease1 = ColumnSet("disease", np.array([False, True]))
    assert float(estimator.estimate(AllOf((age0, disease1)))) == pytest.approx(0.5)
    assert float(estimator.estimate(AnyOf((age0, disease1)))) == pytest.approx(1.5 + 1 - 0.5)
    assert float(estimator.estimate(Negation(age0))) == pytest.approx(1.5)
    np.testing.assert_allclose(estimator.estimate(Const(True), ("age",)), [1.5, 1.5, 0.0])
    np.testing.assert_allclose(estimator.estimate(Const(True), ("disease", "age")),
                               [[1.0, 1.0, 0.0], [0.5, 0.5, 0.0]])


# -- refused conditions ----------------------------------------------------------------------


def small_estimator() -> GroupProduct:
    return GroupProduct({"a": sp.csr_array(np.array([[0.5, 0.5], [1.0, 0.0]])),
                         "b": sp.csr_array(np.array([[1.0, 2.0], [0.0, 3.0]]))},
                        {"a": 2, "b": 2})


def test_condition_relating_two_columns_is_refused() -> None:
    """Within a group the columns are published separately, so a comparison between two
    columns cannot be estimated: QueryError (also inside AND / OR / NOT)."""
    estimator = small_estimator()
    relation = RowCondition(lambda codes: codes["a"] < codes["b"], frozenset({"a", "b"}),
                            "a < b")
    for predicate in (relation, AllOf((ColumnSet("a", np.array([True, False])), relation)),
                      AnyOf((relation, Const(True))), Negation(relation)):
        with pytest.raises(QueryError, match="relates columns"):
            estimator.estimate(predicate)


def test_unknown_column_is_refused() -> None:
    """A condition or GROUP BY on a column the release does not publish is a QueryError."""
    estimator = small_estimator()
    with pytest.raises(QueryError, match="'zzz' is not published"):
        estimator.estimate(ColumnSet("zzz", np.array([True, False])))
    with pytest.raises(QueryError, match="'zzz' is not published"):
        estimator.estimate(Const(True), ("a", "zzz"))
