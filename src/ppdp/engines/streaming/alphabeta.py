"""Alpha-beta views written batch by batch on the streaming engine: the next view of a
`ViewSequence`, its rows spilled to disk by rank and each part put in release order alone."""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ppdp.io.storage import staged_directory
from ppdp.mechanisms.alphabeta.draws import Piece
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease, even_parts
from ppdp.mechanisms.alphabeta.views import ViewSequence, reported, silent
from ppdp.mechanisms.base import Progress
from ppdp.plan.order import in_release_order, part_count, part_of, split_parts
from ppdp.query.codes import sorted_distinct
from ppdp.randomness import RandomState
from ppdp.release.arrow import rows_to_arrow
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import commit_release, write_metadata, write_parquet, write_parts
from ppdp.table.source import DEFAULT_BATCH_ROWS, TableSource
from ppdp.table.table import Table

SPILL_ROWS = 1 << 22
"""Rows per spill file, on average, while ``publish_source`` puts a view in release order."""


class RankSpill:
    """The rows of a view on disk, in files by the top bits of their rank, so that each part
    of the release (a range of ranks) is put in order in memory on its own."""

    RECORD = np.dtype([("rank", "<u8"), ("id", "<i8"), ("key", "<i8")])

    def __init__(self, directory: Path, expected_rows: float) -> None:
        self.directory = directory
        directory.mkdir()
        self.bits = int(np.clip(math.ceil(math.log2(max(expected_rows / SPILL_ROWS, 2))), 1, 12))
        self.rows = 0

    def add(self, piece: Piece) -> None:
        """Append rows to the files of their ranks."""
        ranks, ids, keys = piece
        records = np.empty(len(ranks), dtype=self.RECORD)
        records["rank"], records["id"], records["key"] = ranks, ids, keys
        buckets = (ranks >> np.uint64(64 - self.bits)).astype(np.int64)
        counts = np.bincount(buckets, minlength=1 << self.bits)
        ends = np.cumsum(counts)
        records = records[np.argsort(buckets, kind="stable")]
        for bucket in np.flatnonzero(counts):
            with open(self.directory / f"{bucket:04x}", "ab") as file:
                records[ends[bucket] - counts[bucket]:ends[bucket]].tofile(file)
        self.rows += len(ranks)

    def part(self, index: int, parts: int) -> Piece:
        """The rows of part ``index`` of ``parts``, in no particular order."""
        width = np.uint64(64 - self.bits)
        low = np.arange(1 << self.bits, dtype=np.uint64) << width
        high = low | ((np.uint64(1) << width) - np.uint64(1))
        files = [self.directory / f"{bucket:04x}" for bucket in np.flatnonzero(
            (part_of(low, parts) <= index) & (part_of(high, parts) >= index))]
        records = np.concatenate([np.empty(0, dtype=self.RECORD)] + [
            np.fromfile(path, dtype=self.RECORD) for path in files if path.exists()])
        records = records[part_of(records["rank"], parts) == index]
        return records["rank"], records["id"], records["key"]

    def remove(self) -> None:
        shutil.rmtree(self.directory)


def write_view(views: ViewSequence, directory: str | os.PathLike[str], *,
               random_state: RandomState = None, batch_rows: int | None = None,
               overwrite: bool = False, progress: Progress | None = None,
               before_commit: Callable[[], object] | None = None) -> Path:
    """Write the next view of ``views`` straight into a release directory, batch by batch;
    the directory (`ViewSequence.publish_to`).

    Two passes over the batches: the first gathers the table's distinct tuples with their
    counts (`distinct_tuples`: O(distinct tuples) memory, at most 16 bytes a row), against
    which the alpha-step looks up each row's probability and every chunk of the beta-step is
    anti-joined with the table and V'; the second keeps rows. Published rows are spilled to
    disk by rank (`RankSpill`), then each part is put in order alone."""
    target = Path(directory)
    check_target(target, overwrite)
    batch_rows = batch_rows or DEFAULT_BATCH_ROWS
    report = progress or silent
    view, draws, parameters = views.next_view(random_state, report, batch_rows)
    domain = views.domain
    source = TableSource(views.table) if isinstance(views.table, Table) else views.table
    schema = source.schema.select(domain.columns)
    size = views.mechanism.expected_view_size(source.n_rows, domain.size,
                                              earlier=len(views.earlier), view=view)
    with staged_directory(target) as staging:
        spill = RankSpill(staging / ".spill", size)
        for start, codes in reported(source.batches(batch_rows, domain.columns), "retain",
                                     source.n_rows, report):
            spill.add(draws.retained(start, codes))
        spill.add(draws.repeated())
        for chunk, piece in enumerate(draws.noise()):
            spill.add(piece)
            report("noise", chunk + 1, draws.chunks)
        names = part_names("view", part_count(spill.rows))
        digests, published = {}, []
        for index, name in enumerate(names):
            ranks, ids, keys = spill.part(index, len(names))
            keys = in_release_order({"key": keys}, ranks, ids)["key"]
            digests[name] = write_parquet(staging / name,
                                          rows_to_arrow(schema, domain.codes(keys, schema)))
            published.append(sorted_distinct(keys))
            report("write", index + 1, len(names))
        spill.remove()
        files: dict[str, str | list[str]] = {"view": names[0] if len(names) == 1 else names}
        if view > 1:
            # V' before this view, public already: the estimator needs it (as `save`).
            files["earlier"] = write_parts(
                staging, "earlier",
                split_parts(rows_to_arrow(schema, domain.codes(views.earlier, schema)),
                            even_parts(len(views.earlier))), digests)
        write_metadata(staging, AlphaBetaRelease.mechanism, parameters, spill.rows, schema,
                       files, digests)
        views.record_view(view, published)
        commit_release(staging, target, overwrite=overwrite, before_commit=before_commit)
    return target
