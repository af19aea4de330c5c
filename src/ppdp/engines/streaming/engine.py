"""The streaming engine: a source read in batches (a CSV or Parquet file, a polars LazyFrame,
any `ppdp.table.source.Source`) published into a release directory in bounded memory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ppdp.engines.streaming.alphabeta import write_view
from ppdp.engines.streaming.blocks import publish_blocks
from ppdp.engines.streaming.mondrian import publish_mondrian
from ppdp.engines.streaming.rows import publish_rows_streaming
from ppdp.io.scan import scan_table
from ppdp.mechanisms.alphabeta.views import ViewSequence
from ppdp.mechanisms.base import GroupMechanism, Mechanism, Progress, RowMechanism
from ppdp.plan.engine import ScannedFiles
from ppdp.query.scan_cube import ScanCube
from ppdp.randomness import RandomState
from ppdp.release.base import Release
from ppdp.table.source import Source, TableSource
from ppdp.table.table import Table

Writer = Callable[..., Path]
"""Writes a publication into a directory:
``writer(directory, overwrite=..., before_commit=...)``."""


class StreamingRelease:
    """A publication on the streaming engine, run by ``save``: the passes over the source, the
    published rows spilled and written part by part, ``release.json`` last, atomically."""

    def __init__(self, mechanism: str, source: Source, writer: Writer) -> None:
        self.mechanism = mechanism
        self.source = source
        self._writer = writer

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False,
             before_commit: Callable[[], object] | None = None) -> Path:
        """Run the publication into a new release directory (``overwrite`` replaces only a
        release); ``before_commit`` runs once the files are written, before the release
        appears. The directory."""
        return self._writer(directory, overwrite=overwrite, before_commit=before_commit)


def is_lazy_frame(data: object) -> bool:
    """Whether ``data`` is a polars LazyFrame (without importing polars)."""
    return type(data).__module__.split(".")[0] == "polars" and hasattr(data, "collect_batches")


def is_source(data: object) -> bool:
    """Whether ``data`` is a source read in batches that no other engine claims (a source
    names its engine in ``engine`` when another one publishes it)."""
    if is_lazy_frame(data):
        return False  # asking a LazyFrame for its schema would resolve it
    return (all(hasattr(data, name) for name in ("schema", "n_rows", "histogram", "batches"))
            and getattr(data, "engine", "streaming") == "streaming")


class StreamingEngine:
    """Publishes a source batch by batch (memory bounded by a batch, the domains and a part or
    a block) and counts a saved release with streaming Polars aggregations over its files
    (`ScanCube`)."""

    name = "streaming"
    batched = True
    reads_snapshots = True  # Arrow and Polars read through the files' descriptors

    def takes(self, data: object) -> bool:
        return is_source(data) or is_lazy_frame(data)

    def read_options(self, source: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
        """A CSV or Parquet file (scanned in batches), with every reading option."""
        if not Path(source).is_file():
            raise ValueError(f"--engine streaming reads a CSV or Parquet file; {str(source)!r} "
                             f"is not one")
        return options

    def command(self) -> AbstractContextManager[str | None]:
        """Nothing to hold: the work runs in this process."""
        return contextlib.nullcontext()

    def open(self, data: Any, **options: Any) -> Source:
        """A Source: ``data`` itself, a Table's rows in batches, or a file or LazyFrame opened
        with `ppdp.io.scan_table` and ``options`` (its reading rules, roles and domains)."""
        if isinstance(data, Table) or is_source(data):
            if options:
                raise TypeError(f"options {sorted(options)} apply to a file or LazyFrame read "
                                f"in batches, not to a {type(data).__name__}")
            return TableSource(data) if isinstance(data, Table) else data
        return scan_table(data, **options)

    def publish_rows(self, mechanism: RowMechanism, data: Any, *,
                     random_state: RandomState = None, batch_rows: int | None = None,
                     progress: Progress | None = None, **options: Any) -> StreamingRelease:
        source = self.open(data, **options)
        return StreamingRelease(mechanism.name, source, lambda directory, **saving: (
            publish_rows_streaming(mechanism, source, directory, random_state=random_state,
                                   batch_rows=batch_rows, progress=progress, **saving)))

    def publish_blocks(self, mechanism: GroupMechanism, data: Any, *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       progress: Progress | None = None, **options: Any) -> StreamingRelease:
        source = self.open(data, **options)
        return StreamingRelease(mechanism.name, source, lambda directory, **saving: (
            publish_blocks(mechanism, source, directory, random_state=random_state,
                           batch_rows=batch_rows, progress=progress, **saving)))

    def publish_steps(self, mechanism: Mechanism, data: Any, *,
                      random_state: RandomState = None, batch_rows: int | None = None,
                      progress: Progress | None = None, views: ViewSequence | None = None,
                      **options: Any) -> StreamingRelease:
        """Mondrian's partitioning (`publish_mondrian`) or the next alpha-beta view of
        ``views`` (a new sequence's first by default: `write_view`)."""
        source = self.open(data, **options)
        if mechanism.name == "mondrian":
            return StreamingRelease(mechanism.name, source, lambda directory, **saving: (
                publish_mondrian(mechanism, source, directory,  # type: ignore[arg-type]
                                 random_state=random_state, batch_rows=batch_rows,
                                 progress=progress, **saving)))
        if mechanism.name == "alphabeta":
            sequence = views if views is not None else self.views(mechanism, source)
            return StreamingRelease(mechanism.name, source, lambda directory, **saving: (
                write_view(sequence, directory, random_state=random_state,
                           batch_rows=batch_rows, progress=progress, **saving)))
        raise ValueError(f"{mechanism.name} has no steps on the streaming engine")

    def views(self, mechanism: Any, data: Any, **options: Any) -> ViewSequence:
        """A sequence of alpha-beta views of the source, written by ``publish_to``."""
        data = data if isinstance(data, Table) else self.open(data, **options)
        return ViewSequence(mechanism, data)

    def prepare_load(self, release_class: type[Release], stems: Iterable[str]
                     ) -> frozenset[str]:
        return release_class.scanned

    def rebuild(self, release_class: type[Release], schema: Any,
                parameters: Mapping[str, Any], n_rows: int, tables: Mapping[str, Any],
                scans: ScannedFiles) -> Release:
        if scans:
            return release_class._from_files(schema, parameters, n_rows, tables, scans)
        return release_class._from_tables(schema, parameters, n_rows, tables)

    def cube(self, paths: Sequence[Path], domains: Mapping[str, Any], n_rows: int, *,
             constants: Sequence[str] = (), digests: Mapping[Any, str] | None = None,
             row_counts: Any = None, opened: Sequence[os.PathLike[str]] | None = None
             ) -> ScanCube:
        """A ScanCube over published rows in Parquet files (checked as
        `ppdp.release.arrow.rows_from_arrow` checks them). It counts from the counts of the
        rows' distinct rows that the publisher wrote, without reading the rows; failing
        those, the files' verified digests let its check of the rows be read from the user's
        cache when the same bytes were checked before. Given the files opened on loading, it
        reads them, not the paths, so that a release saved over them changes nothing."""
        return ScanCube(opened if opened is not None else paths, domains, n_rows,
                        constants=constants, digests=digests, row_counts=row_counts)


ENGINE = StreamingEngine()
