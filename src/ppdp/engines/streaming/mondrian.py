"""Mondrian on the streaming engine: a source larger than memory cut in two stages.

While a partition holds more than `ppdp.mechanisms.mondrian.steps.LOCAL_ROWS` rows, its cut is
decided from its histograms (counts by rank per quasi-identifier; for l >= 2, the counts of each
sensitive value below, at and above each median), gathered for all open partitions of a level
in one pass over the source, each row finding its partition by descending the cuts made so far.
One more pass spills the rows of every smaller partition to a file of its own, and each is
partitioned in memory by Mondrian's own code. The classes are those of the in-memory recursion,
and the files those ``Mondrian.publish(table).save`` writes with the same key."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ppdp.io.storage import staged_directory
from ppdp.mechanisms.base import Progress
from ppdp.mechanisms.mondrian import steps
from ppdp.mechanisms.mondrian.covers import ROWS, Covers
from ppdp.mechanisms.mondrian.mechanism import STREAM, Mondrian, MondrianSetup
from ppdp.mechanisms.mondrian.partition import rank_matrix
from ppdp.mechanisms.mondrian.steps import (
    DRAW,
    ROW,
    SENSITIVE,
    CutTree,
    cut_top,
    leaf_keys,
    open_batch,
    part_table,
    spill_column,
    write_release,
)
from ppdp.plan.keyed import KeyedStream, make_key
from ppdp.plan.order import part_count, part_of
from ppdp.randomness import RandomState
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import commit_release, write_parquet
from ppdp.table.source import DEFAULT_BATCH_ROWS, Source


def publish_mondrian(mondrian: Mondrian, source: Source, directory: str | os.PathLike[str], *,
                     random_state: RandomState = None, batch_rows: int | None = None,
                     overwrite: bool = False, progress: Progress | None = None,
                     before_commit: Callable[[], object] | None = None) -> Path:
    """Publish a source that need not fit in memory into a release directory: the same files
    as ``mondrian.publish(table).save(directory)`` with the same ``random_state``.

    Partitions of more than `LOCAL_ROWS` rows are cut from histograms, one pass over the source
    per level (two for l >= 2 when the counts by sensitive value are too many, see
    `JOINT_CELLS`); then one pass spills the rows of each smaller partition to a file of its
    own, and each is partitioned in memory (`_publish_hybrid`). ``progress(stage, done,
    total)`` is told how far each pass has got."""
    target = Path(directory)
    check_target(target, overwrite)
    return _publish_hybrid(mondrian.setup(source), mondrian.k, mondrian.l, mondrian.diversity,
                           source, target, key=make_key(random_state),
                           batch_rows=batch_rows or DEFAULT_BATCH_ROWS, overwrite=overwrite,
                           report=progress or _no_progress, before_commit=before_commit)

def _publish_hybrid(setup: MondrianSetup, k: int, l: int, diversity: str,  # noqa: E741
                    source: Source, target: Path, *, key: int, batch_rows: int,
                    overwrite: bool, report: Progress,
                    before_commit: Callable[[], object] | None = None) -> Path:
    """Mondrian over a source, written as a release: the partitions of more than `LOCAL_ROWS`
    rows cut from histograms (`cut_top`), the rows of each smaller one spilled (Arrow IPC) and
    partitioned in memory, the rows spilled again by part of the release order, and each part
    written in that order, as `Mondrian.publish` orders them.

    Memory holds a batch, the histograms of one level, one leaf partition and one part.
    """
    covers = setup.covers()
    top = cut_top(setup, k, l, diversity, source.n_rows, covers,
                   _SourceCounts(setup, source, batch_rows, report), steps.LOCAL_ROWS)
    quasi = setup.quasi
    n_rows = source.n_rows
    parts = part_count(n_rows)
    draw_fields = [pa.field(SENSITIVE, pa.from_numpy_dtype(setup.schema[setup.sensitive].dtype)),
                   pa.field(DRAW, pa.uint64()), pa.field(ROW, pa.int64())]
    leaf_schema = pa.schema([*(pa.field(spill_column(d), pa.from_numpy_dtype(setup.schema[n].dtype))
                               for d, n in enumerate(quasi)), *draw_fields])
    part_schema = pa.schema([*(pa.field(spill_column(d), pa.int64()) for d in range(len(quasi))),
                             *draw_fields])
    # The spill files have a staging directory of their own, never committed: it is removed
    # whatever happens, and the release's staging directory holds only the release.
    with staged_directory(target) as staging, staged_directory(target) as spill:
        with _SpillFiles(spill, "part", part_schema) as by_part:
            with _SpillFiles(spill, "leaf", leaf_schema) as by_leaf:
                _spill(setup, source, batch_rows, top, key, by_leaf, by_part, parts, report)
            done, total = 0, sum(top.leaf_rows)
            for position in range(len(top.leaves)):
                done += _finish_leaf(setup, k, l, diversity, covers, by_leaf.take(position),
                                     by_part, parts)
                report("partitioning", done, total)
        generalized = {name: c.finish() for name, c in covers.items()}
        names = part_names(ROWS, parts)
        digests = {}
        for index, name in enumerate(names):
            digests[name] = write_parquet(staging / name, part_table(
                setup, covers, generalized, by_part.take(index)))
            report("writing parts", index + 1, parts)
        write_release(staging, setup, k, l, diversity, n_rows, generalized, digests)
        commit_release(staging, target, overwrite=overwrite, before_commit=before_commit)
    return target


@dataclass(frozen=True)
class _SourceCounts:
    """A level's counts from passes over a source, ``batch_rows`` at a time."""

    setup: MondrianSetup
    source: Source
    batch_rows: int
    report: Progress

    def ranks(self, top: CutTree, lookup: np.ndarray, count: int, n_values: int, stage: str
              ) -> list[np.ndarray]:
        return _rank_histograms(self.setup, self.source, self.batch_rows, top, lookup, count,
                                n_values, self.report, stage)

    def around(self, top: CutTree, lookup: np.ndarray, median: np.ndarray, diversity: str,
               stage: str) -> np.ndarray:
        return _values_around(self.setup, self.source, self.batch_rows, top, lookup, median,
                              diversity, self.report, stage)


def _open_rows(setup: MondrianSetup, source: Source, batch_rows: int, top: CutTree,
               lookup: np.ndarray, report: Progress, stage: str, *, sensitive: bool = False
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The rows of each batch in open partitions: their partition (``lookup``: the position
    among the open ones, -1 for others), ranks (rows x attributes) and sensitive codes when
    asked."""
    columns = (*setup.quasi, setup.sensitive) if sensitive else setup.quasi
    done = 0
    for _, codes in source.batches(batch_rows, columns):
        done += len(codes[setup.quasi[0]])
        yield open_batch(setup, top, lookup, codes, sensitive=sensitive)
        report(stage, done, source.n_rows)


def _rank_histograms(setup: MondrianSetup, source: Source, batch_rows: int, top: CutTree,
                     lookup: np.ndarray, count: int, n_values: int, report: Progress,
                     stage: str) -> list[np.ndarray]:
    """Counts by rank of each quasi-identifier in each open partition, and by sensitive value
    when ``n_values`` is its domain's size (partitions x ranks x n_values; 1: not by value)."""
    n_ranks = setup.n_ranks
    flat = [np.zeros(count * n * n_values, dtype=np.int64) for n in n_ranks]
    for local, ranks, values in _open_rows(setup, source, batch_rows, top, lookup, report,
                                           stage, sensitive=n_values > 1):
        for d, n in enumerate(n_ranks):
            cell = local * n + ranks[:, d]
            if values is not None:
                cell = cell * n_values + values
            flat[d] += np.bincount(cell, minlength=len(flat[d]))
    return [h.reshape(count, n, n_values) for h, n in zip(flat, n_ranks, strict=True)]


def _values_around(setup: MondrianSetup, source: Source, batch_rows: int, top: CutTree,
                   lookup: np.ndarray, median: np.ndarray, diversity: str, report: Progress,
                   stage: str) -> np.ndarray:
    """How many rows of each sensitive value lie below, at and above each open partition's
    median on each attribute (partitions x attributes x 3 x values); for distinct
    l-diversity, only whether any do (booleans)."""
    count, dims = median.shape
    n_values = setup.schema[setup.sensitive].size
    cells = count * 3 * n_values
    # Distinct values need only which values occur: booleans take an eighth of the memory.
    frequency = diversity == "frequency"
    around = np.zeros((dims, cells), dtype=np.int64 if frequency else bool)
    for local, ranks, values in _open_rows(setup, source, batch_rows, top, lookup, report,
                                           stage, sensitive=True):
        assert values is not None
        for d in range(dims):
            rank, row_median = ranks[:, d], median[local, d]
            # 0: below the median, 1: at it, 2: above (as `_row_medians` counts them).
            category = (rank >= row_median).astype(np.int64) + (rank > row_median)
            cell = (local * 3 + category) * n_values + values
            found = np.bincount(cell, minlength=cells)
            if frequency:
                around[d] += found
            else:
                around[d] |= found > 0
    return around.reshape(dims, count, 3, n_values).transpose(1, 0, 2, 3)


def _spill(setup: MondrianSetup, source: Source, batch_rows: int, top: CutTree, key: int,
           by_leaf: _SpillFiles, by_part: _SpillFiles, parts: int, report: Progress) -> None:
    """One pass over the source: each row, with its draw of the release order and its id, to
    its leaf's spill file, or, in a class cut by aggregation alone, with the class's keys to
    its part's."""
    quasi = setup.quasi
    leaf_of = np.full(len(top.dim), -1, dtype=np.intp)
    leaf_of[top.leaves] = np.arange(len(top.leaves))
    class_keys = np.zeros((len(top.dim), len(quasi)), dtype=np.int64)
    for class_node, keys in top.classes.items():
        class_keys[class_node] = keys
    stream = KeyedStream(key, STREAM)
    widest = max(setup.n_ranks)
    done = 0
    for start, codes in source.batches(batch_rows, (*quasi, setup.sensitive)):
        count = len(codes[setup.sensitive])
        node = top.descend(rank_matrix(setup.ranks(codes), widest))
        leaf = leaf_of[node]
        columns = {SENSITIVE: codes[setup.sensitive], DRAW: stream.raw(start, count),
                   ROW: np.arange(start, start + count, dtype=np.int64)}
        inside = leaf >= 0
        by_leaf.append(leaf[inside], {**{spill_column(d): codes[name][inside]
                                         for d, name in enumerate(quasi)},
                                      **{name: v[inside] for name, v in columns.items()}})
        if not inside.all():
            rows = np.flatnonzero(~inside)
            keys = class_keys[node[rows]]
            by_part.append(part_of(columns[DRAW][rows], parts),
                           {**{spill_column(d): keys[:, d] for d in range(len(quasi))},
                            **{name: v[rows] for name, v in columns.items()}})
        done += count
        report("spilling rows", done, source.n_rows)


class _SpillFiles:
    """Rows spilled by group (a leaf partition, a part of the release) to Arrow IPC files,
    appended batch by batch, each taken back whole once all are written."""

    def __init__(self, folder: Path, prefix: str, schema: pa.Schema) -> None:
        self.folder, self.prefix, self.schema = folder, prefix, schema
        self._writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}

    def __enter__(self) -> _SpillFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def _path(self, group: int) -> Path:
        return self.folder / f"{self.prefix}-{group}.arrow"

    def append(self, groups: np.ndarray, columns: Mapping[str, np.ndarray]) -> None:
        """Append each row to its group's file, the rows of a group in their order."""
        order = np.argsort(groups, kind="stable")
        ordered = groups[order]
        batch = pa.record_batch([pa.array(np.asarray(columns[f.name])[order], type=f.type)
                                 for f in self.schema], schema=self.schema)
        bounds = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(ordered)]
        for first, end in itertools.pairwise(bounds):
            if end > first:
                group = int(ordered[first])
                if group not in self._writers:
                    self._writers[group] = pa.ipc.new_file(self._path(group), self.schema)
                self._writers[group].write_batch(batch.slice(first, end - first))

    def take(self, group: int) -> pa.Table | None:
        """A group's rows (None if it has none), its file removed."""
        path = self._path(group)
        if not path.exists():
            return None
        with pa.OSFile(str(path)) as handle:
            table = pa.ipc.open_file(handle).read_all()
        path.unlink()
        return table


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def _finish_leaf(setup: MondrianSetup, k: int, l: int, diversity: str,  # noqa: E741
                 covers: Mapping[str, Covers], leaf: pa.Table | None, by_part: _SpillFiles,
                 parts: int) -> int:
    """Partition a spilled leaf in memory and spill its rows, with their classes' keys, by
    part of the release order; the number of its rows."""
    assert leaf is not None
    columns = leaf_keys(setup, k, l, diversity, covers, leaf)
    values = leaf.column(SENSITIVE).to_numpy()
    draws = leaf.column(DRAW).to_numpy()
    by_part.append(part_of(draws, parts), {**columns, SENSITIVE: values, DRAW: draws,
                                           ROW: leaf.column(ROW).to_numpy()})
    return len(values)
