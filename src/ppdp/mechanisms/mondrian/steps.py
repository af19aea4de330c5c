"""Mondrian's steps for a source larger than memory, run by the streaming and Spark engines.

While a partition holds more than `LOCAL_ROWS` rows, its cut is decided from its histograms,
gathered for all open partitions of a level by the engine (`LevelCounts`); every smaller
partition is then partitioned in memory (`leaf_keys`). Both stages decide a cut with the same
function (`ppdp.mechanisms.mondrian.partition`), and a partition's cuts depend on its rows
alone, so the classes are those of the in-memory recursion."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from ppdp.mechanisms.mondrian.covers import ROWS, Covers, Generalized
from ppdp.mechanisms.mondrian.mechanism import MondrianSetup
from ppdp.mechanisms.mondrian.partition import (
    MedianCounts,
    _choose_cuts,
    _histogram_median,
    _partition,
    _side_statistics,
    rank_matrix,
)
from ppdp.mechanisms.mondrian.release import MondrianRelease, _cover_tables, _rows_table
from ppdp.plan.order import part_count, rank_order
from ppdp.release.format import part_names
from ppdp.release.write import write_metadata, write_parquet

LOCAL_ROWS = 10_000_000
"""A partition of at most this many rows is partitioned in memory (`_partition`, about 1 GB of
working memory per 10^7 rows); larger ones are cut from histograms gathered over the source."""


JOINT_CELLS = 1 << 24
"""For l >= 2, the histogram pass of a level also counts ranks by sensitive value while that
takes at most this many cells (partitions x ranks of every attribute x values), so one pass
decides the level; beyond, a second pass counts the values around the medians
(`_values_around`)."""


DRAW, ROW, SENSITIVE = "draw", "row", "s"


def spill_column(position: int) -> str:
    """Spill file column of the quasi-identifier at ``position`` (names of the input's columns
    could clash with the spill's own)."""
    return f"q{position}"


@dataclass
class CutTree:
    """The partitions cut by aggregation, as a tree: partition j's rows go to its right child
    when their rank on ``dim[j]`` exceeds ``threshold[j]``; a partition not cut is its own
    child. ``leaves`` are the partitions finished in memory (with their rows), ``classes``
    those of more than `LOCAL_ROWS` rows that no cut divides, with their keys (`Covers`)."""

    dim: list[int] = field(default_factory=lambda: [0])
    threshold: list[int] = field(default_factory=lambda: [0])
    child: list[list[int]] = field(default_factory=lambda: [[0, 0]])
    depth: int = 0
    leaves: list[int] = field(default_factory=list)
    leaf_rows: list[int] = field(default_factory=list)
    classes: dict[int, np.ndarray] = field(default_factory=dict)

    def cut(self, node: int, dim: int, threshold: int) -> tuple[int, int]:
        """Cut a partition; its two new children (left, right)."""
        children = (len(self.dim), len(self.dim) + 1)
        for child in children:
            self.dim.append(0)
            self.threshold.append(0)
            self.child.append([child, child])
        self.dim[node], self.threshold[node] = dim, threshold
        self.child[node] = list(children)
        return children

    def descend(self, ranks: np.ndarray) -> np.ndarray:
        """The partition (a leaf of the tree) of each row, from its ranks (rows x attributes)."""
        dim, threshold = np.asarray(self.dim), np.asarray(self.threshold)
        child = np.asarray(self.child, dtype=np.int32).reshape(-1)
        node = np.zeros(len(ranks), dtype=np.int32)
        # Gathering from the flat ranks by row * attributes + dimension is faster than 2-d
        # indexing; it runs once per level of the tree for every row of every pass.
        flat = ranks.reshape(-1)
        first = np.arange(0, ranks.size, ranks.shape[1], dtype=np.int64)
        for _ in range(self.depth):
            right = flat[first + dim[node]] > threshold[node]
            node = child[2 * node + right]
        return node


def write_release(staging: Path, setup: MondrianSetup, k: int, l: int,  # noqa: E741
                  diversity: str, n_rows: int, generalized: Mapping[str, Generalized],
                  digests: dict[str, str]) -> None:
    """Beside the parts of the rows (already written, their digests in ``digests``), the
    generalized values' tables, then ``release.json``."""
    names = part_names(ROWS, part_count(n_rows))
    files: dict[str, str | list[str]] = {ROWS: names[0] if len(names) == 1 else names}
    for stem, table in _cover_tables(setup.published, generalized).items():
        name = files[stem] = f"{stem}.parquet"
        digests[name] = write_parquet(staging / name, table)
    write_metadata(staging, MondrianRelease.mechanism, setup.parameters(k, l, diversity),
                   n_rows, setup.published, files, digests)


def leaf_keys(setup: MondrianSetup, k: int, l: int, diversity: str,  # noqa: E741
              covers: Mapping[str, Covers], leaf: pa.Table) -> dict[str, np.ndarray]:
    """Partition a leaf's rows (codes in columns `spill_column` and `SENSITIVE`) in memory: each
    row's class keys (`Covers`), by spill column."""
    quasi = setup.quasi
    codes = {name: leaf.column(spill_column(d)).to_numpy() for d, name in enumerate(quasi)}
    partition = _partition(setup.ranks(codes), leaf.column(SENSITIVE).to_numpy(), k=k, l=l,
                           n_ranks=setup.n_ranks, diversity=diversity)
    return {spill_column(d): covers[name].of_partition(partition, d, codes[name])[
        partition.classes] for d, name in enumerate(quasi)}


class LevelCounts(Protocol):
    """Where `cut_top` gets the counts of a level's open partitions (``lookup``: each tree
    node's position among them, -1 for others): passes over a source (`_SourceCounts`) or
    aggregations where the rows are."""

    def ranks(self, top: CutTree, lookup: np.ndarray, count: int, n_values: int, stage: str
              ) -> list[np.ndarray]:
        """As `_rank_histograms`."""
        ...

    def around(self, top: CutTree, lookup: np.ndarray, median: np.ndarray, diversity: str,
               stage: str) -> np.ndarray:
        """As `_values_around`."""
        ...


def cut_top(setup: MondrianSetup, k: int, l: int, diversity: str,  # noqa: E741
            n_rows: int, covers: Mapping[str, Covers], counts: LevelCounts,
            local_rows: int) -> CutTree:
    """Cut every partition of more than ``local_rows`` rows as `_levels` would, deciding each
    level's cuts (`_choose_cuts`) from histograms of its open partitions (``counts``: one
    pass over the rows, for l >= 2 two when the counts by sensitive value would not fit in
    `JOINT_CELLS`)."""
    top = CutTree()
    if n_rows <= local_rows:
        top.leaves.append(0)
        top.leaf_rows.append(n_rows)
        return top
    open_nodes = [0]
    while open_nodes:
        level = top.depth + 1
        lookup = np.full(len(top.dim), -1, dtype=np.intp)
        lookup[open_nodes] = np.arange(len(open_nodes))
        count = len(open_nodes)
        n_values = setup.schema[setup.sensitive].size
        joint = l >= 2 and count * sum(setup.n_ranks) * n_values <= JOINT_CELLS
        by_rank = counts.ranks(top, lookup, count, n_values if joint else 1,
                               f"cutting level {level}")
        histograms = [c.sum(axis=2) for c in by_rank]
        sizes = histograms[0].sum(axis=1)
        low = np.stack([np.argmax(h > 0, axis=1) for h in histograms], axis=1)
        high = np.stack([h.shape[1] - 1 - np.argmax(h[:, ::-1] > 0, axis=1)
                         for h in histograms], axis=1)
        median, below, at = (np.stack(counts, axis=1) for counts in zip(
            *(_histogram_median(h, sizes) for h in histograms), strict=True))
        around = None
        if joint:
            around = _values_around_in(by_rank, median)
        elif l >= 2:
            around = counts.around(top, lookup, median, diversity,
                                   f"l-diversity at level {level}")
        del by_rank
        cut_dim, threshold = _choose_cuts(low, high, setup.n_ranks, sizes, k, l, diversity,
                                          _counted_medians(median, below, at, around, diversity))
        final = np.flatnonzero(cut_dim < 0)
        if len(final):
            # For a set, the values a class holds are those its histogram counts (ranks are
            # codes when there is no hierarchy).
            keys = np.stack([covers[name].add(
                low[final, d], high[final, d],
                np.flatnonzero(histograms[d][final] > 0) if covers[name].by_values else None)
                for d, name in enumerate(setup.quasi)], axis=1)
            for j, class_keys in zip(final.tolist(), keys, strict=True):
                top.classes[open_nodes[j]] = class_keys
        next_open = []
        for j in np.flatnonzero(cut_dim >= 0).tolist():
            dim, cut = int(cut_dim[j]), int(threshold[j])
            left_rows = int(histograms[dim][j, :cut + 1].sum())
            for child, rows in zip(top.cut(open_nodes[j], dim, cut),
                                   (left_rows, int(sizes[j]) - left_rows), strict=True):
                if rows > local_rows:
                    next_open.append(child)
                else:
                    top.leaves.append(child)
                    top.leaf_rows.append(rows)
        top.depth = level
        open_nodes = next_open
    return top


def _counted_medians(median: np.ndarray, below: np.ndarray, at: np.ndarray,
                     around: np.ndarray | None, diversity: str
                     ) -> Callable[[np.ndarray, np.ndarray], MedianCounts]:
    """``at_median`` of `_choose_cuts` from every open partition's median and counts below and
    at it on every attribute (partitions x attributes) and, for l >= 2, the counts of the
    sensitive values around each median (`_values_around`)."""

    def at_median(tried: np.ndarray, dim: np.ndarray) -> MedianCounts:
        sides = None if around is None else _side_statistics(
            around[tried, dim, 0], around[tried, dim, 1], around[tried, dim, 2], diversity)
        return median[tried, dim], below[tried, dim], at[tried, dim], sides

    return at_median


def open_batch(setup: MondrianSetup, top: CutTree, lookup: np.ndarray,
               codes: Mapping[str, np.ndarray], *, sensitive: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows of a batch (codes by column) in open partitions, as `_open_rows` gives them."""
    ranks = rank_matrix(setup.ranks(codes), max(setup.n_ranks))
    local = lookup[top.descend(ranks)]
    values = codes[setup.sensitive] if sensitive else None
    if not (local >= 0).all():
        inside = np.flatnonzero(local >= 0)
        local, ranks = local[inside], ranks[inside]
        values = values[inside] if values is not None else None
    return local, ranks, values


def _values_around_in(counts: Sequence[np.ndarray], median: np.ndarray) -> np.ndarray:
    """`_values_around` from counts by rank and sensitive value (`_rank_histograms`)."""
    count, dims = median.shape
    positions = np.arange(count)
    around = np.empty((count, dims, 3, counts[0].shape[2]), dtype=np.int64)
    for d, joint in enumerate(counts):
        at = joint[positions, median[:, d]]
        through = np.cumsum(joint, axis=1)[positions, median[:, d]]
        around[:, d, 0] = through - at
        around[:, d, 1] = at
        around[:, d, 2] = joint.sum(axis=1) - through
    return around


def part_table(setup: MondrianSetup, covers: Mapping[str, Covers],
               generalized: Mapping[str, Generalized], spilled: pa.Table | None) -> pa.Table:
    """One part of the published rows from its spill file, in release order."""
    quasi = setup.quasi
    if spilled is None:
        rows = {name: np.zeros(0, dtype=np.int32) for name in quasi}
        return _rows_table(setup.published, generalized, rows, np.zeros(0, dtype=np.int32))
    order = rank_order(spilled.column(DRAW).to_numpy(), spilled.column(ROW).to_numpy())
    rows = {name: covers[name].nodes(spilled.column(spill_column(d)).to_numpy()[order])
            for d, name in enumerate(quasi)}
    return _rows_table(setup.published, generalized, rows,
                       spilled.column(SENSITIVE).to_numpy()[order])
