"""The Release contract: what a mechanism publishes, how it is saved and how count queries are
answered from it.

A Release holds what is published and nothing more; its ``parameters`` hold exactly what the
estimator and the guarantee need. ``count`` returns an Estimate (or a GroupedEstimate);
``save`` writes the release directory atomically (`ppdp.io.storage`), ``release.json`` last
with a SHA-256 digest of every file and of itself. A release that publishes rows
(`RowsRelease`) counts, once loaded, from its files with the engine that loaded it
(`ppdp.plan.engine.ScannedFiles`) and reads the rows only when asked."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, overload

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.errors import ReleaseError
from ppdp.estimate import Estimate, GroupedEstimate, estimates_table
from ppdp.frames import as_frame, check_library
from ppdp.io.storage import staged_directory
from ppdp.plan.blocks import GROUP_COLUMN, GROUP_COUNT, offset_groups
from ppdp.plan.engine import ScannedFiles
from ppdp.plan.order import split_parts
from ppdp.query.binding import BoundQuery, bind
from ppdp.query.cube import Cube
from ppdp.query.grouped import grouped, require_ungrouped
from ppdp.query.row_counts import RowCounter
from ppdp.query.scan_cube import ScanCube
from ppdp.query.syntax import Query
from ppdp.release.arrow import rows_from_arrow, rows_to_arrow
from ppdp.release.target import check_target
from ppdp.release.write import (
    commit_release,
    write_counted_parts,
    write_metadata,
    write_parts,
    write_row_counts,
    write_summary,
)


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
        """The release's name (its directory's name once saved or loaded). A query's FROM may
        name any table: a release holds one, and a query is written for the table it was
        published from (``FROM german`` on german.csv), whose name the release does not record
        (recording it would change every release's bytes)."""
        self.part_rows: tuple[int, ...] | None = None
        """Rows of each Parquet part of the published rows, in order (None: one part)."""
        self.block_rows: dict[str, tuple[int, ...]] | None = None
        """Rows of each block's part of each published table, by stem, for a release
        published in blocks (`ppdp.plan.blocks`; None: one part)."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({self.n_rows} rows; {params})"

    # -- answering queries ----------------------------------------------------------------

    def count(self, query: str | Query) -> Estimate | GroupedEstimate:
        """Estimate a count query (SQL text or Query) from the release."""
        bound = bind(query, self.schema, table_name=self.name, any_table=True)
        values, stderr = self._estimate([bound])[0]
        return self._answer(bound, values, stderr)

    def _answer(self, bound: BoundQuery, values: np.ndarray, stderr: np.ndarray | None,
                unconverged: np.ndarray | None = None) -> Estimate | GroupedEstimate:
        """One query's estimates as `count` returns them; ``unconverged`` marks the cells
        whose iterative estimator stopped before converging (``Estimate.converged``)."""
        if bound.group_by:
            keep = np.ones(values.shape, dtype=bool) if self.answers_every_key else None
            return grouped(self.schema, bound.group_by, values, stderr, keep=keep,
                           interval=self._interval, unconverged=unconverged)
        answer = self._interval(float(values), None if stderr is None or np.isnan(stderr)
                                else float(stderr))
        if unconverged is not None and bool(np.any(unconverged)):
            answer = replace(answer, converged=False)
        return answer

    def _interval(self, value: float, stderr: float | None) -> Estimate:
        """The Estimate for a value and standard error (normal 95 % interval by default)."""
        return Estimate.with_stderr(value, stderr)

    @overload
    def count_all(self, queries: Iterable[str | Query], *, frame: None = None
                  ) -> tuple[np.ndarray, np.ndarray]: ...

    @overload
    def count_all(self, queries: Iterable[str | Query], *, frame: str) -> Any: ...

    def count_all(self, queries: Iterable[str | Query], *, frame: str | None = None
                  ) -> tuple[np.ndarray, np.ndarray] | Any:
        """Estimates and standard errors (NaN where none) of many ungrouped queries at once.

        With ``frame`` (``"pandas"``, ``"polars"`` or ``"arrow"``), a data frame instead: one
        row per query, its text in ``query``, then ``estimate``, ``stderr``, ``ci95_low`` and
        ``ci95_high`` (missing where the release gives none), as `GroupedEstimate.to_frame`.
        """
        if frame is not None:
            check_library(frame)
        bound = [bind(q, self.schema, table_name=self.name, any_table=True)
                 for q in queries]
        for b in bound:
            require_ungrouped(b)
        self._prefetch(bound)
        results = self._estimate(bound)
        values = np.asarray([float(v) for v, _ in results], dtype=np.float64)
        stderr = np.asarray([np.nan if s is None else float(s) for _, s in results])
        if frame is None:
            return values, stderr
        estimates = [self._interval(float(v), None if np.isnan(s) else float(s))
                     for v, s in zip(values, stderr, strict=True)]
        texts = pa.array([b.query.text for b in bound], type=pa.string())
        return as_frame(estimates_table({"query": texts}, estimates), frame)

    def _prefetch(self, queries: Sequence[BoundQuery]) -> None:
        """Prepare to answer these queries together (a release counting from its files
        counts the tables they need in a few passes); by default nothing."""
        return

    @abstractmethod
    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """For each query, estimates over its GROUP BY domains (a 0-d array when ungrouped)
        and standard errors (NaN where unknown) or None."""

    # -- the published tables ---------------------------------------------------------------

    main_table: ClassVar[str | None] = "rows"
    """The table `to_arrow`, `to_pandas` and `to_polars` give when none is named (the published
    rows); None where the release has no one main table (Anatomy's two, ambiguity's several)."""

    def tables(self) -> dict[str, pa.Table]:
        """The published tables by name (the stems of their files), each whole, as Arrow
        tables of values: what ``save`` writes, for any tool that reads Arrow."""
        return {stem: table if isinstance(table, pa.Table) else pa.concat_tables(table)
                for stem, table in self._tables().items()}

    def to_arrow(self, table: str | None = None) -> pa.Table:
        """One published table as an Arrow table: the one ``table`` names (a key of
        `tables`), by default `main_table`."""
        tables = self.tables()
        name = self.main_table if table is None else table
        if name is None:
            raise ReleaseError(f"a {self.mechanism} release publishes {len(tables)} tables; "
                               f"name one: {', '.join(map(repr, tables))}")
        if name not in tables:
            raise ReleaseError(f"a {self.mechanism} release has no table {name!r}; its tables: "
                               f"{', '.join(map(repr, tables))}")
        return tables[name]

    def to_pandas(self, table: str | None = None) -> Any:
        """One published table (see `to_arrow`) as a pandas DataFrame, values as categoricals
        (pandas is the ``dataframes`` extra)."""
        return as_frame(self.to_arrow(table), "pandas")

    def to_polars(self, table: str | None = None) -> Any:
        """One published table (see `to_arrow`) as a polars DataFrame."""
        return as_frame(self.to_arrow(table), "polars")

    # -- files ------------------------------------------------------------------------------

    @abstractmethod
    def _tables(self) -> dict[str, pa.Table]:
        """The published tables by file stem."""

    @classmethod
    @abstractmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        """Rebuild a release from its published tables (already validated to exist)."""

    @classmethod
    def _joined(cls, releases: Sequence[Release], parameters: Mapping[str, Any]) -> Release:
        """The releases of the blocks of one publication as one (`ppdp.plan.blocks`): each
        table the blocks' tables in order, group ids moved past the earlier blocks' groups,
        saved in a part per block; what a loader builds from the files of the blocks."""
        parts: dict[str, list[pa.Table]] = {}
        groups = 0
        for release in releases:
            for stem, published in release._tables().items():
                parts.setdefault(stem, []).append(offset_groups(published, groups))
            groups += int(release.parameters.get(GROUP_COUNT, 0))
        joined = cls._from_tables(releases[0].schema, parameters,
                                  sum(release.n_rows for release in releases),
                                  {stem: pa.concat_tables(tables)
                                   for stem, tables in parts.items()})
        joined.block_rows = {stem: tuple(t.num_rows for t in tables)
                             for stem, tables in parts.items()}
        return joined

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """Refuse (ValueError, TypeError, KeyError) the parameters or column roles of a loaded
        release that its mechanism never writes, with the checks the mechanism makes when it is
        built and publishes (a release is trusted only as far as these); none by default."""
        return

    summary: ClassVar[str | None] = None
    """The stem of a summary of the published tables that the publisher writes beside them,
    whole numbers that add up block by block (`_summary_parts`), for a loaded release to count
    from without reading its tables (Anatomy's pair counts); None where there is none."""

    def _summary_parts(self) -> list[Any]:
        """The `summary` of this release (one block of a publication, say) in parts as
        `ppdp.query.row_counts.RowCounter.count_part` gives them, to be added up with
        `RowCounter.add`."""
        raise NotImplementedError(f"a {self.mechanism} release has no summary")

    def _summary_table(self, *, bounded: bool = True) -> pa.Table | None:
        """The `summary` of the whole release, as its file holds it; None when too large to
        be written (unless not ``bounded``: then counted however large, to be kept in
        memory)."""
        counter = RowCounter(bounded=bounded)
        for counted in self._summary_parts():
            counter.add(counted)
        return counter.table()

    scanned: ClassVar[frozenset[str]] = frozenset()
    """Stems whose files `_from_files` takes as paths, to count from without reading them whole
    (none by default: every table is read into memory)."""

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: ScannedFiles) -> Release:
        """Rebuild a release from its other tables and the files (parts in order) of its
        ``scanned`` stems, which it counts from with the engine that loads it
        (``scans.cube``; classes with ``scanned`` stems define it)."""
        raise NotImplementedError(f"{cls.__name__} reads every table into memory")

    def _rows_parts(self) -> tuple[list[Callable[[], pa.Table]], dict[str, pa.Table]] | None:
        """For `save`: the makers of the parts of ``rows`` (the scanned stem of a release of
        rows, whose distinct rows are counted as they are written), each part made, written
        and counted on a worker, then dropped, and the other tables (``rows`` first in
        `_tables`); None where `save` writes `_tables`, as by default."""
        return None

    def _part_bounds(self) -> list[tuple[int, int]]:
        """The rows of each part of ``rows``, as `_tables` and `save` cut them: by
        ``part_rows``, else by ``block_rows``."""
        sizes = self.part_rows if self.part_rows is not None and len(self.part_rows) > 1 \
            else (self.block_rows or {}).get("rows")
        if sizes is None or len(sizes) <= 1:
            return [(0, self.n_rows)]
        ends = np.cumsum(sizes).tolist()
        return list(zip([0, *ends[:-1]], ends, strict=True))

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
            parts = self._rows_parts()
            if parts is not None:
                files["rows"], counts = write_counted_parts(staging, "rows", parts[0], digests)
                write_row_counts(staging, counts, files, digests)
            for stem, tables in (self._tables() if parts is None else parts[1]).items():
                if self.block_rows and isinstance(tables, pa.Table):
                    tables = split_parts(tables, self.block_rows[stem])
                files[stem] = write_parts(staging, stem, tables, digests)
            if self.summary is not None:
                write_summary(staging, self.summary, self._summary_table(), files, digests)
            write_metadata(staging, self.mechanism, self.parameters, self.n_rows, self.schema,
                           files, digests)
            commit_release(staging, target, overwrite=overwrite, before_commit=before_commit)
        self.name = target.resolve().name
        return target


def rows_domains(schema: Schema, extra: Mapping[str, pa.Array] | None = None
                 ) -> dict[str, pa.Array]:
    """The values of published rows' columns in code order, by column: the schema's, and
    ``extra`` columns' (such as each row's sub-table), for a cube over their files."""
    return {**{column.name: column.dictionary() for column in schema.columns}, **(extra or {})}


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
        return {"rows": split_parts(rows_to_arrow(self.schema, self.codes), self.part_rows)}

    def _rows_parts(self) -> tuple[list[Callable[[], pa.Table]], dict[str, pa.Table]]:
        # A part's Arrow table made from its slice of the codes when it is written: the
        # dictionary indices (4 bytes a cell) of the whole table at once were new memory
        # that the kernel had to clear, a part's are reused by the next part.
        return [partial(self._rows_part, start, stop)
                for start, stop in self._part_bounds()], {}

    def _rows_part(self, start: int, stop: int) -> pa.Table:
        return rows_to_arrow(self.schema, {name: values[start:stop]
                                           for name, values in self.codes.items()})

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        return cls(schema, parameters, n_rows, rows_from_arrow(schema, tables["rows"], n_rows))

    @classmethod
    def _joined(cls, releases: Sequence[Release], parameters: Mapping[str, Any]) -> Release:
        """The blocks' rows one after the other (their codes joined, not read back from Arrow:
        a third of publishing 10^7 rows of SPLU-Gen in blocks); rows carry no group ids."""
        rows = [release for release in releases if isinstance(release, RowsRelease)]
        if len(rows) < len(releases) or GROUP_COLUMN in releases[0].schema:
            return super()._joined(releases, parameters)
        joined = cls(releases[0].schema, parameters, sum(r.n_rows for r in rows),
                     {name: np.concatenate([r.codes[name] for r in rows])
                      for name in rows[0].codes})
        joined.block_rows = {"rows": tuple(r.n_rows for r in rows)}
        return joined

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: ScannedFiles) -> Release:
        return cls(schema, parameters, n_rows, scans.cube("rows", rows_domains(schema), n_rows))
