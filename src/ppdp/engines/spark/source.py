"""A Spark DataFrame as a source: domains and histograms as Spark aggregations, its rows
taken in tasks as runs of consecutive row ids."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.data.schema import Column, Role, encode_column
from ppdp.engines.spark.session import (
    ARROW_BATCH_ROWS,
    ROW_ID,
    ParquetFiles,
    open_parquet,
    parquet_files,
)
from ppdp.errors import SchemaError
from ppdp.io.rules import check_columns
from ppdp.io.scan import source_schema
from ppdp.plan.rows import Pass, Taken
from ppdp.table.source import MarginalSource

_CELL = "__cell"
_COUNT = "__count"

Run = tuple[int, np.ndarray, dict[str, np.ndarray]]
"""Rows of consecutive ids: the first id, the ids, and the codes by column."""

RunTask = Callable[[Iterator[Run]], Iterator[pa.RecordBatch]]
"""What a Spark task does with its runs of rows (`SparkSource.map_runs`)."""


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
        from pyspark.sql import types as T

        if row_id not in frame.columns:
            raise SchemaError(f"the DataFrame has no row-id column {row_id!r}; name one that "
                              f"holds distinct non-negative integers, or read the input with "
                              f"ppdp.spark.read_parquet")
        if not isinstance(frame.schema[row_id].dataType,
                          T.ByteType | T.ShortType | T.IntegerType | T.LongType):
            raise SchemaError(f"the row-id column {row_id!r} must hold integers")
        self.frame, self.row_id = frame, row_id
        self.name: str | None = None
        names = [name for name in frame.columns if name != row_id]
        check_columns(sorted(set(domains or {}) - set(names)), names)
        files = parquet_files(frame) if row_id == ROW_ID else None
        self.files = files if files is not None and _read_by_tasks(files, frame, names) \
            else None
        if self.files is not None:
            # The files' footers count the rows, and their ids are positions: nothing to scan.
            self.n_rows, self.in_place = self.files.n_rows, True
            if not self.n_rows:
                raise SchemaError("cannot build a table from the DataFrame: it has no rows")
            counted = _counted_in_tasks(self.files, frame, names)
        else:
            self.n_rows, self.in_place = _profile_ids(frame, row_id)
            counted = _counted_by_grouping_sets(frame, names)
        columns, self._marginals = [], {}
        for name, (values, cells) in zip(names, counted, strict=True):
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

    def map_runs(self, columns: Sequence[Column], task: RunTask, schema: str) -> Any:
        """A Spark DataFrame of what ``task`` yields from each Spark task's rows, given as runs
        of consecutive row ids ``(first id, ids, codes of the columns)`` in increasing order.

        Rows of files `read_parquet` read (``files``) are read by the tasks themselves with
        pyarrow, a row group at a time, their text columns as dictionaries: no row passes
        through the JVM. Other rows are Spark's, in runs (`_in_runs`, `_runs`)."""
        columns = list(columns)
        if self.files is None:
            row_id = self.row_id

            def from_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                return task(_runs(batches, columns, row_id))

            return _in_runs(self, [c.name for c in columns]).mapInArrow(from_rows, schema)
        files, text = self.files, _text_columns(self.files)

        def from_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return task(_file_runs(batches, files, columns, text))

        return _row_groups(self.frame.sparkSession, self.files).mapInArrow(from_files, schema)

    def _count(self, columns: tuple[str, ...], sizes: list[int]) -> np.ndarray:
        """One Spark aggregation; only the combinations found reach the driver."""
        codes, counts = self.cells(columns)
        return _dense(codes, counts, columns, sizes)

    def cells(self, columns: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The value combinations of the columns found in the rows (as codes) and their row
        counts: one Spark aggregation, the found combinations only reaching the driver."""
        from pyspark.sql import functions as F

        count = _unclashing(columns)
        counted = self.frame.groupBy(*columns).agg(F.count(F.lit(1)).alias(count)).toArrow()
        return ({c: _codes(self.schema[c], counted.column(c)) for c in columns},
                counted.column(count).to_numpy().astype(np.int64))

    def histograms(self, column_sets: Sequence[Sequence[str]]
                   ) -> dict[tuple[str, ...], np.ndarray]:
        """The tables over several sets of columns, those not yet counted in one Spark
        aggregation (a grouping set each)."""
        from pyspark.sql import functions as F

        wanted = [tuple(c) for c in dict.fromkeys(tuple(c) for c in column_sets)
                  if len(c) > 1 and tuple(c) not in self._histograms]
        if wanted:
            names = sorted(set().union(*wanted))
            count = _unclashing(names)
            flags = {name: f"{count}{index}" for index, name in enumerate(names)}
            counted = self.frame.groupingSets([list(c) for c in wanted], *names).agg(
                F.count(F.lit(1)).alias(count),
                *(F.grouping(name).alias(flags[name]) for name in names)).toArrow()
            for columns in wanted:
                # A row counts the grouping set whose columns, and no other, are grouped.
                grouped = np.logical_and.reduce([
                    counted.column(flags[name]).to_numpy() == (0 if name in columns else 1)
                    for name in names])
                mine = counted.filter(pa.array(grouped))
                sizes = [self.schema[c].size for c in columns]
                codes = {c: _codes(self.schema[c], mine.column(c)) for c in columns}
                self._histograms[columns] = _dense(
                    codes, mine.column(count).to_numpy().astype(np.int64), columns,
                    sizes).reshape(sizes)
        return {tuple(c): self.histogram(c) for c in column_sets}


def _counted_by_grouping_sets(frame: Any, names: Sequence[str]
                              ) -> list[tuple[pa.Array, pa.Array]]:
    """Every column's distinct values and their counts in one scan (a grouping set a column):
    the sum of the domains' sizes reaches the driver."""
    from pyspark.sql import functions as F

    flags = [f"__grouped{index}" for index in range(len(names))]
    counted = frame.groupingSets([[name] for name in names], *names).agg(
        F.count(F.lit(1)).alias("count"),
        *(F.grouping(name).alias(flag) for name, flag in zip(names, flags, strict=True))
    ).toArrow()
    found = []
    for name, flag in zip(names, flags, strict=True):
        mine = counted.filter(pc.equal(counted.column(flag), 0))
        found.append((mine.column(name).combine_chunks(), mine.column("count").combine_chunks()))
    return found


def _read_by_tasks(files: ParquetFiles, frame: Any, names: Sequence[str]) -> bool:
    """Whether ppdp's tasks may read the files with pyarrow and find the values Spark would:
    every column text or a signed integer in the files, and of the same kind in Spark."""
    from pyspark.sql import types as T

    for name in names:
        stored = files.schema.field(name).type
        if pa.types.is_dictionary(stored):
            stored = stored.value_type
        kind = frame.schema[name].dataType
        text = pa.types.is_string(stored) or pa.types.is_large_string(stored)
        whole = pa.types.is_signed_integer(stored)
        if not ((text and isinstance(kind, T.StringType)) or (whole and isinstance(
                kind, T.ByteType | T.ShortType | T.IntegerType | T.LongType))):
            return False
    return True


def _text_columns(files: ParquetFiles) -> list[str]:
    """The files' text columns, read as dictionaries."""
    return [field.name for field in files.schema
            if not pa.types.is_integer(field.type)
            and not (pa.types.is_dictionary(field.type)
                     and pa.types.is_integer(field.type.value_type))]


def _row_groups(spark: Any, files: ParquetFiles) -> Any:
    """A DataFrame of the files' row groups (file, group), in order, one a Spark task (up to
    `MAX_ROW_GROUP_TASKS` tasks, consecutive groups sharing one beyond)."""
    groups = [(file, group) for file, group, _, rows in files.row_groups if rows]
    slices = max(1, min(len(groups), MAX_ROW_GROUP_TASKS))
    return spark.createDataFrame(spark.sparkContext.parallelize(groups, slices),
                                 f"{_FILE} int, {_GROUP} int")


MAX_ROW_GROUP_TASKS = 1 << 12
"""The most Spark tasks reading a Parquet input's row groups."""

_FILE = "__file"
_GROUP = "__group"
_COLUMN = "__column"


def _file_batches(descriptors: Iterator[pa.RecordBatch], files: ParquetFiles,
                  names: Sequence[str], text: Sequence[str]
                  ) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The row groups a task was given, as batches of the columns with their first row id;
    refused when a row group no longer holds the rows its footer held when it was read."""
    first_ids = {(file, group): (first, rows) for file, group, first, rows in files.row_groups}
    for descriptor in descriptors:
        for file, group in zip(descriptor.column(_FILE).to_pylist(),
                               descriptor.column(_GROUP).to_pylist(), strict=True):
            first, rows = first_ids[file, group]
            with open_parquet(files.uris[file],
                              read_dictionary=[n for n in names if n in text]) as opened:
                if (group >= opened.metadata.num_row_groups
                        or opened.metadata.row_group(group).num_rows != rows):
                    raise SchemaError(f"{files.uris[file]} changed since it was read; read "
                                      f"it again")
                for batch in opened.iter_batches(batch_size=ARROW_BATCH_ROWS,
                                                 row_groups=[group], columns=list(names),
                                                 use_threads=False):
                    yield first, batch
                    first += batch.num_rows


def _counted_in_tasks(files: ParquetFiles, frame: Any, names: Sequence[str]
                      ) -> list[tuple[pa.Array, pa.Array]]:
    """Every column's distinct values and their counts: counted in each task's row groups
    (a text column over its dictionary's indices), added up by a Spark aggregation; the sum
    of the domains' sizes reaches the driver."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_type

    kinds = [frame.schema[name].dataType for name in names]
    arrow = [to_arrow_type(kind) for kind in kinds]
    text = _text_columns(files)

    def count(descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _, batch in _file_batches(descriptors, files, names, text):
            for index, (name, kind) in enumerate(zip(names, arrow, strict=True)):
                values, counts = _value_counts(batch.column(name))
                yield pa.record_batch({
                    _COLUMN: pa.array(np.full(len(counts), index, np.int32)),
                    _COUNT: pa.array(counts),
                    **{other: pa.nulls(len(counts), arrow[j]) if j != index
                       else values.cast(kind) for j, other in enumerate(names)}})

    schema = ", ".join([f"{_COLUMN} int", f"{_COUNT} long",
                        *(f"`{name}` {kind.simpleString()}" for name, kind in
                          zip(names, kinds, strict=True))])
    counted = (_row_groups(frame.sparkSession, files).mapInArrow(count, schema)
               .groupBy(_COLUMN, *names).agg(F.sum(_COUNT).alias(_COUNT)).toArrow())
    found = []
    for index, name in enumerate(names):
        mine = counted.filter(pc.equal(counted.column(_COLUMN), index))
        found.append((mine.column(name).combine_chunks(), mine.column(_COUNT).combine_chunks()))
    return found


def _value_counts(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The distinct values of an array (a missing value as null) and their counts."""
    if pa.types.is_dictionary(values.type):
        size = len(values.dictionary)
        # Missing values as one more index, past the dictionary's.
        counts = np.bincount(pc.fill_null(values.indices, size).to_numpy(zero_copy_only=False),
                             minlength=size + 1)
        found = np.flatnonzero(counts)
        return (pa.concat_arrays([values.dictionary, pa.nulls(1, values.dictionary.type)])
                .take(pa.array(found)), counts[found].astype(np.int64))
    counted = pc.value_counts(values)
    return counted.field("values"), counted.field("counts").to_numpy().astype(np.int64)


def _file_runs(descriptors: Iterator[pa.RecordBatch], files: ParquetFiles,
               columns: Sequence[Column], text: Sequence[str]
               ) -> Iterator[tuple[int, np.ndarray, dict[str, np.ndarray]]]:
    """The rows of a task's row groups as runs (one a batch: its ids are consecutive), with
    their codes; a text column encoded over its dictionary only."""
    names = [c.name for c in columns]
    for first, batch in _file_batches(descriptors, files, names, text):
        codes = {c.name: _in_domain(c, _array_codes(c, batch.column(c.name))) for c in columns}
        yield first, np.arange(first, first + batch.num_rows, dtype=np.int64), codes


def _array_codes(column: Column, values: pa.Array) -> np.ndarray:
    """`_codes` of an array, a dictionary array's through its dictionary (-1 where missing)."""
    if not pa.types.is_dictionary(values.type):
        return _codes(column, values)
    lookup = np.append(_codes(column, values.dictionary), -1)
    return lookup[pc.fill_null(values.indices, len(lookup) - 1).to_numpy(zero_copy_only=False)]


def _unclashing(columns: Sequence[str]) -> str:
    """A column name longer than every one of ``columns``: it cannot clash with them."""
    return "_" * (1 + max(len(c) for c in columns))


def _dense(codes: Mapping[str, np.ndarray], counts: np.ndarray, columns: Sequence[str],
           sizes: Sequence[int]) -> np.ndarray:
    """Found combinations and their counts as the flat table over the columns' domains."""
    cells = np.ravel_multi_index(tuple(codes[c] for c in columns), sizes)
    return np.bincount(cells, weights=counts, minlength=int(np.prod(sizes))).astype(np.int64)


_REPEATED = "the row-id column {!r} repeats an id; it must hold distinct non-negative integers"

RUN_ROWS = 1 << 12
"""Rows a run of consecutive row ids must hold on average for the kernel to run on the input's
own partitions, without an exchange."""


def _profile_ids(frame: Any, row_id: str) -> tuple[int, bool]:
    """The number of rows, after checking the row ids (refused when missing, negative or
    repeated within a task), and whether the kernel may run on the input's partitions as they
    are: their ids distinct (ranges of ids that do not overlap) and in runs of `RUN_ROWS` rows
    on average, as the splits of `read_parquet`'s files hold them. One scan of the ids; a row
    per task reaches the driver."""
    names = ("rows", "least", "greatest", "runs", "invalid", "repeats")

    def profile(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunks = [batch.column(0) for batch in batches]
        ids = pa.chunked_array(chunks, pa.int64()) if chunks else pa.chunked_array([],
                                                                                    pa.int64())
        invalid = ids.null_count
        ids = np.sort(pc.drop_null(ids).to_numpy())
        invalid += int(np.count_nonzero(ids < 0))
        steps = np.diff(ids)
        yield pa.record_batch([pa.array([value], pa.int64()) for value in (
            len(ids), int(ids[0]) if ids.size else -1, int(ids[-1]) if ids.size else -1,
            int(np.count_nonzero(steps != 1)) + 1 if ids.size else 0, invalid,
            int(np.count_nonzero(steps == 0)))], names=list(names))

    from pyspark.sql import functions as F

    tasks = frame.select(F.col(row_id).cast("long")).mapInArrow(
        profile, ", ".join(f"{name} long" for name in names)).toArrow()
    found = {name: tasks.column(name).to_numpy() for name in names}
    rows = int(found["rows"].sum()) + int(found["invalid"].sum())
    if rows == 0:
        raise SchemaError("cannot build a table from the DataFrame: it has no rows")
    if found["invalid"].any():
        raise SchemaError(f"the row-id column {row_id!r} must hold distinct non-negative "
                          f"integers and no missing value")
    if found["repeats"].any():
        raise SchemaError(_REPEATED.format(row_id))
    held = found["rows"] > 0
    least, greatest = found["least"][held], found["greatest"][held]
    order = np.argsort(least)
    disjoint = bool(np.all(greatest[order][:-1] < least[order][1:]))
    return rows, disjoint and rows >= RUN_ROWS * int(found["runs"].sum())


def _in_runs(source: SparkSource, columns: Sequence[str]) -> Any:
    """The columns and row id in runs of consecutive row ids, sorted by id in each task.

    The input's own partitions when they hold long runs of distinct ids (``in_place``), else
    the rows exchanged by range of row id: a round-robin partitioning would leave runs of one
    row, one kernel call each; the exchange also puts equal ids in one task, where `_runs`
    finds them."""
    frame = source.frame.select(*columns, source.row_id)
    if not source.in_place:
        frame = frame.repartitionByRange(source.row_id)
    return frame.sortWithinPartitions(source.row_id)


def _runs(batches: Iterator[pa.RecordBatch], columns: Sequence[Column], row_id: str,
          passed: Sequence[str] = ()) -> Iterator[tuple[int, np.ndarray, dict[str, np.ndarray]]]:
    """A task's rows as runs of consecutive row ids: the first id, the ids and the codes of
    the columns, with the integer columns ``passed`` as they are (refused when an id
    repeats)."""
    # A task's rows come sorted by id: after a range exchange, which puts equal ids in one
    # task, ids strictly increasing through every task are distinct in all (in place, tasks
    # whose ranges do not overlap were found to hold distinct ids).
    previous = -1
    for batch in batches:
        ids = batch.column(row_id).to_numpy().astype(np.int64)
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        if ids.size and (ids[0] <= previous or np.any(ids[1:] == ids[:-1])):
            raise SchemaError(_REPEATED.format(row_id))
        previous = int(ids[-1]) if ids.size else previous
        codes = {c.name: _in_domain(c, _codes(c, batch.column(c.name).take(pa.array(order))))
                 for c in columns}
        codes.update({name: batch.column(name).to_numpy().astype(np.int64)[order]
                      for name in passed})
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
        added = (source.map_runs(columns, _taking(step, list(kinds)), schema)
                 .groupBy(_CELL, *kinds).agg(F.sum(_COUNT).alias(_COUNT)).toArrow())
        binned = pc.is_valid(added.column(_CELL))
        cells, rows = added.filter(binned), added.filter(pc.invert(binned))
        step.merge(Taken(cells.column(_CELL).to_numpy(), cells.column(_COUNT).to_numpy(),
                         {name: rows.column(name).to_numpy().view(kind)
                          for name, kind in kinds.items()}))
        step.finish()


def _taking(step: Pass, names: Sequence[str]) -> RunTask:
    """The task of a summary pass: its runs of rows taken into a fresh copy of the pass,
    then what it took in, the histogram's cells and the collected rows (``names``), as
    batches of 64-bit columns."""

    def take(runs: Iterator[Run]) -> Iterator[pa.RecordBatch]:
        mine = copy.deepcopy(step)
        for start, _, codes in runs:
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


def _plain(array: Any) -> pa.Array:
    """A dictionary-encoded column as its values (Spark reads no dictionaries)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
