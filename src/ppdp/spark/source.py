"""A Spark DataFrame as a source: domains and histograms as Spark aggregations, its rows
taken in tasks as runs of consecutive row ids."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.errors import SchemaError
from ppdp.io import _check_columns
from ppdp.plans import Pass, Taken
from ppdp.scan import source_schema
from ppdp.sources import MarginalSource
from ppdp.spark.session import ROW_ID
from ppdp.table import Column, Role, encode_column

if TYPE_CHECKING:
    pass


_CELL = "__cell"
_COUNT = "__count"


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
        self.n_rows, self.in_place = _profile_ids(frame, row_id)
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


def _plain(array: Any) -> pa.Array:
    """A dictionary-encoded column as its values (Spark reads no dictionaries)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
