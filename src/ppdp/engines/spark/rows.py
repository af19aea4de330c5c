"""The Spark executor of row plans: a table held in a Spark DataFrame, published without
collecting its rows to the driver.

The executor runs a mechanism's `ppdp.plans.RowPlan` as the streaming executor does, with
Spark doing the work over the rows:

1. the domains, the row count and the contingency tables the plan asks for (``histogram``)
   are Spark aggregations; only their domain-sized results reach the driver;
2. the kernel runs in `mapInArrow` over Arrow batches (the same numpy kernel): each batch's
   rows are put in row-id order and cut into runs of consecutive row ids, and each run is
   published as ``kernel(codes, first row id)``, so the keyed draws are those of the
   in-memory executor whatever the partitioning;
3. a plan's summary passes (sdr's `ppdp.plans.QuotaAssignment`) run in `mapInArrow` over the
   same runs, each task taking its runs into a copy of the pass; the histograms the copies
   took in are added up by a Spark aggregation and, with the rows they collected, merged
   into the pass on the driver: the summary one pass over all the rows in order builds;
4. saving exchanges the published rows by part (``part_of`` their keyed rank; packed, a
   part's rows of a batch as one binary value, `_packed`), one part a task, sorts each
   part by (rank, row id) and writes it with `ppdp.release.write_parquet` on the executor
   that holds it: the same bytes as the other executors write; the digests and the counts of
   the distinct rows (`ppdp.row_counts`) come back to the driver, which writes
   ``release.json`` last and commits the directory atomically (`ppdp.storage`).
"""

from __future__ import annotations

import itertools
import os
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ppdp.engines.spark.saved import SavedTables
from ppdp.engines.spark.session import ARROW_BATCH_ROWS, ROW_ID, in_arrow_batches
from ppdp.engines.spark.source import (
    Run,
    SparkSource,
    _plain,
    _run_passes,
    _signed,
    _spark_schema,
)
from ppdp.io.storage import staged_directory
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.order import part_count, part_of, rank_order
from ppdp.plan.rows import RowPlan
from ppdp.query.row_counts import RowCounter
from ppdp.release.arrow import rows_to_arrow
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import (
    commit_release,
    write_metadata,
    write_parquet,
    write_parts,
    write_row_counts,
)

if TYPE_CHECKING:
    from ppdp.mechanisms.base import RowMechanism


_RANK = "__rank"
_PART = "__part"
_TOP_BIT = np.uint64(1 << 63)


class SparkRelease(SavedTables):
    """A row-local mechanism's release whose rows are a Spark DataFrame (not yet written)."""

    def __init__(self, plan: RowPlan, source: SparkSource, published: Any,
                 dtypes: Mapping[str, np.dtype], packed: pa.Schema) -> None:
        self.mechanism = plan.mechanism
        self.schema = plan.schema
        self.parameters = plan.parameters
        self.n_rows = source.n_rows
        self.source = source
        self._plan, self._published, self._dtypes = plan, published, dtypes
        self._packed = packed

    def __repr__(self) -> str:
        return f"SparkRelease({self.mechanism!r}, n_rows={self.n_rows})"

    @property
    def rows(self) -> Any:
        """The published rows as values (a Spark DataFrame; release order is fixed by save)."""
        schema, extra, packed = self.schema, self._plan.extra, self._packed

        def values(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in _unpacked(batches, packed):
                table = rows_to_arrow(schema, {c.name: batch.column(c.name).to_numpy()
                                               .astype(c.dtype) for c in schema.columns},
                                      {name: batch.column(name).to_numpy().astype(np.int64)
                                       for name in extra}
                                      or None)
                yield pa.record_batch([_plain(array) for array in table.columns],
                                      names=table.column_names)

        # Extra columns (such as each row's sub-table) stay 64-bit: Spark has no unsigned type.
        sample = rows_to_arrow(schema, {c.name: np.zeros(1, c.dtype) for c in schema.columns},
                               {name: np.zeros(1, np.int64) for name in extra} or None)
        spark_schema = _spark_schema(pa.schema([pa.field(f.name, _plain(column).type)
                                                for f, column in zip(sample.schema,
                                                                     sample.columns,
                                                                     strict=True)]))
        return self._published.mapInArrow(values, spark_schema)

    @in_arrow_batches
    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the release as Parquet parts and ``release.json`` (last), atomically.

        The parts are written by the Spark tasks into the staging folder beside ``directory``:
        the driver and the executors must share that filesystem (local Spark, or a shared
        mount)."""
        target = Path(directory)
        check_target(target, overwrite)
        plan, n_rows = self._plan, self.n_rows
        parts = part_count(n_rows)
        names = part_names("rows", parts)
        schema, extra, dtypes, packed = plan.schema, plan.extra, self._dtypes, self._packed
        with staged_directory(target) as staging:
            where = str(staging)

            def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                counter = RowCounter()
                for index, part in _by_part(_unpacked(batches, packed)):
                    codes = {c.name: part.column(c.name).to_numpy().astype(c.dtype)
                             for c in schema.columns}
                    table = rows_to_arrow(schema, codes,
                                          {name: part.column(name).to_numpy().astype(
                                              dtypes[name]) for name in extra} or None)
                    digest = write_parquet(Path(where) / names[index], table)
                    yield pa.record_batch({
                        "part": pa.array([index], pa.int32()),
                        "digest": pa.array([digest]),
                        "counted": pa.array([pickle.dumps(counter.count_part(table))],
                                            pa.binary())})

            written = (self._published
                       .repartitionById(parts, _PART)
                       .mapInArrow(write, "part int, digest string, counted binary")
                       .toArrow().sort_by("part"))
            found = dict(zip(written.column("part").to_pylist(),
                             zip(written.column("digest").to_pylist(),
                                 written.column("counted").to_pylist(), strict=True),
                             strict=True))
            counter, digests = RowCounter(), {}
            for index, name in enumerate(names):
                if index in found:
                    digest, counted = found[index][0], pickle.loads(found[index][1])
                else:
                    # A part no row fell in: written empty, as the other executors write it.
                    table = rows_to_arrow(schema, {c.name: np.zeros(0, c.dtype)
                                                   for c in schema.columns},
                                          {name: np.zeros(0, dtypes[name])
                                           for name in extra} or None)
                    digest = write_parquet(staging / name, table)
                    counted = counter.count_part(table)
                digests[name] = digest
                counter.add(counted)
            files: dict[str, str | list[str]] = {"rows": names[0] if parts == 1 else names}
            write_row_counts(staging, counter.table(), files, digests)
            for stem, table in plan.tables.items():
                files[stem] = write_parts(staging, stem, table, digests)
            write_metadata(staging, plan.mechanism, plan.parameters, n_rows, plan.schema,
                           files, digests)
            commit_release(staging, target, overwrite=overwrite)
        self.saved = target
        return target


def publish_rows(mechanism: RowMechanism, source: SparkSource, key: int) -> SparkRelease:
    """Publish a Spark source with a row-local mechanism (uniform, sdr, dbr, frapp): its
    summary passes run now, in Spark tasks; its rows are published lazily (``rows``, ``save``).
    """
    plan = mechanism.row_plan(source, key)
    _run_passes(plan.passes, source)
    return SparkRelease(plan, source, *_published(plan, source, KeyedStream(key, "rank")))


def _published(plan: RowPlan, source: SparkSource, ranks: KeyedStream
               ) -> tuple[Any, dict[str, np.dtype], pa.Schema]:
    """The published rows as codes (with rank, row id and part) packed by part (`_packed`),
    lazily; the numpy type of each published column; the schema of the packed rows."""
    inputs = [source.schema[name] for name in plan.input_columns]
    # The kernel on no rows gives the published columns' types (Spark's are signed).
    empty = plan.kernel({c.name: np.zeros(0, c.dtype) for c in inputs}, 0)
    dtypes = {name: values.dtype for name, values in empty.items()}
    outputs = [*plan.schema.names, *plan.extra]
    # The smallest signed type for each published column (Spark has no unsigned one): the
    # exchanges move a byte a code where Adult's domains allow, not eight.
    kinds = {name: _signed(plan.schema[name].size - 1 if name in plan.schema
                           else np.iinfo(dtypes[name]).max) for name in outputs}
    parts = part_count(source.n_rows)
    kernel = plan.kernel

    def publish_runs(runs: Iterator[Run]) -> Iterator[pa.RecordBatch]:
        for start, ids, codes in runs:
            rows = kernel(codes, start)
            drawn = ranks.raw(start, len(ids))
            yield pa.record_batch({
                **{name: pa.array(rows[name].astype(kinds[name][0])) for name in outputs},
                # Signed, with the top bit flipped, as the other executors of ppdp's Spark
                # backend carry ranks (`_by_part`).
                _RANK: pa.array((drawn ^ _TOP_BIT).view(np.int64)),
                ROW_ID: pa.array(ids),
                _PART: pa.array(part_of(drawn, parts).astype(np.int32))})

    schema = pa.schema([*(pa.field(name, pa.from_numpy_dtype(kinds[name][0]))
                          for name in outputs),
                        pa.field(_RANK, pa.int64()), pa.field(ROW_ID, pa.int64()),
                        pa.field(_PART, pa.int32())])

    def publish_packed(runs: Iterator[Run]) -> Iterator[pa.RecordBatch]:
        return _packed(publish_runs(runs))

    return source.map_runs(inputs, publish_packed, PACKED_SCHEMA), dtypes, schema


_PACKED = "__packed"
PACKED_SCHEMA = f"{_PART} int, {_PACKED} binary"
"""The Spark schema of rows `_packed` packed."""


def _packed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Published rows packed for the exchange by part: of every `ARROW_BATCH_ROWS` rows or so,
    the rows of each part as one Arrow IPC message, a binary value beside its part.

    Spark then moves a few large values, not every row: a row of Spark's own format costs a
    conversion from Arrow and back, which took most of a row-local save (measured in the
    README's "On Spark")."""
    pending: list[pa.RecordBatch] = []
    held = 0

    def flush() -> pa.RecordBatch:
        rows = pa.concat_batches(pending)
        part = rows.column(_PART).to_numpy()
        order = np.argsort(part, kind="stable")
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(part[order])) + 1, [len(part)]])
        moved = rows.take(pa.array(order))
        starts = bounds[:-1].tolist()
        return pa.record_batch({
            _PART: pa.array(part[order[starts]].astype(np.int32)),
            _PACKED: pa.array([moved.slice(first, end - first).serialize().to_pybytes()
                               for first, end in itertools.pairwise(bounds.tolist())],
                              pa.binary())})

    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        if held >= ARROW_BATCH_ROWS:
            yield flush()
            pending, held = [], 0
    if held:
        yield flush()


def _unpacked(batches: Iterator[pa.RecordBatch], schema: pa.Schema
              ) -> Iterator[pa.RecordBatch]:
    """The published rows `_packed` packed, a batch a packed value."""
    for batch in batches:
        for value in batch.column(_PACKED):
            yield pa.ipc.read_record_batch(value.as_buffer(), schema)


def _by_part(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """The rows of a task as one table per part, each in release order (by rank, equal ranks
    by row id): sorted here, in numpy, rather than by Spark (which sorted 10^7 rows slower)."""
    for index, table in _grouped(batches, _PART):
        ranks = table.column(_RANK).to_numpy().view(np.uint64) ^ _TOP_BIT
        yield index, table.take(pa.array(rank_order(ranks, table.column(ROW_ID).to_numpy())))


def _grouped(batches: Iterator[pa.RecordBatch], column: str
             ) -> Iterator[tuple[int, pa.Table]]:
    """The rows of a task as one table per value of an integer column, in order of value
    (each table's rows in the order they came)."""
    pending: dict[int, list[pa.RecordBatch]] = {}
    for batch in batches:
        part = batch.column(column).to_numpy()
        order = np.argsort(part, kind="stable")
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(part[order])) + 1, [len(part)]])
        moved = batch.take(pa.array(order))
        for first, end in itertools.pairwise(bounds.tolist()):
            if end > first:
                pending.setdefault(int(part[order[first]]), []).append(
                    moved.slice(first, end - first))
    for index in sorted(pending):
        yield index, pa.Table.from_batches(pending.pop(index)).combine_chunks()
