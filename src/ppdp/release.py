"""The Release contract: what a mechanism publishes, how it is saved and loaded, and how
count queries are answered from it.

A release directory holds ``release.json`` (format version, mechanism, public parameters,
schema and declared domains, file list, SHA-256 digests of every file and of itself) and one or
more Parquet files. It is staged beside the target and committed atomically (`ppdp.storage`);
loading verifies every digest before reading a file (files verified before and unchanged since,
same inode, size, modification and status-change times, are not hashed again: see
`_verify_digests`). The digests catch accidents, swapped files and careless edits; they are not
a signature (anyone can recompute them).

A table may be written in parts (``files`` then lists their names, in order). Releases that
publish rows (`RowsRelease`, and the perturbation releases) are loaded lazily when Polars
(1.31 or later) is installed: their rows stay in the Parquet files, and counts come from the
counts of their distinct rows, which the publisher wrote beside them (``row_counts.parquet``,
`ppdp.row_counts`): a release of 10^9 rows loads in about two seconds and answers a query in
milliseconds. A release without them (too many distinct rows) is checked once on loading by a
pass that counts its distinct rows (or, when there are too many, counts come from streaming
aggregations over the files): see `ppdp.query.ScanCube`. What that pass finds is kept in the
user's cache directory by the files' digests, so that loading the release again reads no row.
Its directory must stay in place while it is used (files replaced or removed since loading are
refused). Other releases are read into memory, their parts concatenated, except those loaded with
``engine="spark"`` whose ``scanned_on_spark`` names further stems (Anatomy's, Mondrian's,
ambiguity's and alpha-beta's tables of rows and groups, counted on Spark by `ppdp.spark`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.errors import ReleaseError, SchemaError
from ppdp.query import (
    BoundQuery,
    Cube,
    FileIdentity,
    Query,
    ScanCube,
    bind,
    cache_directory,
    count_histogram,
    encode_values,
    scan_engine_available,
    write_cache_file,
)
from ppdp.row_counts import ROW_COUNTS, count_rows
from ppdp.storage import commit_directory, staged_directory
from ppdp.table import Schema, Table

FORMAT_NAME = "ppdp-release"
FORMAT_VERSION = 2
METADATA_FILE = "release.json"
VERIFIED_FORMAT = 1
"""Version of the files remembering verified digests in the user's cache; others are
ignored."""

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """An estimated count with its standard error and 95 % interval where the maths gives one.

    Intervals are the normal approximation ``value ± 1.96·stderr`` (lower end clipped at 0)
    unless a mechanism knows an exact one.
    """

    value: float
    stderr: float | None = None
    ci95: tuple[float, float] | None = None

    @classmethod
    def exact(cls, value: float) -> Estimate:
        return cls(float(value), 0.0, (float(value), float(value)))

    @classmethod
    def with_stderr(cls, value: float, stderr: float | None) -> Estimate:
        if stderr is None or not math.isfinite(stderr):
            return cls(float(value), None, None)
        half = Z95 * stderr
        return cls(float(value), float(stderr), (max(0.0, value - half), value + half))

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": self.value, "stderr": self.stderr,
                "ci95": list(self.ci95) if self.ci95 is not None else None}


@dataclass(frozen=True)
class GroupedEstimate:
    """Estimates of a GROUP BY query, one per key (a dict from group column to value)."""

    columns: tuple[str, ...]
    groups: tuple[tuple[dict[str, Any], Estimate], ...]

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, key: Mapping[str, Any] | tuple[Any, ...] | Any) -> Estimate:
        if not isinstance(key, Mapping):
            values = key if isinstance(key, tuple) else (key,)
            key = dict(zip(self.columns, values, strict=True))
        for group, estimate in self.groups:
            if group == dict(key):
                return estimate
        return Estimate.exact(0.0) if self._all_exact() else Estimate(0.0)

    def _all_exact(self) -> bool:
        return all(e.stderr == 0.0 for _, e in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {"groups": [{"key": key, **estimate.to_dict()} for key, estimate in self.groups]}


def grouped(schema: Schema, group_by: Sequence[str], values: np.ndarray,
            stderr: np.ndarray | None, *, keep: np.ndarray | None = None,
            exact: bool = False,
            interval: Callable[[float, float | None], Estimate] = Estimate.with_stderr,
            ) -> GroupedEstimate:
    """Turn dense arrays over the group columns' domains into a GroupedEstimate.

    ``keep`` marks the keys to report (default: those with a non-zero estimate).
    """
    keep = values != 0 if keep is None else keep
    domains = [schema[c].domain for c in group_by]
    groups = []
    for index in zip(*np.nonzero(keep), strict=True):
        key = {c: domains[i][j] for i, (c, j) in enumerate(zip(group_by, index, strict=True))}
        value = float(values[index])
        if exact:
            estimate = Estimate.exact(value)
        else:
            estimate = interval(value, None if stderr is None else float(stderr[index]))
        groups.append((key, estimate))
    return GroupedEstimate(tuple(group_by), tuple(groups))


def exact_count(table: Table, query: str | Query) -> Estimate | GroupedEstimate:
    """The true answer of a count query on a table."""
    bound = bind(query, table.schema, table_name=table.name)
    counts = count_histogram(table.cube, bound.predicate, bound.group_by)
    if bound.group_by:
        return grouped(table.schema, bound.group_by, counts, None, exact=True)
    return Estimate.exact(float(counts))


def exact_counts(table: Table, queries: Iterable[str | Query]) -> np.ndarray:
    """True answers of many ungrouped count queries, sharing contingency tables."""
    cube = table.cube
    result = []
    for query in queries:
        bound = bind(query, table.schema, table_name=table.name)
        _require_ungrouped(bound)
        result.append(float(count_histogram(cube, bound.predicate, ())))
    return np.asarray(result, dtype=np.float64)


def _require_ungrouped(bound: BoundQuery) -> None:
    if bound.group_by:
        raise ValueError(f"batch counting takes ungrouped queries; {bound.query.text!r} has "
                         f"GROUP BY (use count() for it)")


class Release(ABC):
    """What a mechanism publishes: rows and public parameters, nothing more.

    Subclasses hold their published data, answer ``count`` and know how to write and read
    their files. ``parameters`` holds exactly what the estimator and the guarantee need.
    """

    mechanism: ClassVar[str]
    registry: ClassVar[dict[str, type[Release]]] = {}
    answers_every_key: ClassVar[bool] = False
    """GROUP BY lists every key of the domain product, not only non-zero estimates."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "mechanism" in cls.__dict__:
            Release.registry[cls.mechanism] = cls

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int) -> None:
        self.schema = schema
        self.parameters = dict(parameters)
        self.n_rows = int(n_rows)
        self.name: str | None = None
        """The release's name in queries' FROM (its directory's name once saved or loaded)."""
        self.part_rows: tuple[int, ...] | None = None
        """Rows of each Parquet part of the published rows, in order (None: one part)."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({self.n_rows} rows; {params})"

    # -- answering queries ----------------------------------------------------------------

    def count(self, query: str | Query) -> Estimate | GroupedEstimate:
        """Estimate a count query (SQL text or Query) from the release."""
        bound = bind(query, self.schema, table_name=self.name)
        values, stderr = self._estimate([bound])[0]
        if bound.group_by:
            keep = np.ones(values.shape, dtype=bool) if self.answers_every_key else None
            return grouped(self.schema, bound.group_by, values, stderr, keep=keep,
                           interval=self._interval)
        return self._interval(float(values), None if stderr is None or np.isnan(stderr)
                              else float(stderr))

    def _interval(self, value: float, stderr: float | None) -> Estimate:
        """The Estimate for a value and standard error (normal 95 % interval by default)."""
        return Estimate.with_stderr(value, stderr)

    def count_all(self, queries: Iterable[str | Query]) -> tuple[np.ndarray, np.ndarray]:
        """Estimates and standard errors (NaN where none) of many ungrouped queries at once."""
        bound = [bind(q, self.schema, table_name=self.name) for q in queries]
        for b in bound:
            _require_ungrouped(b)
        self._prefetch(bound)
        results = self._estimate(bound)
        values = np.asarray([float(v) for v, _ in results], dtype=np.float64)
        stderr = np.asarray([np.nan if s is None else float(s) for _, s in results])
        return values, stderr

    def _prefetch(self, queries: Sequence[BoundQuery]) -> None:
        """Prepare to answer these queries together (a release counting from its files
        counts the tables they need in a few passes); by default nothing."""
        return

    @abstractmethod
    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """For each query, estimates over its GROUP BY domains (a 0-d array when ungrouped)
        and standard errors (NaN where unknown) or None."""

    # -- files ------------------------------------------------------------------------------

    @abstractmethod
    def _tables(self) -> dict[str, pa.Table]:
        """The published tables by file stem."""

    @classmethod
    @abstractmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        """Rebuild a release from its published tables (already validated to exist)."""

    scanned: ClassVar[frozenset[str]] = frozenset()
    """Stems whose files `_from_files` takes as paths, to count from without reading them whole
    (none by default: every table is read into memory)."""

    @classmethod
    def scanned_on_spark(cls, stems: Iterable[str]) -> frozenset[str]:
        """Of a release's file stems, those further taken as paths by `_from_files` when it
        is loaded with ``engine="spark"`` (counted on Spark, too large to read on the driver):
        none by default."""
        return frozenset()

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: Mapping[str, Sequence[Path]]
                    ) -> Release:
        """Rebuild a release from its other tables and the files (parts in order) of its
        ``scanned`` stems, which it counts from (classes with ``scanned`` stems define it)."""
        raise NotImplementedError(f"{cls.__name__} reads every table into memory")

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False,
             before_commit: Callable[[], Any] | None = None) -> Path:
        """Write the release to a new directory, atomically (see `ppdp.storage`).

        ``overwrite`` replaces a directory only if it holds nothing but a ppdp release.
        ``release.json`` records a SHA-256 digest of every file and of itself, checked on load.
        ``before_commit`` runs once the files are written and before the release appears; if
        it raises, no release appears (alpha-beta records its views' state there).
        """
        target = Path(directory)
        check_target(target, overwrite)
        with staged_directory(target) as staging:
            files: dict[str, str | list[str]] = {}
            digests: dict[str, str] = {}
            for stem, tables in self._tables().items():
                files[stem] = write_parts(staging, stem, tables, digests)
                if stem == "rows" and stem in self.scanned:
                    write_row_counts(staging, count_rows(tables), files, digests)
            write_metadata(staging, self.mechanism, self.parameters, self.n_rows, self.schema,
                           files, digests)
            if before_commit is not None:
                before_commit()
            commit_directory(staging, target, overwrite=overwrite,
                             replaceable=require_replaceable_release)
        self.name = target.resolve().name
        return target


def part_names(stem: str, parts: int) -> list[str]:
    """File names of a published table written in ``parts`` parts (one: ``STEM.parquet``)."""
    if parts == 1:
        return [f"{stem}.parquet"]
    return [f"{stem}-{index:05d}.parquet" for index in range(parts)]


def write_parts(staging: Path, stem: str, tables: pa.Table | list[pa.Table],
                digests: dict[str, str]) -> str | list[str]:
    """Write one published table, whole or as its list of parts, under ``stem``'s file names;
    its entry of ``files`` (a name, or the parts' names), each file's digest put in
    ``digests``."""
    parts = tables if isinstance(tables, list) else [tables]
    names = part_names(stem, len(parts))
    for name, table in zip(names, parts, strict=True):
        digests[name] = write_parquet(staging / name, table)
    return names[0] if len(names) == 1 else names


def write_row_counts(staging: Path, counts: pa.Table | None,
                     files: dict[str, str | list[str]], digests: dict[str, str]) -> None:
    """Write the counts of the rows' distinct rows (`ppdp.row_counts`), if they were
    counted, into ``files`` and ``digests``."""
    if counts is not None:
        files[ROW_COUNTS] = write_parts(staging, ROW_COUNTS, counts, digests)


def _joined(parts: list[pa.Table]) -> pa.Table:
    """A file's parts as one table: the same columns of the same types, each optional if it
    is so in any part (a part of an earlier version, or one with nulls; `write_parquet`
    stores a column without nulls as required)."""
    first = parts[0].schema
    if any(part.schema.names != first.names for part in parts):
        raise pa.ArrowInvalid("the parts have different column names")
    fields = []
    for index, field in enumerate(first):
        stored = [part.schema.field(index) for part in parts]
        if any(not other.type.equals(field.type) for other in stored):
            raise pa.ArrowInvalid(f"the parts differ in the type of column {field.name!r}")
        fields.append(field.with_nullable(any(other.nullable for other in stored)))
    schema = pa.schema(fields, first.metadata)
    return pa.concat_tables([pa.Table.from_arrays(part.columns, schema=schema)
                             for part in parts])


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
    (staging / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")


def release_file_names(files: Mapping[str, Any]) -> list[str]:
    """Every data file a release's ``files`` entry lists (a name, or a list of parts)."""
    names: list[str] = []
    for entry in files.values():
        names.extend(entry if isinstance(entry, list) else [entry])
    return names


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, as hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_digests(paths: Sequence[Path]) -> list[str]:
    """SHA-256 of several files, as hex, hashed on a few threads at once.

    hashlib releases the GIL while it hashes, so the parts of a large release are hashed on
    several cores; a single file is hashed by one thread."""
    workers = min(len(paths), os.cpu_count() or 1, 4)
    if workers <= 1:
        return [file_digest(path) for path in paths]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(file_digest, paths))


def metadata_digest(metadata: Mapping[str, Any]) -> str:
    """SHA-256 of ``release.json``'s content (all but this digest), in canonical JSON."""
    content = {k: v for k, v in metadata.items() if k != "metadata_digest"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse a target that exists (unless ``overwrite`` and it holds only a release) before
    any work is done."""
    if os.path.lexists(target):
        if not overwrite:
            raise FileExistsError(f"{target} already exists; choose another directory or "
                                  f"pass overwrite=True (CLI: --overwrite)")
        require_replaceable_release(target)


def require_replaceable_release(path: Path) -> None:
    """Raise unless ``path`` is a directory holding a ppdp release and nothing else, so that
    ``overwrite`` never deletes a user's other files."""
    if path.is_symlink() or not path.is_dir():
        kind = "a symbolic link" if path.is_symlink() else "a file"
        raise ReleaseError(f"{path} is {kind}, not a ppdp release directory; overwrite replaces "
                           f"only a release; choose another output path")
    try:
        metadata = json.loads((path / METADATA_FILE).read_text())
        files = set(release_file_names(metadata["files"])) \
            if metadata.get("format") == FORMAT_NAME else None
    except (OSError, ValueError, RecursionError, AttributeError, KeyError, TypeError):
        files = None
    if files is None:
        raise ReleaseError(f"{path} is not a ppdp release (no valid {METADATA_FILE}); overwrite "
                           f"replaces only a release, so its content is left alone; choose "
                           f"another output path")
    others = sorted(p.name for p in path.iterdir() if p.name not in files | {METADATA_FILE})
    if others:
        shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
        raise ReleaseError(f"{path} holds files that are not part of its release ({shown}); "
                           f"overwrite would delete them, so it is refused; move them or choose "
                           f"another output path")


LOAD_ENGINES = ("auto", "spark")
"""How a loaded release counts: ``auto`` from its tables in memory, or from streaming Polars
aggregations over the files of its rows (`ppdp.query.ScanCube`); ``spark`` from Spark
aggregations over the files of its rows (`ppdp.spark.SparkCube`)."""


def load_release(directory: str | os.PathLike[str], engine: str = "auto") -> Release:
    """Read a release directory written by `Release.save`, verifying every digest.

    ``engine`` (one of `LOAD_ENGINES`) says what counts the rows of a release that publishes
    rows: ``spark`` answers every count with Spark aggregations (on the active Spark session,
    or one `ppdp.spark.spark_session` starts), the estimators unchanged."""
    if engine not in LOAD_ENGINES:
        raise ValueError(f"engine must be one of {', '.join(LOAD_ENGINES)}, not {engine!r}")
    # Mechanism modules register their release classes on import.
    import ppdp.mechanisms  # noqa: F401

    root = Path(directory)
    if not root.is_dir():
        raise ReleaseError(f"{root} is not a release directory (it does not exist or is a file)")
    meta_path = root / METADATA_FILE
    if not meta_path.is_file():
        raise ReleaseError(f"{root} has no {METADATA_FILE}; it is not a ppdp release")
    try:
        metadata = json.loads(meta_path.read_text())
    except (ValueError, RecursionError, OSError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else _first_line(exc)
        raise ReleaseError(f"{meta_path} is corrupt: {reason}") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise ReleaseError(f"{meta_path} is not a ppdp release description")
    version = metadata.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReleaseError(f"{meta_path} has no valid format_version")
    if version > FORMAT_VERSION:
        raise ReleaseError(f"{root} was written in release format {version}, newer than this "
                           f"ppdp reads ({FORMAT_VERSION}); upgrade ppdp to read it")
    if version < FORMAT_VERSION:
        raise ReleaseError(f"{root} was written in release format {version}, without the "
                           f"digests this ppdp verifies; publish the release again")
    files, digests = metadata.get("files"), metadata.get("digests")
    if not _valid_file_list(files, digests):
        raise ReleaseError(f"{meta_path} lacks a valid file list and digests; it is not a "
                           f"complete ppdp release")
    if metadata.get("metadata_digest") != metadata_digest(metadata):
        raise ReleaseError(f"{meta_path} was changed after the release was written (its digest "
                           f"does not match); the release cannot be trusted: publish it again")
    for name in digests:
        if Path(name).name != name or not (root / name).is_file():
            raise ReleaseError(f"{root} is missing its data file {name!r}")
    identities = _verify_digests(root, digests, metadata["metadata_digest"])
    from ppdp.mechanisms.base import MECHANISM_MODULES, get_mechanism

    named = metadata.get("mechanism")
    if not isinstance(named, str) or named not in MECHANISM_MODULES:
        raise ReleaseError(f"{meta_path} names an unknown mechanism {named!r}; known: "
                           f"{sorted(MECHANISM_MODULES)}")
    get_mechanism(named)  # imports the module that registers its release
    release_class = Release.registry[named]
    try:
        schema = Schema.from_json(metadata["schema"])
        parameters = dict(metadata["parameters"])
        n_rows = int(metadata["n_rows"])
    except (KeyError, TypeError, ValueError, SchemaError) as exc:
        raise ReleaseError(f"{meta_path} is incomplete or invalid: {exc}") from exc
    if engine == "spark":
        from ppdp.spark import spark_session

        spark_session()  # refuses, in one line, without pyspark or Java
    # Without Polars (or Spark) there is no engine to count from the files: every table is read.
    if engine == "spark":
        scanned = release_class.scanned | release_class.scanned_on_spark(files)
    else:
        scanned = release_class.scanned if scan_engine_available() else frozenset()
    tables: dict[str, pa.Table] = {}
    scans: dict[str, list[Path]] = {}
    part_rows: dict[str, tuple[int, ...]] = {}
    for stem, entry in files.items():
        paths = [root / name for name in (entry if isinstance(entry, list) else [entry])]
        if stem in scanned:
            # Only the footers now (a file without one is not Parquet); the rows stay there.
            footers = [_read_parquet(path, pq.read_metadata) for path in paths]
            part_rows[stem] = tuple(footer.num_rows for footer in footers)
            scans[stem] = paths
            continue
        parts = [_read_parquet(path, pq.read_table) for path in paths]
        part_rows[stem] = tuple(part.num_rows for part in parts)
        try:
            tables[stem] = parts[0] if len(parts) == 1 else _joined(parts)
        except pa.ArrowException as exc:
            raise ReleaseError(f"{root} does not match its {METADATA_FILE}: the parts of "
                               f"{stem!r} have different columns: {_first_line(exc)}") from exc
    verified = _VERIFIED_DIGESTS.set(dict(zip(identities, digests.values(), strict=True)))
    counted = _ROW_COUNTS.set(tables.pop(ROW_COUNTS, None))
    on_spark = _ON_SPARK.set(engine == "spark")
    try:
        release = release_class._from_files(schema, parameters, n_rows, tables, scans) \
            if scans else release_class._from_tables(schema, parameters, n_rows, tables)
    except Exception as exc:  # any failure to rebuild means the files disagree
        raise ReleaseError(f"{root} does not match its {METADATA_FILE}: "
                           f"{_first_line(exc) or type(exc).__name__}") from exc
    finally:
        _VERIFIED_DIGESTS.reset(verified)
        _ROW_COUNTS.reset(counted)
        _ON_SPARK.reset(on_spark)
    release.name = root.resolve().name
    if len(part_rows.get("rows", ())) > 1:
        # Saved again, the rows keep their parts.
        release.part_rows = part_rows["rows"]
    return release


def _verify_digests(root: Path, digests: Mapping[str, str], release_digest: str
                    ) -> list[FileIdentity]:
    """Check every file of a release against its SHA-256 digest; their identities, taken
    before hashing (a file replaced meanwhile does not inherit the digest).

    Hashing costs about a second per GB and core, so files already verified whose inode,
    size, modification and status-change times are unchanged are not hashed again: they are
    remembered in the user's cache (`ppdp.query.cache_directory`), per release and directory.
    Any write to a file, and any reset of its modification time, moves its status-change time,
    which no user can set; so this is as safe as hashing, short of someone who may write to
    the cache. Only on POSIX systems, where the status-change time is that."""
    names = list(digests)
    paths = [root / name for name in names]
    stats = [os.stat(path) for path in paths]
    states = [(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats]
    memo = f"{hashlib.sha256(f'{release_digest}:{root.resolve()}'.encode()).hexdigest()}.json"
    verified = _read_verified(memo) if os.name == "posix" else {}
    unknown = [i for i, state in enumerate(states) if verified.get(state) != digests[names[i]]]
    for i, actual in zip(unknown, file_digests([paths[i] for i in unknown]), strict=True):
        if actual != digests[names[i]]:
            raise ReleaseError(f"{paths[i]} does not match the digest in {METADATA_FILE} "
                               f"(replaced or damaged); the release cannot be trusted: publish "
                               f"it again")
    if unknown and os.name == "posix":
        content = json.dumps({"format": VERIFIED_FORMAT, "files": [
            [*state, digests[name]] for state, name in zip(states, names, strict=True)]})
        write_cache_file(memo, lambda handle: handle.write(content.encode()))
    return [state[:4] for state in states]


def _read_verified(name: str) -> dict[tuple[int, ...], str]:
    """Digests of files verified before, by their state (device, inode, size, times)."""
    directory = cache_directory()
    try:
        content = json.loads((directory / name).read_text()) if directory else None
        if not isinstance(content, dict) or content.get("format") != VERIFIED_FORMAT:
            return {}
        return {tuple(int(v) for v in entry[:5]): str(entry[5]) for entry in content["files"]}
    # Whatever is wrong with the file (missing, damaged, edited), every file is hashed.
    except Exception:
        return {}


def _valid_file_list(files: Any, digests: Any) -> bool:
    """Whether ``files`` maps each stem to a file name or a non-empty list of them, no name
    twice, and ``digests`` maps exactly those names to text."""
    if not (isinstance(files, dict) and isinstance(digests, dict)
            and all(isinstance(v, str) for v in digests.values())
            and all(isinstance(entry, str) or (isinstance(entry, list) and entry and all(
                isinstance(name, str) for name in entry)) for entry in files.values())):
        return False
    names = release_file_names(files)
    return len(names) == len(set(names)) and set(names) == set(digests)


def _read_parquet(path: Path, read: Callable[[Path], Any]) -> Any:
    """``read(path)`` (a Parquet table or footer), any failure reported as a corrupt file."""
    try:
        return read(path)
    except (pa.ArrowException, OSError) as exc:
        raise ReleaseError(f"{path} is corrupt: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- helpers for mechanisms that publish rows ----------------------------------------------


def rows_to_arrow(schema: Schema, codes: Mapping[str, np.ndarray],
                  extra: Mapping[str, np.ndarray] | None = None) -> pa.Table:
    """Published rows as values (dictionary-encoded Arrow columns), readable by any tool."""
    arrays, names = [], []
    for column in schema.columns:
        arrays.append(column.dictionary_array(codes[column.name]))
        names.append(column.name)
    for name, values in (extra or {}).items():
        arrays.append(pa.array(values))
        names.append(name)
    return pa.table(arrays, names=names)


def rows_from_arrow(schema: Schema, table: pa.Table, n_rows: int) -> dict[str, np.ndarray]:
    """Re-encode published rows against the schema's domains, checking every value."""
    if table.num_rows != n_rows:
        raise ValueError(f"expected {n_rows} rows, found {table.num_rows}")
    codes = {}
    for column in schema.columns:
        if column.name not in table.column_names:
            raise ValueError(f"column {column.name!r} is missing")
        codes[column.name] = encode_values(column.name, table.column(column.name),
                                           column.dictionary()).astype(column.dtype)
    return codes


_VERIFIED_DIGESTS: ContextVar[Mapping[FileIdentity, str] | None] = ContextVar(
    "ppdp_verified_digests", default=None)
"""While `load_release` rebuilds a release: the SHA-256 of its files, verified, by identity.

Handed to `scan_rows` this way rather than through every release class's ``_from_files``,
they let a ScanCube cache what it reads by the files' content (see `ppdp.query.ScanCube`)."""

_ROW_COUNTS: ContextVar[pa.Table | None] = ContextVar("ppdp_row_counts", default=None)
"""While `load_release` rebuilds a release: the counts of its distinct rows that its publisher
wrote (`ppdp.row_counts`), handed to `scan_rows` like the verified digests."""

_ON_SPARK: ContextVar[bool] = ContextVar("ppdp_on_spark", default=False)
"""While `load_release` rebuilds a release with ``engine="spark"``: `scan_rows` counts on
Spark."""


def scan_rows(schema: Schema, paths: Sequence[Path], n_rows: int,
              extra: Mapping[str, pa.Array] | None = None,
              constants: Sequence[str] = ()) -> ScanCube:
    """A ScanCube over published rows in Parquet files (checked as `rows_from_arrow` checks
    them): the schema's columns, and ``extra`` columns with their values in code order.

    Within `load_release`, the cube gets the counts of the rows' distinct rows that the
    publisher wrote, and counts from those without reading the rows; failing those, the files'
    verified digests, so that its check of the rows is read from the user's cache when the
    same bytes were checked before. Loaded with ``engine="spark"``, a `ppdp.spark.SparkCube`
    instead, which counts with Spark and reads neither."""
    domains = {column.name: column.dictionary() for column in schema.columns}
    if _ON_SPARK.get():
        from ppdp.spark import SparkCube

        return SparkCube(paths, {**domains, **(extra or {})}, n_rows, constants=constants)
    return ScanCube(paths, {**domains, **(extra or {})}, n_rows, constants=constants,
                    digests=_VERIFIED_DIGESTS.get(), row_counts=_ROW_COUNTS.get())


class RowsRelease(Release):
    """A release that publishes one row per input row (randomized or not) as ``rows.parquet``.

    Published, it holds its rows' codes; loaded, it counts from its files (a `ScanCube`) and
    reads the rows only when ``codes`` is asked for.
    """

    scanned = frozenset({"rows"})

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray] | ScanCube) -> None:
        super().__init__(schema, parameters, n_rows)
        self._codes: dict[str, np.ndarray] | None
        self._cube: Cube
        if isinstance(codes, ScanCube):
            self._codes, self._cube = None, codes
        else:
            self._codes = dict(codes)
            self._cube = Cube(self._codes, schema.sizes(), n_rows)

    @property
    def codes(self) -> dict[str, np.ndarray]:
        """Every published row's codes, by column; a loaded release reads them from its files
        on first use (the whole table in memory: counting never needs them)."""
        if self._codes is None:
            assert isinstance(self._cube, ScanCube)
            self._codes = self._cube.read_codes()
        return self._codes

    def _prefetch(self, queries: Sequence[BoundQuery]) -> None:
        if isinstance(self._cube, ScanCube):
            self._cube.prefetch(query.columns for query in queries)

    def _tables(self) -> dict[str, pa.Table]:
        from ppdp.plans import split_parts

        return {"rows": split_parts(rows_to_arrow(self.schema, self.codes), self.part_rows)}

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        return cls(schema, parameters, n_rows, rows_from_arrow(schema, tables["rows"], n_rows))

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: Mapping[str, Sequence[Path]]
                    ) -> Release:
        return cls(schema, parameters, n_rows, scan_rows(schema, scans["rows"], n_rows))
