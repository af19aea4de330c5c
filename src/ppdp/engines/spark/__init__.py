"""The Spark engine: a table held in a Spark DataFrame published without collecting its rows to
the driver, and saved releases counted with Spark aggregations.

Rows are keyed by a stable *row id*, a column of distinct non-negative integers: one the user
names, or the one `read_parquet` adds (the row's position in its file plus the rows of the
files before it in name order). Spark's ``monotonically_increasing_id()`` is not used: it
encodes the partition a row lands in. The release key stays on the driver: the tasks get
only keys derived from it through BLAKE2b (`ppdp.plan.keyed.stream_key`).

Modules: `engine` (the engine: publishing a frame, loading a release), `session` (starting
Spark, reading Parquet with row ids), `source` (a DataFrame as a
`ppdp.table.source.Source`; `read_parquet`'s files read by the tasks themselves), `rows` (row-local
mechanisms), `blocks` (group mechanisms, block by block), `mondrian` (Mondrian: top levels as
aggregations, then in memory), `alphabeta` (alpha-beta views, the earlier views a Spark table),
`cube` (counting a saved release), `anatomy` (counting a saved Anatomy release, its QIT and ST
left in their files), `alphabeta_count` (counting a saved alpha-beta view, its tuples and V'
left in their files), `group_product` (counting a release of groups batch by batch with the
in-memory estimator), `mondrian_count` and `ambiguity` (counting a saved Mondrian or ambiguity
release, its rows or tables left in their files), `saved` (a saved Spark release's tables as
DataFrames).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ppdp.engines.spark.blocks import SparkGroupRelease
from ppdp.engines.spark.cube import SparkCube
from ppdp.engines.spark.engine import ENGINE, SparkEngine, is_spark_frame
from ppdp.engines.spark.mondrian import SparkMondrianRelease
from ppdp.engines.spark.rows import SparkRelease
from ppdp.engines.spark.session import (
    ROW_ID,
    SparkFailedError,
    SparkUnavailableError,
    failure_message,
    java_version,
    read_parquet,
    require_java,
    require_pyspark,
    spark_session,
)
from ppdp.engines.spark.source import SparkSource
from ppdp.plan.engine import Planned
from ppdp.plan.engine import publish as publish_on
from ppdp.randomness import RandomState

if TYPE_CHECKING:
    from pathlib import Path


class SparkPublished(Protocol):
    """What publishing on Spark gives: the input (``source``), the mechanism's name, and
    ``save``, which runs what is left of the work in Spark tasks and writes the release
    directory, ``release.json`` last, atomically."""

    mechanism: str
    source: SparkSource

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        ...


__all__ = ["ENGINE", "ROW_ID", "SparkCube", "SparkEngine", "SparkFailedError",
           "SparkGroupRelease", "SparkMondrianRelease", "SparkPublished", "SparkRelease",
           "SparkSource", "SparkUnavailableError", "failure_message", "is_spark_frame",
           "java_version", "publish", "read_parquet", "require_java", "require_pyspark",
           "spark_session"]


def publish(mechanism: Planned, frame: Any, *, sensitive: Sequence[str] | str | None = None,
            quasi_identifiers: Sequence[str] | str | None = None,
            domains: Mapping[str, Sequence[Any]] | None = None, row_id: str = ROW_ID,
            observed_domains: bool = False, random_state: RandomState = None) -> Any:
    """Publish a Spark DataFrame with a mechanism; the release's rows stay in Spark (laplace
    gives its query session, whose counts are Spark aggregations over the frame).

    ``row_id`` names the column of stable row ids (see the package); the roles and declared
    domains are those `ppdp.read_table` takes. When the row ids are the rows' positions
    ``0 .. n - 1`` (as `read_parquet`'s are), the same ``random_state`` gives the same release
    files as ``mechanism.publish(table)`` on the rows in that order (for splu, anatomy and
    ambiguity: as ``mechanism.publish_source``, in blocks beyond `ppdp.plan.blocks.BLOCK_ROWS`
    rows)."""
    return publish_on(mechanism, frame, engine="spark", random_state=random_state,
                      sensitive=sensitive, quasi_identifiers=quasi_identifiers, domains=domains,
                      row_id=row_id, observed_domains=observed_domains)
