"""Writing a release's files: each table as Parquet (the same rows give the same bytes on
every engine), then ``release.json`` last."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.schema import Schema
from ppdp.errors import ReleaseError
from ppdp.io.storage import commit_directory
from ppdp.query.row_counts import ROW_COUNTS, RowCounter
from ppdp.release.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_METADATA_BYTES,
    METADATA_FILE,
    file_digest,
    metadata_bytes,
    metadata_digest,
    part_names,
)
from ppdp.release.target import require_replaceable_release
from ppdp.workers import run_all


def write_parts(staging: Path, stem: str, tables: pa.Table | list[pa.Table],
                digests: dict[str, str]) -> str | list[str]:
    """Write one published table, whole or as its list of parts, under ``stem``'s file names;
    its entry of ``files`` (a name, or the parts' names), each file's digest put in
    ``digests``."""
    parts = tables if isinstance(tables, list) else [tables]
    names = part_names(stem, len(parts))
    # A part a worker (Parquet encodes and compresses without the GIL); the digests are
    # listed in the parts' order, as release.json records them.
    written = run_all(lambda named: write_parquet(staging / named[0], named[1]),
                      list(zip(names, parts, strict=True)))
    digests.update(zip(names, written, strict=True))
    return names[0] if len(names) == 1 else names


def write_counted_parts(staging: Path, stem: str, makers: list[Callable[[], pa.Table]],
                        digests: dict[str, str]) -> tuple[str | list[str], pa.Table | None]:
    """Write one published table given as makers of its parts: each part made, written and
    counted (`ppdp.query.row_counts.RowCounter`) on a worker, then dropped; its entry of
    ``files`` (as `write_parts` gives it) and the counts of its distinct rows."""
    counter = RowCounter()
    names = part_names(stem, len(makers))

    def write(named: tuple[str, Callable[[], pa.Table]]) -> tuple[str, Any]:
        table = named[1]()
        return write_parquet(staging / named[0], table), counter.count_part(table)

    for name, (digest, counted) in zip(names, run_all(write, list(zip(names, makers,
                                                                          strict=True))),
                                       strict=True):
        digests[name] = digest
        counter.add(counted)
    return (names[0] if len(names) == 1 else names), counter.table()


def write_row_counts(staging: Path, counts: pa.Table | None,
                     files: dict[str, str | list[str]], digests: dict[str, str]) -> None:
    """Write the counts of the rows' distinct rows (`ppdp.row_counts`), if they were
    counted, into ``files`` and ``digests``."""
    write_summary(staging, ROW_COUNTS, counts, files, digests)


def write_summary(staging: Path, stem: str, table: pa.Table | None,
                  files: dict[str, str | list[str]], digests: dict[str, str]) -> None:
    """Write a summary of the published tables as one file under ``stem`` (unless None, too
    large to be written), into ``files`` and ``digests``."""
    if table is not None:
        files[stem] = write_parts(staging, stem, table, digests)


def write_parquet(path: Path, table: pa.Table) -> str:
    """Write one published table (or part) as Parquet; its SHA-256 digest.

    Every executor writes through here, so the same rows give the same bytes. Column
    statistics are left out: nothing reads them (counts aggregate whole columns), and computing
    them took a third of the writing time. A column without nulls (a published one never has
    any) is stored as required: no definition levels, which took a fifth of the rest."""
    fields = [field.with_nullable(field.nullable and column.null_count > 0)
              for field, column in zip(table.schema, table.columns, strict=True)]
    table = pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))
    pq.write_table(table, path, compression="zstd", write_statistics=False)
    return file_digest(path)


def write_metadata(staging: Path, mechanism: str, parameters: Mapping[str, Any], n_rows: int,
                   schema: Schema, files: Mapping[str, str | list[str]],
                   digests: Mapping[str, str]) -> None:
    """Write ``release.json``, the last file of a release (its digest covers itself)."""
    metadata: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "mechanism": mechanism,
        "parameters": dict(parameters),
        "n_rows": int(n_rows),
        "schema": schema.to_json(),
        "files": dict(files),
        "digests": dict(digests),
    }
    metadata["metadata_digest"] = metadata_digest(metadata)
    content = metadata_bytes(metadata)
    if len(content) > MAX_METADATA_BYTES:
        # Loading refuses it (a padded release.json): so is writing it, before it appears.
        raise ReleaseError(f"the release's {METADATA_FILE} would take {len(content):,} bytes, "
                           f"more than a release may ({MAX_METADATA_BYTES:,}): its domains "
                           f"are too large; coarsen the columns first")
    (staging / METADATA_FILE).write_bytes(content)


def commit_release(staging: Path, target: Path, *, overwrite: bool,
                   before_commit: Callable[[], object] | None = None) -> None:
    """Make a staged release appear at ``target``: ``before_commit`` runs first (the files are
    written; if it raises, no release appears), then the staging directory is committed
    atomically, over ``target`` only when ``overwrite`` and it holds a release and nothing
    else (`ppdp.release.target.require_replaceable_release`)."""
    if before_commit is not None:
        before_commit()
    commit_directory(staging, target, overwrite=overwrite,
                     replaceable=require_replaceable_release)
