"""Counting a release of groups (Mondrian's classes, ambiguity's QI-groups) on Spark, with the
unchanged estimator of `ppdp.mechanisms.group_product`.

That estimator adds one term per group (``c_j(C_S) * prod_i l_ij / m_ij``), so its estimate
over all groups is the sum of its estimates over the parts of any partition of the groups.
Spark hands each task its groups in Arrow batches, each batch holding whole groups; the task
builds a `GroupProduct` of the batch's groups and answers every query of a call with it; the
non-zero cells of those answers (query, flat cell of its GROUP BY columns, estimate) are summed
by Spark over the batches, and only the sums, at most one per cell of each query, reach the
driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.engines.spark.session import SparkFailedError, failure_message, in_arrow_batches
from ppdp.estimators.group_product import GroupProduct
from ppdp.query.binding import BoundQuery

Factors = Callable[[pa.RecordBatch], Mapping[str, Any]]
"""Turns a batch of whole groups into their factors: per column, a scipy CSR matrix (groups
of the batch x domain size), as `GroupProduct` takes them."""

# Two leading underscores: no published column of a release is named so.
_QUERY = "__query"
_CELL = "__cell"
_VALUE = "__value"


@in_arrow_batches
def estimate_on_spark(frame: Any, factors: Factors, sizes: Mapping[str, int],
                      queries: Sequence[BoundQuery]) -> list[np.ndarray]:
    """Every query's estimate over its GROUP BY domains (0-d when ungrouped), summed over the
    groups of ``frame``, whose Arrow batches must each hold whole groups: one Spark job."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    sizes = dict(sizes)
    asked = [(q.predicate, q.group_by) for q in queries]
    shapes = [tuple(sizes[c] for c in group_by) for _, group_by in asked]

    def estimate_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            product = GroupProduct(factors(batch), sizes)
            for index, (predicate, group_by) in enumerate(asked):
                values = np.asarray(product.estimate(predicate, group_by),
                                    dtype=np.float64).reshape(-1)
                cells = np.flatnonzero(values)
                yield pa.record_batch(
                    [pa.array(np.full(len(cells), index, dtype=np.int32)),
                     pa.array(cells.astype(np.int64)), pa.array(values[cells])],
                    names=[_QUERY, _CELL, _VALUE])

    summed = (frame.mapInArrow(estimate_batches, f"{_QUERY} int, {_CELL} long, {_VALUE} double")
              .groupBy(_QUERY, _CELL).agg(F.sum(_VALUE).alias(_VALUE)))
    try:
        found = summed.toArrow()
    # Some failures (a result over spark.driver.maxResultSize) come as Java exceptions.
    except (PySparkException, Py4JJavaError) as exc:
        raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
    query = found.column(_QUERY).to_numpy(zero_copy_only=False)
    cell = found.column(_CELL).to_numpy(zero_copy_only=False)
    value = found.column(_VALUE).to_numpy(zero_copy_only=False)
    results = []
    for index, shape in enumerate(shapes):
        dense = np.zeros(int(np.prod(shape, dtype=np.int64)))
        mine = query == index
        dense[cell[mine]] = value[mine]
        results.append(dense.reshape(shape))
    return results
