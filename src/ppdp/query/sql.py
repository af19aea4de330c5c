"""The text of a count query parsed into its condition (`ppdp.query.Query`).

A plain conjunction of comparisons of a column with a literal is read by a regular-expression
fast path; anything else by sqlglot's parser, sized and checked before it runs (see the limits
in `ppdp.query`). Kept apart from `ppdp.query` so that sqlglot is imported only when a query
text is parsed (publishing never parses one).
"""

from __future__ import annotations

import datetime
import functools
import re
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sqlglot import expressions as exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import Token, TokenType

from ppdp.errors import QueryError
from ppdp.query.numbers import exact_number
from ppdp.query.syntax import (
    _ISO_DATE,
    MAX_DEPTH,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    PARSED_CACHE_SIZE,
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
    _first_line,
    _fold,
    _hyphen_name,
    _is_number,
    _shorten,
    _show,
)

# sqlglot recurses about 20 frames per parenthesis; text nested deeper than this is parsed in a
# worker thread, and any RecursionError in the calling thread is retried there.
_SHALLOW_DEPTH = 10


_DEEP_RECURSION_LIMIT = 25 * MAX_DEPTH + 2_000


# Python 3.11 needs well under 4 MiB of C stack for that limit; the rest is margin.
_DEEP_STACK_BYTES = 64 << 20


_DEEP_LOCK = threading.Lock()

_COMPARISONS: dict[type, str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
}
_ARITHMETIC: dict[type, str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}

_DIALECT = Dialect.get_or_raise(None)


# Quoted text, quoted names and comments, skipped when sizing a query before parsing.
_SKIPPED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?(?:\*/|\Z)",
                      re.DOTALL)


_SEPARATORS = re.compile(r"\b(?:AND|OR|NOT)\b|[,+\-*/]", re.IGNORECASE)


_BRACKETS = frozenset({TokenType.L_BRACKET, TokenType.R_BRACKET, TokenType.L_BRACE,
                       TokenType.R_BRACE})


# Words that may stand before "(": names (function calls such as COUNT) and the keywords of
# count queries. Any other keyword before "(" is a type constructor or special form.
_MAY_OPEN = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.AND, TokenType.OR,
                       TokenType.NOT, TokenType.IN, TokenType.BETWEEN, TokenType.WHERE,
                       TokenType.SELECT, TokenType.FROM, TokenType.GROUP_BY,
                       TokenType.STRING})


_SELECT_ARGS = frozenset({"expressions", "from", "from_", "where", "group"})


_CLAUSE_NAMES = {"joins": "JOIN", "order": "ORDER BY", "laterals": "LATERAL",
                 "windows": "WINDOW", "with_": "WITH"}


def parse_query(text: str | Query) -> Query:
    """Parse a bare condition (``age >= 40 AND sex = 'Female'``) or a full
    ``SELECT COUNT(*) FROM t [WHERE ...] [GROUP BY ...]``."""
    if isinstance(text, Query):
        return text
    if not isinstance(text, str):
        raise QueryError("a query must be a non-empty string")
    return _parse_text(text)


@functools.lru_cache(maxsize=PARSED_CACHE_SIZE)
def _parse_text(text: str) -> Query:
    """The parse of one query text (errors are raised each time, never cached)."""
    source = text.strip().rstrip(";").strip() if isinstance(text, str) else ""
    if not source:
        raise QueryError("a query must be a non-empty string")
    plain = _plain_conjunction(source)
    if plain is not None:
        return Query(where=plain, text=source)
    return _parsed_sql(text, source)


def _parsed_sql(text: str, source: str) -> Query:
    """The parse of a query text by sqlglot (``source``: the text stripped of spaces and a
    final semicolon)."""
    depth = _check_size(source)
    is_select = source.split(None, 1)[0].upper() == "SELECT"
    sql = source if is_select else f"SELECT COUNT(*) FROM t WHERE {source}"
    tokens = _tokenize(sql, text)

    def parse() -> Query:
        return _parse_tokens(tokens, sql, text, source, is_select)

    if depth <= _SHALLOW_DEPTH:
        try:
            return parse()
        except RecursionError:
            pass  # NOT chains and the like also recurse; retry with room to spare.
    return _with_deep_stack(parse)


# A comparison of a column with a literal, as most generated queries are written: a name
# (unquoted, or in double quotes), an operator, and a quoted text or a number (optionally
# negative); no backslashes.
_PLAIN_TERM = re.compile(
    r"(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|\"(?P<quoted>(?:[^\"\\]|\"\")+)\")"
    r"[ \t\n\r]*(?P<op><=|>=|<>|!=|=|<|>)[ \t\n\r]*"
    r"(?:'(?P<text>(?:[^'\\]|'')*)'|(?P<minus>-[ \t\n\r]*)?"
    r"(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![A-Za-z0-9_.]))")


_PLAIN_AND = re.compile(r"[ \t\n\r]+AND[ \t\n\r]+", re.IGNORECASE)


_PLAIN_MAX_CHARS = 4096


_KEYWORDS = frozenset(_DIALECT.tokenizer_class.KEYWORDS)


def _plain_conjunction(source: str) -> Condition | None:
    """The condition of a bare ``col op literal [AND col op literal ...]``, read without
    SQL parsing; None for any other text (the parser then reads it).

    This is what sqlglot's parse gives for such text (tested on generated queries), at a
    fifteenth of its cost (10,000 pool queries of Adult: 0.013 s against 0.19 s): pools of
    generated queries are mostly of this form."""
    if len(source) > _PLAIN_MAX_CHARS:
        return None
    terms: list[Condition] = []
    position = 0
    while True:
        match = _PLAIN_TERM.match(source, position)
        if match is None or (match["name"] or "").upper() in _KEYWORDS:
            return None
        name = match["name"] or match["quoted"].replace('""', '"')
        if match["number"] is None:
            value = Lit(match["text"].replace("''", "'"))
        else:
            try:
                number = _number_value(match["number"], source)
            except QueryError:
                return None  # the parser says what is wrong, in its words
            value = Lit(-number if match["minus"] else number)
        op = "!=" if match["op"] == "<>" else match["op"]
        terms.append(Compare(op, Col(name), value))
        position = match.end()
        if position == len(source):
            return terms[0] if len(terms) == 1 else And(tuple(terms))
        joint = _PLAIN_AND.match(source, position)
        if joint is None:
            return None
        position = joint.end()


def _check_size(source: str) -> int:
    """Refuse text over the size limits, cheaply; return how deep its parentheses nest."""
    if len(source) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(source):,} characters long; at most "
                         f"{MAX_QUERY_CHARS:,} are supported, so split it into several queries")
    code = _SKIPPED.sub(" '' ", source)
    terms = len(_SEPARATORS.findall(code)) + 1
    if terms > MAX_TERMS:
        raise QueryError(f"the query has {terms:,} terms (conditions, list values and "
                         f"operands); at most {MAX_TERMS:,} are supported, so split it into "
                         f"several queries")
    # Vectorised running depth: ASCII parentheses never occur inside UTF-8 multibyte sequences.
    raw = np.frombuffer(code.encode("utf-8", "replace"), dtype=np.uint8)
    steps = (raw == ord("(")).astype(np.int32) - (raw == ord(")"))
    depth = int(np.cumsum(steps).max()) if steps.size else 0
    if depth > MAX_DEPTH:
        raise QueryError(f"the query nests parentheses {depth:,} levels deep; at most "
                         f"{MAX_DEPTH:,} levels are supported")
    return depth


def _tokenize(sql: str, text: str) -> list[Token]:
    try:
        tokens = _DIALECT.tokenize(sql)
    except MemoryError:
        raise
    except Exception as exc:  # the tokenizer fails on malformed text with various types
        raise QueryError(f"cannot parse query {_show(text)}: {_first_line(exc)}") from exc
    for index, token in enumerate(tokens):
        if token.token_type in _BRACKETS:
            raise QueryError(f"brackets {token.text!r} are not supported in count queries: "
                             f"{_show(text)}")
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (following is not None and following.token_type == TokenType.L_PAREN
                and token.token_type not in _MAY_OPEN and token.text[:1].isalpha()):
            raise QueryError(f"{token.text.upper()}(...) is not supported in count queries; "
                             f"use column names, literals, = != < <= > >= IN BETWEEN AND OR "
                             f"NOT and + - * /: {_show(text)}")
    return tokens


def _with_deep_stack(function: Callable[[], Query]) -> Query:
    """Run ``function`` in a worker thread with a large stack and recursion limit."""
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as exc:  # handed back to the calling thread below
            outcome.append((False, exc))

    # The recursion limit is global to the interpreter: one deep parse at a time, and the
    # limit is restored as soon as it is done.
    with _DEEP_LOCK:
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, _DEEP_RECURSION_LIMIT))
        try:
            previous_size = threading.stack_size(_DEEP_STACK_BYTES)
            try:
                worker = threading.Thread(target=target, name="ppdp-query-parser", daemon=True)
                worker.start()
            finally:
                threading.stack_size(previous_size)
            worker.join()
        except (RuntimeError, ValueError) as exc:  # no thread or stack size on this platform
            raise QueryError(f"cannot parse this deeply nested query here ({exc}); nest it "
                             f"less than {_SHALLOW_DEPTH} levels deep") from exc
        finally:
            sys.setrecursionlimit(previous_limit)
    succeeded, value = outcome[0]
    if succeeded:
        return value
    if isinstance(value, RecursionError):
        raise QueryError(f"the query is nested too deeply to parse; at most {MAX_DEPTH:,} "
                         f"levels of parentheses and NOT are supported") from None
    raise value


def _parse_tokens(tokens: list[Token], sql: str, text: str, source: str,
                  is_select: bool) -> Query:
    try:
        statements = _DIALECT.parser().parse(tokens, sql)
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:  # sqlglot fails on malformed input with various exception types
        raise QueryError(f"cannot parse query {_show(text)}: {_first_line(exc)}") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1 or not isinstance(statements[0], exp.Select):
        raise QueryError(f"only SELECT COUNT(*) queries and bare conditions are supported: "
                         f"{_show(text)}")
    tree = statements[0]
    for key, value in tree.args.items():
        if value and key not in _SELECT_ARGS:
            name = _CLAUSE_NAMES.get(key, key.rstrip("_").upper())
            raise QueryError(f"{name} is not supported in count queries: {_show(text)}")
    group = tree.args.get("group")
    if group is not None and any(v for k, v in group.args.items() if k != "expressions"):
        raise QueryError(f"GROUP BY takes column names only: {_show(text)}")
    group_by = tuple(_column_name(e, text) for e in (group.expressions if group else ()))
    counts = [e for e in tree.expressions if isinstance(e, exp.Count)]
    others = [e for e in tree.expressions if not isinstance(e, exp.Count)]
    grouped_names = {name.lower() for name in group_by}
    if any(not isinstance(c.this, exp.Star) for c in counts):
        raise QueryError(f"only COUNT(*) is supported (not COUNT(DISTINCT ...) or "
                         f"COUNT(column)): {_show(text)}")
    if len(counts) != 1 or any(_column_name(e, text).lower() not in grouped_names
                               for e in others):
        raise QueryError(f"the select list must be COUNT(*) (and optionally GROUP BY columns): "
                         f"{_show(text)}")
    source_table = tree.args.get("from_") or tree.args.get("from")
    table = _table_name(source_table, text) if is_select and source_table else None
    where = tree.args.get("where")
    condition = _condition(where.this, text) if where else TrueCondition()
    return Query(where=condition, group_by=group_by, text=source, table=table)


def _table_name(source: exp.Expression, text: str) -> str:
    target = source.this
    if (any(v for k, v in source.args.items() if k != "this")
            or not isinstance(target, exp.Table) or not isinstance(target.this, exp.Identifier)
            or any(v for k, v in target.args.items() if k not in ("this", "alias"))):
        raise QueryError(f"FROM must name one table, as in FROM t: {_show(text)}")
    return target.name


def _describe(node: exp.Expression | None) -> str:
    """A parsed fragment as SQL text for an error message."""
    if node is None:
        return "nothing"
    try:
        sql = node.sql()
    except Exception:  # deep or odd fragments: name the construct instead
        sql = type(node).__name__
    return repr(_shorten(sql))


def _column_name(node: exp.Expression, text: str) -> str:
    name = _hyphen_name(_expr(node, text))
    if name is None:
        raise QueryError(f"expected a column name, got {_describe(node)} in {_show(text)}")
    return name


def _unwrap(node: exp.Expression | None) -> exp.Expression | None:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _chain(node: exp.Expression, kind: type[exp.Expression]
           ) -> tuple[exp.Expression | None, ...]:
    """The operands of a chain ``a OR b OR c`` (any grouping) in order, without recursion."""
    items: list[exp.Expression | None] = []
    stack = [node]
    while stack:
        current = _unwrap(stack.pop())
        if isinstance(current, kind):
            stack.append(current.expression)
            stack.append(current.this)
        else:
            items.append(current)
    return tuple(items)


def _condition(node: exp.Expression | None, text: str) -> Condition:
    def children(node: exp.Expression | None) -> Sequence[exp.Expression | None]:
        node = _unwrap(node)
        if isinstance(node, exp.And | exp.Or):
            return _chain(node, type(node))
        if isinstance(node, exp.Not):
            return (node.this,)
        return ()

    def combine(node: exp.Expression | None, items: list[Condition]) -> Condition:
        node = _unwrap(node)
        if isinstance(node, exp.And):
            return And(tuple(items))
        if isinstance(node, exp.Or):
            return Or(tuple(items))
        if isinstance(node, exp.Not):
            return Not(items[0])
        return _leaf_condition(node, text)

    return _fold(node, children, combine)


def _leaf_condition(node: exp.Expression | None, text: str) -> Condition:
    if type(node) in _COMPARISONS:
        assert node is not None
        return Compare(_COMPARISONS[type(node)], _expr(node.this, text),
                       _expr(node.expression, text))
    if isinstance(node, exp.In):
        if any(v for k, v in node.args.items() if k not in ("this", "expressions")):
            raise QueryError(f"IN supports a list of literals only: {_show(text)}")
        values = tuple(_expr(v, text) for v in node.expressions)
        literals = tuple(v for v in values if isinstance(v, Lit))
        if len(literals) != len(values):
            raise QueryError(f"IN supports a list of literals only: {_show(text)}")
        return In(_expr(node.this, text), literals)
    if isinstance(node, exp.Between):
        if node.args.get("symmetric"):
            raise QueryError(f"BETWEEN SYMMETRIC is not supported: {_show(text)}")
        return Between(_expr(node.this, text), _expr(node.args.get("low"), text),
                       _expr(node.args.get("high"), text))
    if isinstance(node, exp.Boolean):
        return TrueCondition() if node.this else Not(TrueCondition())
    if isinstance(node, exp.Column):
        # A bare column is a boolean column's truth: ``female`` means ``female = TRUE``.
        return Compare("=", _expr(node, text), Lit(True))
    if isinstance(node, exp.Is):
        target = node.expression
        if isinstance(target, exp.Boolean):
            return Compare("=", _expr(node.this, text), Lit(bool(target.this)))
        raise QueryError(f"{_describe(node)} is not supported: tables hold no missing values, "
                         f"and IS takes TRUE or FALSE only")
    raise QueryError(f"unsupported condition {_describe(node)} in {_show(text)}; use = != < <= "
                     f"> >= IN BETWEEN AND OR NOT")


def _expr(node: exp.Expression | None, text: str) -> Expr:
    def children(node: exp.Expression | None) -> Sequence[exp.Expression | None]:
        if isinstance(node, exp.Paren | exp.Neg):
            return (node.this,)
        if type(node) in _ARITHMETIC:
            assert node is not None
            return (node.this, node.expression)
        return ()

    def combine(node: exp.Expression | None, operands: list[Expr]) -> Expr:
        if isinstance(node, exp.Paren):
            return operands[0]
        if isinstance(node, exp.Neg):
            inner = operands[0]
            if isinstance(inner, Lit) and _is_number(inner.value):
                return Lit(-inner.value)
            return Arith("-", Lit(0), inner)
        if type(node) in _ARITHMETIC:
            return Arith(_ARITHMETIC[type(node)], operands[0], operands[1])
        if isinstance(node, exp.Column):
            # Read the qualifier from args: sqlglot's ``table`` property is slow on long trees.
            qualified = any(node.args.get(k) for k in ("table", "db", "catalog"))
            if qualified or not isinstance(node.this, exp.Identifier):
                raise QueryError(f"qualified column names are not supported: "
                                 f"{_describe(node)}; write the column name alone")
            return Col(node.name)
        if isinstance(node, exp.Literal) and isinstance(node.this, str):
            return Lit(node.this) if node.is_string else _number(node.this, text)
        if isinstance(node, exp.Boolean):
            return Lit(bool(node.this))
        if isinstance(node, exp.Cast) and _is_date_type(node.args.get("to")):
            return _date(node.this, text)
        raise QueryError(f"unsupported expression {_describe(node)} in {_show(text)}")

    return _fold(node, children, combine)


def _is_date_type(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.DataType) and node.this == exp.DataType.Type.DATE


def _date(node: exp.Expression | None, text: str) -> Lit:
    """``DATE '2024-01-31'``: a calendar date written in ISO form."""
    value = node.this if isinstance(node, exp.Literal) and node.is_string else None
    try:
        if value is None or not _ISO_DATE.fullmatch(value):
            raise ValueError
        return Lit(datetime.date.fromisoformat(value))
    except ValueError:
        raise QueryError(f"DATE takes a quoted date in ISO form, as in DATE '2024-01-31', not "
                         f"{_describe(node)}: {_show(text)}") from None


def _number(digits: str, text: str) -> Lit:
    return Lit(_number_value(digits, text))


def _number_value(digits: str, text: str) -> int | float:
    try:
        return exact_number(digits)
    except QueryError:
        raise
    except ValueError:
        raise QueryError(f"cannot read the number {_show(digits)} in {_show(text)}") from None
