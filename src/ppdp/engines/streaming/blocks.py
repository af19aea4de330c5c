"""Group mechanisms on the streaming engine: a source published block by block, beyond
memory (`ppdp.plan.blocks`).

One pass over the rows appends each row's codes to its block's spill file (Arrow IPC, inside the
staging directory); then each block is read back as a Table, published by the mechanism's
``publish_block`` with its generator, written as part b of every published table, and its spill
file deleted. Memory stays that of publishing one block in memory, plus the histogram and one
batch of rows; the spill files hold the encoded rows once, on disk beside the release."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Role, Schema
from ppdp.engines.blocks import counts_rows, publish_one_block, write_part
from ppdp.io.storage import staged_directory
from ppdp.mechanisms.base import GroupMechanism
from ppdp.plan.blocks import (
    Labels,
    batch_length,
    block_count,
    block_generator,
    block_labels,
    merge_parameters,
)
from ppdp.plan.keyed import make_key
from ppdp.plan.rows import run_passes
from ppdp.query.row_counts import RowCounter
from ppdp.randomness import RandomState
from ppdp.release.base import Release
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import commit_release, write_metadata, write_row_counts, write_summary
from ppdp.table.source import DEFAULT_BATCH_ROWS, Batch, Source
from ppdp.table.table import Table
from ppdp.workers import in_chunks, map_ordered, threads_for

if TYPE_CHECKING:
    from ppdp.mechanisms.base import Progress


def publish_blocks(mechanism: GroupMechanism, source: Source,
                   directory: str | os.PathLike[str], *, random_state: RandomState = None,
                   batch_rows: int | None = None, overwrite: bool = False,
                   progress: Progress | None = None,
                   before_commit: Callable[[], object] | None = None) -> Path:
    """Publish a source block by block into a new release directory, atomically.

    ``progress(stage, rows done, rows in all)`` hears of each pass: ``"assign"`` (twice, when
    there are several blocks), ``"exchange"`` and ``"publish"``.
    """
    target = Path(directory)
    check_target(target, overwrite)
    sensitive = mechanism.sensitive_columns(source)
    batch_rows = batch_rows or DEFAULT_BATCH_ROWS
    key = make_key(random_state)
    n_blocks = block_count(source.n_rows)
    label = block_labels(source, sensitive, key, n_blocks, lambda passes: run_passes(
        passes, _Reported(source, "assign", progress), batch_rows))
    names = [c.name for c in source.schema.columns if c.role != Role.IGNORED]
    schema = source.schema.select(names)
    with staged_directory(target) as staging:
        spills = [staging / f"block-{b:05d}.arrow" for b in range(n_blocks)]
        _exchange(_Reported(source, "exchange", progress), schema, label, spills, batch_rows)
        parameters: dict[str, Any] = {}
        written: list[dict[str, tuple[str, str]]] = []
        n_rows = groups = 0
        counter, summary = RowCounter(), RowCounter()

        def publish(block: int) -> Release:
            release = _publish_spill(mechanism, spills[block], schema, source.name, key, block,
                                     n_blocks)
            spills[block].unlink()
            return release

        def write(release: Release, block: int, offset: int) -> Written:
            return _write_block(staging, release, block, n_blocks, offset)

        def collect(done: Written) -> None:
            written.append(done[0])
            for counts in done[1]:
                counter.add(counts)
            for counts in done[2]:
                summary.add(counts)

        # Blocks published on the workers, in order of their ids; each written on a writer
        # thread once the groups of the blocks before it are known. At most a block a worker
        # is held published and one a worker is being written.
        threads = threads_for(n_blocks)
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ppdp-block") as pool:
            pending: list[Future[Written]] = []
            for block, release in enumerate(map_ordered(publish, range(n_blocks))):
                pending.append(pool.submit(write, release, block, groups))
                groups += merge_parameters(parameters, release.parameters)
                n_rows += release.n_rows
                described = release.mechanism, release.schema, release.summary
                del release
                while len(pending) > threads or (pending and pending[0].done()):
                    collect(pending.pop(0).result())
                if progress is not None:
                    progress("publish", n_rows, source.n_rows)
            for future in pending:
                collect(future.result())
        # Files and digests listed table by table, each table's parts in block order: as the
        # memory engine's save lists them.
        files: dict[str, str | list[str]] = {}
        digests: dict[str, str] = {}
        for stem in written[0]:
            parts = [block[stem][0] for block in written]
            files[stem] = parts[0] if len(parts) == 1 else parts
            digests.update(block[stem] for block in written)
        write_row_counts(staging, counter.table(), files, digests)
        if described[2] is not None:
            write_summary(staging, described[2], summary.table(), files, digests)
        write_metadata(staging, described[0], parameters, n_rows, described[1], files,
                       digests)
        commit_release(staging, target, overwrite=overwrite, before_commit=before_commit)
    return target


class _Reported:
    """A source whose batches tell ``progress`` how far a pass over it has read."""

    def __init__(self, source: Source, stage: str, progress: Progress | None) -> None:
        self.source = source
        self.schema, self.n_rows, self.name = source.schema, source.n_rows, source.name
        self.stage = stage
        self.progress = progress

    def histogram(self, columns: Sequence[str]) -> np.ndarray:
        return self.source.histogram(columns)

    def batches(self, batch_rows: int = DEFAULT_BATCH_ROWS,
                columns: Sequence[str] | None = None) -> Iterator[Batch]:
        for start, codes in self.source.batches(batch_rows, columns):
            yield start, codes
            if self.progress is not None:
                self.progress(self.stage, start + batch_length(codes), self.n_rows)


def _exchange(source: Source, schema: Schema, label: Labels, spills: Sequence[Path],
              batch_rows: int) -> None:
    """One pass over the rows, appending each row's codes to its block's spill file."""
    arrow_schema = pa.schema([(c.name, pa.from_numpy_dtype(c.dtype)) for c in schema.columns])
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(pa.ipc.new_file(str(path), arrow_schema))
                   for path in spills]
        for start, codes in source.batches(batch_rows, schema.names):
            # Each row's block, the batch's chunks labelled on the workers.
            blocks = np.concatenate(in_chunks(label, start, codes))
            order = np.argsort(blocks, kind="stable")
            ends = np.cumsum(np.bincount(blocks, minlength=len(spills)))
            moved = [codes[name][order] for name in schema.names]
            for block in np.flatnonzero(np.diff(ends, prepend=0)):
                rows = slice(ends[block - 1] if block else 0, ends[block])
                writers[block].write_batch(
                    pa.record_batch([column[rows] for column in moved], schema=arrow_schema))


def _publish_spill(mechanism: GroupMechanism, spill: Path, schema: Schema, name: str | None,
                   key: int, block: int, n_blocks: int) -> Release:
    """Publish one block, read back from its spill file, in memory with its generator."""
    with pa.OSFile(str(spill)) as handle:
        data = pa.ipc.open_file(handle).read_all()
    table = Table(schema, {c: data.column(c).to_numpy() for c in schema.names}, name=name)
    del data  # the Arrow copy of chunks that to_numpy concatenated
    return publish_one_block(mechanism, table, block_generator(key, mechanism.name, block),
                             block, n_blocks)


Written = tuple[dict[str, tuple[str, str]], list[Any], list[Any]]
"""What writing a block gave: each table's file name and digest by stem, the counts of
the distinct rows of those counted (`RowCounter.count_part`), and the block's summary
(`Release._summary_parts`; none for most mechanisms)."""


def _write_block(staging: Path, release: Release, block: int, n_blocks: int, offset: int
                 ) -> Written:
    """Write a block's published tables as part ``block`` of each, its group ids moved past
    the ``offset`` groups of the blocks before it (`Written`)."""
    written, counted_rows = {}, []
    for stem, published in release._tables().items():
        name = part_names(stem, n_blocks)[block]
        counted = counts_rows(release, stem)
        digest, counts = write_part(staging / name, published, offset, counted)
        written[stem] = (name, digest)
        if counted:
            counted_rows.append(counts)
    return written, counted_rows, release._summary_parts() if release.summary else []
