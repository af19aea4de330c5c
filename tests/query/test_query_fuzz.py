"""Property tests of ppdp.query on arbitrary input: a count or a QueryError, never a crash.

Random conditions from a small grammar are rendered as SQL text, parsed, bound and counted on
a small random table, and compared with an independent oracle that applies the documented
typing rules to the generated syntax tree and evaluates it row by row in plain Python.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.data.schema import Column, Role, Schema
from ppdp.errors import PpdpError, QueryError
from ppdp.query.binding import bind
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.parse import parse_query
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
    TrueCondition,
)
from ppdp.table.table import Table

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# An int column with 0 in its domain (dividing by it fails), a float column without 0, and a
# text column.
SCHEMA = Schema((
    Column("n", Role.QUASI_IDENTIFIER, (-2, 0, 1, 3)),
    Column("x", Role.QUASI_IDENTIFIER, (-1.5, 0.5, 2.0)),
    Column("s", Role.QUASI_IDENTIFIER, ("ant", "bee", "cat")),
))
# Literals per column: domain values, values outside the domain, quoted numbers and values of
# the wrong type.
LITERALS: dict[str, list[Any]] = {
    "n": [-2, 0, 1, 3, 5, 2.5, "1", "3", "0.5", "x", ""],
    "x": [-1.5, 0.5, 2.0, 1, 0, 0.25, "0.5", "2", "one"],
    "s": ["ant", "bee", "cat", "zzz", "", "B", 3, 0.5],
}
NUMBERS = [-2, 0, 1, 2, 3, 0.5, -1.5, 2.5]
TEXTS = ["ant", "cat", "zzz", "3", ""]

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "+": operator.add, "-": operator.sub,
    "*": operator.mul, "/": operator.truediv,
}


# ---------------------------------------------------------------------------------------------
# The grammar


columns = st.sampled_from(SCHEMA.names).map(Col)
comparisons = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
arithmetic = st.sampled_from(["+", "-", "*", "/"])
literals = st.one_of(st.sampled_from(NUMBERS), st.sampled_from(TEXTS)).map(Lit)
expressions: st.SearchStrategy[Expr] = st.recursive(
    st.one_of(columns, columns, literals),
    lambda inner: st.builds(Arith, arithmetic, inner, inner),
    max_leaves=4,
)


@st.composite
def column_literal(draw: st.DrawFn) -> Compare:
    """A column compared with a literal, either way round: the common, typed case."""
    name = draw(st.sampled_from(SCHEMA.names))
    literal = Lit(draw(st.sampled_from(LITERALS[name])))
    op = draw(comparisons)
    if draw(st.booleans()):
        return Compare(op, Col(name), literal)
    return Compare(op, literal, Col(name))


@st.composite
def in_lists(draw: st.DrawFn) -> In:
    name = draw(st.sampled_from(SCHEMA.names))
    expr = Col(name) if draw(st.integers(0, 3)) else draw(expressions)
    values = draw(st.lists(st.sampled_from(LITERALS[name]), max_size=4))
    return In(expr, tuple(Lit(v) for v in values))


@st.composite
def betweens(draw: st.DrawFn) -> Between:
    name = draw(st.sampled_from(SCHEMA.names))
    bound = st.one_of(st.sampled_from(LITERALS[name]).map(Lit), expressions)
    expr = Col(name) if draw(st.integers(0, 2)) else draw(expressions)
    return Between(expr, draw(bound), draw(bound))


leaves: st.SearchStrategy[Condition] = st.one_of(
    column_literal(), column_literal(), column_literal(),
    st.builds(Compare, comparisons, expressions, expressions),
    in_lists(), betweens(),
    st.just(TrueCondition()), st.just(Not(TrueCondition())),
)
conditions: st.SearchStrategy[Condition] = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=5).map(lambda items: And(tuple(items))),
        st.lists(inner, min_size=2, max_size=5).map(lambda items: Or(tuple(items))),
        inner.map(Not),
    ),
    max_leaves=12,
)


# ---------------------------------------------------------------------------------------------
# Rendering as SQL text, with random extra parentheses


def sql_literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def render_expr(expr: Expr, draw: st.DrawFn) -> str:
    if isinstance(expr, Col):
        text = expr.name
    elif isinstance(expr, Lit):
        text = sql_literal(expr.value)
    else:
        text = f"({render_expr(expr.left, draw)}) {expr.op} ({render_expr(expr.right, draw)})"
    return wrap(text, draw, 1)


def wrap(text: str, draw: st.DrawFn, most: int) -> str:
    depth = draw(st.integers(0, most))
    return "(" * depth + text + ")" * depth


def render(condition: Condition, draw: st.DrawFn) -> str:
    if isinstance(condition, TrueCondition):
        return "TRUE"
    if isinstance(condition, Not):
        if isinstance(condition.item, TrueCondition) and draw(st.booleans()):
            return "FALSE"
        return f"NOT ({render(condition.item, draw)})"
    if isinstance(condition, And | Or):
        word = " AND " if isinstance(condition, And) else " OR "
        return word.join(f"({render(item, draw)})" for item in condition.items)
    if isinstance(condition, Compare):
        op = condition.op
        if op == "!=" and draw(st.booleans()):
            op = "<>"
        return (f"({render_expr(condition.left, draw)}) {op} "
                f"({render_expr(condition.right, draw)})")
    if isinstance(condition, In):
        values = ", ".join(sql_literal(v.value) for v in condition.values)
        return f"({render_expr(condition.expr, draw)}) IN ({values})"
    assert isinstance(condition, Between)
    return (f"({render_expr(condition.expr, draw)}) BETWEEN ({render_expr(condition.low, draw)})"
            f" AND ({render_expr(condition.high, draw)})")


# ---------------------------------------------------------------------------------------------
# The oracle: the documented rules, restated on the generated tree


class Refused(Exception):
    """The oracle's verdict that the query must be refused with a QueryError."""


def expr_columns(expr: Expr) -> set[str]:
    if isinstance(expr, Col):
        return {expr.name}
    if isinstance(expr, Arith):
        return expr_columns(expr.left) | expr_columns(expr.right)
    return set()


def text_literals(expr: Expr) -> bool:
    if isinstance(expr, Lit):
        return isinstance(expr.value, str)
    if isinstance(expr, Arith):
        return text_literals(expr.left) or text_literals(expr.right)
    return False


def number(expr: Expr, row: Mapping[str, Any]) -> float:
    """Plain float arithmetic; a zero divisor is a refusal."""
    if isinstance(expr, Col):
        return float(row[expr.name])
    if isinstance(expr, Lit):
        return float(expr.value)
    left, right = number(expr.left, row), number(expr.right, row)
    if expr.op == "/" and right == 0:
        raise Refused
    return float(OPS[expr.op](left, right))


def check_divisors(expr: Expr) -> None:
    """Refuse a division whose divisor is 0 for some combination of its columns' values."""
    names = sorted(expr_columns(expr))
    for combination in itertools.product(*(SCHEMA[name].domain for name in names)):
        number(expr, dict(zip(names, combination, strict=True)))


def coerce(value: Any, column: Column) -> Any:
    if column.kind == "string":
        if not isinstance(value, str):
            raise Refused
        return value
    try:
        result = float(value)
    except ValueError:
        raise Refused from None
    if not math.isfinite(result):
        raise Refused
    return int(result) if column.kind == "int" and result.is_integer() else result


def comparison(op: str, left: Expr, right: Expr) -> Callable[[Mapping[str, Any]], bool]:
    """Check one comparison statically and return its truth as a function of a row."""
    names = expr_columns(left) | expr_columns(right)
    if not names:
        if (isinstance(left, Arith) and text_literals(left)) or \
                (isinstance(right, Arith) and text_literals(right)):
            raise Refused
        sides = [side.value if isinstance(side, Lit) and isinstance(side.value, str)
                 else number(side, {}) for side in (left, right)]
        if isinstance(sides[0], str) != isinstance(sides[1], str):
            raise Refused
        truth = bool(OPS[op](sides[0], sides[1]))
        return lambda row: truth
    if isinstance(left, Lit) and isinstance(right, Col):
        mirrored = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
        left, right, op = right, left, mirrored[op]
    if isinstance(left, Col) and isinstance(right, Lit):
        column = SCHEMA[left.name]
        literal = coerce(right.value, column)
        if op == "=" and literal not in column.domain:
            raise Refused
        name = left.name
        return lambda row: bool(OPS[op](row[name], literal))
    if any(SCHEMA[name].kind == "string" for name in names):
        raise Refused
    if text_literals(left) or text_literals(right):
        raise Refused
    check_divisors(left)
    check_divisors(right)
    return lambda row: bool(OPS[op](number(left, row), number(right, row)))


def oracle(condition: Condition) -> Callable[[Mapping[str, Any]], bool]:
    """The condition as a function of a row, or Refused if the query must fail."""
    if isinstance(condition, TrueCondition):
        return lambda row: True
    if isinstance(condition, Not):
        inner = oracle(condition.item)
        return lambda row: not inner(row)
    if isinstance(condition, And | Or):
        items = [oracle(item) for item in condition.items]
        combine = all if isinstance(condition, And) else any
        return lambda row: combine(item(row) for item in items)
    if isinstance(condition, Compare):
        return comparison(condition.op, condition.left, condition.right)
    if isinstance(condition, Between):
        low = comparison(">=", condition.expr, condition.low)
        high = comparison("<=", condition.expr, condition.high)
        return lambda row: low(row) and high(row)
    assert isinstance(condition, In)
    tests = [comparison("=", condition.expr, value) for value in condition.values]
    return lambda row: any(test(row) for test in tests)


# ---------------------------------------------------------------------------------------------
# Properties


@st.composite
def small_tables(draw: st.DrawFn) -> Table:
    n_rows = draw(st.integers(0, 25))
    codes = {c.name: np.asarray(draw(st.lists(st.integers(0, c.size - 1), min_size=n_rows,
                                              max_size=n_rows)), dtype=np.int64)
             for c in SCHEMA.columns}
    return Table(SCHEMA, codes)


@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_random_conditions_count_like_the_oracle_or_fail_with_a_query_error(
        data: st.DataObject) -> None:
    table = data.draw(small_tables())
    condition = data.draw(conditions)
    text = render(condition, data.draw)
    # Sometimes deeply wrapped, to go through the parser's deep path as well.
    text = wrap(text, data.draw, data.draw(st.sampled_from([0, 0, 2, 40])))
    if data.draw(st.booleans()):
        text = f"SELECT COUNT(*) FROM t WHERE {text}"
    try:
        expected = oracle(condition)
    except Refused:
        with pytest.raises(QueryError):
            count_histogram(table.cube, bind(text, SCHEMA).predicate, ())
        return
    rows = [{c.name: c.domain[int(table.codes[c.name][i])] for c in SCHEMA.columns}
            for i in range(table.n_rows)]
    bound = bind(text, SCHEMA)
    cube = Cube(table.codes, SCHEMA.sizes(), table.n_rows)
    assert int(count_histogram(cube, bound.predicate, ())) == sum(map(expected, rows)), text
    mask = bound.predicate.evaluate(table.codes, table.n_rows)
    assert mask.tolist() == [expected(row) for row in rows], text


def outcome(call: Callable[[], Any]) -> Any:
    """What a call returns, or the ppdp error it raises (with a one-line message)."""
    try:
        return call()
    except PpdpError as error:
        assert "\n" not in str(error) and "\r" not in str(error), repr(str(error))
        return error


TOKENS = ["n", "x", "s", "t", "users", "'ant'", "'3'", "3", "0", "-1", "2.5", "1e400",
          "=", "!=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "(", ")", "(", ")", ",",
          "AND", "OR", "NOT", "IN", "BETWEEN", "TRUE", "FALSE", "NULL", "IS", "SELECT",
          "COUNT(*)", "FROM", "WHERE", "GROUP BY", "LIMIT", ";", "CASE", "WHEN", "END", "date",
          "CAST", "AS", "INT", "'", '"', "[", "]", "::", "||", "%", "LIKE", ".", "?", "`"]


@FUZZ
@given(text=st.one_of(st.text(), st.lists(st.sampled_from(TOKENS), max_size=16).map(" ".join)))
def test_any_string_parses_and_binds_or_fails_with_a_ppdp_error(text: str) -> None:
    parsed = outcome(lambda: parse_query(text))
    bound = outcome(lambda: bind(text, SCHEMA))
    if not isinstance(bound, PpdpError):
        assert not isinstance(parsed, PpdpError)
        outcome(lambda: bound.predicate.evaluate({c: np.zeros(2, np.uint8) for c in SCHEMA.names},
                                                 2))


@FUZZ
@given(text=st.text(), table_name=st.one_of(st.none(), st.text(max_size=8)))
def test_any_select_with_any_table_name_binds_or_fails_with_a_query_error(
        text: str, table_name: str | None) -> None:
    query = f"SELECT COUNT(*) FROM {text} WHERE n > 0"
    result = outcome(lambda: bind(query, SCHEMA, table_name=table_name))
    assert not isinstance(result, PpdpError) or isinstance(result, QueryError)


# -- plain conjunctions read without the SQL parser ------------------------------------------

_NAMES = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.text(alphabet=st.sampled_from(list('ab-"\\ ')), max_size=5).map(
        lambda t: '"' + t.replace('"', '""') + '"'),
    # Keywords, functions and literals of SQL, which the parser reads otherwise or refuses.
    st.sampled_from(["and", "OR", "not", "in", "is", "null", "TRUE", "false", "select", "from",
                     "where", "year", "date", "left", "count", "case", "like", "between",
                     "current_date", "interval", "all", "any", "exists", "e", "nan", "inf"]))
_SPACE = st.sampled_from([" ", "", "  ", "\t", "\n", " \r\n "])
_LITERALS = st.one_of(
    st.text(alphabet=st.sampled_from(list("ab '\\\"%_AND;-é")), max_size=8).map(
        lambda t: "'" + t.replace("'", "''") + "'"),
    st.from_regex(r"-? ?[0-9]{1,4}(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["1e999", "-0", "0.0", "007", "9007199254740993", "1.", ".5", "TRUE",
                     "DATE '2024-01-31'", "5abc", "1 2"]))


@given(terms=st.lists(st.tuples(_NAMES, _SPACE, st.sampled_from(
           ["=", "!=", "<>", "<", "<=", ">", ">=", "==", "=<"]), _SPACE, _LITERALS),
           min_size=1, max_size=4),
       joints=st.lists(st.sampled_from([" AND ", " and ", "\tAnd\n", " OR ", "AND", " AND  "]),
                       min_size=3, max_size=3),
       end=st.sampled_from(["", " ", ";", " ; "]))
@settings(max_examples=400, deadline=None)
def test_plain_conjunctions_read_as_the_parser_reads_them(terms, joints, end):
    """Every text the plain reader takes gives the very query sqlglot's parse gives; the
    others (and anything the parser refuses) go to the parser."""
    from ppdp.query.sql import _parsed_sql, _plain_conjunction

    text = "".join(
        (joints[i - 1] if i else "") + name + before + op + after + literal
        for i, (name, before, op, after, literal) in enumerate(terms)) + end
    source = text.strip().rstrip(";").strip()
    plain = _plain_conjunction(source)
    try:
        parsed = _parsed_sql(text, source)
    except QueryError:
        assert plain is None, text
        return
    if plain is not None:
        assert plain == parsed.where, text
        assert parsed.group_by == () and parsed.table is None
        assert parse_query(text) == parsed


def test_plain_conjunctions_are_read_without_the_parser(monkeypatch):
    import ppdp.query.sql

    def refuse(*args):
        raise AssertionError("parsed by sqlglot")

    monkeypatch.setattr(ppdp.query.sql, "_parsed_sql", refuse)
    query = parse_query("age >= 40 AND sex = 'Fe''male' and  \"hours-\"\"week\"<>-3.5e1;")
    assert query.where == And((Compare(">=", Col("age"), Lit(40)),
                               Compare("=", Col("sex"), Lit("Fe'male")),
                               Compare("!=", Col('hours-"week'), Lit(-35.0))))
    assert query.text == "age >= 40 AND sex = 'Fe''male' and  \"hours-\"\"week\"<>-3.5e1"
