"""The streaming executor of row plans: a release written batch by batch, in bounded memory.

The executor runs a mechanism's `ppdp.plans.RowPlan` over a `ppdp.sources.Source` that need
not fit in memory:

1. each summary pass of the plan reads every batch;
2. the kernel publishes each batch (cut into chunks on the workers); its rows, with their keyed
   ranks, are appended to the spill file of their part (Arrow IPC, inside the staging
   directory);
3. each part is read back alone, put in release order (rank, then row id) and written as
   Parquet, exactly as the in-memory executor writes the same part (a part a worker);
4. the counts of the distinct rows, found part by part as the parts are written, are written
   as ``row_counts.parquet`` (`ppdp.row_counts`);
5. ``release.json`` is written last and the staging directory is committed atomically
   (`ppdp.storage`): an interrupted run leaves no directory that loads.

Memory is two batches (the next is read ahead), the plan's summaries (domain-sized) and a part
(`ROWS_PER_PART` rows on average) per worker, whatever the number of rows.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ppdp.io.storage import staged_directory
from ppdp.plan.keyed import make_key
from ppdp.plan.order import in_release_order, part_count, part_of, row_ranks
from ppdp.plan.rows import RowPlan
from ppdp.query.row_counts import RowCounter
from ppdp.randomness import RandomState
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
from ppdp.table.source import DEFAULT_BATCH_ROWS, Source
from ppdp.workers import in_chunks, map_ordered, threads_for

if TYPE_CHECKING:
    from ppdp.mechanisms.base import Progress, RowMechanism

_RANK = "__rank"

_SPILL_BUFFER = 1 << 18
"""Bytes buffered for each part's spill file (64 MB for the 239 parts of 10^9 rows)."""


def publish_rows_streaming(mechanism: RowMechanism, source: Source,
                           directory: str | os.PathLike[str], *,
                           random_state: RandomState = None, batch_rows: int | None = None,
                           overwrite: bool = False, progress: Progress | None = None,
                           before_commit: Callable[[], object] | None = None) -> Path:
    """Publish a row-local mechanism over a source, batch by batch, into ``directory``."""
    target = Path(directory)
    check_target(target, overwrite)
    batch_rows = batch_rows or DEFAULT_BATCH_ROWS
    key = make_key(random_state)
    plan = mechanism.row_plan(source, key)
    report = progress or _silent
    n_rows = source.n_rows
    for index, step in enumerate(plan.passes, start=1):
        if not step.needed:
            continue
        done = 0
        for start, codes in source.batches(batch_rows, step.columns):
            in_chunks(step.update, start, codes)
            done += len(next(iter(codes.values()))) if codes else 0
            report(f"summary pass {index}", done, n_rows)
        step.finish()
    parts = part_count(n_rows)
    names = part_names("rows", parts)
    with staged_directory(target) as staging:
        spill = staging / ".spill"
        spill.mkdir()
        firsts = _spill(plan, source, key, parts, spill, batch_rows, report)
        digests, counts = _write_parts(plan, spill, firsts, staging, names, report)
        spill.rmdir()
        files: dict[str, str | list[str]] = {"rows": names[0] if parts == 1 else names}
        write_row_counts(staging, counts, files, digests)
        for stem, table in plan.tables.items():
            files[stem] = write_parts(staging, stem, table, digests)
        write_metadata(staging, plan.mechanism, plan.parameters, n_rows, plan.schema, files,
                       digests)
        commit_release(staging, target, overwrite=overwrite, before_commit=before_commit)
    return target


def _spill(plan: RowPlan, source: Source, key: int, parts: int, spill: Path,
           batch_rows: int, report: Progress) -> dict[int, array]:
    """Publish every batch and append its rows to their parts' spill files; for each part,
    the first row id of every slice written to it, in the order written.

    Row ids are not spilled (only equal ranks need them, and they take a fifth of the spill,
    which at 10^9 rows outgrows the page cache): a slice holds rows of one batch in row-id
    order, so slices put in the order of their first rows are the part's rows by row id."""
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    sinks: dict[int, pa.BufferedOutputStream] = {}
    firsts: dict[int, array] = {}

    def by_part(start: int, codes: Mapping[str, np.ndarray]) -> tuple[int, pa.RecordBatch,
                                                                       np.ndarray]:
        """The published rows of a batch, grouped by part, and where each part begins."""
        rows = plan.kernel(codes, start)
        count = len(next(iter(rows.values())))
        ranks = row_ranks(key, start, count)
        batch = pa.record_batch({**{name: pa.array(values) for name, values in rows.items()},
                                 _RANK: pa.array(ranks)})
        # Parts as 16-bit integers: numpy's stable sort is then a radix sort.
        part = part_of(ranks, parts).astype(np.min_scalar_type(parts))
        order = np.argsort(part, kind="stable")
        # One gather of the whole batch by part; each part's rows are then a slice.
        return start, batch.take(order), np.searchsorted(part[order], np.arange(parts + 1))

    def write(halves: list[tuple[int, pa.RecordBatch, np.ndarray]]) -> None:
        """Append each part's slice of a published batch to the part's spill file."""
        for first, batch, bounds in halves:
            for index in map(int, np.flatnonzero(np.diff(bounds))):
                if index not in writers:
                    # Buffered: at 10^9 rows a batch's slice of a part is about a thousand
                    # rows, and unbuffered every column of every slice is a write.
                    sinks[index] = pa.BufferedOutputStream(
                        pa.OSFile(str(spill / f"{index}.arrow"), "wb"),
                        buffer_size=_SPILL_BUFFER)
                    writers[index] = pa.ipc.new_file(sinks[index], batch.schema)
                    firsts[index] = array("q")
                firsts[index].append(first)
                writers[index].write_batch(batch.slice(bounds[index],
                                                       bounds[index + 1] - bounds[index]))

    # A batch's slices are written (one thread, in order) while the next batch is published
    # (on the workers): the writes of a batch of 2^20 rows into 239 parts take 12 ms, which
    # would otherwise leave a core idle.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppdp-spill") as pool:
        try:
            done, writing = 0, None
            for start, codes in source.batches(batch_rows, plan.input_columns):
                halves = in_chunks(by_part, start, codes)
                if writing is not None:
                    writing.result()
                writing = pool.submit(write, halves)
                done += sum(batch.num_rows for _, batch, _ in halves)
                report("publishing rows", done, source.n_rows)
            if writing is not None:
                writing.result()
            return firsts
        finally:
            if writing is not None:
                writing.exception()  # the writer is done with the files before they close
            for index, writer in writers.items():
                writer.close()
                sinks[index].close()


def _write_parts(plan: RowPlan, spill: Path, firsts: Mapping[int, array], staging: Path,
                 names: list[str], report: Progress) -> tuple[dict[str, str], pa.Table | None]:
    """Sort and write every part; the digest of each file by name, and the counts of the
    distinct rows (`ppdp.row_counts`), counted part by part.

    A part a worker: while one is sorted (Polars) another is encoded and compressed
    (Parquet), each releasing the GIL, so every core works; memory is a part a worker."""
    counter = RowCounter()
    ahead = threads_for(len(names))

    def write(index: int) -> tuple[str, Any]:
        # The part after those the other workers hold is asked of the disk now: at 10^9 rows
        # the spill no longer fits the page cache.
        _read_soon(spill / f"{index + ahead}.arrow")
        table = _part_table(plan, spill, index, firsts.get(index))
        return write_parquet(staging / names[index], table), counter.count_part(table)

    digests = {}
    for index, (digest, counted) in enumerate(map_ordered(write, range(len(names)))):
        digests[names[index]] = digest
        counter.add(counted)
        report("writing parts", index + 1, len(names))
    return digests, counter.table()


def _part_table(plan: RowPlan, spill: Path, index: int, firsts: array | None) -> pa.Table:
    """One part's rows in release order, as the release's Arrow table (spill file removed):
    its slices in the order of their first row ids (`_spill`), then sorted by rank, equal
    ranks by position, that is by row id."""
    path = spill / f"{index}.arrow"
    columns = (*plan.schema.names, *plan.extra)
    if firsts is not None:
        with pa.memory_map(str(path)) as handle:
            reader = pa.ipc.open_file(handle)
            starts = np.frombuffer(firsts, dtype=np.int64)
            if np.all(starts[1:] > starts[:-1]):
                table = reader.read_all()  # batches read in order: the usual case
            else:
                table = pa.Table.from_batches(
                    [reader.get_batch(int(i)) for i in np.argsort(starts, kind="stable")],
                    reader.schema)
        codes = in_release_order({name: table.column(name).to_numpy() for name in columns},
                                 table.column(_RANK).to_numpy())
        del table
        path.unlink()
    else:
        codes = {name: np.zeros(0, dtype=np.uint8) for name in columns}
    return _rows_table(plan, codes)


def _read_soon(path: Path) -> None:
    """Ask the system to read a file into its cache in the background, where it can."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:  # no such part, or already written and removed
        return
    try:
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_WILLNEED)
    finally:
        os.close(descriptor)


def _rows_table(plan: RowPlan, codes: Mapping[str, np.ndarray]) -> pa.Table:
    extra = {name: codes[name] for name in plan.extra}
    return rows_to_arrow(plan.schema, codes, extra or None)


def _silent(stage: str, done: int, total: int) -> None:
    return None
