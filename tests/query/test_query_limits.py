"""Queries of any size (ppdp.query): deep nesting and long chains counted as numpy counts them,
the limits on length, terms and depth, and conditions bound once per schema.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest

from ppdp.data.schema import Column, Role, Schema
from ppdp.errors import QueryError
from ppdp.query.binding import bind
from ppdp.query.cube import count_histogram
from ppdp.query.parse import parse_query
from ppdp.query.splitting import split
from ppdp.query.syntax import (
    MAX_DEPTH,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    And,
    Arith,
    Col,
    Compare,
    Condition,
    Expr,
    Lit,
    Not,
    Query,
)
from ppdp.table.table import Table, table_from_arrow
from tests.query.test_query import count, people

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
