"""Count queries: SQL parsing, binding to a schema, and exact counting over encoded rows.

A query is parsed once into a small syntax tree (``Query``), then *bound* to a schema. Binding
turns every condition on a single column into a boolean lookup table over that column's domain
(``ColumnSet``), so that evaluating it on rows is one gather (``lut[codes]``) and a conjunction
of such conditions is a *box* that can be answered from a contingency table (``Cube``) without
touching the rows again. Conditions on several columns (``age < 2 * hours``) stay row-level.
"""

from __future__ import annotations

import difflib
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import sqlglot
import sqlglot.errors
from sqlglot import expressions as exp

from ppdp.errors import QueryError
from ppdp.table import Schema, unknown_column_message

# ---------------------------------------------------------------------------------------------
# Syntax: what the user wrote, independent of any table.


@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Lit:
    value: int | float | str


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
    """A count query: ``SELECT COUNT(*) WHERE where GROUP BY group_by``."""

    where: Condition
    group_by: tuple[str, ...] = ()
    text: str = ""

    def __str__(self) -> str:
        return self.text


_COMPARISONS: dict[type, str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
}
_ARITHMETIC: dict[type, str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}


def parse_query(text: str | Query) -> Query:
    """Parse a bare condition (``age >= 40 AND sex = 'Female'``) or a full
    ``SELECT COUNT(*) FROM t [WHERE ...] [GROUP BY ...]``."""
    if isinstance(text, Query):
        return text
    source = text.strip().rstrip(";").strip() if isinstance(text, str) else ""
    if not source:
        raise QueryError("a query must be a non-empty string")
    is_select = source.split(None, 1)[0].upper() == "SELECT"
    sql = source if is_select else f"SELECT COUNT(*) FROM t WHERE {source}"
    try:
        tree = sqlglot.parse_one(sql)
    except sqlglot.errors.ParseError as exc:
        raise QueryError(f"cannot parse query {text!r}: {_first_line(exc)}") from exc
    if not isinstance(tree, exp.Select):
        raise QueryError(f"only SELECT COUNT(*) queries and bare conditions are supported: "
                         f"{text!r}")
    for key in ("joins", "having", "order", "limit", "offset", "distinct", "qualify", "with"):
        if tree.args.get(key):
            raise QueryError(f"{key.upper()} is not supported in count queries: {text!r}")
    group_by = tuple(_column_name(e, text) for e in (tree.args["group"].expressions
                                                       if tree.args.get("group") else ()))
    counts = [e for e in tree.expressions if isinstance(e, exp.Count)]
    others = [e for e in tree.expressions if not isinstance(e, exp.Count)]
    grouped_names = {name.lower() for name in group_by}
    if any(not isinstance(c.this, exp.Star) for c in counts):
        raise QueryError(f"only COUNT(*) is supported (not COUNT(DISTINCT ...) or "
                         f"COUNT(column)): {text!r}")
    if len(counts) != 1 or any(_column_name(e, text).lower() not in grouped_names
                               for e in others):
        raise QueryError(f"the select list must be COUNT(*) (and optionally GROUP BY columns): "
                         f"{text!r}")
    where = tree.args.get("where")
    condition = _condition(where.this, text) if where else TrueCondition()
    return Query(where=condition, group_by=group_by, text=source)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]


def _column_name(node: exp.Expression, text: str) -> str:
    name = _hyphen_name(_expr(node, text))
    if name is None:
        raise QueryError(f"expected a column name, got {node.sql()!r} in {text!r}")
    return name


def _condition(node: exp.Expression, text: str) -> Condition:
    if isinstance(node, exp.Paren):
        return _condition(node.this, text)
    if isinstance(node, exp.And):
        return And((_condition(node.this, text), _condition(node.expression, text)))
    if isinstance(node, exp.Or):
        return Or((_condition(node.this, text), _condition(node.expression, text)))
    if isinstance(node, exp.Not):
        return Not(_condition(node.this, text))
    if type(node) in _COMPARISONS:
        return Compare(_COMPARISONS[type(node)], _expr(node.this, text),
                       _expr(node.expression, text))
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest"):
            raise QueryError(f"IN supports a list of literals only: {text!r}")
        values = tuple(_expr(v, text) for v in node.expressions)
        if not all(isinstance(v, Lit) for v in values):
            raise QueryError(f"IN supports a list of literals only: {text!r}")
        return In(_expr(node.this, text), values)  # type: ignore[arg-type]
    if isinstance(node, exp.Between):
        return Between(_expr(node.this, text), _expr(node.args["low"], text),
                       _expr(node.args["high"], text))
    if isinstance(node, exp.Boolean):
        return TrueCondition() if node.this else Not(TrueCondition())
    raise QueryError(f"unsupported condition {node.sql()!r} in {text!r}; use = != < <= > >= "
                     f"IN BETWEEN AND OR NOT")


def _expr(node: exp.Expression, text: str) -> Expr:
    if isinstance(node, exp.Paren):
        return _expr(node.this, text)
    if isinstance(node, exp.Column):
        if node.table:
            raise QueryError(f"qualified column names are not supported: {node.sql()!r}")
        return Col(node.name)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Lit(node.this)
        number = float(node.this)
        return Lit(int(number) if number.is_integer() and "." not in node.this
                   and "e" not in node.this.lower() else number)
    if isinstance(node, exp.Neg):
        inner = _expr(node.this, text)
        if isinstance(inner, Lit) and not isinstance(inner.value, str):
            return Lit(-inner.value)
        return Arith("-", Lit(0), inner)
    if type(node) in _ARITHMETIC:
        return Arith(_ARITHMETIC[type(node)], _expr(node.this, text),
                     _expr(node.expression, text))
    raise QueryError(f"unsupported expression {node.sql()!r} in {text!r}")


# ---------------------------------------------------------------------------------------------
# Bound predicates: conditions resolved against a schema's domains.


class Predicate:
    """A condition bound to a schema. Subclasses: Const, ColumnSet, RowCondition, AllOf,
    AnyOf, Negation."""

    columns: frozenset[str]

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        raise NotImplementedError

    def atoms(self) -> list[Predicate]:
        return [self]

    def substitute(self, values: Mapping[int, bool]) -> Predicate:
        """Replace atoms (keyed by ``id``) with constants, then simplify."""
        return Const(values[id(self)]) if id(self) in values else self

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

    @property
    def columns(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset((self.column,))

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

    @cached_property
    def columns(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset().union(*(i.columns for i in self.items))

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        result = self.items[0].evaluate(codes, n_rows)
        for item in self.items[1:]:
            result = type(self).combine(result, item.evaluate(codes, n_rows))
        return result

    def atoms(self) -> list[Predicate]:
        return [a for i in self.items for a in i.atoms()]

    def substitute(self, values: Mapping[int, bool]) -> Predicate:
        return simplify(type(self)(tuple(i.substitute(values) for i in self.items)))


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

    @property
    def columns(self) -> frozenset[str]:  # type: ignore[override]
        return self.item.columns

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return ~self.item.evaluate(codes, n_rows)

    def atoms(self) -> list[Predicate]:
        return self.item.atoms()

    def substitute(self, values: Mapping[int, bool]) -> Predicate:
        return simplify(Negation(self.item.substitute(values)))


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
    by_column: dict[str, np.ndarray] = {}
    rest: list[Predicate] = []
    for item in flat:
        if isinstance(item, Const):
            if item.value == absorbing:
                return Const(absorbing)
            continue
        if isinstance(item, ColumnSet):
            previous = by_column.get(item.column)
            by_column[item.column] = item.lut if previous is None else merge(previous, item.lut)
        else:
            rest.append(item)
    items: list[Predicate] = []
    for column, lut in by_column.items():
        merged = _column_set(column, lut)
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


def bind(query: str | Query, schema: Schema) -> BoundQuery:
    """Resolve column names and literals of a query against a schema's domains."""
    query = parse_query(query)
    group_by = tuple(_resolve_name(name, schema) for name in query.group_by)
    if len(set(group_by)) != len(group_by):
        raise QueryError(f"GROUP BY repeats a column: {query.text!r}")
    return BoundQuery(_bind(query.where, schema), group_by, query)


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
    # Simplified at every level, so that IN lists and negations on one column become a
    # single lookup table and conjunctions of them stay boxes.
    return simplify(_bind_node(condition, schema))


def _bind_node(condition: Condition, schema: Schema) -> Predicate:
    if isinstance(condition, TrueCondition):
        return Const(True)
    if isinstance(condition, And):
        return AllOf(tuple(_bind(c, schema) for c in condition.items))
    if isinstance(condition, Or):
        return AnyOf(tuple(_bind(c, schema) for c in condition.items))
    if isinstance(condition, Not):
        return Negation(_bind(condition.item, schema))
    if isinstance(condition, Compare):
        return _bind_comparison(condition.op, condition.left, condition.right, schema)
    if isinstance(condition, Between):
        return AllOf((_bind_comparison(">=", condition.expr, condition.low, schema),
                      _bind_comparison("<=", condition.expr, condition.high, schema)))
    if isinstance(condition, In):
        if not condition.values:
            return Const(False)
        return AnyOf(tuple(_bind_comparison("=", condition.expr, v, schema)
                           for v in condition.values))
    raise QueryError(f"unsupported condition {condition!r}")


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "+": operator.add, "-": operator.sub,
    "*": operator.mul, "/": operator.truediv,
}
_MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _normalise_expr(expr: Expr, schema: Schema) -> Expr:
    """Resolve column names, recovering hyphenated names that SQL parsed as subtraction."""
    if isinstance(expr, Col):
        return Col(_resolve_name(expr.name, schema))
    if isinstance(expr, Arith):
        if expr.op == "-":
            name = _hyphen_name(expr)
            known = {n.lower(): n for n in schema.names}
            if name is not None and name.lower() in known:
                return Col(known[name.lower()])
        return Arith(expr.op, _normalise_expr(expr.left, schema),
                     _normalise_expr(expr.right, schema))
    return expr


def _hyphen_name(expr: Expr) -> str | None:
    """``marital-status`` parses as a subtraction of two columns; recover the name."""
    if isinstance(expr, Col):
        return expr.name
    if isinstance(expr, Arith) and expr.op == "-":
        left, right = _hyphen_name(expr.left), _hyphen_name(expr.right)
        if left is not None and right is not None:
            return f"{left}-{right}"
    return None


def _expr_columns(expr: Expr) -> set[str]:
    if isinstance(expr, Col):
        return {expr.name}
    if isinstance(expr, Arith):
        return _expr_columns(expr.left) | _expr_columns(expr.right)
    return set()


def _bind_comparison(op: str, left: Expr, right: Expr, schema: Schema) -> Predicate:
    left, right = _normalise_expr(left, schema), _normalise_expr(right, schema)
    columns = _expr_columns(left) | _expr_columns(right)
    if not columns:
        value = _OPERATORS[op](_constant(left), _constant(right))
        return Const(bool(value))
    if isinstance(right, Col) and isinstance(left, Lit):
        left, right, op = right, left, _MIRROR[op]
    if isinstance(left, Col) and isinstance(right, Lit):
        column = schema[left.name]
        literal = _coerce_literal(right.value, column.kind, column.name)
        if op == "=" and literal not in column.domain:
            raise QueryError(_unknown_value_message(literal, column.name, column.domain))
        with np.errstate(invalid="ignore"):
            lut = np.asarray(_OPERATORS[op](column.values, literal), dtype=bool)
        return ColumnSet(column.name, lut)
    for name in columns:
        if schema[name].kind == "string":
            raise QueryError(f"column {name!r} holds text; arithmetic and comparisons between "
                             f"columns need numeric columns")
    if len(columns) == 1:
        (name,) = columns
        values = {name: schema[name].values.astype(np.float64)}
        with np.errstate(all="ignore"):
            lut = np.asarray(_OPERATORS[op](_numeric(left, values), _numeric(right, values)),
                             dtype=bool)
        return ColumnSet(name, np.broadcast_to(lut, (schema[name].size,)).copy())
    decode = {name: schema[name].values.astype(np.float64) for name in columns}

    def function(codes: Mapping[str, np.ndarray]) -> np.ndarray:
        values = {name: decode[name][codes[name]] for name in columns}
        with np.errstate(all="ignore"):
            return np.asarray(_OPERATORS[op](_numeric(left, values), _numeric(right, values)),
                              dtype=bool)

    return RowCondition(function, frozenset(columns), f"{left} {op} {right}")


def _constant(expr: Expr) -> Any:
    if isinstance(expr, Lit):
        return expr.value
    assert isinstance(expr, Arith)
    return _OPERATORS[expr.op](_constant(expr.left), _constant(expr.right))


def _numeric(expr: Expr, values: Mapping[str, np.ndarray]) -> Any:
    if isinstance(expr, Col):
        return values[expr.name]
    if isinstance(expr, Lit):
        if isinstance(expr.value, str):
            raise QueryError(f"text literal {expr.value!r} used in arithmetic")
        return expr.value
    return _OPERATORS[expr.op](_numeric(expr.left, values), _numeric(expr.right, values))


def _coerce_literal(value: Any, kind: str, column: str) -> Any:
    """Match a literal to the column's value type (``iinjury = '3'`` works on integer codes)."""
    if kind == "string":
        return str(value) if not isinstance(value, float) or not value.is_integer() \
            else str(int(value))
    try:
        number = float(value)
    except ValueError:
        raise QueryError(f"column {column!r} holds numbers; {value!r} is not a number") from None
    if kind == "int" and number.is_integer():
        return int(number)
    return number


def _unknown_value_message(value: Any, column: str, domain: Sequence[Any]) -> str:
    as_text = [str(v) for v in domain]
    if isinstance(value, str):
        close = difflib.get_close_matches(value, as_text, n=3, cutoff=0.4)
    else:
        numbers = np.asarray(domain, dtype=float)
        close = [as_text[i] for i in np.argsort(np.abs(numbers - float(value)),
                                                kind="stable")[:3]]
    shown = close or as_text[:5]
    return (f"value {value!r} is not in the domain of column {column!r}; closest: "
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
    anything else is evaluated on the rows.
    """
    dims = tuple(dims)
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
    mask = predicate.evaluate(cube.codes, cube.n_rows)
    return cube.histogram(dims, mask)
