"""The syntax tree of count queries, and the limits on query text.

A query is parsed once into a small syntax tree (``Query``), then *bound* to a schema
(`ppdp.query.binding`). Queries come from users and files, so every failure to parse or bind a
string is a ``QueryError``. Size limits, far above real queries, keep hostile input from
stalling the parser; they are checked on the text (quoted text and comments aside) before
parsing, in about 0.1 s for a megabyte:

* ``MAX_QUERY_CHARS``: 1,000,000 characters;
* ``MAX_TERMS``: 10,000 terms, counted as the ANDs, ORs, NOTs, commas and arithmetic signs,
  plus one (a condition of 1,000 ORs or an IN list of 1,000 values has 1,000 terms);
* ``MAX_DEPTH``: 1,000 levels of nested parentheses.

Every tree walk is iterative (AND/OR chains are flattened, arithmetic is folded with an
explicit stack, `_fold`), so only sqlglot's recursive-descent parser recurses with the depth of
a query (see `ppdp.query.sql`)."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, TypeVar

MAX_QUERY_CHARS = 1_000_000


MAX_TERMS = 10_000


MAX_DEPTH = 1_000


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
    kids: Sequence[_Node] | None = children(root)
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


def _is_number(value: object) -> TypeGuard[int | float]:
    """Whether a literal is a number (booleans are ints to Python, not here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _expr_children(expr: Expr) -> tuple[Expr, ...]:
    return (expr.left, expr.right) if isinstance(expr, Arith) else ()


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
