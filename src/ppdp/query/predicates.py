"""Conditions bound to a schema's codes: per-column lookup tables (``ColumnSet``), so
that evaluating one on rows is one gather (``lut[codes]``) and a conjunction of them is a *box*
answered from a contingency table; conditions on several columns stay row-level
(``RowCondition``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ppdp.query.syntax import _fold


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

    # A constant reads no column (mypy's [override]: a property for the declared attribute).
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
    columns: frozenset[str] = field(init=False, repr=False)

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
    columns: frozenset[str]
    text: str

    def evaluate(self, codes: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        return self.function(codes)


@dataclass(frozen=True, eq=False)
class _Combination(Predicate):
    """A conjunction or disjunction of predicates."""

    items: tuple[Predicate, ...]
    combine: ClassVar[np.ufunc]  # np.logical_and or np.logical_or, applied to two masks

    # Mypy's [override]: a cached property for the declared attribute.
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
    columns: frozenset[str] = field(init=False, repr=False)

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
