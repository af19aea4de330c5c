"""A saved release's rows counted by Spark aggregations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.query import FileIdentity, ScanCube, encode_values
from ppdp.spark.session import SparkFailedError, failure_message, spark_session


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
