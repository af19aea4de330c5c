"""The Spark executor of row plans: a table held in a Spark DataFrame, published without
collecting its rows to the driver.

The executor runs a mechanism's `ppdp.plans.RowPlan` as the streaming executor does, with
Spark doing the work over the rows:

1. the domains, the row count and the contingency tables the plan asks for (``histogram``)
   are Spark aggregations; only their domain-sized results reach the driver;
2. the kernel runs in `mapInArrow` over Arrow batches (the same numpy kernel): each batch's
   rows are put in row-id order and cut into runs of consecutive row ids, and each run is
   published as ``kernel(codes, first row id)``, so the keyed draws are those of the
   in-memory executor whatever the partitioning;
3. a plan's summary passes (sdr's `ppdp.plans.QuotaAssignment`) run in `mapInArrow` over the
   same runs, each task taking its runs into a copy of the pass; the histograms the copies
   took in are added up by a Spark aggregation and, with the rows they collected, merged
   into the pass on the driver: the summary one pass over all the rows in order builds;
4. saving exchanges the published rows by part (``part_of`` their keyed rank), sorts each
   part by (rank, row id) and writes it with `ppdp.release.write_parquet` on the executor
   that holds it: the same bytes as the other executors write; the digests and the counts of
   the distinct rows (`ppdp.row_counts`) come back to the driver, which writes
   ``release.json`` last and commits the directory atomically (`ppdp.storage`).

Rows are keyed by a stable *row id*, a column of distinct non-negative integers: one the user
names, or the one `read_parquet` adds (the row's position in its file plus the rows of the
files before it in name order). Spark's ``monotonically_increasing_id()`` is not used: it
encodes the partition a row lands in.

The release key stays on the driver: the tasks get the plan's kernel and the rank stream,
which hold only keys derived from it through BLAKE2b (`ppdp.keyed.stream_key`).
"""

from __future__ import annotations

import copy
import itertools
import os
import pickle
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.errors import PpdpError, SchemaError
from ppdp.io import _check_columns
from ppdp.keyed import KeyedStream, make_key
from ppdp.plans import Pass, RowPlan, Taken, part_count, part_of
from ppdp.query import FileIdentity, ScanCube, encode_values
from ppdp.randomness import RandomState
from ppdp.release import (
    check_target,
    part_names,
    require_replaceable_release,
    rows_to_arrow,
    write_metadata,
    write_parquet,
    write_parts,
    write_row_counts,
)
from ppdp.row_counts import RowCounter
from ppdp.scan import source_schema
from ppdp.sources import MarginalSource
from ppdp.storage import commit_directory, staged_directory
from ppdp.table import Column, Role, encode_column

if TYPE_CHECKING:
    from ppdp.mechanisms.base import Mechanism

ROW_ID = "__ppdp_row_id"
"""The row-id column `read_parquet` adds (never published)."""

MINIMUM_JAVA = 17

_RANK = "__rank"
_PART = "__part"
_FILE = "__file"
_INDEX = "__index"
_OFFSET = "__offset"
_CELL = "__cell"
_COUNT = "__count"
_TOP_BIT = np.uint64(1 << 63)


class SparkUnavailableError(PpdpError):
    """pyspark is not installed, or no Java runtime it can use is."""


class SparkFailedError(PpdpError):
    """Spark could not finish the work (its own error, named on one line)."""


def failure_message(exc: BaseException) -> str:
    """What a Spark failure says on one line: the Python error a task raised (the last
    ``...Error: message`` line of the worker's traceback), else the failure's first line."""
    text = str(exc).strip()
    raised = re.findall(r"^(?:[\w.]+\.)?\w+Error: (.+)$", text, re.MULTILINE)
    return raised[-1] if raised else (text.splitlines() or [type(exc).__name__])[0]


def require_pyspark() -> None:
    """Refuse, in one line, when pyspark is not installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError("the Spark backend needs pyspark: pip install "
                                    "'ppdp[spark]'") from None


def java_version() -> int | None:
    """The major version of the Java runtime Spark would start (``$JAVA_HOME/bin/java``, else
    ``java`` on the PATH), or None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not os.path.exists(java):
        return None
    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True,
                               timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if found is None:
        return None
    major = int(found.group(1))
    # Java 8 and older call themselves "1.8".
    return int(found.group(2) or 0) if major == 1 else major


def require_java() -> None:
    """Refuse, in one line, when no Java runtime of `MINIMUM_JAVA` or later is found."""
    version = java_version()
    if version is None:
        raise SparkUnavailableError(f"the Spark backend needs a Java runtime {MINIMUM_JAVA} or "
                                    f"later; none found (install one, or set JAVA_HOME)")
    if version < MINIMUM_JAVA:
        raise SparkUnavailableError(f"the Spark backend needs Java {MINIMUM_JAVA} or later; "
                                    f"the Java found is {version} (set JAVA_HOME to a newer one)")


def spark_session(app_name: str = "ppdp") -> Any:
    """The active Spark session, or one on the master the Spark configuration names
    (``spark.master`` from ``spark-submit``, ``$MASTER`` or ``spark-defaults.conf``),
    ``local[*]`` when it names none."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    require_java()
    from pyspark import SparkConf

    master = SparkConf().get("spark.master", None) or os.environ.get("MASTER")
    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    if (master or "local").startswith("local"):
        # Local workers run this interpreter (where ppdp is) unless told otherwise.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def read_parquet(spark: Any, path: str | os.PathLike[str]) -> Any:
    """A Parquet file or folder of files as a Spark DataFrame with a stable row id (`ROW_ID`).

    A row's id is its position in its file (Spark's hidden ``_metadata.row_index``) plus the
    rows of the files before its file, in name order: it depends on the files alone, not on
    how Spark splits them into partitions, and equals the row's position in the table the
    in-memory executor reads (the files concatenated in name order)."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(path))
    if ROW_ID in frame.columns:
        raise SchemaError(f"a column is named {ROW_ID!r}, the name of the row id; rename it")
    located = frame.select("*", F.col("_metadata.file_path").alias(_FILE),
                           F.col("_metadata.row_index").alias(_INDEX))
    # One row per file reaches the driver.
    files = located.groupBy(_FILE).count().toArrow().sort_by(_FILE)
    rows = files.column("count").to_numpy()
    offsets = spark.createDataFrame(
        [(name, int(first)) for name, first in zip(files.column(_FILE).to_pylist(),
                                                     np.cumsum(rows) - rows, strict=True)],
        f"{_FILE} string, {_OFFSET} long")
    return located.join(F.broadcast(offsets), _FILE).select(
        *frame.columns, (F.col(_OFFSET) + F.col(_INDEX)).alias(ROW_ID))


def _codes(column: Column, values: pa.Array) -> np.ndarray:
    """The codes of values in a column's domain (-1 for a value outside it)."""
    value_set = column.dictionary()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not values.type.equals(value_set.type):
        values = pc.cast(values, value_set.type)
    return pc.fill_null(pc.index_in(values, value_set=value_set), -1) \
        .to_numpy(zero_copy_only=False).astype(np.int64)


def _in_domain(column: Column, codes: np.ndarray) -> np.ndarray:
    """Codes in the column's type, refused when a value lies outside the domain (the input
    changed since its domains were read)."""
    if codes.size and codes.min() < 0:
        raise SchemaError(f"column {column.name!r} holds a value outside its domain or a "
                          f"missing value (did the input change since it was read?)")
    return codes.astype(column.dtype)


class SparkSource(MarginalSource):
    """A Spark DataFrame as a `ppdp.sources.Source` whose schema, row count and contingency
    tables are Spark aggregations; its rows stay in Spark (no ``batches``: summary passes
    run in Spark tasks, `_run_passes`)."""

    def __init__(self, frame: Any, *, sensitive: Sequence[str] | str | None = None,
                 quasi_identifiers: Sequence[str] | str | None = None,
                 domains: Mapping[str, Sequence[Any]] | None = None, row_id: str = ROW_ID,
                 observed_domains: bool = False) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        if row_id not in frame.columns:
            raise SchemaError(f"the DataFrame has no row-id column {row_id!r}; name one that "
                              f"holds distinct non-negative integers, or read the input with "
                              f"ppdp.spark.read_parquet")
        if not isinstance(frame.schema[row_id].dataType,
                          T.ByteType | T.ShortType | T.IntegerType | T.LongType):
            raise SchemaError(f"the row-id column {row_id!r} must hold integers")
        self.frame, self.row_id, self.name = frame, row_id, None
        names = [name for name in frame.columns if name != row_id]
        _check_columns(sorted(set(domains or {}) - set(names)), names)
        # That the ids are distinct is checked where the kernel runs, on rows sorted by id
        # (`_published`): a distinct count here took as long as the domains (7.5 s at 10^7).
        checked = frame.agg(F.count(F.lit(1)).alias("rows"), F.count(row_id).alias("ids"),
                            F.min(row_id).alias("least")).first()
        if checked["rows"] == 0:
            raise SchemaError("cannot build a table from the DataFrame: it has no rows")
        if checked["ids"] != checked["rows"] or checked["least"] < 0:
            raise SchemaError(f"the row-id column {row_id!r} must hold distinct non-negative "
                              f"integers and no missing value")
        self.n_rows = int(checked["rows"])
        columns, self._marginals = [], {}
        # Every column's distinct values and their counts in one scan (a grouping set a
        # column): the sum of the domains' sizes reaches the driver.
        flags = [f"__grouped{index}" for index in range(len(names))]
        counted = frame.groupingSets([[name] for name in names], *names).agg(
            F.count(F.lit(1)).alias("count"),
            *(F.grouping(name).alias(flag) for name, flag in zip(names, flags, strict=True))
        ).toArrow()
        for name, flag in zip(names, flags, strict=True):
            mine = counted.filter(pc.equal(counted.column(flag), 0))
            values, cells = mine.column(name).combine_chunks(), mine.column("count")
            if values.null_count:
                missing = pc.sum(pc.filter(cells, pc.is_null(values))).as_py()
                raise SchemaError(f"column {name!r} has {missing} missing values; drop or "
                                  f"fill them in Spark first")
            column, codes = encode_column(name, values, Role.QUASI_IDENTIFIER,
                                          (domains or {}).get(name))
            columns.append(column)
            self._marginals[name] = np.bincount(codes, weights=cells.to_numpy(),
                                                minlength=column.size).astype(np.int64)
        self.schema = source_schema(columns, sensitive=sensitive,
                                    quasi_identifiers=quasi_identifiers,
                                    observed_domains=observed_domains)
        self._histograms: dict[tuple[str, ...], np.ndarray] = {}

    @property
    def dropped_rows(self) -> int:
        """Rows left out for missing values: none (a missing value is refused)."""
        return 0

    def _count(self, columns: tuple[str, ...], sizes: list[int]) -> np.ndarray:
        """One Spark aggregation; only the combinations found reach the driver."""
        counted = self.frame.groupBy(*columns).count().toArrow()
        cells = np.ravel_multi_index(
            tuple(_codes(self.schema[c], counted.column(c)) for c in columns), sizes)
        return np.bincount(cells, weights=counted.column("count").to_numpy(),
                           minlength=int(np.prod(sizes))).astype(np.int64)


class SparkCube(ScanCube):
    """A loaded release's rows as a Cube whose contingency tables are Spark aggregations over
    its Parquet files: a table over some columns is one ``groupBy(columns).count()``, and only
    the value combinations found, with their counts, reach the driver (at most the table's
    cells); the release's estimators read the tables as from any Cube.

    Loading checks the files' footers (rows, columns, stored types) as a `ScanCube` does, but
    reads no row and keeps no summary: every table is counted by Spark, each value checked
    against its domain as it reaches the driver. Conditions, GROUP BY and `prefetch` work as
    on a ScanCube, their tables counted this way."""

    def _check(self, digests: Mapping[FileIdentity, str] | None,
               row_counts: pa.Table | None) -> None:
        self._check_footers()

    def _aggregate(self, groups: Sequence[Sequence[str]]
                   ) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
        """For each group of columns, its distinct value combinations (as codes) and their
        row counts: one Spark aggregation per group."""
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        self._require_unchanged()
        results = []
        try:
            frame = spark_session().read.parquet(*self.paths)
            for columns in groups:
                # Longer than every column name: the count cannot clash with a grouped column.
                count = "_" * (1 + max(len(c) for c in columns))
                counted = frame.groupBy(*columns).agg(F.count(F.lit(1)).alias(count)).toArrow()
                results.append(({c: encode_values(c, counted.column(c), self.domains[c])
                                 for c in columns},
                                counted.column(count).to_numpy().astype(np.int64)))
        except PySparkException as exc:
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
        return results


class SparkRelease:
    """A row-local mechanism's release whose rows are a Spark DataFrame (not yet written)."""

    def __init__(self, plan: RowPlan, source: SparkSource, published: Any,
                 dtypes: Mapping[str, np.dtype]) -> None:
        self.mechanism = plan.mechanism
        self.schema = plan.schema
        self.parameters = plan.parameters
        self.n_rows = source.n_rows
        self.source = source
        self._plan, self._published, self._dtypes = plan, published, dtypes

    def __repr__(self) -> str:
        return f"SparkRelease({self.mechanism!r}, n_rows={self.n_rows})"

    @property
    def rows(self) -> Any:
        """The published rows as values (a Spark DataFrame; release order is fixed by save)."""
        schema, extra = self.schema, self._plan.extra

        def values(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                table = rows_to_arrow(schema, {c.name: batch.column(c.name).to_numpy()
                                               .astype(c.dtype) for c in schema.columns},
                                      {name: batch.column(name).to_numpy().astype(np.int64)
                                       for name in extra}
                                      or None)
                yield pa.record_batch([_plain(array) for array in table.columns],
                                      names=table.column_names)

        # Extra columns (such as each row's sub-table) stay 64-bit: Spark has no unsigned type.
        sample = rows_to_arrow(schema, {c.name: np.zeros(1, c.dtype) for c in schema.columns},
                               {name: np.zeros(1, np.int64) for name in extra} or None)
        spark_schema = _spark_schema(pa.schema([pa.field(f.name, _plain(column).type)
                                                for f, column in zip(sample.schema,
                                                                     sample.columns,
                                                                     strict=True)]))
        return self._published.select(*schema.names, *extra).mapInArrow(values, spark_schema)

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the release as Parquet parts and ``release.json`` (last), atomically.

        The parts are written by the Spark tasks into the staging folder beside ``directory``:
        the driver and the executors must share that filesystem (local Spark, or a shared
        mount)."""
        target = Path(directory)
        check_target(target, overwrite)
        plan, n_rows = self._plan, self.n_rows
        parts = part_count(n_rows)
        names = part_names("rows", parts)
        schema, extra, dtypes = plan.schema, plan.extra, self._dtypes
        with staged_directory(target) as staging:
            where = str(staging)

            def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                counter = RowCounter()
                for index, part in _by_part(batches):
                    codes = {c.name: part.column(c.name).to_numpy().astype(c.dtype)
                             for c in schema.columns}
                    table = rows_to_arrow(schema, codes,
                                          {name: part.column(name).to_numpy().astype(
                                              dtypes[name]) for name in extra} or None)
                    digest = write_parquet(Path(where) / names[index], table)
                    yield pa.record_batch({
                        "part": pa.array([index], pa.int32()),
                        "digest": pa.array([digest]),
                        "counted": pa.array([pickle.dumps(counter.count_part(table))],
                                            pa.binary())})

            written = (self._published
                       .repartition(parts, _PART)
                       .sortWithinPartitions(_PART, _RANK, ROW_ID)
                       .mapInArrow(write, "part int, digest string, counted binary")
                       .toArrow().sort_by("part"))
            found = dict(zip(written.column("part").to_pylist(),
                             zip(written.column("digest").to_pylist(),
                                 written.column("counted").to_pylist(), strict=True),
                             strict=True))
            counter, digests = RowCounter(), {}
            for index, name in enumerate(names):
                if index in found:
                    digest, counted = found[index][0], pickle.loads(found[index][1])
                else:
                    # A part no row fell in: written empty, as the other executors write it.
                    table = rows_to_arrow(schema, {c.name: np.zeros(0, c.dtype)
                                                   for c in schema.columns},
                                          {name: np.zeros(0, dtypes[name])
                                           for name in extra} or None)
                    digest = write_parquet(staging / name, table)
                    counted = counter.count_part(table)
                digests[name] = digest
                counter.add(counted)
            files: dict[str, str | list[str]] = {"rows": names[0] if parts == 1 else names}
            write_row_counts(staging, counter.table(), files, digests)
            for stem, table in plan.tables.items():
                files[stem] = write_parts(staging, stem, table, digests)
            write_metadata(staging, plan.mechanism, plan.parameters, n_rows, plan.schema,
                           files, digests)
            commit_directory(staging, target, overwrite=overwrite,
                             replaceable=require_replaceable_release)
        return target


def publish(mechanism: Mechanism, frame: Any, *, sensitive: Sequence[str] | str | None = None,
            quasi_identifiers: Sequence[str] | str | None = None,
            domains: Mapping[str, Sequence[Any]] | None = None, row_id: str = ROW_ID,
            observed_domains: bool = False, random_state: RandomState = None) -> SparkRelease:
    """Publish a Spark DataFrame with a row-local mechanism (uniform, sdr, dbr, frapp).

    ``row_id`` names the column of stable row ids (see the module); the roles and declared
    domains are those `ppdp.read_table` takes. When the row ids are the rows' positions
    ``0 .. n - 1`` (as `read_parquet`'s are), the same ``random_state`` gives the same release
    files as ``mechanism.publish(table)`` on the rows in that order."""
    require_pyspark()
    if not hasattr(mechanism, "row_plan"):
        raise SparkUnavailableError(f"{mechanism.name} does not run on Spark yet (only the "
                                    f"row-local mechanisms uniform, sdr, dbr and frapp do)")
    source = SparkSource(frame, sensitive=sensitive, quasi_identifiers=quasi_identifiers,
                         domains=domains, row_id=row_id, observed_domains=observed_domains)
    key = make_key(random_state)
    plan: RowPlan = mechanism.row_plan(source, key)
    _run_passes(plan.passes, source)
    return SparkRelease(plan, source, *_published(plan, source, KeyedStream(key, "rank")))


def _published(plan: RowPlan, source: SparkSource, ranks: KeyedStream
               ) -> tuple[Any, dict[str, np.dtype]]:
    """The published rows as codes (with rank, row id and part), lazily, and the numpy type
    of each published column."""
    inputs = [source.schema[name] for name in plan.input_columns]
    # The kernel on no rows gives the published columns' types (Spark's are signed).
    empty = plan.kernel({c.name: np.zeros(0, c.dtype) for c in inputs}, 0)
    dtypes = {name: values.dtype for name, values in empty.items()}
    outputs = [*plan.schema.names, *plan.extra]
    # The smallest signed type for each published column (Spark has no unsigned one): the
    # exchanges move a byte a code where Adult's domains allow, not eight.
    kinds = {name: _signed(plan.schema[name].size - 1 if name in plan.schema
                           else np.iinfo(dtypes[name]).max) for name in outputs}
    parts = part_count(source.n_rows)
    kernel, row_id = plan.kernel, source.row_id

    def publish_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for start, ids, codes in _runs(batches, inputs, row_id):
            rows = kernel(codes, start)
            drawn = ranks.raw(start, len(ids))
            yield pa.record_batch({
                **{name: pa.array(rows[name].astype(kinds[name][0])) for name in outputs},
                # Signed, with the top bit flipped: Spark sorts it as the unsigned rank.
                _RANK: pa.array((drawn ^ _TOP_BIT).view(np.int64)),
                ROW_ID: pa.array(ids),
                _PART: pa.array(part_of(drawn, parts).astype(np.int32))})

    spark_schema = ", ".join([*(f"`{name}` {kinds[name][1]}" for name in outputs),
                              f"{_RANK} long", f"{ROW_ID} long", f"{_PART} int"])
    return _in_runs(source, plan.input_columns).mapInArrow(publish_batches, spark_schema), \
        dtypes


def _in_runs(source: SparkSource, columns: Sequence[str]) -> Any:
    """The columns and row id, exchanged by range of row id and sorted by it in each task."""
    # Each task then holds runs of consecutive ids (a round-robin partitioning would leave
    # runs of one row, one kernel call each).
    return source.frame.select(*columns, source.row_id) \
        .repartitionByRange(source.row_id).sortWithinPartitions(source.row_id)


def _runs(batches: Iterator[pa.RecordBatch], columns: Sequence[Column], row_id: str
          ) -> Iterator[tuple[int, np.ndarray, dict[str, np.ndarray]]]:
    """A task's rows as runs of consecutive row ids: the first id, the ids and the codes of
    the columns (refused when an id repeats)."""
    # A task's rows come sorted by id after a range exchange, which puts equal ids in one
    # task: ids strictly increasing through every task are distinct in all.
    previous = -1
    for batch in batches:
        ids = batch.column(row_id).to_numpy().astype(np.int64)
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        if ids.size and (ids[0] <= previous or np.any(ids[1:] == ids[:-1])):
            raise SchemaError(f"the row-id column {row_id!r} repeats an id; it must hold "
                              f"distinct non-negative integers")
        previous = int(ids[-1]) if ids.size else previous
        codes = {c.name: _in_domain(c, _codes(c, batch.column(c.name).take(pa.array(order))))
                 for c in columns}
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(ids) != 1) + 1, [len(ids)]])
        for first, end in itertools.pairwise(bounds.tolist()):
            yield int(ids[first]), ids[first:end], {name: values[first:end]
                                                    for name, values in codes.items()}


def _run_passes(passes: Sequence[Pass], source: SparkSource) -> None:
    """Run a plan's summary passes where the rows are: each task takes its runs of rows into
    a copy of the pass and returns what it took in (`ppdp.plans.Taken`); the histograms are
    added up by a Spark aggregation, and only the added-up histogram and the collected rows
    reach the driver, which merges them into the pass before ``finish``."""
    from pyspark.sql import functions as F

    for step in passes:
        if not step.needed:
            continue
        columns = [source.schema[name] for name in step.columns]
        # The collected rows' columns, as the driver's copy (which took in nothing) has them.
        kinds = {name: values.dtype for name, values in step.taken().rows.items()}
        schema = ", ".join(f"`{name}` long" for name in (_CELL, _COUNT, *kinds))
        # Histogram cells are summed over the tasks; collected rows (distinct) pass as they
        # are: at most the histogram's cells plus the collected rows reach the driver.
        added = (_in_runs(source, step.columns)
                 .mapInArrow(_taking(step, columns, source.row_id, list(kinds)), schema)
                 .groupBy(_CELL, *kinds).agg(F.sum(_COUNT).alias(_COUNT)).toArrow())
        binned = pc.is_valid(added.column(_CELL))
        cells, rows = added.filter(binned), added.filter(pc.invert(binned))
        step.merge(Taken(cells.column(_CELL).to_numpy(), cells.column(_COUNT).to_numpy(),
                         {name: rows.column(name).to_numpy().view(kind)
                          for name, kind in kinds.items()}))
        step.finish()


def _taking(step: Pass, columns: Sequence[Column], row_id: str, names: Sequence[str]
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The task of a summary pass: its runs of rows taken into a fresh copy of the pass,
    then what it took in, the histogram's cells and the collected rows (``names``), as
    batches of 64-bit columns."""

    def take(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mine = copy.deepcopy(step)
        for start, _, codes in _runs(batches, columns, row_id):
            mine.update(start, codes)
        taken = mine.taken()
        absent = pa.nulls(len(taken.cells), pa.int64())
        yield pa.record_batch({_CELL: pa.array(taken.cells.astype(np.int64)),
                               _COUNT: pa.array(taken.counts.astype(np.int64)),
                               **{name: absent for name in names}})
        absent = pa.nulls(len(taken.rows[names[0]]), pa.int64())
        yield pa.record_batch({_CELL: absent, _COUNT: absent,
                               **{name: pa.array(taken.rows[name].view(np.int64))
                                  for name in names}})

    return take


def _signed(largest: int) -> tuple[type[np.signedinteger], str]:
    """The smallest signed integer type holding ``0 .. largest``: numpy's and Spark's name."""
    for dtype, name in ((np.int8, "tinyint"), (np.int16, "smallint"), (np.int32, "int")):
        if largest <= np.iinfo(dtype).max:
            return dtype, name
    return np.int64, "bigint"


def _by_part(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """The rows of a task (sorted by part, then release order) as one table per part."""
    pending: list[pa.RecordBatch] = []
    current = None
    for batch in batches:
        part = batch.column(_PART).to_numpy()
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(part)) + 1, [len(part)]])
        for first, end in itertools.pairwise(bounds.tolist()):
            if end == first:
                continue
            index = int(part[first])
            if current is not None and index != current:
                yield current, pa.Table.from_batches(pending)
                pending = []
            current = index
            pending.append(batch.slice(first, end - first))
    if current is not None:
        yield current, pa.Table.from_batches(pending)


def _plain(array: Any) -> pa.Array:
    """A dictionary-encoded column as its values (Spark reads no dictionaries)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
