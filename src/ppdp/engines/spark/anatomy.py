"""A saved Anatomy release counted on Spark: the QIT and the ST stay in their Parquet files.

Anatomy's estimate of a query with condition P on the quasi-identifiers and sensitive value x
is ``sum_g c(g, P) * c(g, x) / |g|`` (Small Domain Randomization, Appendix 10.10; see
`ppdp.mechanisms.anatomy`). The QIT holds one row per input row and the ST one line per
(group, value), so both stay in Spark: the per-group counts c(g, P) come from the QIT's files
(a Spark aggregation, or the condition evaluated with ppdp's own predicates on each batch of
codes in `mapInArrow` tasks), are joined there with the ST's shares ``c(g, x) / |g|``, and are
summed there by cell and sensitive value. Only those sums, at most one per cell of the query's
GROUP BY columns and sensitive value, reach the driver.
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
from ppdp.engines.spark.session import SparkFailedError, failure_message, spark_session
from ppdp.errors import QueryError
from ppdp.mechanisms.anatomy.release import AnatomyRelease
from ppdp.plan.blocks import GROUP_COLUMN
from ppdp.query.cube import Cube, flat_key
from ppdp.query.encoding import encode_values
from ppdp.query.predicates import Predicate

COUNT_COLUMN = "count"
"""The ST's column of c(g, x)."""

# Names longer than the published columns' would clash with none: they start with two
# underscores, which neither GroupID, count nor a column of the schema does here.
_CELL = "__cell"
_ROWS = "__rows"
_SHARE = "__share"
_EXPECTED = "__expected"
_MISSING = "__missing"


class SparkAnatomyCube(SparkCube):
    """Contingency tables of an Anatomy release's QIT, counted on Spark, in which the
    sensitive column holds expected counts ``E[k, x] = sum_g n(k, g) * c(g, x) / |g|``
    (``n(k, g)``: QIT rows of group g in cell k), as `ppdp.mechanisms.anatomy`'s in-memory
    cube computes them (Appendix 10.10).

    Tables without the sensitive column are those of a `SparkCube` over the QIT. Loading
    checks the footers of the QIT's and the ST's files (as a SparkCube does) and, in one Spark
    job, that the ST's counts add up to the QIT's group sizes with every group id in range, as
    the in-memory load does; values are checked against their domains as they reach the
    driver."""

    def __init__(self, qit_paths: Sequence[Path], st_paths: Sequence[Path],
                 domains: Mapping[str, pa.Array], n_rows: int, sensitive: str,
                 sensitive_domain: pa.Array, n_groups: int) -> None:
        super().__init__(qit_paths, domains, n_rows)
        self.sensitive = sensitive
        self.sizes[sensitive] = len(sensitive_domain)
        st_rows = sum(pq.read_metadata(path).num_rows for path in st_paths)
        self._st = SparkCube(st_paths, {sensitive: sensitive_domain}, st_rows)
        for path in st_paths:
            schema = pq.read_metadata(path).schema.to_arrow_schema()
            for name in (GROUP_COLUMN, COUNT_COLUMN):
                if name not in schema.names or not pa.types.is_integer(schema.field(name).type):
                    raise ValueError(f"the ST lacks its integer column {name!r}")
        for path in qit_paths:
            schema = pq.read_metadata(path).schema.to_arrow_schema()
            if GROUP_COLUMN not in schema.names or not pa.types.is_integer(
                    schema.field(GROUP_COLUMN).type):
                raise ValueError(f"the QIT lacks its integer column {GROUP_COLUMN!r}")
        self._check_groups(n_groups)

    def _require_unchanged(self) -> None:
        super()._require_unchanged()
        self._st._require_unchanged()

    def _frames(self) -> tuple[Any, Any]:
        """The QIT and the ST as Spark DataFrames (their files unchanged since loading)."""
        self._require_unchanged()
        spark = spark_session()
        return (spark.read.parquet(*self.paths), spark.read.parquet(*self._st.paths))

    def _check_groups(self, n_groups: int) -> None:
        """Refuse group ids outside ``0 .. n_groups - 1``, missing counts, and ST counts that
        do not add up to the QIT's group sizes: one join of per-group sums, one number to the
        driver."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        qit, st = self._frames()
        sizes = qit.groupBy(GROUP_COLUMN).agg(F.count(F.lit(1)).alias(_ROWS))
        counted = st.groupBy(GROUP_COLUMN).agg(
            F.sum(COUNT_COLUMN).alias(_EXPECTED),
            F.max(F.col(COUNT_COLUMN).isNull().cast("int")).alias(_MISSING))
        group = F.col(GROUP_COLUMN)
        wrong = sizes.join(counted.hint("merge"), GROUP_COLUMN, "full_outer").where(
            group.isNull() | (group < 0) | (group >= n_groups) | (F.col(_MISSING) == 1)
            | (F.coalesce(F.col(_ROWS), F.lit(0)) != F.coalesce(F.col(_EXPECTED), F.lit(0))))
        try:
            found = wrong.limit(1).count()
        # Some failures (a result over spark.driver.maxResultSize) come as Java exceptions.
        except (PySparkException, Py4JJavaError) as exc:
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
        if found:
            raise ValueError("the ST's counts do not add up to the QIT's group sizes, or a "
                             "group id is out of range")

    def _histogram(self, columns: tuple[str, ...], mask: np.ndarray | None) -> np.ndarray:
        if self.sensitive not in columns:
            return super()._histogram(columns, mask)
        if mask is not None:
            raise TypeError("a SparkAnatomyCube holds no rows to mask; use histogram_where")
        self._require_fits(columns)
        plain = [c for c in columns if c != self.sensitive]
        qit, _ = self._frames()
        from pyspark.sql import functions as F

        cells = qit.groupBy(GROUP_COLUMN, *plain).agg(F.count(F.lit(1)).alias(_ROWS))
        found = self._expected(cells, plain)
        codes = {c: encode_values(c, found.column(c), self.domains[c]) for c in plain}
        return self._dense(columns, plain, flat_key(codes, plain, self.sizes) if plain
                           else np.zeros(found.num_rows, dtype=np.int64), found)

    def histogram_where(self, predicate: Predicate, dims: Sequence[str]) -> np.ndarray:
        """Counts over ``dims`` of the QIT rows where ``predicate`` holds, expected counts
        over the sensitive column if it is in ``dims``: the predicate runs on the codes of
        each batch of QIT rows in Spark tasks (the same numpy evaluation as in memory), which
        count the rows it keeps by group and cell of the other dims."""
        dims = tuple(dims)
        if self.sensitive not in dims:
            return super().histogram_where(predicate, dims)
        self._require_fits(dims)
        plain = [c for c in dims if c != self.sensitive]
        read = sorted(set(plain) | set(predicate.columns))
        domains = {c: self.domains[c] for c in read}
        sizes = {c: self.sizes[c] for c in plain}
        n_cells = int(np.prod([sizes[c] for c in plain], dtype=np.int64))

        def count_cells(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                codes = {c: encode_values(c, batch.column(c), domains[c]) for c in read}
                kept = np.asarray(predicate.evaluate(codes, batch.num_rows), dtype=bool)
                groups = batch.column(GROUP_COLUMN).to_numpy(zero_copy_only=False)[kept]
                cells = flat_key(codes, plain, sizes, kept) if plain \
                    else np.zeros(len(groups), dtype=np.int64)
                # Rows of one group and cell counted once per batch (one int64 key: below
                # 2^31 groups times at most MAX_CUBE_CELLS = 2^24 cells).
                pairs, counts = np.unique(groups.astype(np.int64) * n_cells + cells,
                                          return_counts=True)
                group, cell = np.divmod(pairs, n_cells)
                yield pa.record_batch([pa.array(group, pa.int64()), pa.array(cell, pa.int64()),
                                       pa.array(counts.astype(np.int64), pa.int64())],
                                      names=[GROUP_COLUMN, _CELL, _ROWS])

        from pyspark.sql import functions as F

        qit, _ = self._frames()
        cells = (qit.select(GROUP_COLUMN, *read)
                 .mapInArrow(count_cells, f"{GROUP_COLUMN} long, {_CELL} long, {_ROWS} long")
                 .groupBy(GROUP_COLUMN, _CELL).agg(F.sum(_ROWS).alias(_ROWS)))
        found = self._expected(cells, [_CELL])
        keys = found.column(_CELL).to_numpy(zero_copy_only=False).astype(np.int64)
        return self._dense(dims, plain, keys, found)

    def _require_fits(self, columns: Sequence[str]) -> None:
        if not self.fits(columns):
            raise QueryError(f"the columns {list(columns)} span "
                             f"{np.prod([self.sizes[c] for c in columns], dtype=float):.3g} "
                             f"value combinations, too many to count densely")

    def _expected(self, cells: Any, keys: Sequence[str]) -> pa.Table:
        """The sums ``sum_g n(k, g) * c(g, x) / |g|`` by ``keys`` (the cell k) and sensitive
        value x, from ``cells`` (group, keys, rows ``n(k, g)``): joined with the ST's shares
        and summed in Spark; at most one line per cell and value reaches the driver."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        _, st = self._frames()
        # |g| from the ST's counts (equal to the QIT's group sizes: checked on loading).
        shares = st.select(GROUP_COLUMN, self.sensitive, (
            F.col(COUNT_COLUMN) / F.sum(COUNT_COLUMN).over(Window.partitionBy(GROUP_COLUMN))
        ).alias(_SHARE))
        # A shuffle join, never a broadcast one: broadcasting collects a side, about one line
        # per group, to the driver.
        summed = cells.join(shares.hint("merge"), GROUP_COLUMN).groupBy(
            *keys, self.sensitive).agg(
            F.sum(F.col(_ROWS).cast("double") * F.col(_SHARE)).alias(_EXPECTED))
        try:
            return summed.toArrow()
        # Some failures (a result over spark.driver.maxResultSize) come as Java exceptions.
        except (PySparkException, Py4JJavaError) as exc:
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None

    def _dense(self, columns: Sequence[str], plain: Sequence[str], keys: np.ndarray,
               found: pa.Table) -> np.ndarray:
        """Found sums, by flat cell of ``plain`` and sensitive value, as the dense table over
        ``columns``."""
        values = encode_values(self.sensitive, found.column(self.sensitive),
                               self._st.domains[self.sensitive])
        plain_shape = tuple(self.sizes[c] for c in plain)
        size = self.sizes[self.sensitive]
        # Each (cell, value) is found once: the bincount only places its sum.
        expected = np.bincount(keys * size + values,
                               weights=found.column(_EXPECTED).to_numpy(zero_copy_only=False),
                               minlength=int(np.prod(plain_shape, dtype=np.int64)) * size)
        counts = expected.reshape((*plain_shape, size))
        order = [plain.index(c) if c in plain else len(plain) for c in columns]
        return np.transpose(counts, order)


class SparkAnatomyRelease(AnatomyRelease):
    """An Anatomy release loaded with ``engine="spark"``: counted by a `SparkAnatomyCube`; its
    QIT and ST are read from the files only when asked for (saving it again, say)."""

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 cube: SparkAnatomyCube) -> None:
        super().__init__(schema, parameters, n_rows, None, None, None, read=lambda: (
            AnatomyRelease._from_tables(schema, parameters, n_rows,
                                        read_whole({"qit": cube, "st": cube._st}))))
        self._spark_cube = cube

    @property
    def _cubes(self) -> tuple[Cube, Cube]:
        # One Spark cube counts both: tables without the sensitive column are the QIT's.
        return self._spark_cube, self._spark_cube


def load_anatomy(schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 qit_paths: Sequence[Path], st_paths: Sequence[Path]) -> SparkAnatomyRelease:
    """An Anatomy release over its QIT's and ST's files, counted on Spark."""
    (sensitive,) = schema.sensitive
    domains = {name: schema[name].dictionary() for name in schema.quasi_identifiers}
    cube = SparkAnatomyCube(qit_paths, st_paths, domains, n_rows, sensitive,
                            schema[sensitive].dictionary(), int(parameters["n_groups"]))
    return SparkAnatomyRelease(schema, parameters, n_rows, cube)
