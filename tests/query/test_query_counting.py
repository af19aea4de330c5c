"""Counting and splitting queries (ppdp.query), checked against a brute-force oracle that
evaluates the syntax tree row by row in plain Python, on random tables and random predicates
built from the syntax classes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.data.schema import Column, Role, Schema
from ppdp.errors import QueryError
from ppdp.query.binding import bind
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.predicates import ColumnSet, Predicate, RowCondition
from ppdp.query.splitting import _split_atoms, split
from ppdp.query.syntax import (
    And,
    Arith,
    Between,
    Col,
    Compare,
    Condition,
    Expr,
    In,
    Lit,
    Not,
    Or,
    Query,
    TrueCondition,
)
from ppdp.table.table import Table, exact_count
from tests.query.test_query import people

# ---------------------------------------------------------------------------------------------
# The brute-force oracle


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "+": operator.add, "-": operator.sub,
    "*": operator.mul, "/": operator.truediv,
}


def value_of(expr: Expr, row: Mapping[str, Any]) -> Any:
    if isinstance(expr, Col):
        return row[expr.name]
    if isinstance(expr, Lit):
        return expr.value
    return OPS[expr.op](value_of(expr.left, row), value_of(expr.right, row))


def holds(condition: Condition, row: Mapping[str, Any]) -> bool:
    if isinstance(condition, TrueCondition):
        return True
    if isinstance(condition, And):
        return all(holds(c, row) for c in condition.items)
    if isinstance(condition, Or):
        return any(holds(c, row) for c in condition.items)
    if isinstance(condition, Not):
        return not holds(condition.item, row)
    if isinstance(condition, Compare):
        return bool(OPS[condition.op](value_of(condition.left, row),
                                      value_of(condition.right, row)))
    if isinstance(condition, Between):
        value = value_of(condition.expr, row)
        return bool(value_of(condition.low, row) <= value <= value_of(condition.high, row))
    if isinstance(condition, In):
        value = value_of(condition.expr, row)
        return any(value == v.value for v in condition.values)
    raise AssertionError(condition)


def rows_of(table: Table) -> list[dict[str, Any]]:
    decoded = {name: table.values(name).tolist() for name in table.schema.names}
    return [{name: decoded[name][i] for name in table.schema.names}
            for i in range(table.n_rows)]


def brute_histogram(table: Table, condition: Condition, group_by: tuple[str, ...]
                    ) -> np.ndarray:
    shape = tuple(table.schema[c].size for c in group_by)
    result = np.zeros(shape, dtype=np.int64)
    for i, row in enumerate(rows_of(table)):
        if holds(condition, row):
            result[tuple(int(table.codes[c][i]) for c in group_by)] += 1
    return result


# ---------------------------------------------------------------------------------------------
# Random tables and predicates

NAMES = ("a", "b", "c", "d")
INT_POOL = list(range(-3, 7))
STR_POOL = ["ant", "bee", "cat", "dog", "eel"]


@st.composite
def tables(draw: st.DrawFn, min_int_columns: int = 0) -> Table:
    n_columns = draw(st.integers(2, 4))
    columns = []
    for k in range(n_columns):
        kind = "int" if k < min_int_columns else draw(st.sampled_from(["int", "str"]))
        pool = INT_POOL if kind == "int" else STR_POOL
        domain = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
        columns.append(Column(NAMES[k], Role.QUASI_IDENTIFIER, tuple(domain)))
    schema = Schema(tuple(columns))
    n_rows = draw(st.integers(0, 60))
    codes = {c.name: np.asarray(draw(st.lists(st.integers(0, c.size - 1), min_size=n_rows,
                                              max_size=n_rows)), dtype=np.int64)
             for c in columns}
    return Table(schema, codes)


def literal_strategy(column: Column) -> st.SearchStrategy[Lit]:
    pool = [*INT_POOL, -10, 100] if column.kind == "int" else [*STR_POOL, "", "zzz"]
    return st.sampled_from(pool).map(Lit)


def leaves(schema: Schema, cross: tuple[str, ...]) -> st.SearchStrategy[Condition]:
    """Single-column conditions on any column; arithmetic between the int columns ``cross``
    (conditions on one int column with arithmetic are allowed on every int column)."""
    options: list[st.SearchStrategy[Condition]] = [st.just(TrueCondition())]
    ordering = st.sampled_from(["!=", "<", "<=", ">", ">="])
    for column in schema.columns:
        col = Col(column.name)
        in_domain = st.sampled_from(column.domain).map(Lit)
        any_literal = literal_strategy(column)
        options += [
            in_domain.map(lambda v, c=col: Compare("=", c, v)),
            st.tuples(ordering, any_literal).map(lambda t, c=col: Compare(t[0], c, t[1])),
            st.tuples(ordering, any_literal).map(lambda t, c=col: Compare(t[0], t[1], c)),
            st.lists(in_domain, max_size=3).map(lambda vs, c=col: In(c, tuple(vs))),
            st.tuples(any_literal, any_literal).map(lambda t, c=col: Between(c, t[0], t[1])),
        ]
        if column.kind == "int":
            options.append(st.tuples(ordering, st.integers(-3, 3), st.integers(-4, 4)).map(
                lambda t, c=col: Compare(t[0], Arith("*", Lit(t[1]), c),
                                         Arith("+", c, Lit(t[2])))))
    if len(cross) >= 2:
        ints = st.sampled_from(cross).map(Col)
        arith = st.sampled_from(["+", "-", "*"])
        everything = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
        options += [
            st.tuples(everything, ints, ints).map(lambda t: Compare(t[0], t[1], t[2])),
            st.tuples(everything, arith, ints, ints, ints).map(
                lambda t: Compare(t[0], Arith(t[1], t[2], t[3]), t[4])),
            st.tuples(everything, ints, st.sampled_from([2, 3, -2]), ints).map(
                lambda t: Compare(t[0], t[1], Arith("*", Lit(t[2]), t[3]))),
            st.tuples(everything, ints, ints, st.integers(-3, 3)).map(
                lambda t: Compare(t[0], Arith("/", t[1], Lit(2)), Arith("+", t[2], Lit(t[3])))),
        ]
    return st.one_of(options)


def conditions(schema: Schema, cross: tuple[str, ...]) -> st.SearchStrategy[Condition]:
    return st.recursive(
        leaves(schema, cross),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs))),
            inner.map(Not),
        ),
        max_leaves=8,
    )


def int_columns(schema: Schema) -> tuple[str, ...]:
    return tuple(c.name for c in schema.columns if c.kind == "int")


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_count_histogram_matches_brute_force(data: st.DataObject) -> None:
    table = data.draw(tables())
    schema = table.schema
    condition = data.draw(conditions(schema, int_columns(schema)))
    group_by = tuple(data.draw(st.lists(st.sampled_from(schema.names), max_size=2,
                                        unique=True)))
    bound = bind(Query(where=condition, group_by=group_by), schema)
    expected = brute_histogram(table, condition, group_by)
    cube = Cube(table.codes, schema.sizes(), table.n_rows)
    # Ask twice: the second answer comes from the cached contingency tables.
    for _ in range(2):
        counts = count_histogram(cube, bound.predicate, bound.group_by)
        np.testing.assert_array_equal(np.asarray(counts), expected)
    if not group_by:
        assert exact_count(table, Query(where=condition)).value == expected.sum()  # type: ignore[union-attr]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_conjunctions_of_single_column_conditions_match_brute_force(data: st.DataObject) -> None:
    table = data.draw(tables())
    schema = table.schema
    items = data.draw(st.lists(leaves(schema, ()), min_size=1, max_size=4))
    condition = And(tuple(items))
    group_by = tuple(data.draw(st.lists(st.sampled_from(schema.names), max_size=3,
                                        unique=True)))
    bound = bind(Query(where=condition, group_by=group_by), schema)
    counts = count_histogram(Cube(table.codes, schema.sizes(), table.n_rows),
                             bound.predicate, bound.group_by)
    np.testing.assert_array_equal(np.asarray(counts), brute_histogram(table, condition,
                                                                      group_by))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_cross_column_arithmetic_matches_brute_force(data: st.DataObject) -> None:
    table = data.draw(tables(min_int_columns=2))
    schema = table.schema
    cross = int_columns(schema)
    condition = data.draw(leaves(schema, cross).filter(
        lambda c: isinstance(c, Compare) and (isinstance(c.left, Arith)
                                              or isinstance(c.right, Arith | Col))))
    bound = bind(Query(where=condition), schema)
    counts = count_histogram(Cube(table.codes, schema.sizes(), table.n_rows),
                             bound.predicate, ())
    assert int(counts) == brute_histogram(table, condition, ()).sum()


def test_conjunction_of_comparisons_is_a_box() -> None:
    schema = people().schema
    box = bind("age > 20 AND sex = 'Male' AND age BETWEEN 10 AND 45", schema).predicate.box()
    assert box is not None
    assert set(box) == {"age", "sex"}
    assert box["age"].tolist() == [False, True, True, False]


@pytest.mark.parametrize("text", ["age IN (20, 30) AND sex = 'Male'",
                                  "NOT sex = 'Male' AND age > 20"])
def test_conjunction_with_in_or_not_is_a_box(text: str) -> None:
    assert bind(text, people().schema).predicate.box() is not None


def test_cross_column_condition_stays_row_level() -> None:
    predicate = bind("age + iinjury >= 33", people().schema).predicate
    assert isinstance(predicate, RowCondition)
    assert predicate.columns == {"age", "iinjury"}
    single = bind("2 * age > age + 30", people().schema).predicate
    assert isinstance(single, ColumnSet)
    assert single.lut.tolist() == [False, False, True, True]  # 2a > a + 30 <=> a > 30


# ---------------------------------------------------------------------------------------------
# Splitting


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_split_is_a_disjoint_cover_of_the_predicate(data: st.DataObject) -> None:
    table = data.draw(tables())
    schema = table.schema
    marked = tuple(data.draw(st.lists(st.sampled_from(schema.names), min_size=1, max_size=2,
                                      unique=True)))
    # Cross-column conditions only among the unmarked int columns.
    cross = tuple(c for c in int_columns(schema) if c not in marked)
    condition = data.draw(conditions(schema, cross))
    predicate = bind(Query(where=condition), schema).predicate
    pieces = split(predicate, list(marked), schema.sizes())
    n = table.n_rows
    covered = np.zeros(n, dtype=np.int64)
    for rest, combos in pieces:
        assert not (rest.columns & set(marked))
        assert combos.shape == tuple(schema[c].size for c in marked)
        in_combos = combos[tuple(table.codes[c].astype(np.int64) for c in marked)]
        covered += rest.evaluate(table.codes, n) & in_combos
    expected = np.asarray([holds(condition, row) for row in rows_of(table)], dtype=np.int64)
    np.testing.assert_array_equal(covered, expected)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_split_of_a_conjunction_equals_the_general_rule(data: st.DataObject) -> None:
    """Conjunctions of single-column conditions take a shortcut (at most one term); on every
    combination of values it counts what the general rule (one term per pattern of truth of
    the atoms) counts."""
    schema = data.draw(tables()).schema
    marked = list(data.draw(st.lists(st.sampled_from(schema.names), min_size=1, max_size=2,
                                     unique=True)))
    parts = data.draw(st.lists(leaves(schema, ()), min_size=1, max_size=4))
    predicate = bind(Query(where=And(tuple(parts)) if len(parts) > 1 else parts[0]),
                     schema).predicate
    assert predicate.box() is not None or predicate.atoms() == [predicate]
    grid = np.indices([schema[c].size for c in schema.names]).reshape(len(schema.names), -1)
    every = dict(zip(schema.names, grid, strict=True))
    shape = tuple(schema[c].size for c in marked)

    def covered(pieces: list[tuple[Predicate, np.ndarray]]) -> np.ndarray:
        total = np.zeros(grid.shape[1], dtype=np.int64)
        for rest, combos in pieces:
            total += rest.evaluate(every, grid.shape[1]) & combos[tuple(every[c] for c in marked)]
        return total

    fast = split(predicate, marked, schema.sizes())
    assert len(fast) <= 1
    np.testing.assert_array_equal(covered(fast), covered(_split_atoms(predicate, marked, shape)))
    np.testing.assert_array_equal(covered(fast), predicate.evaluate(every, grid.shape[1]))


def test_split_rejects_a_comparison_between_a_split_column_and_another() -> None:
    schema = people().schema
    for text in ["age < 10 * iinjury", "age + iinjury > 3 AND sex = 'Male'",
                 "NOT (iinjury = age)"]:
        predicate = bind(text, schema).predicate
        with pytest.raises(QueryError, match="relates"):
            split(predicate, ["iinjury"], schema.sizes())
    # The same condition is fine when neither of its columns is split.
    pieces = split(bind("age < 10 * iinjury AND sex = 'Male'", schema).predicate, ["sex"],
                   schema.sizes())
    assert len(pieces) == 1
    rest, combos = pieces[0]
    assert isinstance(rest, RowCondition)
    assert combos.tolist() == [False, True]
