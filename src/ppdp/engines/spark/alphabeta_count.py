"""A saved alpha-beta view counted on Spark: its tuples and V' stay in their Parquet files.

Algorithm 3 estimates a count from the view's tuples that satisfy the query, n_V(Q), and the
domain's, n_D(Q) (`ppdp.domain.count_domain`, which reads no row); for a view after the first,
Algorithm 4 (Section 4.4.1) splits n_V(Q) by whether each tuple is in V', the union of the
earlier views, and needs V''s own count n_V'(Q). Both tables of rows, the view and V', are O(N):
here they stay in Spark. Each view row gets its flag "in V'" in Spark, from a left join with
V''s distinct tuples, and every contingency table of the view (the flag as a column) and of V'
is a Spark aggregation as in `ppdp.spark.cube`: only the cells found, with their counts, reach
the driver. `AlphaBetaRelease`'s estimator reads those tables unchanged, so every estimate and
standard error is the in-memory load's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.schema import Schema
from ppdp.engines.spark.cube import SparkCube, read_whole
from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.mechanisms.alphabeta.draws import published_rates
from ppdp.mechanisms.alphabeta.release import SEEN_COLUMN, AlphaBetaRelease, require_probabilities
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import Cube
from ppdp.release.base import Release

SEEN_DOMAIN = pa.array([0, 1], pa.int8())
"""The values of the flag "in V'" in code order: code 0 for tuples outside V', 1 inside."""

class SparkViewCube(SparkCube):
    """The rows of an alpha-beta view, and the flag ``SEEN_COLUMN`` (1 for a row whose tuple is in
    V', else 0; Algorithm 4), as a Cube counted on Spark.

    The flag is computed in Spark: a left join of the view's rows with the distinct tuples of
    V' (all the tuple's columns as the key), a shuffle join, never a broadcast one (which
    would collect V' to the driver). Without V' (the first view) every flag is 0. Loading
    checks the footers of the view's files (and V''s, through ``earlier``) as a SparkCube
    does; values are checked against their domains as they reach the driver."""

    def __init__(self, paths: Sequence[Path], domains: Mapping[str, pa.Array], n_rows: int,
                 keys: Sequence[str], earlier: SparkCube | None) -> None:
        super().__init__(paths, domains, n_rows)
        self.keys = tuple(keys)
        self.earlier = earlier
        self.domains[SEEN_COLUMN] = SEEN_DOMAIN
        self.sizes[SEEN_COLUMN] = len(SEEN_DOMAIN)

    def _require_unchanged(self) -> None:
        super()._require_unchanged()
        if self.earlier is not None:
            self.earlier._require_unchanged()

    def _frame(self) -> Any:
        from pyspark.sql import functions as F

        columns = [c for c in self.domains if c != SEEN_COLUMN]
        view = super()._frame().select(*columns)
        if self.earlier is None:
            return view.withColumn(SEEN_COLUMN, F.lit(0).cast("tinyint"))
        # Longer than every column name: the mark cannot clash with a column of the view.
        matched = "_" * (1 + max(len(c) for c in columns))
        earlier = self.earlier._frame().select(*self.keys).distinct().withColumn(
            matched, F.lit(1))
        return view.join(earlier.hint("merge"), list(self.keys), "left").select(
            *columns, F.coalesce(F.col(matched), F.lit(0)).cast("tinyint").alias(SEEN_COLUMN))

    def code_batches(self, columns: Sequence[str]) -> Iterator[dict[str, np.ndarray]]:
        raise TypeError("the flag of a SparkViewCube is computed in Spark: its rows are not "
                        "read on the driver")


class SparkAlphaBetaRelease(AlphaBetaRelease):
    """An alpha-beta view loaded with ``engine="spark"``: counted by a `SparkViewCube` over the
    view and a `SparkCube` over V' (Algorithms 3-5, the estimator unchanged). ``codes``
    and ``earlier`` read the whole view and V' from the files into memory when asked for
    (saving it again, say), checked as `load_release` checks them; counting never does."""

    _cube: SparkViewCube

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 cube: SparkViewCube, earlier_cube: Cube) -> None:
        Release.__init__(self, schema, parameters, n_rows)
        self.domain = TupleDomain.of(schema)
        self.rates = published_rates(parameters)
        self._cube = cube
        self._earlier_cube = earlier_cube
        self._read: AlphaBetaRelease | None = None

    def _prefetch(self, queries: Sequence[BoundQuery]) -> None:
        """Count the tables of many queries in a few Spark aggregations (`ScanCube.prefetch`):
        the view's with the flag, and V''s."""
        self._cube.prefetch((*query.columns, SEEN_COLUMN) for query in queries)
        if isinstance(self._earlier_cube, SparkCube):
            self._earlier_cube.prefetch(query.columns for query in queries)

    def _in_memory(self) -> AlphaBetaRelease:
        """The view read from its files, checked as `load_release` checks them."""
        if self._read is None:
            cube = self._cube
            cubes: dict[str, SparkCube] = {"view": cube}
            if cube.earlier is not None:
                cubes["earlier"] = cube.earlier
            self._read = AlphaBetaRelease._from_tables(self.schema, self.parameters,
                                                       self.n_rows, read_whole(cubes))
        return self._read

    # Read from the files when first asked: a property for the in-memory release's attribute
    # (mypy's [override] below: a read-only property for a settable attribute).
    @property
    def codes(self) -> dict[str, np.ndarray]:  # type: ignore[override]
        return self._in_memory().codes

    @property
    def earlier(self) -> dict[str, np.ndarray]:  # type: ignore[override]
        return self._in_memory().earlier


def load_alphabeta(schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                   view_paths: Sequence[Path], earlier_paths: Sequence[Path]
                   ) -> SparkAlphaBetaRelease:
    """An alpha-beta view over its files (and V''s, for a view after the first), counted on
    Spark."""
    require_probabilities(parameters)
    domains = {column.name: column.dictionary() for column in schema.columns}
    earlier: SparkCube | None = None
    earlier_cube: Cube
    if earlier_paths:
        n_earlier = sum(pq.read_metadata(path).num_rows for path in earlier_paths)
        earlier = earlier_cube = SparkCube(earlier_paths, domains, n_earlier)
    else:
        earlier_cube = Cube({c: np.empty(0, dtype=schema[c].dtype) for c in schema.names},
                            schema.sizes(), 0)
    cube = SparkViewCube(view_paths, domains, n_rows, TupleDomain.of(schema).columns, earlier)
    return SparkAlphaBetaRelease(schema, parameters, n_rows, cube, earlier_cube)
