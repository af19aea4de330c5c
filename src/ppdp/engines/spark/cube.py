"""A saved release's rows counted by Spark aggregations."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.engines.spark.session import SparkFailedError, failure_message, spark_session
from ppdp.query.cache import FileIdentity
from ppdp.query.cube import flat_key
from ppdp.query.encoding import encode_values
from ppdp.query.predicates import Predicate
from ppdp.query.scan_cube import ScanCube
from ppdp.release.arrow import joined_parts

# The columns of the counts the tasks hand on: a frame of their own, so no name can clash.
_CLASS = "class"
_CELL = "cell"
_ROWS = "rows"


class SparkCube(ScanCube):
    """A loaded release's rows as a Cube whose contingency tables are Spark aggregations over
    its Parquet files: a table over some columns is one ``groupBy(columns).count()``, and only
    the value combinations found, with their counts, reach the driver (at most the table's
    cells); the release's estimators read the tables as from any Cube.

    Loading checks the files' footers (rows, columns, stored types) as a `ScanCube` does, but
    reads no row and keeps no summary: every table is counted by Spark, each value checked
    against its domain as it reaches the driver. Conditions, GROUP BY and `prefetch` work as
    on a ScanCube, their tables counted this way; a condition whose table would be too large
    is evaluated in Spark tasks (`_add_classes_of_rows`)."""

    def _add_classes_of_rows(self, classes: dict[int, np.ndarray],
                             predicates: Sequence[Predicate], dims: tuple[str, ...],
                             columns: tuple[str, ...]) -> None:
        """Add each class's counts over ``dims``, the predicates evaluated in Spark tasks on
        each batch of codes (the same numpy evaluation as in memory): a task counts its rows
        by class and cell of ``dims``, Spark adds those up, and at most a line per class and
        cell reaches the driver."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        read = [c for c in columns if c in self.domains]
        domains = {c: self.domains[c] for c in read}
        constant = [c for c in columns if c not in self.domains]
        sizes = {c: self.sizes[c] for c in dims}

        def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                n = batch.num_rows
                # By position: a name with a NUL (alpha-beta's flag) reaches tasks cut short.
                codes = {c: encode_values(c, batch.column(i), domains[c])
                         for i, c in enumerate(read)}
                codes.update({c: np.zeros(n, dtype=np.int64) for c in constant})
                membership = np.zeros(n, dtype=np.int64)
                for bit, predicate in enumerate(predicates):
                    membership |= predicate.evaluate(codes, n).astype(np.int64) << bit
                kept = membership > 0
                cells = flat_key(codes, dims, sizes, kept) if dims \
                    else np.zeros(np.count_nonzero(kept), dtype=np.int64)
                found, counts = np.unique(np.stack([membership[kept], cells]), axis=1,
                                          return_counts=True)
                yield pa.record_batch([pa.array(found[0]), pa.array(found[1]),
                                       pa.array(counts.astype(np.int64))],
                                      names=[_CLASS, _CELL, _ROWS])

        self._require_unchanged()
        try:
            summed = (self._frame().select(*read)
                      .mapInArrow(count, f"{_CLASS} long, {_CELL} long, {_ROWS} long")
                      .groupBy(_CLASS, _CELL).agg(F.sum(_ROWS).alias(_ROWS)).toArrow())
        # Some failures (a result over spark.driver.maxResultSize) come as Java exceptions.
        except (PySparkException, Py4JJavaError) as exc:
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
        shape = tuple(self.sizes[c] for c in dims)
        members = summed.column(_CLASS).to_numpy()
        cells = summed.column(_CELL).to_numpy()
        rows = summed.column(_ROWS).to_numpy()
        for member in np.unique(members):
            mine = members == member
            # Each (class, cell) is found once: the assignment only places its sum.
            counts = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
            counts[cells[mine]] = rows[mine]
            previous = classes.get(int(member))
            counts = counts.reshape(shape)
            classes[int(member)] = counts if previous is None else previous + counts

    def _check(self, digests: Mapping[FileIdentity, str] | None,
               row_counts: pa.Table | None) -> None:
        self._check_footers()

    def _frame(self) -> Any:
        """The rows counted, as a Spark DataFrame: the files read as they are (a subclass may
        derive columns from them)."""
        return spark_session().read.parquet(*self.paths)

    def _aggregate(self, groups: Sequence[Sequence[str]]
                   ) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
        """For each group of columns, its distinct value combinations (as codes) and their
        row counts: one Spark aggregation per group."""
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        self._require_unchanged()
        results = []
        try:
            frame = self._frame()
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


def read_whole(cubes: Mapping[str, ScanCube]) -> dict[str, pa.Table]:
    """The tables of a release loaded on Spark, by stem, read whole into memory from the files
    of their cubes (each refused if replaced since loading): for whoever needs every row."""
    tables = {}
    for stem, cube in cubes.items():
        cube._require_unchanged()
        tables[stem] = joined_parts([pq.read_table(path) for path in cube.paths])
    return tables
