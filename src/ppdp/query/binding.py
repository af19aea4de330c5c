"""Binding a parsed query to a schema: names resolved, literals checked against the
columns' domains, every condition on one column turned into a lookup table over its codes.

Values must fit their column (never a silent comparison of text with a number):

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
names ``t`` or the table's own name."""

from __future__ import annotations

import datetime
import difflib
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.data.schema import (
    KIND_NAMES,
    Column,
    Schema,
    folded_name,
    show_name,
    unknown_column_message,
)
from ppdp.errors import QueryError
from ppdp.query.numbers import check_int64, exact_number
from ppdp.query.parse import parse_query
from ppdp.query.predicates import (
    AllOf,
    AnyOf,
    ColumnSet,
    Const,
    Negation,
    Predicate,
    RowCondition,
    simplify,
)
from ppdp.query.syntax import (
    _ISO_DATE,
    _PLAIN_NAME,
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
    _expr_children,
    _fold,
    _is_number,
    _plain_value,
    _shorten,
    _show,
    _show_value,
)

# Divisors of expressions over several columns are checked for 0 over the product of the
# columns' domains when it has at most this many cells, and on the rows otherwise.
_MAX_DIVISOR_GRID = 1 << 20


@dataclass(frozen=True)
class BoundQuery:
    """A query resolved against a schema."""

    predicate: Predicate
    group_by: tuple[str, ...]
    query: Query

    @property
    def columns(self) -> frozenset[str]:
        return self.predicate.columns | frozenset(self.group_by)


def bind(query: str | Query, schema: Schema, *, table_name: str | None = None,
         any_table: bool = False) -> BoundQuery:
    """Resolve column names and literals of a query against a schema's domains.

    ``table_name`` is the name of the table asked: ``FROM`` may name it or the generic ``t``.
    ``any_table``: ``FROM`` may name any table (a release: see `ppdp.release.base.Release`).
    """
    query = parse_query(query)
    if not any_table:
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
    found = _find_name(name, schema)
    if found is not None:
        return found
    hint = ""
    if "-" in " ".join(schema.names):
        hint = " (names with '-' may also be written in double quotes)"
    raise QueryError(unknown_column_message(name, schema.names) + hint)


def _find_name(name: str, schema: Schema) -> str | None:
    """The column a query's name means: the one spelled so, else the one name that differs
    from it only in case or in Unicode normalisation (``SEX`` for ``sex``, ``café`` with a
    combining accent for ``café``); a QueryError when several do; None when none does."""
    if name in schema:
        return name
    matches = schema.names_by_folded.get(folded_name(name), ())
    if len(matches) > 1:
        raise QueryError(f"column {show_name(name)} is ambiguous: the columns "
                         f"{', '.join(map(repr, matches))} differ from it only in case; "
                         f"write the one meant as it is spelled, in double quotes")
    return matches[0] if matches else None


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
    longest = max((len(n) for n in schema.names), default=0)
    hyphenated: dict[int, str] = {}
    has_subtraction = any(isinstance(n, Arith) and n.op == "-" for n in _walk(expr))
    # The root is an Arith here, but the nodes folded below are any expression.
    root: Expr = expr

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
        found = _find_name("-".join(left + right), schema)
        if found is not None:
            hyphenated[id(node)] = found
        return left + right

    if has_subtraction:
        _fold(root, _expr_children, parts)

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

    return _fold(root, children, combine)


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
            if _is_number(node.value):
                try:
                    return np.float64(node.value)
                except OverflowError:
                    raise QueryError(f"the number {_plain_value(node.value)} is too large; "
                                     f"numbers must be below 1.8e308 in size") from None
            raise QueryError(f"{_plain_value(node.value)} is used in arithmetic or compared "
                             f"with an expression; arithmetic needs numbers")
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
    if isinstance(value, int):
        # Exact: an int64 column holds integers that float64 would round.
        check_int64(value)
        return value if column.kind == "int" else float(value)
    try:
        # Quoted numbers are read as numbers written unquoted are, exactly.
        number = exact_number(value) if isinstance(value, str) else float(value)
    except QueryError:
        raise
    except (ValueError, TypeError):
        raise QueryError(f"column {column.name!r} holds numbers; {_show_value(value)} is not "
                         f"a number") from None
    except OverflowError:
        raise QueryError(f"the number {_plain_value(value)} is too large; numbers must be "
                         f"below 1.8e308 in size") from None
    if not math.isfinite(number):
        raise QueryError(f"column {column.name!r} holds numbers; {_show_value(value)} is not a "
                         f"finite number")
    if isinstance(number, int):
        check_int64(number)
        return number if column.kind == "int" else float(number)
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
