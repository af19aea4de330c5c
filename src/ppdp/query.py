"""Count queries: SQL parsing, binding to a schema, and exact counting over encoded rows.

A query is parsed once into a small syntax tree (``Query``), then *bound* to a schema. Binding
turns every condition on a single column into a boolean lookup table over that column's domain
(``ColumnSet``), so that evaluating it on rows is one gather (``lut[codes]``) and a conjunction
of such conditions is a *box* that can be answered from a contingency table (``Cube``) without
touching the rows again. Conditions on several columns (``age < 2 * hours``) stay row-level.

Queries come from users and files, so every failure of ``parse_query`` and ``bind`` on any
string is a ``QueryError``. Values must fit their column (never a silent comparison of text with
a number):

* a text column is compared with quoted text only (``sex > 3`` and ``sex IN (1, 2)`` are
  errors; ``sex = 'Male'`` and ``sex < 'M'``, compared as text, are not);
* an *ordered* text column (an ordered categorical) compares by position in its order, with
  values of its domain only (``edu BETWEEN 'hs' AND 'college'``);
* a text column of ISO dates (``2024-01-31``, as dates are read) takes ISO dates only in
  ``<``, ``<=``, ``>``, ``>=`` and ``BETWEEN``, quoted or as ``DATE '2024-01-31'``: in that form
  text order is chronological;
* a numeric column takes numbers or quoted numbers (``iinjury = '3'``);
* a boolean column takes ``TRUE`` and ``FALSE`` (any case): ``female``, ``NOT female``,
  ``female = TRUE``, ``female IS FALSE``; ``female = 1`` is an error.

A division whose divisor is 0 for some value of its columns' domains is an error. ``FROM``
names ``t`` or the table's own name.

Size limits, far above real queries, keep hostile input from stalling the parser; they are
checked on the text (quoted text and comments aside) before parsing, in about 0.1 s for a
megabyte:

* ``MAX_QUERY_CHARS``: 1,000,000 characters;
* ``MAX_TERMS``: 10,000 terms, counted as the ANDs, ORs, NOTs, commas and arithmetic signs,
  plus one (a condition of 1,000 ORs or an IN list of 1,000 values has 1,000 terms);
* ``MAX_DEPTH``: 1,000 levels of nested parentheses.

Every tree walk in this module is iterative (AND/OR chains are flattened, arithmetic is folded
with an explicit stack), so only sqlglot's recursive-descent parser recurses with the depth of a
query, about 20 Python frames per parenthesis. Text nested more than a few levels is therefore
parsed in a worker thread with a large stack and a recursion limit high enough for
``MAX_DEPTH``, restored afterwards. Function-style keywords (``DATE(``, ``CAST(``) and brackets
are refused before parsing: sqlglot backtracks exponentially on nested type constructors.
Measured cost: a condition of 1,000 ORs parses and binds in about 0.1 s, 200 nested levels in
about 0.03 s (the worker thread itself adds about 0.1 ms); a query at the term limit takes
about 1.5 s, and a megabyte of comments about 1.5 s to tokenize.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import functools
import hashlib
import math
import operator
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.errors import QueryError, ReleaseError
from ppdp.table import KIND_NAMES, Column, Schema, code_dtype, unknown_column_message

MAX_QUERY_CHARS = 1_000_000
MAX_TERMS = 10_000
MAX_DEPTH = 1_000

# sqlglot recurses about 20 frames per parenthesis; text nested deeper than this is parsed in a
# worker thread, and any RecursionError in the calling thread is retried there.
_SHALLOW_DEPTH = 10
_DEEP_RECURSION_LIMIT = 25 * MAX_DEPTH + 2_000
# Python 3.11 needs well under 4 MiB of C stack for that limit; the rest is margin.
_DEEP_STACK_BYTES = 64 << 20
_DEEP_LOCK = threading.Lock()

# Divisors of expressions over several columns are checked for 0 over the product of the
# columns' domains when it has at most this many cells, and on the rows otherwise.
_MAX_DIVISOR_GRID = 1 << 20

# ---------------------------------------------------------------------------------------------
# Syntax: what the user wrote, independent of any table.


@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Lit:
    """A literal: a number, quoted text, TRUE or FALSE (bool), or ``DATE '...'`` (a date)."""

    value: int | float | str | bool | datetime.date


@dataclass(frozen=True)
class Arith:
    op: str  # one of + - * /
    left: Expr
    right: Expr


Expr = Col | Lit | Arith


@dataclass(frozen=True)
class Compare:
    op: str  # one of = != < <= > >=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class In:
    expr: Expr
    values: tuple[Lit, ...]


@dataclass(frozen=True)
class Between:
    expr: Expr
    low: Expr
    high: Expr


@dataclass(frozen=True)
class And:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    item: Condition


@dataclass(frozen=True)
class TrueCondition:
    pass


Condition = Compare | In | Between | And | Or | Not | TrueCondition


@dataclass(frozen=True)
class Query:
    """A count query: ``SELECT COUNT(*) FROM table WHERE where GROUP BY group_by``.

    ``table`` is the name after ``FROM`` as written, or None for a bare condition or no FROM.
    """

    where: Condition
    group_by: tuple[str, ...] = ()
    text: str = ""
    table: str | None = None

    def __str__(self) -> str:
        return self.text



_Node = TypeVar("_Node")
_Result = TypeVar("_Result")


def _fold(root: _Node, children: Callable[[_Node], Sequence[_Node]],
          combine: Callable[[_Node, list[_Result]], _Result]) -> _Result:
    """Combine a tree bottom-up, children before parents, without recursion."""
    # An explicit stack, because conditions and expressions may nest far deeper than Python's
    # recursion limit (a chain of 10,000 additions is a tree 10,000 levels deep).
    kids = children(root)
    if not kids:
        return combine(root, [])
    results: list[_Result] = []
    stack: list[tuple[_Node, Sequence[_Node] | None]] = [(root, kids)]
    stack.extend((kid, None) for kid in reversed(kids))
    while stack:
        node, kids = stack.pop()
        if kids is None:
            kids = children(node)
            if kids:
                stack.append((node, kids))
                stack.extend((kid, None) for kid in reversed(kids))
                continue
        start = len(results) - len(kids)
        arguments = results[start:]
        del results[start:]
        results.append(combine(node, arguments))
    return results[0]


# ---------------------------------------------------------------------------------------------
# Parsing (the parser itself is ppdp.query_sql): what errors and limits share with binding.


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


PARSED_CACHE_SIZE = 16_384
"""How many distinct query texts keep their parse (queries are immutable, so they are shared)."""


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return _shorten(lines[0]) if lines else type(exc).__name__


def _shorten(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _show(text: str) -> str:
    """A query quoted for an error message, cut short if long."""
    return repr(_shorten(text))


def _show_value(value: Any) -> str:
    """A literal for an error message, cut short if long."""
    return _show(value) if isinstance(value, str) else _plain_value(value)


def _plain_value(value: Any) -> str:
    """A literal unquoted for an error message (Python refuses str() of huge ints)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, int) and value.bit_length() > 300:
        return "a number too large to show"
    return _shorten(str(value))


def _is_number(value: Any) -> bool:
    """Whether a literal is a number (booleans are ints to Python, not here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_query(text: str | Query) -> Query:
    """Parse a bare condition (``age >= 40 AND sex = 'Female'``) or a full
    ``SELECT COUNT(*) FROM t [WHERE ...] [GROUP BY ...]`` (`ppdp.query_sql`)."""
    # Imported here: sqlglot loads only when a query text is parsed, not for publishing.
    from ppdp.query_sql import parse_query as parsed

    return parsed(text)


# ---------------------------------------------------------------------------------------------
# Bound predicates: conditions resolved against a schema's domains.


class Predicate:
    """A condition bound to a schema. Subclasses: Const, ColumnSet, RowCondition, AllOf,
    AnyOf, Negation."""

    columns: frozenset[str]

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        raise NotImplementedError

    def atoms(self) -> list[Predicate]:
        """The single-column, row-level and constant conditions inside, left to right."""
        result: list[Predicate] = []
        stack: list[Predicate] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, _Combination | Negation):
                stack.extend(reversed(_predicate_children(node)))
            else:
                result.append(node)
        return result

    def substitute(self, values: Mapping[int, bool]) -> Predicate:
        """Replace atoms (keyed by ``id``) with constants, then simplify."""

        def combine(node: Predicate, items: list[Predicate]) -> Predicate:
            if isinstance(node, Negation):
                return simplify(Negation(items[0]))
            if isinstance(node, _Combination):
                return simplify(type(node)(tuple(items)))
            return Const(values[id(node)]) if id(node) in values else node

        return _fold(self, _predicate_children, combine)

    def box(self) -> dict[str, np.ndarray] | None:
        """``{column: lut}`` if this is a conjunction of single-column conditions, else None."""
        return None


@dataclass(frozen=True, eq=False)
class Const(Predicate):
    value: bool

    @property
    def columns(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset()

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return np.full(n_rows, self.value)

    def box(self) -> dict[str, np.ndarray] | None:
        return {} if self.value else None


@dataclass(frozen=True, eq=False)
class ColumnSet(Predicate):
    """A condition on one column: true for the codes where ``lut`` is true."""

    column: str
    lut: np.ndarray
    # Computed once: every combination and histogram asks for it.
    columns: frozenset[str] = field(init=False, repr=False)  # type: ignore[misc]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", frozenset((self.column,)))

    @functools.cached_property
    def constant(self) -> Const | None:
        """Const(True) when every code passes, Const(False) when none does, else None."""
        constant = _column_set(self.column, self.lut)
        return constant if isinstance(constant, Const) else None

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return self.lut[codes[self.column]]

    def box(self) -> dict[str, np.ndarray] | None:
        return {self.column: self.lut}


@dataclass(frozen=True, eq=False)
class RowCondition(Predicate):
    """A condition over several columns, evaluated row by row (vectorised)."""

    function: Callable[[Mapping[str, np.ndarray]], np.ndarray]
    columns: frozenset[str]  # type: ignore[misc]
    text: str

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return self.function(codes)


@dataclass(frozen=True, eq=False)
class _Combination(Predicate):
    """A conjunction or disjunction of predicates."""

    items: tuple[Predicate, ...]
    combine: ClassVar[Callable[[np.ndarray, np.ndarray], np.ndarray]]

    @functools.cached_property
    def columns(self) -> frozenset[str]:  # type: ignore[override]
        # Computed once, when first asked (binding and simplifying build many combinations
        # that are never asked), from the items' own, so no lookup recurses down the tree.
        return frozenset().union(*(i.columns for i in self.items))

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return _evaluate(self, codes, n_rows)


class AllOf(_Combination):
    combine = np.logical_and

    def box(self) -> dict[str, np.ndarray] | None:
        result: dict[str, np.ndarray] = {}
        for item in self.items:
            if not isinstance(item, ColumnSet) or item.column in result:
                return None
            result[item.column] = item.lut
        return result


class AnyOf(_Combination):
    combine = np.logical_or


@dataclass(frozen=True, eq=False)
class Negation(Predicate):
    item: Predicate
    columns: frozenset[str] = field(init=False, repr=False)  # type: ignore[misc]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", self.item.columns)

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return _evaluate(self, codes, n_rows)


def _predicate_children(predicate: Predicate) -> tuple[Predicate, ...]:
    if isinstance(predicate, _Combination):
        return predicate.items
    if isinstance(predicate, Negation):
        return (predicate.item,)
    return ()


def _evaluate(root: Predicate, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
    """Evaluate a predicate tree on rows, one running result per open combination."""
    # An explicit stack of [node, next item, running result]: the tree may be deeper than the
    # recursion limit, and folding items in one at a time keeps one row mask per level alive.
    frames: list[list[Any]] = []
    node = root
    while True:
        while _predicate_children(node):
            frames.append([node, 0, None])
            node = _predicate_children(node)[0]
        if isinstance(node, _Combination):  # no items: the neutral element
            value = np.full(n_rows, isinstance(node, AllOf))
        else:
            value = node.evaluate(codes, n_rows)
        while frames:
            frame = frames[-1]
            parent = frame[0]
            if isinstance(parent, Negation):
                frames.pop()
                value = ~value
                continue
            frame[2] = value if frame[2] is None else type(parent).combine(frame[2], value)
            frame[1] += 1
            if frame[1] < len(parent.items):
                node = parent.items[frame[1]]
                break
            frames.pop()
            value = frame[2]
        else:
            return value


def simplify(predicate: Predicate) -> Predicate:
    """Fold constants and merge conditions on the same column into one lookup table."""
    if isinstance(predicate, Negation):
        item = predicate.item
        if isinstance(item, Const):
            return Const(not item.value)
        if isinstance(item, ColumnSet):
            return _column_set(item.column, ~item.lut)
        if isinstance(item, Negation):
            return item.item
        return predicate
    if not isinstance(predicate, AllOf | AnyOf):
        return predicate
    conjunction = isinstance(predicate, AllOf)
    neutral, absorbing = (True, False) if conjunction else (False, True)
    merge = np.logical_and if conjunction else np.logical_or
    flat: list[Predicate] = []
    for item in predicate.items:
        if isinstance(item, type(predicate)):
            flat.extend(item.items)
        else:
            flat.append(item)
    # Per column: its merged lookup table, or the one condition on it (kept as it is: bound
    # terms are shared between queries, and so are their checks).
    by_column: dict[str, np.ndarray | ColumnSet] = {}
    rest: list[Predicate] = []
    for item in flat:
        if isinstance(item, Const):
            if item.value == absorbing:
                return Const(absorbing)
            continue
        if isinstance(item, ColumnSet):
            previous = by_column.get(item.column)
            if previous is None:
                by_column[item.column] = item
            else:
                lut = previous.lut if isinstance(previous, ColumnSet) else previous
                by_column[item.column] = merge(lut, item.lut)
        else:
            rest.append(item)
    items: list[Predicate] = []
    for column, found in by_column.items():
        merged = _column_set(column, found) if isinstance(found, np.ndarray) else \
            found.constant or found
        if isinstance(merged, Const):
            if merged.value == absorbing:
                return merged
            continue
        items.append(merged)
    items.extend(rest)
    if not items:
        return Const(neutral)
    if len(items) == 1:
        return items[0]
    return AllOf(tuple(items)) if conjunction else AnyOf(tuple(items))


def _column_set(column: str, lut: np.ndarray) -> Predicate:
    if lut.all():
        return Const(True)
    if not lut.any():
        return Const(False)
    return ColumnSet(column, lut)


@dataclass(frozen=True)
class BoundQuery:
    """A query resolved against a schema."""

    predicate: Predicate
    group_by: tuple[str, ...]
    query: Query

    @property
    def columns(self) -> frozenset[str]:
        return self.predicate.columns | frozenset(self.group_by)


def bind(query: str | Query, schema: Schema, *, table_name: str | None = None) -> BoundQuery:
    """Resolve column names and literals of a query against a schema's domains.

    ``table_name`` is the name of the table asked: ``FROM`` may name it or the generic ``t``.
    """
    query = parse_query(query)
    _check_table(query.table, table_name)
    group_by = tuple(_resolve_name(name, schema) for name in query.group_by)
    if len(set(group_by)) != len(group_by):
        raise QueryError(f"GROUP BY repeats a column: {_show(query.text)}")
    return BoundQuery(_bound_condition(query.where, schema), group_by, query)


_BOUND_CONDITIONS = 1 << 14
"""Most parsed conditions kept bound per schema (as many as the parses kept,
`PARSED_CACHE_SIZE`): a text asked again is parsed into the same object, and bound once."""


def _bound_condition(condition: Condition, schema: Schema) -> Predicate:
    """The predicate of a parsed condition on this schema, bound once per condition object.

    Keyed by identity, which is free where hashing the condition's tree is not; the entry
    holds the condition itself, so that its identity cannot pass to another object."""
    cached = schema.bound_conditions.get(id(condition))
    if cached is not None and cached[0] is condition:
        return cached[1]
    predicate = _bind(condition, schema)
    if len(schema.bound_conditions) >= _BOUND_CONDITIONS:
        schema.bound_conditions.clear()
    schema.bound_conditions[id(condition)] = (condition, predicate)
    return predicate


def _check_table(named: str | None, table_name: str | None) -> None:
    if named is None or named.lower() == "t":
        return
    if table_name and named.lower() == table_name.lower():
        return
    if table_name:
        raise QueryError(f"the query counts rows of {named!r}, but this table is "
                         f"{table_name!r}; write FROM {_sql_name(table_name)} or FROM t, or "
                         f"leave FROM out")
    raise QueryError(f"the query counts rows of {named!r}, but this table has no name; write "
                     f"FROM t or leave FROM out")


def _sql_name(name: str) -> str:
    """A name as SQL: double-quoted unless it is a plain identifier."""
    from sqlglot.tokens import Tokenizer

    if _PLAIN_NAME.fullmatch(name) and name.upper() not in Tokenizer.KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def _resolve_name(name: str, schema: Schema) -> str:
    if name in schema:
        return name
    lowered = {n.lower(): n for n in schema.names}
    if name.lower() in lowered:
        return lowered[name.lower()]
    hint = ""
    if "-" in " ".join(schema.names):
        hint = " (names with '-' may also be written in double quotes)"
    raise QueryError(unknown_column_message(name, schema.names) + hint)


def _bind(condition: Condition, schema: Schema) -> Predicate:
    def children(condition: Condition) -> Sequence[Condition]:
        if isinstance(condition, And | Or):
            return condition.items
        if isinstance(condition, Not):
            return (condition.item,)
        return ()

    # Simplified at every level, so that IN lists and negations on one column become a
    # single lookup table and conjunctions of them stay boxes.
    def combine(condition: Condition, items: list[Predicate]) -> Predicate:
        if isinstance(condition, And):
            return simplify(AllOf(tuple(items)))
        if isinstance(condition, Or):
            return simplify(AnyOf(tuple(items)))
        if isinstance(condition, Not):
            return simplify(Negation(items[0]))
        return simplify(_bind_leaf(condition, schema))

    return _fold(condition, children, combine)


def _bind_leaf(condition: Condition, schema: Schema) -> Predicate:
    if isinstance(condition, TrueCondition):
        return Const(True)
    if isinstance(condition, Compare):
        return _bind_comparison(condition.op, condition.left, condition.right, schema)
    if isinstance(condition, Between):
        return AllOf((_bind_comparison(">=", condition.expr, condition.low, schema),
                      _bind_comparison("<=", condition.expr, condition.high, schema)))
    if isinstance(condition, In):
        return _bind_in(condition, schema)
    raise QueryError(f"unsupported condition of type {type(condition).__name__}; use Compare, "
                     f"In, Between, And, Or, Not or TrueCondition")


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "+": operator.add, "-": operator.sub,
    "*": operator.mul, "/": operator.truediv,
}
_MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _expr_children(expr: Expr) -> tuple[Expr, ...]:
    return (expr.left, expr.right) if isinstance(expr, Arith) else ()


def _walk(expr: Expr) -> list[Expr]:
    """Every node of an expression, without recursion."""
    nodes: list[Expr] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, Arith):
            stack.append(node.right)
            stack.append(node.left)
    return nodes


def _normalise_expr(expr: Expr, schema: Schema) -> Expr:
    """Resolve column names, recovering hyphenated names that SQL parsed as subtraction."""
    if isinstance(expr, Lit):
        return expr
    if isinstance(expr, Col):
        return Col(_resolve_name(expr.name, schema))
    known = {n.lower(): n for n in schema.names}
    longest = max((len(n) for n in schema.names), default=0)
    hyphenated: dict[int, str] = {}
    has_subtraction = any(isinstance(n, Arith) and n.op == "-" for n in _walk(expr))

    # First pass: which subtractions spell a column name (outermost first wins below). Parts
    # are dropped once longer than any name, so long chains cost linear time.
    def parts(node: Expr, operands: list[list[str] | None]) -> list[str] | None:
        if isinstance(node, Col):
            return [node.name] if len(node.name) <= longest else None
        if not (isinstance(node, Arith) and node.op == "-") or None in operands:
            return None
        left, right = operands
        assert left is not None and right is not None
        if sum(map(len, left)) + sum(map(len, right)) + len(left) + len(right) - 1 > longest:
            return None
        name = "-".join(left + right)
        if name.lower() in known:
            hyphenated[id(node)] = known[name.lower()]
        return left + right

    if has_subtraction:
        _fold(expr, _expr_children, parts)

    def children(node: Expr) -> tuple[Expr, ...]:
        return () if id(node) in hyphenated else _expr_children(node)

    def combine(node: Expr, operands: list[Expr]) -> Expr:
        if id(node) in hyphenated:
            return Col(hyphenated[id(node)])
        if isinstance(node, Col):
            return Col(_resolve_name(node.name, schema))
        if isinstance(node, Arith):
            if node.op not in _PRECEDENCE:
                raise QueryError(f"unknown arithmetic operator {node.op!r}; use + - * /")
            return Arith(node.op, operands[0], operands[1])
        if isinstance(node, Lit):
            return node
        raise QueryError(f"unsupported expression of type {type(node).__name__}; use Col, Lit "
                         f"or Arith")

    return _fold(expr, children, combine)


def _hyphen_name(expr: Expr) -> str | None:
    """``marital-status`` parses as a subtraction of two columns; recover the name."""

    def combine(node: Expr, operands: list[list[str] | None]) -> list[str] | None:
        if isinstance(node, Col):
            return [node.name]
        if not (isinstance(node, Arith) and node.op == "-") or None in operands:
            return None
        left, right = operands
        assert left is not None and right is not None
        left.extend(right)  # each operand list is used once: extending keeps chains linear
        return left

    parts = _fold(expr, _expr_children, combine)
    return None if parts is None else "-".join(parts)


def _expr_columns(expr: Expr) -> set[str]:
    if not isinstance(expr, Arith):
        return {expr.name} if isinstance(expr, Col) else set()
    return {node.name for node in _walk(expr) if isinstance(node, Col)}


def _text_literals(expr: Expr) -> list[str]:
    return [node.value for node in _walk(expr)
            if isinstance(node, Lit) and isinstance(node.value, str)]


def _format_expr(expr: Expr, limit: int = 80) -> str:
    """An expression as SQL text for messages, cut short if long."""

    # Each part is cut to ``limit`` characters, so that long chains format in linear time.
    def combine(node: Expr, operands: list[tuple[str, int]]) -> tuple[str, int]:
        if isinstance(node, Col):
            return _sql_name(node.name), 3
        if isinstance(node, Lit):
            if isinstance(node.value, str):
                return "'" + node.value.replace("'", "''") + "'", 3
            return _plain_value(node.value), 3
        assert isinstance(node, Arith)
        precedence = _PRECEDENCE.get(node.op, 0)
        (left, left_precedence), (right, right_precedence) = operands
        if left_precedence < precedence:
            left = f"({left})"
        if right_precedence <= precedence:
            right = f"({right})"
        return _shorten(f"{left} {node.op} {right}", limit), precedence

    text = _fold(expr, _expr_children, combine)[0]
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _bind_in(condition: In, schema: Schema) -> Predicate:
    if not condition.values:
        return Const(False)
    for value in condition.values:
        if not isinstance(value, Lit):
            raise QueryError("IN supports a list of literals only")
    expr = _normalise_expr(condition.expr, schema)
    if not isinstance(expr, Col):
        return AnyOf(tuple(_bind_comparison("=", expr, v, schema) for v in condition.values))
    # One lookup table for the whole list, however long.
    column = schema[expr.name]
    lut = np.zeros(column.size, dtype=bool)
    for value in condition.values:
        literal = _coerce_literal(value.value, column, "IN")
        code = column.position(literal)
        if code is None:
            raise QueryError(_unknown_value_message(literal, column.name, column.domain))
        lut[code] = True
    return ColumnSet(column.name, lut)


_BOUND_TERMS = 1 << 16
"""Most comparisons of a column with a literal kept bound per schema (generated pools repeat
their terms: 10,000 pool queries of Adult hold 166)."""


def _bind_comparison(op: str, left: Expr, right: Expr, schema: Schema) -> Predicate:
    if isinstance(left, Col) and isinstance(right, Lit):
        # Keyed by the literal's type too: 1, 1.0 and True are equal to Python.
        key = (op, left.name, type(right.value), right.value)
        bound = schema.bound_terms.get(key)
        if bound is None:
            bound = _bind_new_comparison(op, left, right, schema)
            if isinstance(bound, ColumnSet) and len(schema.bound_terms) < _BOUND_TERMS:
                bound.lut.flags.writeable = False  # shared by every query that holds it
                schema.bound_terms[key] = bound
        return bound
    return _bind_new_comparison(op, left, right, schema)


def _bind_new_comparison(op: str, left: Expr, right: Expr, schema: Schema) -> Predicate:
    if op not in _MIRROR:
        raise QueryError(f"unknown comparison {op!r}; use = != < <= > >=")
    left, right = _normalise_expr(left, schema), _normalise_expr(right, schema)
    columns = _expr_columns(left) | _expr_columns(right)
    if not columns:
        return Const(_compare_constants(op, left, right))
    if isinstance(right, Col) and isinstance(left, Lit):
        left, right, op = right, left, _MIRROR[op]
    if isinstance(left, Col) and isinstance(right, Lit):
        column = schema[left.name]
        literal = _coerce_literal(right.value, column, op)
        position = column.position(literal)
        if position is None and (op == "=" or (column.ordered and op != "!=")):
            message = _unknown_value_message(literal, column.name, column.domain)
            if op != "=":
                message += "; an ordered column compares by position in its order, so only its " \
                           "own values can be compared with"
            raise QueryError(message)
        if column.ordered:
            # Ordered text: codes follow the declared order, so compare positions.
            lut = np.asarray(_OPERATORS[op](np.arange(column.size), position), dtype=bool) \
                if position is not None else np.ones(column.size, dtype=bool)
            return ColumnSet(column.name, lut)
        with np.errstate(invalid="ignore"):
            lut = np.asarray(_OPERATORS[op](column.values, literal), dtype=bool)
        return ColumnSet(column.name, lut)
    names = sorted(columns)
    for name in names:
        if schema[name].kind not in ("int", "float"):
            raise QueryError(f"column {name!r} holds {KIND_NAMES[schema[name].kind]}; "
                             f"arithmetic and comparisons between columns need numeric columns")
    texts = _text_literals(left) + _text_literals(right)
    if texts:
        raise QueryError(f"the text {_show(texts[0])} is used in arithmetic or compared with an "
                         f"expression; compare text only with a text column")
    if len(names) == 1:
        (name,) = names
        # Evaluated over the whole domain: a divisor that is 0 for some value fails here.
        values = {name: schema[name].values.astype(np.float64)}
        lut = _compare(op, _numeric(left, values), _numeric(right, values))
        return ColumnSet(name, np.broadcast_to(lut, (schema[name].size,)).copy())
    decode = {name: schema[name].values.astype(np.float64) for name in names}
    if math.prod(len(decode[name]) for name in names) <= _MAX_DIVISOR_GRID:
        # Every combination of the columns' values, one axis per column: the divisors are
        # checked here, so a query fails the same way whatever rows it meets.
        grid = {name: decode[name].reshape([-1 if i == axis else 1 for i in range(len(names))])
                for axis, name in enumerate(names)}
        _numeric(left, grid)
        _numeric(right, grid)

    def function(codes: Mapping[str, np.ndarray]) -> np.ndarray:
        values = {name: decode[name][codes[name]] for name in names}
        return _compare(op, _numeric(left, values), _numeric(right, values))

    return RowCondition(function, frozenset(columns),
                        f"{_format_expr(left)} {op} {_format_expr(right)}")


def _compare(op: str, left: Any, right: Any) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(_OPERATORS[op](left, right), dtype=bool)


def _compare_constants(op: str, left: Expr, right: Expr) -> bool:
    sides: list[Any] = []
    for side in (left, right):
        if isinstance(side, Lit) and not _is_number(side.value):
            sides.append(side.value)
        else:
            texts = _text_literals(side)
            if texts:
                raise QueryError(f"the text {_show(texts[0])} is used in arithmetic; arithmetic "
                                 f"needs numbers")
            sides.append(float(_numeric(side, {})))
    kinds = [_literal_kind(value) for value in sides]
    if kinds[0] != kinds[1]:
        raise QueryError(f"{_format_expr(left)} {op} {_format_expr(right)} compares "
                         f"{kinds[0]} with {kinds[1]}; compare values of one type")
    return bool(_OPERATORS[op](sides[0], sides[1]))


def _literal_kind(value: Any) -> str:
    """What a literal is, for messages: a number, text, a boolean or a date."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "text"
    if isinstance(value, datetime.date):
        return "a date"
    return "a number"


def _numeric(expr: Expr, values: Mapping[str, np.ndarray]) -> Any:
    """Evaluate an arithmetic expression in float64, refusing any division by zero."""

    def combine(node: Expr, operands: list[Any]) -> Any:
        if isinstance(node, Col):
            return values[node.name]
        if isinstance(node, Lit):
            if isinstance(node.value, str):
                raise QueryError(f"text literal {_show(node.value)} used in arithmetic")
            if not _is_number(node.value):
                raise QueryError(f"{_plain_value(node.value)} is used in arithmetic or compared "
                                 f"with an expression; arithmetic needs numbers")
            try:
                return np.float64(node.value)
            except OverflowError:
                raise QueryError(f"the number {_plain_value(node.value)} is too large; "
                                 f"numbers must be below 1.8e308 in size") from None
        left, right = operands
        if node.op == "/" and np.any(right == 0):
            names = sorted(_expr_columns(node.right))
            why = (f": {_format_expr(node.right)} is 0 for some value of {', '.join(names)}"
                   if names else "")
            raise QueryError(f"division by zero in {_format_expr(node)}{why}; change the "
                             f"condition so that nothing is divided by 0")
        with np.errstate(all="ignore"):
            return _OPERATORS[node.op](left, right)

    return _fold(expr, _expr_children, combine)


_ORDERING = frozenset({"<", "<=", ">", ">="})


def _coerce_literal(value: Any, column: Column, op: str = "=") -> Any:
    """Match a literal to the column's value type (``iinjury = '3'`` works on integer codes),
    refusing any comparison across types (text with numbers, booleans with anything else)."""
    name = _sql_name(column.name)
    if column.kind == "bool":
        if isinstance(value, bool):
            return value
        raise QueryError(f"column {column.name!r} holds booleans; compare it with TRUE or FALSE "
                         f"({name} = TRUE, or {name} alone, NOT {name}), not "
                         f"{_show_value(value)}")
    if isinstance(value, bool):
        raise QueryError(f"column {column.name!r} holds {KIND_NAMES[column.kind]}, not "
                         f"booleans; {_plain_value(value)} compares with boolean columns only")
    if isinstance(value, datetime.date):
        if column.iso_dates:
            return value.isoformat()
        raise QueryError(f"column {column.name!r} does not hold dates (ISO text such as "
                         f"'2024-01-31'); {_plain_value(value)} compares with date columns only")
    if column.kind == "string":
        if isinstance(value, str):
            if op in _ORDERING and column.iso_dates and not _ISO_DATE.fullmatch(value):
                raise QueryError(f"column {column.name!r} holds dates, compared as ISO text; "
                                 f"write the date in that form (YYYY-MM-DD), e.g. {name} {op} "
                                 f"'{column.domain[0]}', not {_show_value(value)}")
            return value
        shown = _plain_value(value)
        op_text = "=" if op == "IN" else op
        if column.ordered:
            raise QueryError(f"column {column.name!r} holds ordered text; compare it with one "
                             f"of its values, e.g. {name} {op_text} '{column.domain[0]}', not "
                             f"the number {shown}")
        raise QueryError(f"column {column.name!r} holds text; compare it with text, e.g. "
                         f"{name} {op_text} '{shown}' (compared as text, where '9' > '12'), or "
                         f"read it as numbers (read_table reads a text column whose values are "
                         f"all numbers as numbers, unless a text domain is declared)")
    try:
        number = float(value)
    except (ValueError, TypeError):
        raise QueryError(f"column {column.name!r} holds numbers; {_show_value(value)} is not "
                         f"a number") from None
    except OverflowError:
        raise QueryError(f"the number {_plain_value(value)} is too large; numbers must be "
                         f"below 1.8e308 in size") from None
    if not math.isfinite(number):
        raise QueryError(f"column {column.name!r} holds numbers; {_show_value(value)} is not a "
                         f"finite number")
    if column.kind == "int" and number.is_integer() and abs(number) < 2 ** 63:
        return int(number)
    return number


def _unknown_value_message(value: Any, column: str, domain: Sequence[Any]) -> str:
    as_text = [str(v) for v in domain]
    if isinstance(value, bool):
        close = []
    elif isinstance(value, str):
        close = difflib.get_close_matches(value, as_text, n=3, cutoff=0.4)
    else:
        numbers = np.asarray(domain, dtype=float)
        close = [as_text[i] for i in np.argsort(np.abs(numbers - float(value)),
                                                kind="stable")[:3]]
    shown = close or as_text[:5]
    return (f"value {_show_value(value)} is not in the domain of column {column!r}; closest: "
            f"{', '.join(map(repr, shown))} ({len(domain)} values in all)")


# ---------------------------------------------------------------------------------------------
# Splitting a predicate on chosen columns (used where those columns are randomized).


def split(predicate: Predicate, columns: Sequence[str],
          sizes: Mapping[str, int]) -> list[tuple[Predicate, np.ndarray]]:
    """Rewrite ``predicate`` as a disjoint union over value combinations of ``columns``.

    Returns pairs ``(rest, combos)``: ``rest`` is a predicate over the other columns and
    ``combos`` a boolean array over the product of the domains of ``columns``; the predicate
    holds for a row exactly when its values on ``columns`` form a combination marked in some
    ``combos`` and ``rest`` holds. Conditions that mix a split column with another column
    cannot be split and raise a QueryError.
    """
    shape = tuple(sizes[c] for c in columns)
    box = predicate.box()
    if box is not None:
        return _split_box(predicate, box, columns, shape)
    return _split_atoms(predicate, columns, shape)


def _split_atoms(predicate: Predicate, columns: Sequence[str], shape: tuple[int, ...]
                 ) -> list[tuple[Predicate, np.ndarray]]:
    """`split` in general: one term per pattern of truth of the conditions on ``columns``."""
    atoms = [a for a in predicate.atoms() if a.columns & set(columns)]
    for atom in atoms:
        if not isinstance(atom, ColumnSet):
            raise QueryError(f"a condition relates {sorted(atom.columns)} in one comparison; "
                             f"conditions on randomized columns must compare one column with "
                             f"literals")
    if len(atoms) > 20:
        raise QueryError("too many separate conditions on randomized columns; combine them "
                         "with IN lists")
    signature = np.zeros(shape, dtype=np.int64)
    for k, atom in enumerate(atoms):
        assert isinstance(atom, ColumnSet)
        axis = columns.index(atom.column)
        view = [1] * len(shape)
        view[axis] = shape[axis]
        signature += atom.lut.reshape(view).astype(np.int64) << k
    result = []
    for value in np.unique(signature):
        truth = {id(a): bool((int(value) >> k) & 1) for k, a in enumerate(atoms)}
        rest = simplify(predicate.substitute(truth))
        if isinstance(rest, Const) and not rest.value:
            continue
        result.append((rest, signature == value))
    return result


def _split_box(predicate: Predicate, box: Mapping[str, np.ndarray], columns: Sequence[str],
               shape: tuple[int, ...]) -> list[tuple[Predicate, np.ndarray]]:
    """`split` of a conjunction of single-column conditions (``box``, one per column): one
    term, its conditions on the other columns with the product of its lookup tables on
    ``columns`` (what the general rule finds, without a term per atom pattern)."""
    if isinstance(predicate, Const):
        return [(predicate, np.ones(shape, dtype=bool))] if predicate.value else []
    combos = np.ones(shape, dtype=bool)
    for axis, column in enumerate(columns):
        if column in box:
            view = [1] * len(shape)
            view[axis] = shape[axis]
            combos = combos & box[column].reshape(view)
    items = predicate.items if isinstance(predicate, AllOf) else (predicate,)
    rest = simplify(AllOf(tuple(item for item in items if item.columns.isdisjoint(columns))))
    if not combos.any() or (isinstance(rest, Const) and not rest.value):
        return []
    return [(rest, combos)]


# ---------------------------------------------------------------------------------------------
# Counting over encoded rows.

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


# ---------------------------------------------------------------------------------------------
# Counting over Parquet files, without holding their rows.

SCAN_BATCH_ROWS = 1 << 20
"""Rows per batch where a condition must be evaluated on the rows of a `ScanCube`."""

POLARS_FLOOR = (1, 31)
"""The first Polars release with its streaming engine (``collect(engine="streaming")``)."""


def scan_engine_available() -> bool:
    """Whether Polars, at `POLARS_FLOOR` or later, is installed for `ScanCube` to count with
    (asked of the package metadata: importing Polars takes a noticeable fraction of a
    second)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = re.match(r"(\d+)\.(\d+)", version("polars"))
    except PackageNotFoundError:
        return False
    return found is not None and tuple(map(int, found.groups())) >= POLARS_FLOOR


def encode_values(name: str, array: pa.Array | pa.ChunkedArray, domain: pa.Array
                  ) -> np.ndarray:
    """The codes of values (their positions in ``domain``), refusing any value outside it.

    A dictionary-encoded chunk is encoded through the dictionary entries its rows use: only
    those are looked up, and the rows take their codes through their indices.
    """
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    codes = [_encode_chunk(name, chunk, domain) for chunk in chunks]
    return np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)


def _encode_chunk(name: str, array: pa.Array, domain: pa.Array) -> np.ndarray:
    outside = ValueError(f"column {name!r} holds values outside its domain")
    if array.null_count:
        raise outside
    if pa.types.is_dictionary(array.type):
        indices = array.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        used = np.flatnonzero(np.bincount(indices, minlength=len(array.dictionary)))
        lookup = np.full(len(array.dictionary), -1, dtype=np.int64)
        lookup[used] = _positions(name, array.dictionary.take(pa.array(used)), domain)
        codes = lookup[indices]
    else:
        codes = _positions(name, array, domain)
    if codes.size and codes.min() < 0:
        raise outside
    return codes


def _check_stored_type(name: str, stored: pa.DataType, domain: pa.DataType) -> None:
    """Refuse a column whose stored values (a file's footer says their type) cannot be its
    domain's: of another type, integers of any width aside."""
    values = stored.value_type if pa.types.is_dictionary(stored) else stored
    if not (values.equals(domain) or (pa.types.is_integer(values)
                                      and pa.types.is_integer(domain))):
        raise ValueError(f"column {name!r} has type {values}, not {domain}")


def _positions(name: str, values: pa.Array, domain: pa.Array) -> np.ndarray:
    """Position of each value in ``domain``, -1 where it is absent (or null)."""
    try:
        cast = values if values.type.equals(domain.type) else pc.cast(values, domain.type)
        positions = pc.index_in(cast, value_set=domain)
    except pa.ArrowException as exc:
        raise ValueError(f"column {name!r} has type {values.type}, not {domain.type}") from exc
    return positions.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


MAX_SUMMARY_ROWS = 1 << 22
"""Most distinct rows a `ScanCube` keeps, with their counts, to answer every query from: about
70 MB for nine columns (3 MB for a DBR release of 10^8 Adult-shaped rows: 170,840)."""

CACHE_FORMAT = 1
"""Version of the files in the summary cache (`cache_directory`); others are ignored."""

MAX_CACHE_BYTES = 1 << 30
"""Size of the summary cache beyond which the least recently used files are deleted."""

FileIdentity = tuple[int, int, int, int]
Summary = tuple[frozenset[str], dict[str, np.ndarray], np.ndarray]
"""The distinct value combinations of some columns (codes by column) and their row counts."""


def file_identity(path: str | os.PathLike[str]) -> FileIdentity:
    """Device, inode, size and modification time: what changes when a file is replaced."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def cache_directory() -> Path | None:
    """Where ppdp keeps what it learnt of releases loaded before (`ScanCube`'s summaries of
    their rows, the files whose digests were verified): ``$PPDP_CACHE_DIR`` (empty: no
    cache), else ``$XDG_CACHE_HOME/ppdp``, else ``~/.cache/ppdp``.

    The directory is created private (0700) and used only while it belongs to this user and no
    one else may write to it, as ssh treats its keys: what is read from it is trusted to be
    what this user's ppdp wrote. None when there is to be no cache or it cannot be used."""
    chosen = os.environ.get("PPDP_CACHE_DIR")
    if chosen is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        chosen = os.path.join(base, "ppdp")
    if not chosen:
        return None
    directory = Path(chosen)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        stat = directory.lstat()
    except OSError:
        return None
    owner = getattr(os, "getuid", None)
    private = (stat.st_mode & 0o022 == 0 and (owner is None or stat.st_uid == owner()))
    return directory if directory.is_dir() and not directory.is_symlink() and private else None


def _radix_groups(sizes: Sequence[int]) -> list[list[int]]:
    """Consecutive runs of columns whose codes combine into one int64 (product of sizes below
    2^63)."""
    groups: list[list[int]] = []
    product = 1 << 63
    for index, size in enumerate(sizes):
        if product * max(size, 1) >= 1 << 63:
            groups.append([])
            product = 1
        groups[-1].append(index)
        product *= max(size, 1)
    return groups


def pack_codes(codes: Sequence[np.ndarray], sizes: Sequence[int]) -> list[np.ndarray]:
    """Combine columns' codes into as few int64 keys as hold them (mixed radix), so that
    grouping by rows hashes one column (usually) instead of many."""
    keys = []
    for group in _radix_groups(sizes):
        key = codes[group[0]].astype(np.int64)
        for index in group[1:]:
            key *= sizes[index]
            key += codes[index]
        keys.append(key)
    return keys


def unpack_codes(keys: Sequence[np.ndarray], sizes: Sequence[int]) -> list[np.ndarray]:
    """The columns' codes (narrowed) from keys made by `pack_codes`."""
    codes: list[np.ndarray] = [np.empty(0)] * len(sizes)
    for group, key in zip(_radix_groups(sizes), keys, strict=True):
        rest = key.copy()
        for index in reversed(group):
            rest, code = np.divmod(rest, max(sizes[index], 1))
            codes[index] = code.astype(code_dtype(sizes[index]))
    return codes


def _add_distinct(frames: Sequence[Any]) -> Any:
    """Frames of keys ``k0, k1, ...`` and counts ``n`` merged into one row per key, or None
    beyond `MAX_SUMMARY_ROWS` rows."""
    import polars as pl

    merged = pl.concat(frames)
    keys = [name for name in merged.columns if name != "n"]
    merged = merged.group_by(keys).agg(pl.col("n").sum())
    return merged if merged.height <= MAX_SUMMARY_ROWS else None


def _arrays_digest(key: str, arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of a cache file's key and arrays (names, types, shapes and bytes)."""
    digest = hashlib.sha256(key.encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}:".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def write_cache_file(name: str, write: Callable[[BinaryIO], None]) -> None:
    """Write a file of the cache (aside, then renamed: readers never see half of one), then
    trim the cache; a cache that cannot be written is no cache, so failures pass silently."""
    directory = cache_directory()
    if directory is None:
        return
    try:
        descriptor, staged = tempfile.mkstemp(dir=directory, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        os.replace(staged, directory / name)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        return
    _trim_cache(directory)


def _trim_cache(directory: Path) -> None:
    """Delete the least recently used files beyond `MAX_CACHE_BYTES` in all."""
    entries = []
    for entry in directory.iterdir():
        if entry.suffix == ".tmp":  # being written
            continue
        with contextlib.suppress(OSError):  # another process may be trimming too
            stat = entry.stat()
            entries.append((stat.st_mtime_ns, stat.st_size, entry))
    total = 0
    for _, size, entry in sorted(entries, reverse=True):
        total += size
        if total > MAX_CACHE_BYTES:
            with contextlib.suppress(OSError):
                entry.unlink()


class ScanCube(Cube):
    """A Cube of rows kept in Parquet files: contingency tables are summed from the counts of
    the files' distinct rows, aggregated once, or else come from streaming Polars aggregations
    over the files, ``group_by(columns).agg(len)``; either way they are cached like a Cube's.

    The rows are never all in memory. Given ``row_counts`` (the counts of the files' distinct
    rows that the publisher wrote, `ppdp.row_counts`), construction checks the files' footers
    and those counts and reads no row. Otherwise it reads every row once, as decoding them
    would, to check that the files hold ``n_rows`` rows and every column and that every value
    of each column lies in its domain; that pass also counts each column's values and the
    distinct rows (value combinations of every column), up to `MAX_SUMMARY_ROWS` of them.
    Published rows repeat: rows of Adult's nine columns, however many, hold at most some
    400,000 distinct rows (170,840 in a DBR release of 10^8 rows), so every table, and any
    condition evaluated on the cells of one, is then summed from those instead of a pass over
    the files (milliseconds instead of a minute per 10^9 rows). With more distinct rows, a
    table over some columns costs one pass over those columns, and `prefetch` counts the
    tables of many queries in a few passes; conditions whose table would be too large are
    evaluated on the summary's distinct rows, or else on batches of rows (`class_histograms`).
    ``codes`` is empty: `read_codes` decodes every row, for whoever needs them all.

    Given ``digests`` (the SHA-256 of files, by their `file_identity` when hashed: load_release
    passes those it has verified), what that pass finds is kept in the user's cache directory
    (`cache_directory`), named by a digest of the files' digests and the domains, so that the
    next construction over the same bytes reads it instead (about 0.05 s for Adult-shaped
    rows, against 25 CPU-seconds per 10^8 rows for the pass). The cache holds counts of published
    rows only, which anyone holding the release can compute: nothing private. A file in it is
    used only if its own digest, its name, and its counts (every code inside its domain, every
    total ``n_rows``) agree; otherwise, or without ``digests``, the files are read. Like the
    release's digests, this catches accidents, not someone who may write to the cache
    directory (which must be the user's own).

    The files must stay in place: every new table or pass first checks that they are those it
    was built on (same inode, size and modification time), and raises a ReleaseError
    otherwise, even when the answer would come from a summary.

    ``domains`` gives, per column of the files, its values in code order (the files may store
    them plainly or dictionary-encoded); ``constants`` names columns absent from the files
    whose every row has code 0 (a domain of one value), never read.
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]], domains: Mapping[str, pa.Array],
                 n_rows: int, *, constants: Sequence[str] = (),
                 digests: Mapping[FileIdentity, str] | None = None,
                 row_counts: pa.Table | None = None) -> None:
        sizes = {name: len(values) for name, values in domains.items()}
        sizes.update({name: 1 for name in constants})
        super().__init__({}, sizes, n_rows)
        self.paths = tuple(str(path) for path in paths)
        self.domains = dict(domains)
        self._summaries: list[Summary] = []
        self._identity = [file_identity(path) for path in self.paths]
        self._check(digests, row_counts)

    def _require_unchanged(self) -> None:
        """Refuse to read files replaced or removed since the cube was built (a release saved
        over, say): their rows were never checked, and counts would mix two releases."""
        for path, identity in zip(self.paths, self._identity, strict=True):
            try:
                same = file_identity(path) == identity
            except OSError:
                same = False
            if not same:
                raise ReleaseError(f"{path} was replaced or removed since the release was "
                                   f"loaded; load the release again")

    def _check(self, digests: Mapping[FileIdentity, str] | None,
               row_counts: pa.Table | None) -> None:
        self._check_footers()
        if row_counts is not None:
            self._summaries = self._counted(row_counts)
            return
        known = [digests.get(identity) for identity in self._identity] if digests else [None]
        key = self._cache_key([d for d in known if d is not None]) if None not in known \
            else None
        cached = self._read_cache(key) if key is not None else None
        if cached is not None:
            self._summaries = cached
            return
        self._summaries = self._summarize()
        if key is not None:
            self._write_cache(key)

    def _check_footers(self) -> None:
        """Check the files' footers: ``n_rows`` rows in all, every column, in a stored type
        its domain's values can be read from."""
        metadata = [pq.read_metadata(path) for path in self.paths]
        found = sum(m.num_rows for m in metadata)
        if found != self.n_rows:
            raise ValueError(f"expected {self.n_rows} rows, found {found}")
        for part in metadata:
            schema = part.schema.to_arrow_schema()
            for name, domain in self.domains.items():
                if name not in schema.names:
                    raise ValueError(f"column {name!r} is missing")
                _check_stored_type(name, schema.field(name).type, domain.type)

    def _counted(self, row_counts: pa.Table) -> list[Summary]:
        """The summaries of the files' rows from the counts of their distinct rows that the
        publisher wrote (`ppdp.row_counts`), checked as a cached summary is."""
        from ppdp.row_counts import COUNT_COLUMN

        names = list(self.domains)
        missing = [name for name in [*names, COUNT_COLUMN] if name not in row_counts.column_names]
        if missing:
            raise ValueError(f"the row counts lack the columns {missing}")
        counts = row_counts.column(COUNT_COLUMN).to_numpy(zero_copy_only=False)
        if counts.dtype != np.int64:
            raise ValueError("the row counts are not 64-bit integers")
        codes = {name: encode_values(name, row_counts.column(name), self.domains[name])
                 .astype(code_dtype(self.sizes[name])) for name in names}
        summaries: list[Summary] = []
        for name in names:
            marginal = np.bincount(codes[name], weights=counts, minlength=self.sizes[name])
            values = np.flatnonzero(marginal)
            summaries.append((frozenset([name]), {name: values.astype(codes[name].dtype)},
                              marginal[values].astype(np.int64)))
        summaries.append((frozenset(names), codes, counts))
        if not all(self._consistent(summary) for summary in summaries):
            raise ValueError("the row counts do not add up to the release's rows")
        return summaries

    def _summarize(self) -> list[Summary]:
        """Read every row once: check it, and count each column's values and the distinct rows
        (if at most `MAX_SUMMARY_ROWS`), as summaries."""
        names = list(self.domains)
        if not names:
            return []
        # Files one at a time: Arrow's reading and Polars' grouping already use every core,
        # and two files at once measured no faster, with 250 MB more memory (10^7 rows).
        files = [self._summarize_file(path) for path in self.paths]
        # Arrow's memory pool keeps the buffers of the batches read; give them back.
        pa.default_memory_pool().release_unused()
        summaries: list[Summary] = []
        for name in names:
            marginal = sum((counts[name] for counts, _ in files),
                           np.zeros(self.sizes[name], dtype=np.int64))
            values = np.flatnonzero(marginal)
            summaries.append((frozenset([name]),
                              {name: values.astype(code_dtype(self.sizes[name]))},
                              marginal[values]))
        frames = [distinct for _, distinct in files]
        merged = _add_distinct(frames) if all(f is not None for f in frames) else None
        if merged is not None:
            keys = [merged[key].to_numpy() for key in merged.columns if key != "n"]
            codes = unpack_codes(keys, [self.sizes[name] for name in names])
            summaries.append((frozenset(names), dict(zip(names, codes, strict=True)),
                              merged["n"].to_numpy().astype(np.int64)))
        return summaries

    def _summarize_file(self, path: str) -> tuple[dict[str, np.ndarray], Any]:
        """The counts of each column's values in one file, and its distinct rows with their
        counts (a Polars frame of keys ``k0, k1, ...`` and counts ``n``; None when too
        many). Arrow decodes dictionary columns to their indices, all this pass needs:
        measured about twice as fast as Polars reading them as text."""
        import polars as pl

        names = list(self.domains)
        sizes = [self.sizes[name] for name in names]
        counts = {name: np.zeros(self.sizes[name], dtype=np.int64) for name in names}
        keys = [f"k{index}" for index in range(len(_radix_groups(sizes)))]
        distinct: pl.DataFrame | None = pl.DataFrame(schema={key: pl.Int64
                                                             for key in [*keys, "n"]})
        for batch in pq.ParquetFile(path).iter_batches(batch_size=SCAN_BATCH_ROWS,
                                                       columns=names):
            codes = [encode_values(name, batch.column(name), self.domains[name])
                     for name in names]
            for name, values in zip(names, codes, strict=True):
                counts[name] += np.bincount(values, minlength=self.sizes[name])
            if distinct is not None:
                rows = pl.DataFrame(dict(zip(keys, pack_codes(codes, sizes), strict=True)))
                distinct = _add_distinct([distinct, rows.with_columns(n=pl.lit(1, pl.Int64))])
        return counts, distinct

    def _cache_key(self, digests: Sequence[str]) -> str:
        """The name of the cache file of files with these digests, read with these domains."""
        described = repr((CACHE_FORMAT, self.n_rows, list(digests),
                          [(name, str(values.type), values.to_pylist())
                           for name, values in self.domains.items()]))
        return hashlib.sha256(described.encode()).hexdigest()

    def _read_cache(self, key: str) -> list[Summary] | None:
        """The summaries kept under this key, if there, intact and consistent with the cube."""
        directory = cache_directory()
        if directory is None:
            return None
        path = directory / f"{key}.npz"
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            digest = str(arrays.pop("digest"))
            summaries = [(frozenset(str(c) for c in arrays[f"columns{i}"]),
                          {str(c): arrays[f"codes{i}_{j}"]
                           for j, c in enumerate(arrays[f"columns{i}"])},
                          arrays[f"counts{i}"])
                         for i in range(sum(name.startswith("counts") for name in arrays))]
        # Whatever is wrong with a cache file (missing, truncated, edited), the rows are read.
        except Exception:
            return None
        if digest != _arrays_digest(key, arrays) or not all(
                self._consistent(summary) for summary in summaries):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: trimmed last
        return summaries

    def _consistent(self, summary: Summary) -> bool:
        """Whether a summary read from the cache could be one of these files' rows: known
        columns, codes inside their domains, positive counts adding up to ``n_rows``."""
        columns, codes, counts = summary
        if not (columns <= self.domains.keys() and codes.keys() == columns
                and counts.dtype == np.int64 and counts.ndim == 1
                and bool(np.all(counts > 0)) and int(counts.sum()) == self.n_rows):
            return False
        return all(values.dtype.kind == "u" and values.shape == counts.shape
                   and (not values.size or int(values.max()) < self.sizes[name])
                   for name, values in codes.items())

    def _write_cache(self, key: str) -> None:
        """Keep the summaries under this key."""
        arrays: dict[str, np.ndarray] = {}
        for i, (columns, codes, counts) in enumerate(self._summaries):
            names = sorted(columns)
            arrays[f"columns{i}"] = np.asarray(names, dtype=str)
            arrays.update({f"codes{i}_{j}": codes[name] for j, name in enumerate(names)})
            arrays[f"counts{i}"] = counts
        arrays["digest"] = np.asarray(_arrays_digest(key, arrays))
        write_cache_file(f"{key}.npz", lambda handle: np.savez(handle, **arrays))

    def _aggregate(self, groups: Sequence[Sequence[str]]
                   ) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
        """For each group of columns, its distinct value combinations (as codes) and their
        row counts: one streaming aggregation per group.

        The aggregations run one after the other: each already uses every core, and run
        together they only add up their memory."""
        import polars as pl

        self._require_unchanged()
        scan = pl.scan_parquet(list(self.paths))
        results = []
        for columns in groups:
            # Longer than every column name: the count cannot clash with a grouped column.
            count = pl.len().alias("_" * (1 + max(len(c) for c in columns)))
            try:
                results.append(scan.group_by(list(columns)).agg(count)
                               .collect(engine="streaming"))
            # A panic is how Polars reports some malformed files; it is not an Exception.
            except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:
                raise ValueError(f"the rows cannot be read: {_first_line(exc)}") from exc
        return [({c: encode_values(c, frame[c].to_arrow(), self.domains[c]) for c in columns},
                 frame.to_series(len(columns)).to_numpy())
                for columns, frame in zip(groups, results, strict=True)]

    def _histogram(self, columns: tuple[str, ...], mask: np.ndarray | None) -> np.ndarray:
        if mask is not None:
            raise TypeError("a ScanCube holds no rows to mask; use histogram_where")
        shape = tuple(self.sizes[c] for c in columns)
        if not columns:
            return np.asarray(self.n_rows)
        if not self.fits(columns):
            raise QueryError(f"the columns {list(columns)} span {np.prod(shape):.3g} value "
                             f"combinations, too many to count densely")
        # Even from a summary: a release saved over since must be loaded again.
        self._require_unchanged()
        counts = np.zeros(math.prod(shape), dtype=np.int64)
        # Columns of one value leave the flat cell index unchanged: only the others are read.
        read = [c for c in columns if self.sizes[c] > 1]
        if not read:
            counts[0] = self.n_rows
            return counts.reshape(shape)
        codes, found = self._summary_of(read) or self._aggregate([read])[0]
        # A summary may hold several combinations per cell: they add up (float64 weights are
        # exact for counts below 2^53).
        counts += np.bincount(flat_key(codes, read, self.sizes), weights=found,
                              minlength=len(counts)).astype(np.int64)
        return counts.reshape(shape)

    def prefetch(self, column_sets: Iterable[Iterable[str]]) -> None:
        """Count, in a few passes over the files, the tables over these sets of columns
        (nothing to do when the distinct rows were summarized on loading: every set is
        covered).

        A pass costs about the decoding of the columns it reads, whatever it computes, so
        rather than one aggregation per set, the sets are packed greedily (largest first) into
        unions of at most `MAX_CUBE_CELLS` value combinations, each set into the union it adds
        the fewest columns to, and each union is counted by one aggregation. The distinct
        combinations of a union and their counts are kept as a summary, from which any table
        over a subset of the union is then summed without reading the files. Memory: a
        union's summary has at most as many entries as the union has cells. Sets whose table
        is cached, or can come from a summary, or is too large to build, are left out.
        """
        unions: list[set[str]] = []
        wanted = {frozenset(c for c in columns if self.sizes[c] > 1) for columns in column_sets}
        for columns in sorted(wanted, key=lambda c: (-self._cells(c), sorted(c))):
            if (not columns or not self.fits(tuple(columns))
                    or tuple(sorted(columns)) in self._cache
                    or self._summary_of(columns) is not None):
                continue
            # Into the union it adds the fewest columns to (then the fewest cells), if any.
            room = [(len(columns - union), self._cells(union | columns), index)
                    for index, union in enumerate(unions)
                    if self._cells(union | columns) <= MAX_CUBE_CELLS]
            if room:
                unions[min(room)[2]] |= columns
            else:
                unions.append(set(columns))
        groups = [tuple(sorted(union)) for union in unions]
        if not groups:
            return
        for columns, (codes, counts) in zip(groups, self._aggregate(groups), strict=True):
            self._summaries.append((frozenset(columns), codes, counts))

    def _cells(self, columns: Iterable[str]) -> int:
        return math.prod(self.sizes[c] for c in columns)

    def _summary_of(self, columns: Iterable[str]
                    ) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
        """The smallest kept summary over a superset of these columns, if any."""
        wanted = set(columns)
        covering = [(len(counts), index) for index, (names, _, counts)
                    in enumerate(self._summaries) if wanted <= names]
        if not covering:
            return None
        _, codes, counts = self._summaries[min(covering)[1]]
        return codes, counts

    def histogram_where(self, predicate: Predicate, dims: Sequence[str]) -> np.ndarray:
        """Counts over ``dims`` of the rows where ``predicate`` holds (see class_histograms)."""
        classes = dict(self.class_histograms([predicate], dims))
        shape = tuple(self.sizes[c] for c in dims)
        return classes.get(1, np.zeros(shape, dtype=np.int64))

    def class_histograms(self, predicates: Sequence[Predicate], dims: Sequence[str]
                         ) -> list[tuple[int, np.ndarray]]:
        """Counts over ``dims`` of each class of rows that satisfy the same predicates (as
        `Cube.class_histograms`, with the same integer counts).

        Rows with the same values on the predicates' columns and ``dims`` satisfy the same
        predicates: they are evaluated once per non-empty cell of the (cached) contingency
        table over those columns, weighted by its count. When that table would exceed
        `MAX_CUBE_CELLS`, they are evaluated likewise on the distinct rows of a summary of
        those columns, if any; else on the rows, in batches of `SCAN_BATCH_ROWS` read from the
        files, each batch's counts added up; memory stays that of a batch and of the counts
        over ``dims``. The predicates run as they are (the same
        numpy evaluation as in memory) rather than translated into Polars expressions, so that
        every answer is the in-memory one whatever the condition: arithmetic in float64,
        division checks, text order and ordered columns all stay in one place.
        """
        dims = tuple(dims)
        if not self.fits(dims):
            shape = tuple(self.sizes[c] for c in dims)
            raise QueryError(f"the columns {list(dims)} span {np.prod(shape):.3g} value "
                             f"combinations, too many to count densely")
        columns = tuple(sorted(set(dims).union(*(p.columns for p in predicates))))
        classes: dict[int, np.ndarray] = {}
        if not columns:  # constant predicates: every row in one cell
            self._add_classes(classes, predicates, dims, {}, np.asarray([self.n_rows]))
        elif self.fits(columns):
            table = self.histogram(columns)
            cells = np.nonzero(table)
            self._add_classes(classes, predicates, dims, dict(zip(columns, cells, strict=True)),
                              table[cells])
        elif (summary := self._summary_of(c for c in columns if c in self.domains)) is not None:
            # Each distinct row of the summary stands for its count of rows; int64 codes, as
            # the predicates get from the rows.
            codes, counts = summary
            self._require_unchanged()
            self._add_classes(classes, predicates, dims,
                              {c: codes[c].astype(np.int64) if c in codes
                               else np.zeros(len(counts), dtype=np.int64) for c in columns},
                              counts)
        else:
            self._add_classes_of_rows(classes, predicates, dims, columns)
        return sorted(classes.items())

    def _add_classes_of_rows(self, classes: dict[int, np.ndarray],
                             predicates: Sequence[Predicate], dims: tuple[str, ...],
                             columns: tuple[str, ...]) -> None:
        """Add each class's counts over ``dims`` with the predicates evaluated on the rows,
        batch by batch."""
        for codes in self.code_batches(columns):
            self._add_classes(classes, predicates, dims, codes, None)

    def _add_classes(self, classes: dict[int, np.ndarray], predicates: Sequence[Predicate],
                     dims: tuple[str, ...], codes: Mapping[str, np.ndarray],
                     weights: np.ndarray | None) -> None:
        """Add the counts over ``dims`` of each class among these rows (or weighted cells)."""
        n = len(weights) if weights is not None else len(next(iter(codes.values())))
        membership = np.zeros(n, dtype=np.int64)
        for bit, predicate in enumerate(predicates):
            membership |= predicate.evaluate(codes, n).astype(np.int64) << bit
        shape = tuple(self.sizes[c] for c in dims)
        for member in np.unique(membership[membership > 0]):
            chosen = membership == member
            if not dims:
                counts = np.asarray(np.count_nonzero(chosen) if weights is None
                                    else weights[chosen].sum(), dtype=np.int64)
            else:
                key = flat_key(codes, dims, self.sizes, chosen)
                counts = np.bincount(key, weights=None if weights is None else weights[chosen],
                                     minlength=math.prod(shape))
                # Weighted bincount adds in float64: exact for counts below 2^53.
                counts = counts.astype(np.int64).reshape(shape)
            previous = classes.get(int(member))
            classes[int(member)] = counts if previous is None else previous + counts

    def code_batches(self, columns: Sequence[str]) -> Iterator[dict[str, np.ndarray]]:
        """The codes of these columns, batch by batch (`SCAN_BATCH_ROWS` rows), files in
        order."""
        self._require_unchanged()
        read = [c for c in columns if c in self.domains]
        for path in self.paths:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=SCAN_BATCH_ROWS,
                                                           columns=read):
                codes = {c: encode_values(c, batch.column(c), self.domains[c]) for c in read}
                codes.update({c: np.zeros(batch.num_rows, dtype=np.int64)
                              for c in columns if c not in self.domains})
                yield codes

    def read_codes(self) -> dict[str, np.ndarray]:
        """Every row's codes, by column: the whole table in memory."""
        parts: dict[str, list[np.ndarray]] = {name: [] for name in self.sizes}
        for codes in self.code_batches(list(self.sizes)):
            for name, values in codes.items():
                # Narrowed batch by batch, so that int64 codes never exist for every row.
                parts[name].append(values.astype(code_dtype(self.sizes[name])))
        return {name: np.concatenate(values) if values
                else np.zeros(0, dtype=code_dtype(self.sizes[name]))
                for name, values in parts.items()}
