"""Splitting a predicate on some columns (those a mechanism randomizes) into disjoint
pieces: a condition on the other columns and a set of values of those columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ppdp.errors import QueryError
from ppdp.query.predicates import AllOf, ColumnSet, Const, Predicate, simplify


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
