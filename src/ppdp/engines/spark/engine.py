"""The Spark engine: a Spark DataFrame published without collecting its rows to the driver, and
saved releases counted with Spark aggregations over their files."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ppdp.engines.spark.alphabeta import SparkViews, publish_view
from ppdp.engines.spark.alphabeta_count import load_alphabeta
from ppdp.engines.spark.ambiguity import SparkAmbiguityRelease
from ppdp.engines.spark.anatomy import load_anatomy
from ppdp.engines.spark.blocks import publish_groups
from ppdp.engines.spark.cube import SparkCube
from ppdp.engines.spark.mondrian import publish_mondrian
from ppdp.engines.spark.mondrian_count import load_mondrian
from ppdp.engines.spark.rows import publish_rows
from ppdp.engines.spark.session import (
    ROW_ID,
    SparkFailedError,
    SparkUnavailableError,
    check_footers,
    failure_message,
    in_arrow_batches,
    read_parquet,
    require_pyspark,
    spark_session,
)
from ppdp.engines.spark.source import SparkSource
from ppdp.mechanisms.base import GroupMechanism, Mechanism, RowMechanism
from ppdp.mechanisms.mondrian.covers import ROWS
from ppdp.plan.engine import ScannedFiles
from ppdp.plan.keyed import make_key
from ppdp.randomness import RandomState
from ppdp.release.base import Release

STEPS: dict[str, Callable[[Any, SparkSource, int], Any]] = {
    "mondrian": publish_mondrian,  # top levels as aggregations, small partitions in tasks
    "alphabeta": publish_view,  # the first view; `SparkViews` continues a sequence
}
"""Each steps mechanism's publication on Spark, given its source and key."""

Loader = Callable[[Any, Mapping[str, Any], int, Mapping[str, Any], ScannedFiles], Release]

LOADERS: dict[str, tuple[Callable[[Iterable[str]], frozenset[str]], Loader]] = {
    # Anatomy's QIT and ST stay in their files, every count a Spark job.
    "anatomy": (lambda stems: frozenset({"qit", "st"}),
                lambda schema, parameters, n_rows, tables, scans: load_anatomy(
                    schema, parameters, n_rows, scans["qit"], scans["st"])),
    # Mondrian's rows stay in their files; the covers are read.
    "mondrian": (lambda stems: frozenset({ROWS}),
                 lambda schema, parameters, n_rows, tables, scans: load_mondrian(
                     schema, parameters, n_rows, tables, scans[ROWS])),
    # An alpha-beta view and V' stay in their files.
    "alphabeta": (lambda stems: frozenset({"view", "earlier"}.intersection(stems)),
                  lambda schema, parameters, n_rows, tables, scans: load_alphabeta(
                      schema, parameters, n_rows, scans["view"], scans.get("earlier", ()))),
    # Ambiguity's AT_1..AT_m and ST stay in their files.
    "ambiguity": (frozenset,
                  lambda schema, parameters, n_rows, tables, scans: SparkAmbiguityRelease(
                      schema, parameters, n_rows, scans)),
}
"""The releases counted on Spark from more than their rows: the stems left in their files, and
the release built over them."""


def is_spark_frame(data: object) -> bool:
    """Whether ``data`` is a Spark DataFrame (classic or Spark Connect), without importing
    pyspark."""
    return type(data).__module__.startswith("pyspark.sql.") and hasattr(data, "sparkSession")


class SparkEngine:
    """Publishes a Spark DataFrame in Spark tasks (the release's rows stay in Spark until
    ``save`` writes them) and counts a saved release with Spark aggregations."""

    name = "spark"
    batched = False
    # Spark's tasks read the files by path: what it loaded refuses files replaced since.
    reads_snapshots = False

    def takes(self, data: object) -> bool:
        return is_spark_frame(data) or isinstance(data, SparkSource)

    def read_options(self, source: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
        """A Parquet file or a folder of Parquet files, with its roles and domains: Parquet has
        no text to parse (the separator, encoding and non-numeric rules do not apply) and
        Spark cuts it into batches of its own; rows with missing values are refused, not
        dropped. Files Spark would fail on in its tasks are refused here (`check_footers`)."""
        if options.get("missing") == "drop":
            raise ValueError("--engine spark does not drop rows with missing values; drop or "
                             "fill them in Spark first")
        path = Path(source)
        if not (path.is_dir() or path.suffix.lower() == ".parquet"):
            raise ValueError(f"--engine spark reads a Parquet file or a folder of Parquet "
                             f"files; {str(source)!r} is not one")
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {source}")
        # Before Spark starts: bad files are refused at once, not in its tasks.
        check_footers(path)
        taken = ("sensitive", "quasi_identifiers", "domains", "row_id", "observed_domains")
        return {name: options[name] for name in taken if name in options}

    @contextlib.contextmanager
    def command(self) -> Iterator[str]:
        """The active Spark session, or one started for the command and stopped after (on its
        master: `spark_session`); a failure inside Spark (a task's Python error, a lost
        executor) becomes a `SparkFailedError` of one line."""
        require_pyspark()
        # pyspark is optional: imported once require_pyspark has found it.
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
        from pyspark.sql import SparkSession

        started = SparkSession.getActiveSession() is None
        try:
            yield f"on Spark, master {spark_session().sparkContext.master}"
        except (PySparkException, Py4JJavaError) as exc:
            # A Java failure pyspark does not convert (a job's result awaited) comes as
            # Py4JJavaError, with the JVM's whole stack trace as its text.
            raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
        finally:
            active = SparkSession.getActiveSession()
            if started and active is not None:
                active.stop()

    @in_arrow_batches
    def open(self, data: Any, *, sensitive: Sequence[str] | str | None = None,
             quasi_identifiers: Sequence[str] | str | None = None,
             domains: Mapping[str, Sequence[Any]] | None = None, row_id: str = ROW_ID,
             observed_domains: bool = False) -> SparkSource:
        """A Spark DataFrame (or a Parquet file or folder, read with `read_parquet` on the
        active session) as a source, with its roles and declared domains; ``row_id`` names
        its column of stable row ids."""
        require_pyspark()
        if isinstance(data, SparkSource):
            return data
        if isinstance(data, str | os.PathLike):
            data = read_parquet(spark_session(), data)
        return SparkSource(data, sensitive=sensitive, quasi_identifiers=quasi_identifiers,
                           domains=domains, row_id=row_id, observed_domains=observed_domains)

    @in_arrow_batches
    def publish_rows(self, mechanism: RowMechanism, data: Any, *,
                     random_state: RandomState = None, **options: Any) -> Any:
        source = self.open(data, **options)
        return publish_rows(mechanism, source, make_key(random_state))

    @in_arrow_batches
    def publish_blocks(self, mechanism: GroupMechanism, data: Any, *,
                       random_state: RandomState = None, **options: Any) -> Any:
        source = self.open(data, **options)
        return publish_groups(mechanism, source, make_key(random_state))

    @in_arrow_batches
    def publish_steps(self, mechanism: Mechanism, data: Any, *,
                      random_state: RandomState = None, **options: Any) -> Any:
        source = self.open(data, **options)
        key = make_key(random_state)
        steps = STEPS.get(mechanism.name)
        if steps is None:
            raise SparkUnavailableError(f"{mechanism.name} does not run on Spark")
        return steps(mechanism, source, key)

    def views(self, mechanism: Any, data: Any, **options: Any) -> SparkViews:
        """A sequence of alpha-beta views of the source, V' kept as a Spark table."""
        return SparkViews(mechanism, self.open(data, **options))

    def prepare_load(self, release_class: type[Release], stems: Iterable[str]
                     ) -> frozenset[str]:
        """Find or start the Spark session (refusing, in one line, without pyspark or Java);
        the stems counted on Spark from their files."""
        spark_session()
        loader = LOADERS.get(release_class.mechanism)
        return release_class.scanned | (loader[0](stems) if loader else frozenset())

    def rebuild(self, release_class: type[Release], schema: Any,
                parameters: Mapping[str, Any], n_rows: int, tables: Mapping[str, Any],
                scans: ScannedFiles) -> Release:
        if not scans:
            return release_class._from_tables(schema, parameters, n_rows, tables)
        loader = LOADERS.get(release_class.mechanism)
        if loader is not None:
            return loader[1](schema, parameters, n_rows, tables, scans)
        return release_class._from_files(schema, parameters, n_rows, tables, scans)

    def cube(self, paths: Sequence[Path], domains: Mapping[str, Any], n_rows: int, *,
             constants: Sequence[str] = (), digests: Mapping[Any, str] | None = None,
             row_counts: Any = None, opened: Sequence[os.PathLike[str]] | None = None
             ) -> SparkCube:
        """A cube counting with Spark over the files by path (reading neither the rows nor the
        counts of their distinct rows; ``opened`` is not read: Spark's tasks open the paths)."""
        return SparkCube(paths, domains, n_rows, constants=constants)


ENGINE = SparkEngine()
