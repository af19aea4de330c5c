"""Tests of ppdp.query: parsing, binding to a schema, simplification, the types enforced in
queries and the table named in FROM.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ppdp.data.schema import Column, Role, Schema
from ppdp.errors import QueryError
from ppdp.query import binding as query_module
from ppdp.query.binding import bind
from ppdp.query.cube import count_histogram
from ppdp.query.parse import parse_query
from ppdp.query.predicates import ColumnSet, Const
from ppdp.query.syntax import (
    And,
    Arith,
    Between,
    Col,
    Compare,
    Condition,
    In,
    Lit,
    Not,
    Or,
    TrueCondition,
)
from ppdp.table.table import Table, table_from_arrow

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
