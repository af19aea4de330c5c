"""Tests of ppdp.query: parsing, binding to a schema, simplification, splitting and counting.

Counting is checked against a brute-force oracle that evaluates the syntax tree row by row in
plain Python, on random tables and random predicates built from the syntax classes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.errors import QueryError
from ppdp.query import (
    And,
    Arith,
    Between,
    Col,
    ColumnSet,
    Compare,
    Condition,
    Const,
    Cube,
    Expr,
    In,
    Lit,
    Not,
    Or,
    Query,
    RowCondition,
    TrueCondition,
    bind,
    count_histogram,
    parse_query,
    split,
)
from ppdp.release import exact_count
from ppdp.table import Column, Role, Schema, Table, table_from_arrow

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
