"""Tests of ppdp.query: parsing, binding to a schema, simplification, splitting and counting.

Counting is checked against a brute-force oracle that evaluates the syntax tree row by row in
plain Python, on random tables and random predicates built from the syntax classes.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.data.schema import Column, Role, Schema
from ppdp.errors import QueryError
from ppdp.query import binding as query_module
from ppdp.query.binding import bind
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.parse import parse_query
from ppdp.query.predicates import ColumnSet, Const, Predicate, RowCondition
from ppdp.query.splitting import _split_atoms, split
from ppdp.query.syntax import (
    MAX_DEPTH,
    MAX_QUERY_CHARS,
    MAX_TERMS,
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
from ppdp.table.table import Table, exact_count, table_from_arrow

# ---------------------------------------------------------------------------------------------
# A fixed table for parsing and binding.


def people() -> Table:
    return table_from_arrow(pa.table({
        "age": [20, 30, 40, 50, 30, 20],
        "sex": ["Male", "Female", "Female", "Male", "Male", "Female"],
        "marital-status": ["Divorced", "Married", "Divorced", "Never", "Married", "Never"],
        "iinjury": [1, 2, 3, 3, 1, 2],
    }))


def count(table: Table, text: str) -> float:
    result = table.count(text)
    return result.value  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# Parsing


def test_bare_condition_and_full_select_parse_to_the_same_query() -> None:
    bare = parse_query("age >= 40 AND sex = 'Female'")
    full = parse_query("SELECT COUNT(*) FROM t WHERE age >= 40 AND sex = 'Female';")
    assert bare.where == full.where
    assert bare.group_by == full.group_by == ()
    assert bare.where == And((Compare(">=", Col("age"), Lit(40)),
                              Compare("=", Col("sex"), Lit("Female"))))
    assert str(full) == "SELECT COUNT(*) FROM t WHERE age >= 40 AND sex = 'Female'"


def test_parse_query_passes_a_query_through() -> None:
    query = parse_query("age > 3")
    assert parse_query(query) is query


def test_parsed_queries_are_cached_and_errors_are_not() -> None:
    text = "age >= 41 AND sex = 'Female'"
    assert parse_query(text) is parse_query(text)
    for _ in range(2):
        with pytest.raises(QueryError, match="non-empty"):
            parse_query("   ")
    with pytest.raises(QueryError, match="non-empty"):
        parse_query(None)  # type: ignore[arg-type]


def test_select_without_where_is_true() -> None:
    assert parse_query("SELECT COUNT(*) FROM t").where == TrueCondition()
    assert parse_query("select count(*) from t").where == TrueCondition()


def test_group_by_with_and_without_the_column_in_the_select_list() -> None:
    plain = parse_query("SELECT COUNT(*) FROM t WHERE age > 20 GROUP BY sex")
    listed = parse_query("SELECT sex, COUNT(*) FROM t GROUP BY sex")
    assert plain.group_by == listed.group_by == ("sex",)
    assert listed.where == TrueCondition()
    two = parse_query("SELECT sex, age, COUNT(*) FROM t GROUP BY sex, age")
    assert two.group_by == ("sex", "age")


@pytest.mark.parametrize(("text", "expected"), [
    ("age = 3", Compare("=", Col("age"), Lit(3))),
    ("age != 3", Compare("!=", Col("age"), Lit(3))),
    ("age <> 3", Compare("!=", Col("age"), Lit(3))),
    ("age < 3", Compare("<", Col("age"), Lit(3))),
    ("age <= 3", Compare("<=", Col("age"), Lit(3))),
    ("age > 3", Compare(">", Col("age"), Lit(3))),
    ("age >= 3", Compare(">=", Col("age"), Lit(3))),
    ("age > -3", Compare(">", Col("age"), Lit(-3))),
    ("age > 2.5", Compare(">", Col("age"), Lit(2.5))),
    ("sex = 'F'", Compare("=", Col("sex"), Lit("F"))),
    ("age IN (1, 2)", In(Col("age"), (Lit(1), Lit(2)))),
    ("age NOT IN (1, -2)", Not(In(Col("age"), (Lit(1), Lit(-2))))),
    ("age BETWEEN -1 AND 5", Between(Col("age"), Lit(-1), Lit(5))),
    ("NOT age = 1", Not(Compare("=", Col("age"), Lit(1)))),
    ("age = 1 OR age = 2", Or((Compare("=", Col("age"), Lit(1)),
                               Compare("=", Col("age"), Lit(2))))),
    ("(age = 1 OR age = 2) AND sex = 'F'",
     And((Or((Compare("=", Col("age"), Lit(1)), Compare("=", Col("age"), Lit(2)))),
          Compare("=", Col("sex"), Lit("F"))))),
    ("age = 1 OR (age = 2 AND sex = 'F')",
     Or((Compare("=", Col("age"), Lit(1)),
         And((Compare("=", Col("age"), Lit(2)), Compare("=", Col("sex"), Lit("F"))))))),
    ("age < 2 * hours", Compare("<", Col("age"), Arith("*", Lit(2), Col("hours")))),
    ("TRUE", TrueCondition()),
])
def test_operators(text: str, expected: Condition) -> None:
    assert parse_query(text).where == expected


def test_and_binds_tighter_than_or() -> None:
    where = parse_query("a = 1 OR b = 2 AND c = 3").where
    assert isinstance(where, Or)
    assert isinstance(where.items[1], And)


@pytest.mark.parametrize("text", [
    "", "   ",
    ";",
    " ; ",
])
def test_empty_query(text: str) -> None:
    with pytest.raises(QueryError, match="non-empty"):
        parse_query(text)


def test_syntax_error_names_the_query() -> None:
    with pytest.raises(QueryError, match=r"cannot parse query 'age >'"):
        parse_query("age >")
    with pytest.raises(QueryError, match="cannot parse"):
        parse_query("age > 3 AND")


@pytest.mark.parametrize(("text", "word"), [
    ("SELECT COUNT(*) FROM t JOIN u ON t.a = u.a", "JOIN"),
    ("SELECT COUNT(*) FROM t GROUP BY sex HAVING COUNT(*) > 1", "HAVING"),
    ("SELECT COUNT(*) FROM t LIMIT 3", "LIMIT"),
    ("age > 25 LIMIT 3", "LIMIT"),
    ("SELECT COUNT(*) FROM t ORDER BY age", "ORDER"),
])
def test_unsupported_clauses(text: str, word: str) -> None:
    with pytest.raises(QueryError, match=f"{word}.*not supported"):
        parse_query(text)


@pytest.mark.parametrize("text", [
    "SELECT age FROM t",
    "SELECT SUM(age) FROM t",
    "SELECT COUNT(*), COUNT(*) FROM t",
    "SELECT age, COUNT(*) FROM t GROUP BY sex",
    "SELECT * FROM t",
])
def test_select_list_must_be_count(text: str) -> None:
    with pytest.raises(QueryError, match=r"select list must be COUNT\(\*\)"):
        parse_query(text)


def test_count_distinct_is_rejected() -> None:
    with pytest.raises(QueryError):
        parse_query("SELECT COUNT(DISTINCT age) FROM t")


def test_in_with_subquery_is_rejected() -> None:
    with pytest.raises(QueryError, match="IN supports a list of literals only"):
        parse_query("age IN (SELECT age FROM u)")
    with pytest.raises(QueryError, match="IN supports a list of literals only"):
        parse_query("age IN (1, hours)")


def test_qualified_column_is_rejected() -> None:
    with pytest.raises(QueryError, match="qualified column names"):
        parse_query("t.age > 3")


# ---------------------------------------------------------------------------------------------
# Binding


def test_hyphenated_column_bare_and_quoted() -> None:
    table = people()
    assert count(table, "marital-status = 'Divorced'") == 2
    assert count(table, '"marital-status" = \'Divorced\'') == 2
    assert count(table, "marital-status IN ('Never', 'Married')") == 4
    grouped = table.count("SELECT marital-status, COUNT(*) FROM t GROUP BY marital-status")
    assert grouped["Married"].value == 2  # type: ignore[index]


def test_column_names_are_case_insensitive() -> None:
    table = people()
    assert count(table, "AGE > 25") == count(table, "age > 25") == 4
    assert count(table, "Sex = 'Male'") == 3
    assert count(table, '"MARITAL-STATUS" = \'Never\'') == 2
    grouped = table.count("SELECT COUNT(*) FROM t GROUP BY SEX")
    assert grouped.columns == ("sex",)  # type: ignore[union-attr]


def test_bare_hyphenated_name_is_case_insensitive() -> None:
    assert count(people(), "MARITAL-STATUS = 'Never'") == 2


def test_select_list_column_is_case_insensitive() -> None:
    grouped = people().count("SELECT SEX, COUNT(*) FROM t GROUP BY sex")
    assert grouped["Male"].value == 3  # type: ignore[index]


def test_unknown_column_suggests_the_close_name() -> None:
    with pytest.raises(QueryError, match=r"unknown column 'agee'; did you mean 'age'"):
        bind("agee > 3", people().schema)
    with pytest.raises(QueryError, match=r"unknown column 'sexx'"):
        bind("SELECT COUNT(*) FROM t GROUP BY sexx", people().schema)


def test_unknown_value_lists_the_closest_domain_values() -> None:
    schema = people().schema
    with pytest.raises(QueryError, match=r"'Femal' is not in the domain of column 'sex'; "
                                         r"closest: 'Female'"):
        bind("sex = 'Femal'", schema)
    with pytest.raises(QueryError, match=r"'Divorcd'.*closest: 'Divorced'"):
        bind("marital-status IN ('Never', 'Divorcd')", schema)
    with pytest.raises(QueryError, match=r"value -1 is not in the domain of column 'age'"):
        bind("age = -1", schema)


def test_unknown_number_suggests_the_numerically_closest_values() -> None:
    with pytest.raises(QueryError) as info:
        bind("age = 25", people().schema)
    closest = str(info.value).split("closest:")[1]
    assert "20" in closest
    assert "30" in closest
    assert "50" not in closest


def test_text_literal_on_a_numeric_column() -> None:
    with pytest.raises(QueryError, match=r"column 'age' holds numbers; 'abc' is not a number"):
        bind("age = 'abc'", people().schema)
    with pytest.raises(QueryError, match="holds numbers"):
        bind("age < 'x'", people().schema)


def test_range_outside_the_domain_is_fine() -> None:
    table = people()
    assert count(table, "age > 1000") == 0
    assert count(table, "age < -1000") == 0
    assert count(table, "age != 1000") == 6
    assert count(table, "age BETWEEN 25 AND 45") == 3
    assert count(table, "age BETWEEN 45 AND 25") == 0
    assert count(table, "age > -25 AND age < 35") == 4
    assert count(table, "age < 25.5") == 2


def test_string_literal_on_an_int_column_is_coerced() -> None:
    table = people()
    assert count(table, "iinjury = '3'") == 2
    assert count(table, "iinjury IN ('1', 2)") == 4
    assert count(table, "age = 20.0") == 2
    assert count(table, "'Male' = sex") == 3
    assert count(table, "30 < age") == 2


def test_not_in_and_between_negation() -> None:
    table = people()
    assert count(table, "age NOT IN (20, 30)") == 2
    assert count(table, "NOT (age BETWEEN 20 AND 30)") == 2
    assert count(table, "age IN (20, 30) OR NOT sex = 'Male'") == 5


def test_cross_column_arithmetic_on_the_fixed_table() -> None:
    table = people()
    ages, injuries = [20, 30, 40, 50, 30, 20], [1, 2, 3, 3, 1, 2]
    rows = list(zip(ages, injuries, strict=True))
    assert count(table, "age - iinjury > 20") == sum(a - i > 20 for a, i in rows)
    assert count(table, "age / iinjury > 12") == sum(a / i > 12 for a, i in rows)
    assert count(table, "age < 20 * iinjury") == sum(a < 20 * i for a, i in rows)
    assert count(table, "-age < -25") == sum(-a < -25 for a in ages)


def test_arithmetic_on_text_columns_is_rejected() -> None:
    with pytest.raises(QueryError, match="'sex' holds text"):
        bind("age < sex", people().schema)
    with pytest.raises(QueryError, match="holds text"):
        bind("sex + 1 > 2", people().schema)


def test_group_by_repeating_a_column() -> None:
    with pytest.raises(QueryError, match="repeats a column"):
        bind("SELECT COUNT(*) FROM t GROUP BY sex, SEX", people().schema)


def test_simplify_folds_constants() -> None:
    schema = people().schema
    predicate = bind("age > 1000 OR sex = 'Male'", schema).predicate
    assert isinstance(predicate, ColumnSet)
    assert predicate.column == "sex"
    assert predicate.lut.tolist() == [False, True]  # domain ('Female', 'Male')
    false = bind("age > 1000 AND sex = 'Male'", schema).predicate
    assert isinstance(false, Const) and false.value is False
    true = bind("age >= 0 OR sex = 'Male'", schema).predicate
    assert isinstance(true, Const) and true.value is True
    for text, value in [("TRUE", True), ("FALSE", False), ("1 = 1", True), ("1 = 2", False),
                        ("NOT FALSE", True), ("age IN ()", False)]:
        folded = bind(text, schema).predicate
        assert isinstance(folded, Const), text
        assert folded.value is value, text
    merged = bind("age > 20 AND age < 50", schema).predicate
    assert isinstance(merged, ColumnSet)
    assert merged.lut.tolist() == [False, True, True, False]
    assert isinstance(bind("1 = 2 OR sex = 'Male'", schema).predicate, ColumnSet)


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


# ---------------------------------------------------------------------------------------------
# Types enforced in queries


@pytest.mark.parametrize("text", [
    "sex > 3", "sex = 3", "sex != 3", "sex < 3", "sex <= 3", "sex >= 3", "3 < sex",
    "sex = 2.5", "sex IN ('Male', 3)", "sex BETWEEN 'A' AND 3", "NOT sex BETWEEN 1 AND 3",
])
def test_text_column_compared_with_a_number_is_an_error(text: str) -> None:
    with pytest.raises(QueryError, match=r"column 'sex' holds text; compare it with text, e\.g\. "
                                         r"sex [=!<>]+ '[0-9.]+' \(compared as text"):
        bind(text, people().schema)


def test_text_column_compared_with_quoted_text_is_fine() -> None:
    table = people()
    assert count(table, "sex < 'M'") == 3
    assert count(table, "sex >= 'M'") == 3
    assert count(table, "sex IN ('Male')") == 3
    assert count(table, "marital-status BETWEEN 'D' AND 'N'") == 4


@pytest.mark.parametrize(("text", "shown"), [
    ("age / 0 > 1", "age / 0"),
    ("age / (1 - 1) > 1", r"age / \(1 - 1\)"),
    ("age / (age - 30) > 1", r"age / \(age - 30\): age - 30 is 0 for some value of age"),
    ("age / (iinjury - 1) > 1", r"age / \(iinjury - 1\): iinjury - 1 is 0"),
    ("age + 1 < age / (2 - iinjury)", r"age / \(2 - iinjury\)"),
    ("1 / 0 = 1", "1 / 0"),
])
def test_division_by_zero_names_the_expression(text: str, shown: str) -> None:
    with pytest.raises(QueryError, match=f"division by zero in {shown}"):
        bind(text, people().schema)


def test_divisors_over_large_domains_are_checked_on_the_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Domains of iinjury include 1, but no row has it.
    schema = Schema((Column("age", Role.QUASI_IDENTIFIER, (20, 30, 40)),
                     Column("iinjury", Role.QUASI_IDENTIFIER, (1, 2, 3))))
    table = Table(schema, {"age": np.array([0, 1, 2]), "iinjury": np.array([1, 2, 2])})
    with pytest.raises(QueryError, match="division by zero"):
        bind("age / (iinjury - 1) > 10", schema)
    monkeypatch.setattr(query_module, "_MAX_DIVISOR_GRID", 1)
    bound = bind("age / (iinjury - 1) > 10", schema)
    assert int(count_histogram(table.cube, bound.predicate, ())) == 3  # 20/1, 30/2, 40/2
    zero = Table(schema, {"age": np.array([0, 1]), "iinjury": np.array([0, 1])})
    with pytest.raises(QueryError, match=r"division by zero in age / \(iinjury - 1\)"):
        count_histogram(zero.cube, bound.predicate, ())


@pytest.mark.parametrize(("text", "message"), [
    ("age > 1e400", "too large"),
    ("age > 1" + "0" * 400, "too large"),
    ("age = 'nan'", "not a finite number"),
    ("'a' < 1", "compares text with a number"),
    ("'a' * 3 = 'aaa'", "arithmetic"),
    ("age + 1 = '3'", "compare text only with a text column"),
    ("age = 'abc", "cannot parse"),
    ("date(1) = 3", r"DATE\(\.\.\.\) is not supported"),
    ("age = ARRAY[ARRAY[ARRAY[1]]]", "brackets"),
    ("age = 1; age = 2", "only SELECT COUNT"),
    ("SELECT COUNT(*) FROM t TABLESAMPLE (10 PERCENT)", "not supported"),
    ("age = \x00", "unknown column"),
])
def test_malformed_queries_are_query_errors(text: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        bind(text, people().schema)


# ---------------------------------------------------------------------------------------------
# The table named in FROM


def test_from_keeps_the_table_name() -> None:
    assert parse_query("SELECT COUNT(*) FROM users WHERE age > 3").table == "users"
    assert parse_query('SELECT COUNT(*) FROM "adult-2024"').table == "adult-2024"
    assert parse_query("age > 3").table is None
    assert parse_query("SELECT COUNT(*) WHERE age > 3").table is None


def test_from_must_name_t_or_the_table() -> None:
    schema = people().schema
    text = "SELECT COUNT(*) FROM users WHERE age > 25"
    with pytest.raises(QueryError, match=r"counts rows of 'users', but this table has no name; "
                                         r"write FROM t or leave FROM out"):
        bind(text, schema)
    with pytest.raises(QueryError, match=r"counts rows of 'users', but this table is 'adult'; "
                                         r"write FROM adult or FROM t, or leave FROM out"):
        bind(text, schema, table_name="adult")
    with pytest.raises(QueryError, match=r'write FROM "adult-2024" or FROM t'):
        bind(text, schema, table_name="adult-2024")
    table = people()
    for query in ["SELECT COUNT(*) FROM t WHERE age > 25", "SELECT COUNT(*) FROM T WHERE age > 25",
                  "SELECT COUNT(*) WHERE age > 25", "age > 25"]:
        bound = bind(query, schema)
        assert int(count_histogram(table.cube, bound.predicate, ())) == 4
    for query in ["SELECT COUNT(*) FROM adult WHERE age > 25",
                  "SELECT COUNT(*) FROM ADULT WHERE age > 25", "SELECT COUNT(*) FROM t"]:
        bind(query, schema, table_name="Adult")


@pytest.mark.parametrize("text", [
    "SELECT COUNT(*) FROM db.users", "SELECT COUNT(*) FROM (SELECT 1)",
])
def test_from_must_name_one_table(text: str) -> None:
    with pytest.raises(QueryError, match="FROM must name one table"):
        parse_query(text)


# ---------------------------------------------------------------------------------------------
# Queries of any size


def large_table(n_rows: int = 3_000, seed: int = 0) -> Table:
    """Columns ``a`` (values 0..999), ``b`` (0..49) and text ``s``; a value is its code."""
    rng = np.random.default_rng(seed)
    schema = Schema((Column("a", Role.QUASI_IDENTIFIER, tuple(range(1000))),
                     Column("b", Role.QUASI_IDENTIFIER, tuple(range(50))),
                     Column("s", Role.QUASI_IDENTIFIER, ("ant", "bee", "cat", "dog"))))
    return Table(schema, {"a": rng.integers(0, 1000, n_rows), "b": rng.integers(0, 50, n_rows),
                          "s": rng.integers(0, 4, n_rows)})


def random_term(rng: np.random.Generator, table: Table,
                kinds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> tuple[str, np.ndarray]:
    """A random comparison as SQL, and its truth on every row by numpy."""
    a, b = table.values("a"), table.values("b")
    kind = int(rng.choice(kinds))
    if kind == 0:
        value = int(rng.integers(0, 1000))
        return f"a = {value}", a == value
    if kind == 1:
        value = int(rng.integers(0, 50))
        return f"b < {value}", b < value
    if kind == 2:
        word = str(rng.choice(["ant", "bee", "cat", "dog"]))
        return f"s != '{word}'", table.values("s") != word
    if kind == 3:
        value = int(rng.integers(0, 1050))
        return f"a + b > {value}", a + b > value
    low = int(rng.integers(0, 1000))
    return f"a BETWEEN {low} AND {low + 300}", (a >= low) & (a <= low + 300)


def test_fifty_nested_parentheses_and_four_hundred_ors() -> None:
    table = people()
    ages = table.values("age")
    assert count(table, "(" * 50 + "age = 20" + ")" * 50) == np.count_nonzero(ages == 20)
    values = [20, 40] * 200
    assert count(table, " OR ".join(f"age = {v}" for v in values)) == \
        np.count_nonzero(np.isin(ages, values))
    assert count(table, "(" * 50 + " OR ".join(f"(age = {v})" for v in values) + ")" * 50) == 3


def test_thousand_term_chains_and_lists_match_numpy() -> None:
    table = large_table()
    rng = np.random.default_rng(1)
    terms = [random_term(rng, table) for _ in range(1000)]
    either = " OR ".join(text for text, _ in terms)
    assert count(table, either) == np.count_nonzero(np.logical_or.reduce([m for _, m in terms]))
    negated = [(f"NOT {text}", ~mask) for text, mask in terms]
    both = " AND ".join(text for text, _ in negated)
    assert count(table, both) == np.count_nonzero(np.logical_and.reduce([m for _, m in negated]))
    values = rng.integers(0, 1000, 1000).tolist()
    listed = f"a IN ({', '.join(map(str, values))})"
    assert count(table, listed) == np.count_nonzero(np.isin(table.values("a"), values))
    assert count(table, "NOT " + listed) == np.count_nonzero(~np.isin(table.values("a"), values))
    # Mixed: ORs of ANDs of four terms each, with an IN list of five values in every group.
    groups, masks = [], []
    for _ in range(100):
        four = [random_term(rng, table) for _ in range(4)]
        some = rng.integers(0, 1000, 5).tolist()
        groups.append("(" + " AND ".join(t for t, _ in four)
                      + f" OR a IN ({', '.join(map(str, some))}))")
        masks.append(np.logical_and.reduce([m for _, m in four])
                     | np.isin(table.values("a"), some))
    mixed = " OR ".join(groups)
    assert count(table, mixed) == np.count_nonzero(np.logical_or.reduce(masks))


def nested(table: Table, levels: int, seed: int,
           kinds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> tuple[str, np.ndarray]:
    """Conditions nested ``levels`` deep, alternating AND and OR (and some NOT)."""
    rng = np.random.default_rng(seed)
    text, mask = random_term(rng, table, kinds)
    for level in range(levels):
        term, truth = random_term(rng, table, kinds)
        if level % 2:
            text, mask = f"({term} AND ({text}))", truth & mask
        else:
            text, mask = f"(({text}) OR {term})", mask | truth
        if level % 7 == 3:
            text, mask = f"NOT {text}", ~mask
    return text, mask


def test_two_hundred_levels_match_numpy() -> None:
    table = large_table()
    text, mask = nested(table, 200, seed=2)
    steps = np.array([{"(": 1, ")": -1}.get(c, 0) for c in text])
    assert np.cumsum(steps).max() >= 200
    assert count(table, text) == np.count_nonzero(mask)
    assert count(table, f"SELECT COUNT(*) FROM t WHERE {text}") == np.count_nonzero(mask)
    assert count(table, "(" * 200 + "a < 500 AND b > 10" + ")" * 200) == np.count_nonzero(
        (table.values("a") < 500) & (table.values("b") > 10))
    # The bound predicate stays deep: evaluating, listing and splitting it do not recurse.
    predicate = bind(text, table.schema).predicate
    np.testing.assert_array_equal(predicate.evaluate(table.codes, table.n_rows), mask)
    assert len(predicate.atoms()) >= 100
    text, mask = nested(table, 200, seed=3, kinds=(0, 1, 3, 4))
    predicate = bind(f"s != 'dog' AND {text}", table.schema).predicate
    mask &= table.values("s") != "dog"
    covered = np.zeros(table.n_rows, dtype=bool)
    for rest, combos in split(predicate, ["s"], table.schema.sizes()):
        covered |= rest.evaluate(table.codes, table.n_rows) & combos[table.codes["s"]]
    np.testing.assert_array_equal(covered, mask)


def test_syntax_trees_deeper_than_the_recursion_limit_bind() -> None:
    table = large_table(200)
    a, b = table.values("a"), table.values("b")
    depth = 3 * sys.getrecursionlimit()
    condition: Condition = Compare("<", Col("a"), Lit(500))
    mask = a < 500
    chained: Expr = Col("b")
    for level in range(depth):
        if level % 3:
            condition, mask = Not(condition), ~mask
        else:
            term = Compare("<", Col("a"), Arith("+", Col("b"), Lit(level)))
            condition, mask = And((term, condition)), (a < b + level) & mask
        chained = Arith("+", chained, Lit(1))
    bound = bind(Query(where=condition), table.schema)
    assert int(count_histogram(table.cube, bound.predicate, ())) == np.count_nonzero(mask)
    long_sum = bind(Query(where=Compare(">", chained, Col("a"))), table.schema)
    assert int(count_histogram(table.cube, long_sum.predicate, ())) == np.count_nonzero(
        b + depth > a)


def test_queries_over_the_limits_are_refused() -> None:
    schema = people().schema
    with pytest.raises(QueryError, match=f"at most {MAX_TERMS:,} are supported"):
        parse_query(" OR ".join(["age = 20"] * (MAX_TERMS + 1)))
    assert count(people(), f"age IN ({', '.join(['20'] * MAX_TERMS)})") == 2
    with pytest.raises(QueryError, match=f"{MAX_TERMS + 1:,} terms"):
        parse_query(f"age IN ({', '.join(['20'] * (MAX_TERMS + 1))})")
    deep = "(" * (MAX_DEPTH + 1) + "age = 20" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(QueryError, match=f"at most {MAX_DEPTH:,} levels"):
        parse_query(deep)
    bind("(" * MAX_DEPTH + "age = 20" + ")" * MAX_DEPTH, schema)
    with pytest.raises(QueryError, match=f"at most {MAX_QUERY_CHARS:,}"):
        parse_query("age = 20" + " " * MAX_QUERY_CHARS + "OR age = 30")
    with pytest.raises(QueryError, match="nested too deeply"):
        parse_query("NOT " * 5_000 + "age = 20")
    # Quoted text does not count.
    assert count(people(), "sex != '" + "(" * 5000 + ", OR " * 5000 + "'") == 6


def test_a_deep_parse_restores_the_recursion_limit() -> None:
    limit = sys.getrecursionlimit()
    parse_query("(" * 300 + "age = 20" + ")" * 300)
    with pytest.raises(QueryError):
        parse_query("NOT " * 5_000 + "age = 20")
    assert sys.getrecursionlimit() == limit


def test_a_parsed_condition_is_bound_once_per_schema() -> None:
    """A text asked again is parsed into the same object and takes its bound predicate from
    the schema; an equal condition built anew is bound anew, to an equal predicate; another
    schema binds the same condition against its own domains."""
    schema = people().schema
    text = "age > 20 AND sex = 'Male'"
    first = bind(text, schema).predicate
    assert bind(text, schema).predicate is first
    rebuilt = bind(Query(where=And(parse_query(text).where.items)), schema).predicate
    assert rebuilt is not first
    assert rebuilt.box().keys() == first.box().keys()
    for column, lut in first.box().items():
        np.testing.assert_array_equal(rebuilt.box()[column], lut)
    other = table_from_arrow(pa.table({"age": [10, 20, 30, 60, 70], "sex": ["Male"] * 5}))
    assert bind(text, other.schema).predicate.box()["age"].tolist() == [
        False, False, True, True, True]
    assert count(other, text) == 3
