"""Group mechanisms (SPLU-Gen, Anatomy, ambiguity) published block by block, beyond memory.

Their guarantees hold per group of rows (gamma or l distinct sensitive values in a group,
presence <= alpha, association <= beta), so the rows may be cut into blocks, each published in
memory by the mechanism's own code: every group of every block meets them exactly (DESIGN,
"Plans and executors", step 3). The plan:

1. aggregate: the number of rows N and the histogram of the sensitive values (of their
   combinations when there are several sensitive columns);
2. decide: ``B = ceil(N / BLOCK_ROWS)`` blocks and exact proportional quotas, block b taking
   ``n_v // B`` rows of value v or one more (``block_quotas``); which rows go to which block is
   keyed randomness (`ppdp.plans.QuotaAssignment` on stream ``"block"``), the same for any
   batching;
3. exchange: one pass over the rows appends each row's codes to its block's spill file (Arrow
   IPC, inside the staging directory); then each block is read back as a Table, published by
   the mechanism's ``publish_block`` with the generator ``KeyedStream(key, name).generator(b)``,
   written as part b of every published table, and its spill file deleted;
4. write: ``release.json`` last, then the staging directory is committed atomically
   (`ppdp.storage`); an error anywhere leaves no release behind.

Why proportional quotas. A mechanism feasible for the table is then feasible for every block
(up to a row of rounding), and SPLU-Gen's estimator, which models the decoy layout from the
release-wide published frequencies and gamma, meets in every block the shares f_v / (N / gamma)
it assumes (its transition depends on those shares only, ``decoy_transition``). The remainders
``n_v mod B`` are dealt round-robin across the values, so block sizes differ by at most one row
and say nothing but N; block b's counts are a function of the table's histogram.

Merging. Group ids of block b are offset by the groups of the blocks before it (column
``GroupID``) and the number of groups (``n_groups``) is their sum; every other parameter is the
mechanism's own, the same in each block. The estimators (Anatomy's and ambiguity's sums over
groups, SPLU-Gen's per-row transition) answer from the concatenated parts as from one release.

One block (N <= BLOCK_ROWS) is the in-memory publish: the same rows in the same order, the same
files as ``publish(table, random_state=...).save(directory)``. Memory stays that of publishing
one block in memory, plus the histogram and one batch of rows; the spill files hold the encoded
rows once, on disk beside the release.
"""

from __future__ import annotations

import contextlib
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.errors import InfeasibleError
from ppdp.keyed import KeyedStream, make_key
from ppdp.plans import Pass, QuotaAssignment, run_passes
from ppdp.randomness import RandomState
from ppdp.release import (
    Release,
    check_target,
    part_names,
    require_replaceable_release,
    write_metadata,
    write_parquet,
    write_row_counts,
)
from ppdp.row_counts import RowCounter
from ppdp.sources import DEFAULT_BATCH_ROWS, Batch, Source
from ppdp.storage import commit_directory, staged_directory
from ppdp.table import Role, Schema, Table

if TYPE_CHECKING:
    from ppdp.mechanisms.base import Progress

BLOCK_ROWS = 10**7
"""Rows per block (at most): each block is published in memory on its own."""

GROUP_COLUMN = "GroupID"
"""The column of a published table that numbers its groups."""

GROUP_COUNT = "n_groups"
"""The release parameter that counts the groups."""

Labels = Callable[[int, Mapping[str, np.ndarray]], np.ndarray]
"""The block of each row of a batch, given the batch's first row id and codes."""


class GroupMechanism(ABC):
    """A mechanism whose guarantees hold per group of rows, mixed into `Mechanism`: ``publish``
    runs ``publish_block`` on a whole table, ``publish_source`` on each block of a source."""

    name: ClassVar[str]

    @abstractmethod
    def sensitive_columns(self, data: Table | Source) -> tuple[str, ...]:
        """The sensitive columns, once the schema is checked to suit the mechanism."""

    @abstractmethod
    def publish_block(self, table: Table, rng: np.random.Generator) -> Release:
        """Publish a table (a whole table, or one block of a source), drawing from ``rng``."""

    def publish(self, table: Table, *, random_state: RandomState = None) -> Release:
        """Publish the table in memory: the block 0 of ``random_state``'s key (see
        `publish_blocks`). ``random_state``: None (OS entropy, the default for real releases),
        an int seed (reproducible, for experiments) or a numpy Generator."""
        self.check_memory(table)
        return self.publish_block(table, block_generator(make_key(random_state), self.name, 0))

    def publish_source(self, source: Source, directory: str | os.PathLike[str], *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       overwrite: bool = False, progress: Progress | None = None) -> Path:
        """Publish a source that need not fit in memory, block by block, into a release
        directory (see `publish_blocks`)."""
        return publish_blocks(self, source, directory, random_state=random_state,
                              batch_rows=batch_rows, overwrite=overwrite, progress=progress)


def block_generator(key: int, mechanism: str, block: int) -> np.random.Generator:
    """The generator of one block's publish: its own stream per mechanism, indexed by block."""
    return KeyedStream(key, mechanism).generator(block)


def block_quotas(counts: np.ndarray, n_blocks: int) -> np.ndarray:
    """``quotas[b, v]``: rows of value v in block b, ``counts[v] // n_blocks`` or one more.

    Value v's ``counts[v] % n_blocks`` extra rows go to consecutive blocks starting where the
    previous value's stopped, so that block sizes differ by at most one row.
    """
    counts = np.asarray(counts, dtype=np.int64)
    base, extra = np.divmod(counts, n_blocks)
    first = (np.cumsum(extra) - extra) % n_blocks
    after_first = (np.arange(n_blocks)[:, None] - first[None, :]) % n_blocks
    return base[None, :] + (after_first < extra[None, :])


def publish_blocks(mechanism: GroupMechanism, source: Source,
                   directory: str | os.PathLike[str], *, random_state: RandomState = None,
                   batch_rows: int | None = None, overwrite: bool = False,
                   progress: Progress | None = None) -> Path:
    """Publish a source block by block into a new release directory, atomically.

    ``progress(stage, rows done, rows in all)`` hears of each pass: ``"assign"`` (twice, when
    there are several blocks), ``"exchange"`` and ``"publish"``.
    """
    target = Path(directory)
    check_target(target, overwrite)
    sensitive = mechanism.sensitive_columns(source)
    batch_rows = batch_rows or DEFAULT_BATCH_ROWS
    key = make_key(random_state)
    n_blocks = max(1, math.ceil(source.n_rows / BLOCK_ROWS))
    label = block_labels(source, sensitive, key, n_blocks, lambda passes: run_passes(
        passes, _Reported(source, "assign", progress), batch_rows))
    names = [c.name for c in source.schema.columns if c.role != Role.IGNORED]
    schema = source.schema.select(names)
    with staged_directory(target) as staging:
        spills = [staging / f"block-{b:05d}.arrow" for b in range(n_blocks)]
        _exchange(_Reported(source, "exchange", progress), schema, label, spills, batch_rows)
        parameters: dict[str, Any] = {}
        files: dict[str, list[str]] = {}
        digests: dict[str, str] = {}
        n_rows = groups = 0
        counter = RowCounter()
        for block, spill in enumerate(spills):
            release = _publish_spill(mechanism, spill, schema, source.name, key, block,
                                     n_blocks)
            spill.unlink()
            _write_block(staging, release, block, n_blocks, groups, files, digests, counter)
            groups += _merge_parameters(parameters, release.parameters)
            n_rows += release.n_rows
            described = release.mechanism, release.schema
            # One block's release in memory at a time.
            del release
            if progress is not None:
                progress("publish", n_rows, source.n_rows)
        listed: dict[str, str | list[str]] = {stem: parts[0] if len(parts) == 1 else parts
                                              for stem, parts in files.items()}
        write_row_counts(staging, counter.table(), listed, digests)
        write_metadata(staging, described[0], parameters, n_rows, described[1], listed,
                       digests)
        commit_directory(staging, target, overwrite=overwrite,
                         replaceable=require_replaceable_release)
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
                self.progress(self.stage, start + _length(codes), self.n_rows)


def _length(codes: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(codes.values())))


def block_labels(source: Source, sensitive: Sequence[str], key: int, n_blocks: int,
                 run: Callable[[Sequence[Pass]], None]) -> Labels:
    """The function giving each row of a batch its block: after ``run`` has run the quota
    assignment's passes, or block 0 for every row when there is one block (no pass needed)."""
    if n_blocks == 1:
        return _first_block
    shape = tuple(source.schema[c].size for c in sensitive)

    def combination(codes: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.ravel_multi_index(tuple(codes[c] for c in sensitive), shape)

    quotas = block_quotas(np.asarray(source.histogram(sensitive)).reshape(-1), n_blocks)
    assignment = QuotaAssignment(KeyedStream(key, "block"), quotas, combination, sensitive)
    run(assignment.passes)
    return assignment.labels


def _first_block(start: int, codes: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.zeros(_length(codes), dtype=np.uint8)


def _exchange(source: Source, schema: Schema, label: Labels, spills: Sequence[Path],
              batch_rows: int) -> None:
    """One pass over the rows, appending each row's codes to its block's spill file."""
    arrow_schema = pa.schema([(c.name, pa.from_numpy_dtype(c.dtype)) for c in schema.columns])
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(pa.ipc.new_file(str(path), arrow_schema))
                   for path in spills]
        for start, codes in source.batches(batch_rows, schema.names):
            blocks = label(start, codes)
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


def publish_one_block(mechanism: GroupMechanism, table: Table, rng: np.random.Generator,
                      block: int, n_blocks: int) -> Release:
    """Publish block ``block`` (of ``n_blocks``) in memory with its generator; an infeasible
    block is named, with its size."""
    try:
        return mechanism.publish_block(table, rng)
    except InfeasibleError as exc:
        raise InfeasibleError(f"block {block + 1} of {n_blocks} ({table.n_rows} rows, each "
                              f"value in the table's proportion): {exc}") from exc


def _write_block(staging: Path, release: Release, block: int, n_blocks: int, offset: int,
                 files: dict[str, list[str]], digests: dict[str, str],
                 counter: RowCounter) -> None:
    """Write a block's published tables as part ``block`` of each, into ``files`` and
    ``digests``, its group ids moved past the ``offset`` groups of the blocks before it; the
    distinct rows of a release counted from its rows are counted into ``counter``."""
    for stem, published in release._tables().items():
        name = part_names(stem, n_blocks)[block]
        counted = counts_rows(release, stem)
        digests[name], counts = write_part(staging / name, published, offset, counted)
        files.setdefault(stem, []).append(name)
        if counted:
            counter.add(counts)


def counts_rows(release: Release, stem: str) -> bool:
    """Whether the distinct rows of a published table are counted (`ppdp.row_counts`): those
    of the rows that a loaded release counts from."""
    return stem == "rows" and stem in release.scanned


def write_part(path: Path, table: pa.Table, offset: int, counted: bool) -> tuple[str, Any]:
    """Write a block's published table as its part of the release, its group ids (if any)
    moved past the ``offset`` groups of the blocks before it: the part's digest and, when
    ``counted``, the counts of its distinct rows (`RowCounter.count_part`), else None."""
    table = _offset_groups(table, offset)
    digest = write_parquet(path, table)
    return digest, RowCounter().count_part(table) if counted else None


def _offset_groups(table: pa.Table, offset: int) -> pa.Table:
    """A published table with its group ids (if any) moved past the earlier blocks' groups."""
    if GROUP_COLUMN not in table.column_names or offset == 0:
        return table
    index = table.column_names.index(GROUP_COLUMN)
    column = table.column(index)
    # Checked: ids that no longer fit their type are an error, never a silent wrap.
    moved = pc.add_checked(column, pa.scalar(offset, type=column.type))
    return table.set_column(index, GROUP_COLUMN, moved)


def _merge_parameters(merged: dict[str, Any], block: Mapping[str, Any]) -> int:
    """Fold one block's parameters into the release's; the block's number of groups.

    Group counts add up; every other parameter is the mechanism's, the same in each block.
    """
    for name, value in block.items():
        if name == GROUP_COUNT:
            merged[name] = merged.get(name, 0) + value
        else:
            assert merged.setdefault(name, value) == value, f"blocks disagree on {name}"
    return int(block.get(GROUP_COUNT, 0))
