"""Mondrian over a Spark DataFrame: the top levels cut from Spark aggregations, then every
small partition partitioned in memory inside a Spark task.

The executor runs the beyond-memory publication of `ppdp.mechanisms.mondrian`
(``_publish_hybrid``) with Spark doing the passes over the rows:

1. while a partition holds more than ``local_rows`` rows, its cut is decided on the driver by
   the same code (``cut_top``, ``_choose_cuts``) from histograms that are Spark aggregations:
   each task labels its rows with their open partition by descending the cuts made so far
   (the small tree of cuts, shipped to it), and one ``groupingSets`` over (partition, rank of
   each quasi-identifier, and the sensitive value for l >= 2) counts them; only the counts,
   at most partitions x ranks (x values) per attribute, reach the driver. For l >= 2 with too
   many such cells (``JOINT_CELLS``), a second aggregation counts the sensitive values below,
   at and above each median;
2. each task draws its rows' keyed release ranks (stream ``"mondrian"``) over runs of
   consecutive row ids (the input's own partitions when they hold long runs, as
   `ppdp.spark.read_parquet`'s splits do, else after an exchange by range of row id: see
   ``_in_runs``) and labels them with their small partition; the rows are exchanged once by
   it, and each task partitions its small partitions, one at a time, in memory with the code
   of the in-memory path (``leaf_keys``), labelling each row with the key of its class's
   generalized value per quasi-identifier (a set of values travels as its codes, in bytes);
3. the distinct keys of each quasi-identifier (an aggregation: at most as many as the
   generalized values) reach the driver, which numbers the generalized values in their
   canonical order (``Covers``), whatever task found them;
4. the rows are exchanged by part of the release order; the task holding a part puts it in
   release order (rank, row id) and writes it (``part_table``,
   `ppdp.release.write_parquet`); the driver writes the generalized values' tables and
   ``release.json`` last and commits the directory atomically: the files that
   ``Mondrian.publish(table).save`` writes with the same key.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.engines.spark.rows import _PART, _RANK, _TOP_BIT, _by_part
from ppdp.engines.spark.saved import SavedTables
from ppdp.engines.spark.session import ROW_ID, in_arrow_batches
from ppdp.engines.spark.source import Run, SparkSource, _codes, _in_domain, _signed
from ppdp.io.storage import staged_directory
from ppdp.mechanisms.mondrian.covers import ROWS, Covers
from ppdp.mechanisms.mondrian.mechanism import STREAM, MondrianSetup
from ppdp.mechanisms.mondrian.partition import rank_matrix
from ppdp.mechanisms.mondrian.steps import (
    DRAW,
    LOCAL_ROWS,
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
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.order import part_count, part_of
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import commit_release, write_parquet

if TYPE_CHECKING:
    from ppdp.mechanisms.mondrian.mechanism import Mondrian


_LOCAL = "__local"
_NODE = "__node"
_COUNT = "__count"


class SparkMondrianRelease(SavedTables):
    """A Mondrian release of a Spark DataFrame whose top levels are cut (on the driver, from
    aggregations) and whose small partitions are partitioned and written by ``save``."""

    mechanism = "mondrian"

    def __init__(self, mondrian: Mondrian, source: SparkSource, setup: MondrianSetup, top: CutTree,
                 covers: Mapping[str, Covers], key: int) -> None:
        self.source = source
        self.n_rows = source.n_rows
        self.schema = setup.published
        self.parameters = setup.parameters(mondrian.k, mondrian.l, mondrian.diversity)
        self._mondrian, self._setup, self._top, self._covers = mondrian, setup, top, covers
        self._stream = KeyedStream(key, STREAM)

    def __repr__(self) -> str:
        return f"SparkMondrianRelease(n_rows={self.n_rows})"

    @in_arrow_batches
    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the release as Parquet parts, the generalized values' tables and
        ``release.json`` (last), atomically.

        The parts are written by the Spark tasks into the staging folder beside ``directory``:
        the driver and the executors must share that filesystem (local Spark, or a shared
        mount)."""
        from pyspark.sql import functions as F

        target = Path(directory)
        check_target(target, overwrite)
        setup, n_rows = self._setup, self.n_rows
        # Saving adds the classes found in the tasks to the covers: a copy keeps ``save``
        # repeatable.
        covers = copy.deepcopy(dict(self._covers))
        sets = [d for d, name in enumerate(setup.quasi) if covers[name].by_values]
        keyed = self._keyed(covers, sets).persist()
        try:
            columns = [spill_column(d) for d in range(len(setup.quasi))]
            flags = [f"__grouped{d}" for d in range(len(columns))]
            # One row per distinct key of each quasi-identifier reaches the driver.
            found = keyed.groupingSets([[c] for c in columns], *columns).agg(
                *(F.grouping(c).alias(f) for c, f in zip(columns, flags, strict=True))
            ).toArrow()
            for d, (name, flag) in enumerate(zip(setup.quasi, flags, strict=True)):
                keys = found.filter(pc.equal(found.column(flag), 0)).column(spill_column(d))
                if d in sets:
                    covers[name].add_sets(keys.to_pylist())
                else:
                    covers[name].add_keys(keys.to_numpy().astype(np.int64))
            generalized = {name: c.finish() for name, c in covers.items()}
            parts = part_count(n_rows)
            names = part_names(ROWS, parts)
            known = {d: pa.array(covers[setup.quasi[d]].sets(), pa.binary()) for d in sets}
            with staged_directory(target) as staging:
                where = str(staging)

                def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                    for index, part in _by_part(batches):
                        digest = write_parquet(Path(where) / names[index], part_table(
                            setup, covers, generalized, _spilled(setup, part, known)))
                        yield pa.record_batch({"part": pa.array([index], pa.int32()),
                                               "digest": pa.array([digest])})

                # Each task puts its parts in release order (`_by_part`).
                written = (keyed.repartition(parts, _PART)
                           .mapInArrow(write, "part int, digest string").toArrow())
                found = dict(zip(written.column("part").to_pylist(),
                                 written.column("digest").to_pylist(), strict=True))
                # A part no row fell in is written empty, as the other paths write it.
                digests = {name: found[index] if index in found else write_parquet(
                    staging / name, part_table(setup, covers, generalized, None))
                    for index, name in enumerate(names)}
                mondrian = self._mondrian
                write_release(staging, setup, mondrian.k, mondrian.l, mondrian.diversity,
                               n_rows, generalized, digests)
                commit_release(staging, target, overwrite=overwrite)
        finally:
            keyed.unpersist()
        self.saved = target
        return target

    def _keyed(self, covers: Mapping[str, Covers], sets: Sequence[int]) -> Any:
        """The rows with their classes' keys (a set as bytes), sensitive code, rank, row id and
        part, lazily: exchanged by small partition, each partitioned in memory in a task."""
        setup, top, source, stream = self._setup, self._top, self.source, self._stream
        mondrian = self._mondrian
        quasi, dims = setup.quasi, len(setup.quasi)
        inputs = [setup.schema[name] for name in (*quasi, setup.sensitive)]
        kinds = {name: _signed(setup.schema[name].size - 1) for name in (*quasi, setup.sensitive)}
        parts = part_count(source.n_rows)
        widest = max(setup.n_ranks)

        def label(runs: Iterator[Run]) -> Iterator[pa.RecordBatch]:
            # Runs of consecutive row ids draw their ranks as the in-memory path does.
            for start, ids, codes in runs:
                node = top.descend(rank_matrix(setup.ranks(codes), widest))
                draws = stream.raw(start, len(ids))
                yield pa.record_batch({
                    **{spill_column(d): pa.array(codes[name].astype(kinds[name][0]))
                       for d, name in enumerate(quasi)},
                    SENSITIVE: pa.array(codes[setup.sensitive].astype(
                        kinds[setup.sensitive][0])),
                    _NODE: pa.array(node.astype(np.int32)),
                    # Signed, with the top bit flipped: Spark sorts it as the unsigned rank.
                    _RANK: pa.array((draws ^ _TOP_BIT).view(np.int64)),
                    ROW_ID: pa.array(ids),
                    _PART: pa.array(part_of(draws, parts).astype(np.int32))})

        # The keys of the classes cut by aggregation alone (a set as its bytes).
        known = {d: covers[quasi[d]].sets() for d in sets}
        top_keys = {node: [known[d][int(keys[d])] if d in sets else int(keys[d])
                           for d in range(dims)] for node, keys in top.classes.items()}
        k, l, diversity = mondrian.k, mondrian.l, mondrian.diversity  # noqa: E741
        dtypes = {name: setup.schema[name].dtype for name in quasi}

        def partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for node, rows in _by_node(batches):
                count = rows.num_rows
                if node in top_keys:
                    keys = {spill_column(d): pa.array([key] * 1, pa.binary() if d in sets
                                                 else pa.int64()).take(np.zeros(count, np.intp))
                            for d, key in enumerate(top_keys[node])}
                else:
                    leaf = pa.table({**{spill_column(d): rows.column(spill_column(d)).to_numpy()
                                        .astype(dtypes[name]) for d, name in enumerate(quasi)},
                                     SENSITIVE: rows.column(SENSITIVE)})
                    # Covers of its own for each small partition: its sets are numbered
                    # anew, and sent as bytes.
                    mine = setup.covers()
                    found = leaf_keys(setup, k, l, diversity, mine, leaf)
                    keys = {column: (pa.array(mine[quasi[d]].sets(), pa.binary())
                                     .take(pa.array(found[column])) if d in sets
                                     else pa.array(found[column].astype(np.int64)))
                            for d, column in enumerate(found)}
                yield pa.record_batch({**keys, **{name: rows.column(name).combine_chunks()
                                                  for name in (SENSITIVE, _RANK, ROW_ID,
                                                               _PART)}})

        labelled = ", ".join([*(f"{spill_column(d)} {kinds[name][1]}"
                                for d, name in enumerate(quasi)),
                              f"{SENSITIVE} {kinds[setup.sensitive][1]}", f"{_NODE} int",
                              f"{_RANK} long", f"{ROW_ID} long", f"{_PART} int"])
        published = ", ".join([*(f"{spill_column(d)} {'binary' if d in sets else 'long'}"
                                 for d in range(dims)),
                               f"{SENSITIVE} {kinds[setup.sensitive][1]}", f"{_RANK} long",
                               f"{ROW_ID} long", f"{_PART} int"])
        return (source.map_runs(inputs, label, labelled)
                .repartition(_NODE).sortWithinPartitions(_NODE)
                .mapInArrow(partition, published))


def _by_node(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """The rows of a task, sorted by small partition (`_NODE`), one partition at a time."""
    pending: list[pa.RecordBatch] = []
    current = None
    for batch in batches:
        node = batch.column(_NODE).to_numpy()
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(node)) + 1, [len(node)]])
        for first, end in itertools.pairwise(bounds.tolist()):
            if end > first:
                if current is not None and int(node[first]) != current:
                    yield current, pa.Table.from_batches(pending)
                    pending = []
                current = int(node[first])
                pending.append(batch.slice(first, end - first))
    if current is not None:
        yield current, pa.Table.from_batches(pending)


def _spilled(setup: MondrianSetup, part: pa.Table, known: Mapping[int, pa.Array]) -> pa.Table:
    """A part's rows as the spill files of the beyond-memory path hold them: each class's key
    per quasi-identifier (a set's: its position in ``known``), the sensitive code, the draw and
    the row id."""
    keys = {}
    for d in range(len(setup.quasi)):
        column = part.column(spill_column(d))
        keys[spill_column(d)] = (pc.index_in(column.combine_chunks(), value_set=known[d]).to_numpy(
            zero_copy_only=False).astype(np.int64) if d in known
            else column.to_numpy().astype(np.int64))
    return pa.table({**keys, SENSITIVE: part.column(SENSITIVE),
                     DRAW: part.column(_RANK).to_numpy().view(np.uint64) ^ _TOP_BIT,
                     ROW: part.column(ROW_ID)})


class _SparkCounts:
    """A level's counts (`ppdp.mechanisms.mondrian._LevelCounts`) as Spark aggregations over
    the source's rows, each task labelling its rows with their open partition."""

    def __init__(self, setup: MondrianSetup, source: SparkSource) -> None:
        self.setup, self.source = setup, source

    def ranks(self, top: CutTree, lookup: np.ndarray, count: int, n_values: int, stage: str
              ) -> list[np.ndarray]:
        """Counts by rank of each quasi-identifier in each open partition (and by sensitive
        value when ``n_values`` is its domain's size), as `_rank_histograms` gives them."""
        n_ranks = self.setup.n_ranks
        by_value = n_values > 1
        counted = self._count(top, lookup, None, by_value)
        histograms = []
        for d, n in enumerate(n_ranks):
            local, rank, value, cells = _cells(counted, d, by_value)
            cell = local * n + rank
            if value is not None:
                cell = cell * n_values + value
            histograms.append(np.bincount(cell, weights=cells, minlength=count * n * n_values)
                              .astype(np.int64).reshape(count, n, n_values))
        return histograms

    def around(self, top: CutTree, lookup: np.ndarray, median: np.ndarray, diversity: str,
               stage: str) -> np.ndarray:
        """How many rows of each sensitive value lie below, at and above each open
        partition's median on each attribute, as `_values_around` gives them."""
        count, dims = median.shape
        n_values = self.setup.schema[self.setup.sensitive].size
        counted = self._count(top, lookup, median, True)
        frequency = diversity == "frequency"
        around = np.zeros((dims, count * 3 * n_values), dtype=np.int64 if frequency else bool)
        for d in range(dims):
            local, category, value, cells = _cells(counted, d, True)
            found = np.bincount((local * 3 + category) * n_values + value, weights=cells,
                                minlength=count * 3 * n_values).astype(np.int64)
            around[d] = found if frequency else found > 0
        return around.reshape(dims, count, 3, n_values).transpose(1, 0, 2, 3)

    def _count(self, top: CutTree, lookup: np.ndarray, median: np.ndarray | None,
               by_value: bool) -> pa.Table:
        """The rows in open partitions counted by (partition, rank on an attribute — or, given
        the medians, whether below, at or above the median on it — and sensitive value when
        ``by_value``), for each attribute: one grouping set an attribute."""
        from pyspark.sql import functions as F

        setup = self.setup
        dims = len(setup.quasi)
        inputs = [setup.schema[name] for name in
                  (*setup.quasi, *([setup.sensitive] if by_value else []))]
        columns = [spill_column(d) for d in range(dims)]
        values = [SENSITIVE] if by_value else []
        schema = ", ".join([f"{_LOCAL} int", *(f"{c} int" for c in columns),
                            *(f"{v} int" for v in values)])
        flags = [f"__grouped{d}" for d in range(dims)]
        labelled = self.source.frame.select(*(c.name for c in inputs)).mapInArrow(
            _labelling(setup, inputs, top, lookup, median, by_value), schema)
        return labelled.groupingSets([[_LOCAL, c, *values] for c in columns], _LOCAL, *columns,
                                     *values).agg(
            F.count(F.lit(1)).alias(_COUNT),
            *(F.grouping(c).alias(f) for c, f in zip(columns, flags, strict=True))).toArrow()


def _labelling(setup: MondrianSetup, inputs: Sequence[Any], top: CutTree, lookup: np.ndarray,
               median: np.ndarray | None, by_value: bool
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The task of a level's aggregation: each row in an open partition as its position
    among them, its rank on every attribute (given the medians: 0, 1 or 2 for below, at or
    above its partition's median, as `_row_medians` counts them) and its sensitive code."""

    def label(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            codes = {c.name: _in_domain(c, _codes(c, batch.column(c.name))) for c in inputs}
            local, ranks, values = open_batch(setup, top, lookup, codes, sensitive=by_value)
            if median is not None:
                row_median = median[local].astype(ranks.dtype)
                ranks = (ranks >= row_median).astype(np.int8) + (ranks > row_median)
            yield pa.record_batch({
                _LOCAL: pa.array(local.astype(np.int32)),
                **{spill_column(d): pa.array(ranks[:, d].astype(np.int32))
                   for d in range(ranks.shape[1])},
                **({SENSITIVE: pa.array(values.astype(np.int32))} if values is not None
                   else {})})

    return label


def _cells(counted: pa.Table, d: int, by_value: bool
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """The counts of attribute ``d``'s grouping set: partition, rank (or side of the median),
    sensitive code (when counted by value) and count of each cell found."""
    mine = counted.filter(pc.equal(counted.column(f"__grouped{d}"), 0))

    def codes(name: str) -> np.ndarray:
        return mine.column(name).to_numpy().astype(np.int64)

    return (codes(_LOCAL), codes(spill_column(d)), codes(SENSITIVE) if by_value else None,
            codes(_COUNT))


def publish_mondrian(mondrian: Mondrian, source: SparkSource, key: int, *,
                     local_rows: int = LOCAL_ROWS) -> SparkMondrianRelease:
    """Publish a Spark source with Mondrian: partitions of more than ``local_rows`` rows are cut
    now, from Spark aggregations; the smaller ones are partitioned in Spark tasks, and the
    release written, by ``save``."""
    setup = mondrian.setup(source)
    covers = setup.covers()
    top = cut_top(setup, mondrian.k, mondrian.l, mondrian.diversity, source.n_rows, covers,
                   _SparkCounts(setup, source), local_rows)
    return SparkMondrianRelease(mondrian, source, setup, top, covers, key)
