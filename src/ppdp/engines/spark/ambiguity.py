"""A saved ambiguity release counted on Spark: its tables AT_1..AT_m and ST stay in their
Parquet files.

Ambiguity's estimate (Section 6, Example 6.1; see `ppdp.mechanisms.group_product`) sums a term
per QI-group, built from the group's lines in every table: ``1 / |G_ATi|`` on each of its
values of quasi-identifier i, and its frequencies in ST. Each table holds one line per
(group, value), so Spark gathers a group's lines: the m + 1 tables' lines, each tagged with its
table, are put together (a union) and collected by one ``groupBy(GroupID)`` into one list per
group (one exchange; ST's values and frequencies stay together in its lines). Each row is
then a whole group, and each task builds its groups' factors from the Arrow lists and answers
the queries; the batches' estimates are summed by `ppdp.spark.group_product`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.data.schema import Schema
from ppdp.engines.spark.cube import SparkCube, read_whole
from ppdp.engines.spark.group_product import estimate_on_spark
from ppdp.engines.spark.session import SparkFailedError, failure_message, spark_session
from ppdp.mechanisms.ambiguity.release import FREQUENCY_COLUMN, AmbiguityRelease
from ppdp.plan.blocks import GROUP_COLUMN
from ppdp.query.binding import BoundQuery
from ppdp.query.codes import sorted_distinct
from ppdp.query.encoding import encode_values
from ppdp.release.base import Release

# Two leading underscores: no published column of a release is named so.
_LINES = "__lines"
_TABLE = "__table"
_GROUPS = "__groups"
_TOTAL = "__total"
ST = "st"


def at_file(index: int) -> str:
    """File stem of AT_index (1-based)."""
    return f"at_{index}"


@dataclass(frozen=True)
class _GroupFactors:
    """Turns a batch of whole groups (one row each: GroupID, and the group's lines of every
    table collected in one list) into their `GroupProduct` factors, as
    `AmbiguityRelease.estimator` builds them: ``1 / |G_ATi|`` on each value of quasi-identifier
    i, the frequencies of the sensitive values."""

    quasi: tuple[str, ...]
    sensitive: str
    domains: Mapping[str, pa.Array]
    sizes: Mapping[str, int]

    def __call__(self, batch: pa.RecordBatch) -> dict[str, Any]:
        import scipy.sparse as sp

        factors = {}
        for table, name in enumerate(self.columns()):
            indptr, codes, frequency = self.lines(batch, table)
            if frequency is None:
                lengths = np.diff(indptr)
                # (A group without lines, refused on loading, has no weight to divide.)
                weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths)
            else:
                weights = frequency.to_numpy(zero_copy_only=False).astype(np.float64)
            factors[name] = sp.csr_array((weights, codes, indptr),
                                         shape=(batch.num_rows, self.sizes[name]))
        return factors

    def columns(self) -> tuple[str, ...]:
        """The column of each table: AT_1..AT_m's quasi-identifiers, then ST's sensitive."""
        return (*self.quasi, self.sensitive)

    def lines(self, batch: pa.RecordBatch, table: int
              ) -> tuple[np.ndarray, np.ndarray, pa.Array | None]:
        """One table's lines of the batch's groups: row pointers, codes, and (for ST) the
        frequencies; refusing nulls and values outside the domain."""
        lists = batch.column(_LINES)
        offsets = lists.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        lines = lists.flatten()
        mine = pc.equal(lines.field(_TABLE), table)
        group = np.repeat(np.arange(batch.num_rows), np.diff(offsets))[
            mine.to_numpy(zero_copy_only=False)]
        # The lines are in group order: counting them gives the row pointers.
        indptr = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=batch.num_rows))])
        name = self.columns()[table]
        codes = encode_values(name, lines.field(name).filter(mine), self.domains[name])
        frequency = lines.field(FREQUENCY_COLUMN).filter(mine) \
            if name == self.sensitive else None
        return indptr, codes, frequency

    def check(self, batch: pa.RecordBatch, n_groups: int, n_rows: int) -> tuple[int, int]:
        """Refuse what the in-memory load refuses, on a batch of groups: group ids outside
        ``0 .. n_groups - 1``, a group missing from a table, a null or a value outside the
        domain, a (value, GroupID) pair twice in an AT, frequencies not positive. The number of
        groups and the sum of their frequencies, to be checked over all batches."""
        where = [*(f"AT_{i} ({q})" for i, q in enumerate(self.quasi, start=1)), "ST"]
        group_ids = batch.column(GROUP_COLUMN).fill_null(-1).to_numpy(zero_copy_only=False)
        outside = (group_ids < 0) | (group_ids >= n_groups)
        if outside.any():
            lists = batch.column(_LINES)
            offsets = lists.offsets.to_numpy(zero_copy_only=False)
            tables = lists.flatten().field(_TABLE).to_numpy(zero_copy_only=False)
            first = tables[np.repeat(outside, np.diff(offsets))].min()
            raise ValueError(f"{where[int(first)]} has group ids outside 0..{n_groups - 1}")
        total = 0
        for table, name in enumerate(self.columns()):
            indptr, codes, frequency = self.lines(batch, table)
            lengths = np.diff(indptr)
            if len(lengths) and lengths.min() == 0:
                raise ValueError(f"{where[table]} does not list every one of the {n_groups} "
                                 f"groups")
            if frequency is None:
                group = np.repeat(np.arange(batch.num_rows, dtype=np.int64), lengths)
                if len(sorted_distinct(group * self.sizes[name] + codes)) != len(codes):
                    raise ValueError(f"{where[table]} repeats a (value, GroupID) pair")
            elif frequency.null_count or (len(frequency) and pc.min(frequency).as_py() <= 0):
                raise ValueError(f"ST frequencies must be positive and add up to {n_rows} rows")
            else:
                total = int(pc.sum(frequency).as_py() or 0)
        return batch.num_rows, total


class SparkAmbiguityRelease(AmbiguityRelease):
    """An ambiguity release loaded with ``engine="spark"``: every count is one Spark job over
    its tables' files; ``auxiliary``, ``st`` and what is measured from them (`presence`,
    `association`, saving it again, ...) read the tables into memory on first use, checked as
    `load_release` checks them.

    Loading checks the files' footers (rows, columns, stored types, as a `SparkCube` does)
    and, in one Spark job that brings one row to the driver, what the in-memory load checks:
    group ids in range and every group in every table, no (value, GroupID) pair twice in an
    AT, every value in its domain, frequencies positive and adding up to the rows."""

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 paths: Mapping[str, Sequence[Path]]) -> None:
        Release.__init__(self, schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        self.quasi_identifiers = tuple(schema.quasi_identifiers)
        self.n_groups = int(parameters["n_groups"])
        self._estimator = None
        self._read: AmbiguityRelease | None = None
        self._factors = _GroupFactors(
            self.quasi_identifiers, self.sensitive,
            {name: schema[name].dictionary() for name in schema.names}, schema.sizes())
        self._cubes = {}
        stems = [*(at_file(i) for i in range(1, len(self.quasi_identifiers) + 1)), ST]
        for stem, name in zip(stems, self._factors.columns(), strict=True):
            files = paths[stem]
            integers = [GROUP_COLUMN, FREQUENCY_COLUMN] if stem == ST else [GROUP_COLUMN]
            for path in files:
                stored = pq.read_metadata(path).schema.to_arrow_schema()
                for column in integers:
                    if column not in stored.names or not pa.types.is_integer(
                            stored.field(column).type):
                        raise ValueError(f"{stem} lacks its integer column {column!r}")
            lines = sum(pq.read_metadata(path).num_rows for path in files)
            self._cubes[stem] = SparkCube(files, {name: self._factors.domains[name]}, lines)
        self._frame = self._gathered()
        self._check_groups()

    def _gathered(self) -> Any:
        """One row per group id: the group's lines of every table (the table's position, its
        column's value and, for ST, the frequency) collected in one list by one aggregation
        over the tables' union. (Planned once: a plan reads the files at each job.)"""
        from pyspark.sql import functions as F

        spark = spark_session()
        columns = self._factors.columns()
        union = None
        for table, (stem, name) in enumerate(zip(self._cubes, columns, strict=True)):
            kept = [GROUP_COLUMN, name] + ([FREQUENCY_COLUMN] if stem == ST else [])
            lines = spark.read.parquet(*self._cubes[stem].paths).select(
                *kept, F.lit(table).cast("int").alias(_TABLE))
            union = lines if union is None else union.unionByName(
                lines, allowMissingColumns=True)
        assert union is not None  # ST is always among the tables
        return union.groupBy(GROUP_COLUMN).agg(F.collect_list(F.struct(
            _TABLE, *columns, FREQUENCY_COLUMN)).alias(_LINES))

    def _groups(self) -> Any:
        """`_gathered`'s groups, the tables' files unchanged since loading."""
        for cube in self._cubes.values():
            cube._require_unchanged()
        return self._frame

    def _check_groups(self) -> None:
        """The in-memory load's checks of the tables, in Spark tasks over the groups
        (`_GroupFactors.check`); the number of groups and their total frequency (one row)
        reach the driver."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        factors, n_groups, n_rows = self._factors, self.n_groups, self.n_rows

        def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                groups, total = factors.check(batch, n_groups, n_rows)
                yield pa.record_batch([pa.array([groups], pa.int64()),
                                       pa.array([total], pa.int64())], names=[_GROUPS, _TOTAL])

        try:
            found = self._groups().mapInArrow(check, f"{_GROUPS} long, {_TOTAL} long").agg(
                F.sum(_GROUPS).alias(_GROUPS), F.sum(_TOTAL).alias(_TOTAL)).toArrow()
        except (PySparkException, Py4JJavaError) as exc:
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
        groups, total = (found.column(c)[0].as_py() or 0 for c in (_GROUPS, _TOTAL))
        if groups != n_groups:
            raise ValueError(f"AT_1 ({self.quasi_identifiers[0]}) does not list every one of "
                             f"the {n_groups} groups")
        if total != n_rows:
            raise ValueError(f"ST frequencies must be positive and add up to {n_rows} rows")

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        values = estimate_on_spark(self._groups(), self._factors, self.schema.sizes(), queries)
        return [(value, None) for value in values]

    def _in_memory(self) -> AmbiguityRelease:
        """The release read from its files, checked as `load_release` checks them."""
        if self._read is None:
            self._read = AmbiguityRelease._from_tables(self.schema, self.parameters,
                                                       self.n_rows, read_whole(self._cubes))
        return self._read

    # Read from the files when first asked: a property for the in-memory release's attribute
    # (mypy's [override] below: a read-only property for a settable attribute).
    @property
    def auxiliary(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:  # type: ignore[override]
        return self._in_memory().auxiliary

    @property
    def st(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[override]
        return self._in_memory().st
