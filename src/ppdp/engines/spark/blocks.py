"""The Spark executor of group mechanisms (SPLU-Gen, Anatomy, ambiguity): the rows exchanged
into blocks stratified by sensitive value, each block published in memory in a Spark task.

The executor runs the plan of `ppdp.blocks.publish_blocks`, Spark doing the work over the rows,
and writes the same files from the same key:

1. aggregate and decide: the histogram of the sensitive values (a Spark aggregation),
   ``B = ceil(N / block_rows)`` blocks, their exact proportional quotas (`block_quotas`) and
   the keyed assignment of rows to blocks (`ppdp.plans.QuotaAssignment` on stream
   ``"block"``), whose passes run in Spark tasks as sdr's do (`ppdp.spark.source._run_passes`);
2. exchange: each task labels its runs of consecutive row ids with their blocks (keyed draws,
   so the labels do not depend on the partitioning); the rows are exchanged by block label,
   a pseudo-random bucket stratified by sensitive value (never one task per sensitive value,
   which would put the commonest value's rows in one task), one block a task, and put in
   row-id order there: the order the streaming executor's spill file holds them in;
3. publish: each task publishes its block with the mechanism's ``publish_block`` and the
   block's generator (stream ``mechanism.name``, index b; the tasks get only that stream's key
   and the assignment's, never the release key), and writes each published table as part b.
   Group ids of block b are to be moved past the groups of the blocks before it, known only
   once every block is published: a table that numbers groups (``GroupID``) in a block after
   the first is held back as Arrow IPC in a hidden folder of the staging directory. The tasks
   return, per block, its parameters (its number of groups), its parts' digests, the counts
   of their distinct rows (`ppdp.row_counts`) and the block's summary (Anatomy's pair counts,
   `Release.summary`): domain-sized results, never rows;
4. write: the driver adds up the group counts into offsets; a second Spark job, a task per
   block, moves the held-back tables' group ids by their offsets and writes them as Parquet;
   then ``row_counts.parquet``, the summary and ``release.json`` (last), and the staging
   directory is committed atomically (`ppdp.storage`).

The parts are written by the tasks into the staging folder beside the release: the driver and
the executors must share that filesystem (local Spark, or a shared mount).
"""

from __future__ import annotations

import math
import os
import pickle
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Role, Schema
from ppdp.engines.blocks import counts_rows, publish_one_block, write_part
from ppdp.engines.spark.rows import _PART, PACKED_SCHEMA, _grouped, _packed, _unpacked
from ppdp.engines.spark.saved import SavedTables
from ppdp.engines.spark.session import ROW_ID, in_arrow_batches
from ppdp.engines.spark.source import Run, SparkSource, _run_passes, _signed
from ppdp.io.storage import staged_directory
from ppdp.mechanisms.base import GroupMechanism
from ppdp.plan import blocks
from ppdp.plan.blocks import GROUP_COLUMN, Labels, block_labels, merge_parameters
from ppdp.plan.keyed import KeyedStream
from ppdp.query.row_counts import RowCounter
from ppdp.release.base import Release
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import commit_release, write_metadata, write_row_counts, write_summary
from ppdp.table.table import Table

_HELD = ".held"
"""The staging directory's folder of tables held back until their group offsets are known."""

_WRITTEN = ("block int, position int, stem string, name string, digest string, "
            "counted boolean, counts binary, described binary")
"""What a publishing task returns for each table of a block (``described``, the block's
parameters, row count, mechanism and schema, on its first table's row only)."""


class SparkGroupRelease(SavedTables):
    """A group mechanism's release of a Spark DataFrame: its blocks decided (the quota
    assignment's passes run), their exchange, publishing and writing left to ``save``."""

    def __init__(self, mechanism: GroupMechanism, source: SparkSource, label: Labels,
                 n_blocks: int, stream: KeyedStream) -> None:
        self.mechanism = mechanism.name
        self.source = source
        self.n_rows = source.n_rows
        self.n_blocks = n_blocks
        self._mechanism, self._label, self._stream = mechanism, label, stream

    def __repr__(self) -> str:
        return (f"SparkGroupRelease({self.mechanism!r}, n_rows={self.n_rows}, "
                f"n_blocks={self.n_blocks})")

    @in_arrow_batches
    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Publish the blocks in Spark tasks and write the release (the files
        `ppdp.blocks.publish_blocks` writes from the same key), ``release.json`` last,
        atomically."""
        target = Path(directory)
        check_target(target, overwrite)
        n_blocks = self.n_blocks
        names = [c.name for c in self.source.schema.columns if c.role != Role.IGNORED]
        schema = self.source.schema.select(names)
        with staged_directory(target) as staging:
            (staging / _HELD).mkdir()
            by_block = _answers_by_block(self._published(schema, staging).toArrow(), n_blocks)
            parameters: dict[str, Any] = {}
            offsets, n_rows, groups = [], 0, 0
            summary = RowCounter()
            for block in range(n_blocks):
                described = pickle.loads(by_block[block][0]["described"])
                offsets.append(groups)
                groups += merge_parameters(parameters, described["parameters"])
                n_rows += described["n_rows"]
                for counts in described["summary"]:
                    summary.add(counts)
            held = [[(entry["name"], offsets[block], entry["counted"])
                     for entry in by_block[block] if entry["digest"] is None]
                    for block in range(n_blocks)]
            rewritten = _write_held(self.source.frame.sparkSession, staging,
                                    [jobs for jobs in held if jobs])
            shutil.rmtree(staging / _HELD)
            files: dict[str, list[str]] = {}
            digests: dict[str, str] = {}
            counter = RowCounter()
            for block in range(n_blocks):
                for entry in by_block[block]:
                    name = entry["name"]
                    digest, counts = rewritten.get(name, (entry["digest"], entry["counts"]))
                    digests[name] = digest
                    files.setdefault(entry["stem"], []).append(name)
                    if entry["counted"]:
                        counter.add(pickle.loads(counts))
            listed: dict[str, str | list[str]] = {stem: parts[0] if len(parts) == 1 else parts
                                                  for stem, parts in files.items()}
            # Digests listed table by table, each table's parts in block order, as every
            # engine lists them.
            digests = {name: digests[name] for parts in files.values() for name in parts}
            write_row_counts(staging, counter.table(), listed, digests)
            if described["summary_stem"] is not None:
                write_summary(staging, described["summary_stem"], summary.table(), listed,
                              digests)
            write_metadata(staging, described["mechanism"], parameters, n_rows,
                           described["schema"], listed, digests)
            commit_release(staging, target, overwrite=overwrite)
        self.saved = target
        return target

    def _published(self, schema: Schema, staging: Path) -> Any:
        """The Spark DataFrame whose tasks publish the blocks and write their parts (lazy):
        rows labelled by block, exchanged one block a task, put in row-id order there."""
        mechanism, label, stream, n_blocks = (self._mechanism, self._label, self._stream,
                                              self.n_blocks)
        columns = list(schema.columns)
        # Codes cross the exchange in the smallest signed type (Spark has no unsigned one).
        kinds = {c.name: _signed(c.size - 1) for c in columns}
        where = str(staging)

        def labelled(runs: Iterator[Run]) -> Iterator[pa.RecordBatch]:
            for start, ids, codes in runs:
                yield pa.record_batch({
                    **{c.name: pa.array(codes[c.name].astype(kinds[c.name][0]))
                       for c in columns},
                    ROW_ID: pa.array(ids),
                    _PART: pa.array(label(start, codes).astype(np.int32))})

        # The labelled rows cross the exchange packed, as the row-local mechanisms' do.
        packed = pa.schema([*(pa.field(c.name, pa.from_numpy_dtype(kinds[c.name][0]))
                              for c in columns),
                            pa.field(ROW_ID, pa.int64()), pa.field(_PART, pa.int32())])

        def labelled_packed(runs: Iterator[Run]) -> Iterator[pa.RecordBatch]:
            return _packed(labelled(runs))

        def published(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for block, rows in _in_row_id_order(_unpacked(batches, packed)):
                table = Table(schema, {c.name: rows.column(c.name).to_numpy().astype(c.dtype)
                                       for c in columns})
                del rows
                release = publish_one_block(mechanism, table, stream.generator(block), block,
                                            n_blocks)
                del table
                yield _written(release, block, n_blocks, Path(where))

        return (self.source.map_runs(columns, labelled_packed, PACKED_SCHEMA)
                .repartitionById(n_blocks, _PART)
                .mapInArrow(published, _WRITTEN))


def publish_groups(mechanism: GroupMechanism, source: SparkSource, key: int, *,
                   block_rows: int | None = None) -> SparkGroupRelease:
    """Publish a Spark source with a group mechanism (splu, anatomy, ambiguity) in blocks of
    at most ``block_rows`` rows (default `ppdp.blocks.BLOCK_ROWS`): the blocks' quota
    assignment runs now, in Spark tasks; the blocks are published by ``save``."""
    sensitive = mechanism.sensitive_columns(source)
    n_blocks = max(1, math.ceil(source.n_rows / (block_rows or blocks.BLOCK_ROWS)))
    label = block_labels(source, sensitive, key, n_blocks,
                         lambda passes: _run_passes(passes, source))
    return SparkGroupRelease(mechanism, source, label, n_blocks,
                             KeyedStream(key, mechanism.name))


def _in_row_id_order(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """The rows of a task as one table per block, in row-id order (sorted here, in numpy)."""
    for block, rows in _grouped(batches, _PART):
        yield block, rows.take(pa.array(np.argsort(rows.column(ROW_ID).to_numpy(),
                                                   kind="stable")))


def _written(release: Release, block: int, n_blocks: int, staging: Path) -> pa.RecordBatch:
    """Write a block's published tables as its parts (those whose group ids are yet to be
    moved held back in `_HELD`): what the driver needs of them, a row per table."""
    rows: dict[str, list[Any]] = {name: [] for name in (
        "block", "position", "stem", "name", "digest", "counted", "counts", "described")}
    for position, (stem, table) in enumerate(release._tables().items()):
        name = part_names(stem, n_blocks)[block]
        counted = counts_rows(release, stem)
        if block and GROUP_COLUMN in table.column_names:
            _hold(staging / _HELD / name, table)
            digest, counts = None, None
        else:
            digest, counts = write_part(staging / name, table, 0, counted)
        described = {"parameters": release.parameters, "n_rows": release.n_rows,
                     "mechanism": release.mechanism, "schema": release.schema,
                     "summary_stem": release.summary,
                     "summary": release._summary_parts() if release.summary and not position
                     else []}
        for field, value in (("block", block), ("position", position), ("stem", stem),
                             ("name", name), ("digest", digest), ("counted", counted),
                             ("counts", pickle.dumps(counts) if digest and counted else None),
                             ("described", None if position else pickle.dumps(described))):
            rows[field].append(value)
    return pa.record_batch({
        "block": pa.array(rows["block"], pa.int32()),
        "position": pa.array(rows["position"], pa.int32()),
        "stem": pa.array(rows["stem"], pa.string()),
        "name": pa.array(rows["name"], pa.string()),
        "digest": pa.array(rows["digest"], pa.string()),
        "counted": pa.array(rows["counted"], pa.bool_()),
        "counts": pa.array(rows["counts"], pa.binary()),
        "described": pa.array(rows["described"], pa.binary())})


def _answers_by_block(written: pa.Table, n_blocks: int) -> list[list[dict[str, Any]]]:
    """What the publishing tasks returned, by block, each block's tables in their order."""
    by_block: list[list[dict[str, Any]]] = [[] for _ in range(n_blocks)]
    for entry in written.sort_by([("block", "ascending"), ("position", "ascending")]
                                 ).to_pylist():
        by_block[entry["block"]].append(entry)
    # Every block holds rows (its quotas add up to N / B rows, rounded).
    assert all(by_block), "every block is published"
    return by_block


def _hold(path: Path, table: pa.Table) -> None:
    """Keep a published table as Arrow IPC (read back exactly as it was written)."""
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(str(path), "wb") as sink, \
            pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)


def _write_held(spark: Any, staging: Path, jobs: Sequence[Sequence[tuple[str, int, bool]]]
                ) -> dict[str, tuple[str, bytes | None]]:
    """Write the held-back tables as parts, their group ids moved by their blocks' offsets:
    one Spark task per block of ``jobs`` (each a list of (part name, offset, counted)). The
    parts' digests and pickled row counts, by name."""
    if not jobs:
        return {}
    where = str(staging)

    def rewrite(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column("id").to_pylist():
                names, digests, counted = [], [], []
                for name, offset, counts_wanted in jobs[index]:
                    held = Path(where) / _HELD / name
                    with pa.OSFile(str(held)) as handle:
                        table = pa.ipc.open_file(handle).read_all()
                    # The held table stays until the job is done: a retried task reads it.
                    digest, counts = write_part(Path(where) / name, table, offset,
                                                counts_wanted)
                    names.append(name)
                    digests.append(digest)
                    counted.append(pickle.dumps(counts) if counts_wanted else None)
                yield pa.record_batch({"name": pa.array(names, pa.string()),
                                       "digest": pa.array(digests, pa.string()),
                                       "counts": pa.array(counted, pa.binary())})

    done = (spark.range(0, len(jobs), 1, len(jobs))
            .mapInArrow(rewrite, "name string, digest string, counts binary").toArrow())
    return {name: (digest, counts) for name, digest, counts in zip(
        done.column("name").to_pylist(), done.column("digest").to_pylist(),
        done.column("counts").to_pylist(), strict=True)}
