"""Generalization hierarchies in the ARX format, and their binding to a column's domain.

An ARX hierarchy file holds one line per leaf value, ``leaf;level1;level2;...;top``, fields
separated by ``;`` (for example ``Sales;Nontechnical;*`` or ``39;35-39;30-39;20-39;*``). Every
line has the same number of fields, a leaf appears on one line only, and the labels form a
tree: a label at level j always has the same parent label at level j + 1. A folder of such
files, named ``<prefix>hierarchy_<column>.csv``, gives the hierarchies of a table's columns.

Binding a hierarchy to a column (``Hierarchy.bind``) maps every domain value to its leaf and
orders the values depth-first, so that the values under any node have contiguous ranks: a
range of ranks is then generalized by the lowest common ancestor of its ends, which covers
everything between them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from ppdp.data.bundled import NAMES as BUNDLED_NAMES
from ppdp.data.bundled import bundled_name, folder
from ppdp.data.schema import Column
from ppdp.errors import SchemaError

ROOT_LABEL = "*"
"""Label of the root added when a hierarchy's top level has more than one node."""


@dataclass(frozen=True)
class Hierarchy:
    """A generalization tree over leaf labels: ``levels[j][r]`` is the label of leaf r at
    level j + 1 (ARX hierarchy format, one line per leaf)."""

    leaves: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    source: str = field(default="hierarchy", compare=False, repr=False)
    """Where the hierarchy was read from, for error messages."""

    def __post_init__(self) -> None:
        rows = [(r + 1, [leaf, *(level[r] for level in self.levels)])
                for r, leaf in enumerate(self.leaves)
                if all(len(level) == len(self.leaves) for level in self.levels)]
        if len(rows) != len(self.leaves):
            raise SchemaError(f"{self.source}: every level must give one label per leaf "
                              f"({len(self.leaves)} leaves)")
        if len(_check_rows(rows, self.source)) != len(rows):
            raise SchemaError(f"{self.source}: a leaf appears more than once")

    @property
    def height(self) -> int:
        """The number of levels above the leaves."""
        return len(self.levels)

    def bind(self, column: Column) -> BoundHierarchy:
        """Map the column's domain values to leaves (``str(value)`` for int and string
        columns, numeric equality for float columns, ``true``/``false`` in any case for
        booleans) and order them depth-first."""
        if column.kind == "float":
            leaf_of_value: dict[object, int] = {}
            for index, leaf in enumerate(self.leaves):
                try:
                    number = float(leaf)
                except ValueError:
                    continue  # a leaf that is not a number cannot match a float value
                if math.isnan(number):
                    continue
                if number in leaf_of_value:
                    first = self.leaves[leaf_of_value[number]]
                    raise SchemaError(f"{self.source}: leaves {first!r} and {leaf!r} denote the "
                                      f"same number")
                leaf_of_value[number] = index
            keys: list[object] = list(column.domain)
        elif column.kind == "bool":
            # A CSV column of true/false is read as booleans; its hierarchy spells them as text.
            leaf_of_value = {leaf.lower(): index for index, leaf in enumerate(self.leaves)
                             if leaf.lower() in ("true", "false")}
            keys = [str(value).lower() for value in column.domain]
        else:
            leaf_of_value = {leaf: index for index, leaf in enumerate(self.leaves)}
            keys = [str(value) for value in column.domain]
        missing = [value for value, key in zip(column.domain, keys, strict=True)
                   if key not in leaf_of_value]
        if missing:
            raise SchemaError(f"hierarchy for {column.name!r} misses {len(missing)} values of "
                              f"the column: {missing[:5]}")
        leaf_of_code = np.asarray([leaf_of_value[key] for key in keys], dtype=np.int64)
        return BoundHierarchy.build(self, column, leaf_of_code)


@dataclass(frozen=True, eq=False)
class BoundHierarchy:
    """A hierarchy bound to a column: per code its leaf, depth-first rank and ancestors.

    ``nodes[j][code]`` is the node id of the code's ancestor at level j + 1 and
    ``labels[j][id]`` that node's label; node ids at a level follow the smallest code under
    each node, so a hierarchy over numbers keeps their order. A root labelled ``*`` is added
    when the top level has several nodes, so any two values have a common ancestor.
    ``rank`` orders the codes by their path from the top down (ties by code): the values under
    every node have contiguous ranks.
    """

    hierarchy: Hierarchy
    column: Column
    leaf: np.ndarray
    rank: np.ndarray
    nodes: tuple[np.ndarray, ...]
    labels: tuple[tuple[str, ...], ...]

    @classmethod
    def build(cls, hierarchy: Hierarchy, column: Column, leaf: np.ndarray) -> BoundHierarchy:
        """Node ids, labels and depth-first ranks for the codes mapped to ``leaf``."""
        nodes, labels = [], []
        for level in hierarchy.levels:
            # First appearance in code order: ids ordered by the smallest code under a node.
            names = [level[r] for r in leaf.tolist()]
            ids: dict[str, int] = {}
            node = np.asarray([ids.setdefault(name, len(ids)) for name in names],
                              dtype=np.int64)
            nodes.append(node)
            labels.append(tuple(ids))
        if not nodes or len(labels[-1]) > 1:
            nodes.append(np.zeros(column.size, dtype=np.int64))
            labels.append((ROOT_LABEL,))
        codes = np.arange(column.size)
        # np.lexsort sorts by the last key first: the top level, then down to the code.
        order = np.lexsort((codes, *nodes))
        rank = np.empty(column.size, dtype=np.int64)
        rank[order] = codes
        return cls(hierarchy, column, leaf, rank, tuple(nodes), tuple(labels))

    @property
    def height(self) -> int:
        """The number of levels above the leaves (including an added root)."""
        return len(self.nodes)

    def cover(self, level: int, node: int) -> np.ndarray:
        """Codes under a node (level 0: the leaf ``node`` is a code itself)."""
        if level == 0:
            return np.asarray([node], dtype=np.int64)
        return np.flatnonzero(self.nodes[level - 1] == node)


def read_hierarchy(path: str | os.PathLike[str]) -> Hierarchy:
    """Read one ARX hierarchy file (``leaf;level1;...;top`` per line, UTF-8)."""
    path = Path(path)
    return _read_hierarchy(path, str(path))


def read_hierarchies(source: str | os.PathLike[str]) -> dict[str, Hierarchy]:
    """Read every ``*hierarchy_<column>.csv`` of a folder, keyed by column name; or, given the
    name of a bundled dataset (``"adult"``) where no such folder exists, the hierarchies
    bundled with it (`bundled_hierarchies`)."""
    directory = Path(source)
    if directory.is_dir():
        return hierarchies_of_files(sorted(directory.glob("*hierarchy_*.csv")), str(directory))
    if str(source).strip().lower() in BUNDLED_NAMES:
        return bundled_hierarchies(str(source))
    raise SchemaError(f"hierarchy folder {directory} does not exist or is not a folder; "
                      f"bundled hierarchies: {', '.join(BUNDLED_NAMES)}")


def bundled_hierarchies(name: str) -> dict[str, Hierarchy]:
    """The ARX generalization hierarchies bundled for a dataset (one of
    `ppdp.data.BUNDLED_NAMES`), keyed by column: for ``adult``, the ARX project's nine
    (Apache-2.0; attribution in ADULT.md)."""
    key = bundled_name(name)
    files = [entry for entry in folder().iterdir()
             if entry.name.startswith(f"{key}_hierarchy_") and entry.name.endswith(".csv")]
    return hierarchies_of_files(sorted(files, key=lambda entry: entry.name),
                                f"the bundled {key} hierarchies")


def hierarchies_of_files(files: Iterable[Traversable], folder: str) -> dict[str, Hierarchy]:
    """The hierarchies of ``<prefix>hierarchy_<column>.csv`` files (paths or package
    resources), keyed by column name; ``folder`` says where they are in errors."""
    hierarchies: dict[str, Hierarchy] = {}
    for file in files:
        name = file.name.removesuffix(".csv").split("hierarchy_", 1)[1]
        if not name:
            continue
        if name in hierarchies:
            raise SchemaError(f"{folder} holds two hierarchies for column {name!r}")
        hierarchies[name] = _read_hierarchy(file, f"{folder}/{file.name}")
    if not hierarchies:
        raise SchemaError(f"no hierarchy files in {folder}: expected files named "
                          f"<prefix>hierarchy_<column>.csv")
    return hierarchies


def _read_hierarchy(file: Traversable, source: str) -> Hierarchy:
    """One hierarchy file (a path or a package resource); ``source`` names it in errors."""
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"cannot read hierarchy {source}: {exc}") from exc
    rows: list[tuple[int, Sequence[str]]] = [
        (number, line.split(";"))
        for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not rows:
        raise SchemaError(f"hierarchy {source} is empty")
    rows = _check_rows(rows, source)
    height = len(rows[0][1]) - 1
    leaves = tuple(fields[0] for _, fields in rows)
    levels = tuple(tuple(fields[j + 1] for _, fields in rows) for j in range(height))
    return Hierarchy(leaves, levels, source=source)


def _check_rows(rows: Sequence[tuple[int, Sequence[str]]],
                source: str) -> list[tuple[int, Sequence[str]]]:
    """Check equal field counts, no empty field, each leaf on one line, each label with one
    parent; return the rows without lines that repeat an earlier line exactly."""
    if not rows:
        raise SchemaError(f"{source}: a hierarchy needs at least one leaf")
    first_line, first = rows[0]
    width = len(first)
    leaf_line: dict[str, tuple[int, Sequence[str]]] = {}
    kept: list[tuple[int, Sequence[str]]] = []
    parent: list[dict[str, tuple[str, int]]] = [{} for _ in range(width - 1)]
    for line, fields in rows:
        if len(fields) != width:
            raise SchemaError(f"{source}, line {line}: {len(fields)} fields, but line "
                              f"{first_line} has {width}; every line must have the same "
                              f"number of levels")
        if any(not value for value in fields):
            raise SchemaError(f"{source}, line {line}: empty field")
        leaf = fields[0]
        if leaf in leaf_line:
            previous_line, previous = leaf_line[leaf]
            if list(previous) == list(fields):
                continue  # an exact repeat says nothing new; published files sometimes have one
            raise SchemaError(f"{source}, line {line}: leaf {leaf!r} repeats line "
                              f"{previous_line} with other labels")
        leaf_line[leaf] = (line, fields)
        kept.append((line, fields))
        # Level 0 is the leaf itself, which appears once: its parent is unique already.
        for j in range(1, width - 1):
            label, above = fields[j], fields[j + 1]
            seen = parent[j].setdefault(label, (above, line))
            if seen[0] != above:
                raise SchemaError(f"{source}, line {line}: label {label!r} at level {j} has "
                                  f"parent {above!r}, but {seen[0]!r} on line {seen[1]}; a "
                                  f"hierarchy must be a tree")
    return kept
