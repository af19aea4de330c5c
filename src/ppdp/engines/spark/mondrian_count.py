"""A saved Mondrian release counted on Spark: its rows stay in their Parquet files.

Mondrian's estimate (Section 1 of the ambiguity paper, Theorem 6.1; see
`ppdp.mechanisms.group_product`) sums a term per equivalence class. The rows' files hold one
row per input row (a label per quasi-identifier and the true sensitive value), so each batch
Spark hands a task holds whole classes of its own rows: the task numbers the labels' nodes,
groups its rows into classes, builds their factors as the in-memory release does
(`ppdp.mechanisms.mondrian.class_factors`) and answers the queries; the batches' estimates are
summed by `ppdp.spark.group_product`. Only the covers, about the size of the domains, are read
into memory.

(The Mondrian publication on Spark is `ppdp.spark.mondrian`; this module counts a saved one.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.engines.spark.cube import SparkCube, read_whole
from ppdp.engines.spark.group_product import estimate_on_spark
from ppdp.engines.spark.session import SparkFailedError, failure_message, spark_session
from ppdp.mechanisms.mondrian.covers import ROWS, Generalized
from ppdp.mechanisms.mondrian.partition import require_diversity
from ppdp.mechanisms.mondrian.release import (
    MondrianRelease,
    class_factors,
    classes_of_rows,
    label_nodes,
    read_generalized,
)
from ppdp.query.binding import BoundQuery
from ppdp.query.encoding import encode_values
from ppdp.release.base import Release

_ROWS = "__rows"


@dataclass(frozen=True)
class _ClassFactors:
    """Turns a batch of published rows into the `GroupProduct` factors of its classes (what a
    Spark task gets: the covers' matrices, about the size of the domains)."""

    generalized: Mapping[str, Generalized]
    labels: Mapping[str, pa.Array]
    matrices: Mapping[str, Any]
    sensitive: str
    domain: pa.Array
    sizes: Mapping[str, int]

    def codes(self, batch: pa.RecordBatch) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Each row's node per quasi-identifier and sensitive code, refusing a label without a
        cover or a value outside the domain, as the in-memory load does."""
        nodes = {name: label_nodes(name, batch.column(name), labels)
                 for name, labels in self.labels.items()}
        return nodes, encode_values(self.sensitive, batch.column(self.sensitive), self.domain)

    def __call__(self, batch: pa.RecordBatch) -> dict[str, Any]:
        nodes, codes = self.codes(batch)
        classes = classes_of_rows(self.generalized, nodes, batch.num_rows)
        return class_factors(self.matrices, classes, self.sensitive, codes, self.sizes)


class SparkCountedMondrianRelease(MondrianRelease):
    """A Mondrian release loaded with ``engine="spark"``: every count is one Spark job over its
    rows' files (`ppdp.spark.group_product`); the covers are in memory. Every other member
    (``rows``, ``sensitive_codes``, `k_anonymity`, `risk`, saving it again, ...) reads the rows
    from the files into memory on first use, checked as `load_release` checks them.

    Loading checks the files' footers (rows, columns, stored types, as a `SparkCube` does) and,
    in one Spark job that brings one number to the driver, every row: labels with a cover and
    sensitive values in the domain."""

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 covers: Mapping[str, pa.Table], paths: Sequence[Path]) -> None:
        parameters = {**parameters,
                      "diversity": require_diversity(parameters.get("diversity", "distinct"))}
        Release.__init__(self, schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        self.quasi = schema.quasi_identifiers
        self.generalized = read_generalized(schema, parameters, covers)
        self._covers = dict(covers)
        labels = {name: pa.array(list(self.generalized[name].labels), pa.string())
                  for name in self.quasi}
        self._spark_cube = SparkCube(
            paths, {**labels, self.sensitive: schema[self.sensitive].dictionary()}, n_rows)
        self._read: MondrianRelease | None = None
        self._class_cache = None
        self._product = None
        sizes = schema.sizes()
        self._factors = _ClassFactors(
            self.generalized, labels,
            {name: self.generalized[name].matrix(sizes[name]) for name in self.quasi},
            self.sensitive, schema[self.sensitive].dictionary(), sizes)
        # Planned once: a plan reads the files at each job.
        self._rows_frame = spark_session().read.parquet(*self._spark_cube.paths).select(
            *self.quasi, self.sensitive)
        self._check_rows()

    def _frame(self) -> Any:
        """The published rows as a Spark DataFrame (their files unchanged since loading)."""
        self._spark_cube._require_unchanged()
        return self._rows_frame

    def _check_rows(self) -> None:
        """Refuse labels without a cover and sensitive values outside the domain: the rows
        are checked in Spark tasks, their count (one number) reaches the driver."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        factors = self._factors

        def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                factors.codes(batch)
                yield pa.record_batch([pa.array([batch.num_rows], pa.int64())], names=[_ROWS])

        try:
            found = self._frame().mapInArrow(check, f"{_ROWS} long").agg(
                F.sum(_ROWS).alias(_ROWS)).toArrow().column(_ROWS)[0].as_py()
        except (PySparkException, Py4JJavaError) as exc:
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
        if (found or 0) != self.n_rows:
            raise ValueError(f"expected {self.n_rows} rows, found {found or 0}")

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        values = estimate_on_spark(self._frame(), self._factors, self.schema.sizes(), queries)
        return [(value, None) for value in values]

    def _in_memory(self) -> MondrianRelease:
        """The release read from its files, checked as `load_release` checks them."""
        if self._read is None:
            self._read = MondrianRelease._from_tables(
                self.schema, self.parameters, self.n_rows,
                {**self._covers, **read_whole({ROWS: self._spark_cube})})
        return self._read

    # Read from the files when first asked: a property for the in-memory release's attribute
    # (mypy's [override] below: a read-only property for a settable attribute).
    @property
    def rows(self) -> dict[str, np.ndarray]:  # type: ignore[override]
        return self._in_memory().rows

    @property
    def sensitive_codes(self) -> np.ndarray:  # type: ignore[override]
        return self._in_memory().sensitive_codes


def load_mondrian(schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                  covers: Mapping[str, pa.Table], paths: Sequence[Path]
                  ) -> SparkCountedMondrianRelease:
    """A Mondrian release over its rows' files (and its covers, read), counted on Spark."""
    return SparkCountedMondrianRelease(schema, parameters, n_rows, covers, paths)
