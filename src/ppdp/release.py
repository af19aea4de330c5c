"""The Release contract: what a mechanism publishes, how it is saved and loaded, and how
count queries are answered from it.

A release directory holds ``release.json`` (format version, mechanism, public parameters,
schema and domains, file list) and one or more Parquet files. It is written to a temporary
directory beside the target and renamed into place, so a failed write leaves nothing behind.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.errors import ReleaseError, SchemaError
from ppdp.query import BoundQuery, Cube, Query, bind, count_histogram
from ppdp.table import Schema, Table

FORMAT_NAME = "ppdp-release"
FORMAT_VERSION = 1
METADATA_FILE = "release.json"

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
    bound = bind(query, table.schema)
    counts = count_histogram(table.cube, bound.predicate, bound.group_by)
    if bound.group_by:
        return grouped(table.schema, bound.group_by, counts, None, exact=True)
    return Estimate.exact(float(counts))


def exact_counts(table: Table, queries: Iterable[str | Query]) -> np.ndarray:
    """True answers of many ungrouped count queries, sharing contingency tables."""
    cube = table.cube
    result = []
    for query in queries:
        bound = bind(query, table.schema)
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

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({self.n_rows} rows; {params})"

    # -- answering queries ----------------------------------------------------------------

    def count(self, query: str | Query) -> Estimate | GroupedEstimate:
        """Estimate a count query (SQL text or Query) from the release."""
        bound = bind(query, self.schema)
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
        bound = [bind(q, self.schema) for q in queries]
        for b in bound:
            _require_ungrouped(b)
        results = self._estimate(bound)
        values = np.asarray([float(v) for v, _ in results], dtype=np.float64)
        stderr = np.asarray([np.nan if s is None else float(s) for _, s in results])
        return values, stderr

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

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the release atomically: a temporary directory beside the target, then rename."""
        target = Path(directory)
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target} already exists; choose another directory or pass "
                                  f"overwrite=True (CLI: --overwrite)")
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial",
                                          dir=target.parent))
        try:
            files = {}
            for stem, table in self._tables().items():
                name = f"{stem}.parquet"
                pq.write_table(table, temporary / name, compression="zstd")
                files[stem] = name
            metadata = {
                "format": FORMAT_NAME,
                "format_version": FORMAT_VERSION,
                "mechanism": self.mechanism,
                "parameters": self.parameters,
                "n_rows": self.n_rows,
                "schema": self.schema.to_json(),
                "files": files,
            }
            (temporary / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
            _fsync_directory(temporary)
            if target.exists():
                previous = target.with_name(f".{target.name}.previous")
                if previous.exists():
                    shutil.rmtree(previous)
                target.rename(previous)
                temporary.rename(target)
                shutil.rmtree(previous)
            else:
                temporary.rename(target)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        return target


def _fsync_directory(directory: Path) -> None:
    for path in directory.iterdir():
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


def load_release(directory: str | os.PathLike[str]) -> Release:
    """Read and validate a release directory written by `Release.save`."""
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
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"{meta_path} is corrupt: {exc}") from exc
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise ReleaseError(f"{meta_path} is not a ppdp release description")
    version = metadata.get("format_version")
    if not isinstance(version, int):
        raise ReleaseError(f"{meta_path} has no valid format_version")
    if version > FORMAT_VERSION:
        raise ReleaseError(f"{root} was written in release format {version}, newer than this "
                           f"ppdp reads ({FORMAT_VERSION}); upgrade ppdp to read it")
    try:
        mechanism = metadata["mechanism"]
        release_class = Release.registry[mechanism]
    except KeyError as exc:
        raise ReleaseError(f"{meta_path} names an unknown mechanism {exc}; known: "
                           f"{sorted(Release.registry)}") from exc
    try:
        schema = Schema.from_json(metadata["schema"])
        parameters = dict(metadata["parameters"])
        n_rows = int(metadata["n_rows"])
        files = dict(metadata["files"])
    except (KeyError, TypeError, ValueError, SchemaError) as exc:
        raise ReleaseError(f"{meta_path} is incomplete or invalid: {exc}") from exc
    tables = {}
    for stem, name in files.items():
        path = root / name
        if not path.is_file() or Path(name).name != name:
            raise ReleaseError(f"{root} is missing its data file {name!r}")
        try:
            tables[stem] = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ReleaseError(f"{path} is corrupt: {exc}") from exc
    try:
        return release_class._from_tables(schema, parameters, n_rows, tables)
    except (KeyError, SchemaError, ValueError) as exc:
        raise ReleaseError(f"{root} does not match its {METADATA_FILE}: {exc}") from exc


# -- helpers for mechanisms that publish rows ----------------------------------------------


def rows_to_arrow(schema: Schema, codes: Mapping[str, np.ndarray],
                  extra: Mapping[str, np.ndarray] | None = None) -> pa.Table:
    """Published rows as values (dictionary-encoded Arrow columns), readable by any tool."""
    arrays, names = [], []
    for column in schema.columns:
        dictionary = pa.array(list(column.domain))
        indices = pa.array(np.asarray(codes[column.name]).astype(np.int32, copy=False))
        arrays.append(pa.DictionaryArray.from_arrays(indices, dictionary))
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
        array = table.column(column.name).combine_chunks()
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        value_set = pa.array(list(column.domain))
        try:
            if not array.type.equals(value_set.type):
                array = pc.cast(array, value_set.type)
            indices = pc.index_in(array, value_set=value_set)
        except pa.ArrowException as exc:
            raise ValueError(f"column {column.name!r} has type {array.type}, not "
                             f"{value_set.type}") from exc
        if indices.null_count:
            raise ValueError(f"column {column.name!r} holds values outside its domain")
        codes[column.name] = indices.to_numpy(zero_copy_only=False).astype(column.dtype)
    return codes


class RowsRelease(Release):
    """A release that publishes one row per input row (randomized or not) as ``rows.parquet``."""

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray]) -> None:
        super().__init__(schema, parameters, n_rows)
        self.codes = dict(codes)
        self._cube = Cube(self.codes, schema.sizes(), n_rows)

    def _tables(self) -> dict[str, pa.Table]:
        return {"rows": rows_to_arrow(self.schema, self.codes)}

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        return cls(schema, parameters, n_rows, rows_from_arrow(schema, tables["rows"], n_rows))
