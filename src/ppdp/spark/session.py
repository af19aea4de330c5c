"""Starting Spark, and reading Parquet input with a stable row id."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ppdp.errors import PpdpError, SchemaError

if TYPE_CHECKING:
    pass


ROW_ID = "__ppdp_row_id"
"""The row-id column `read_parquet` adds (never published)."""

MINIMUM_JAVA = 17

_FILE = "__file"
_INDEX = "__index"
_OFFSET = "__offset"


class SparkUnavailableError(PpdpError):
    """pyspark is not installed, or no Java runtime it can use is."""


class SparkFailedError(PpdpError):
    """Spark could not finish the work (its own error, named on one line)."""


def failure_message(exc: BaseException) -> str:
    """What a Spark failure says on one line: the Python error a task raised (the last
    ``...Error: message`` line of the worker's traceback), else the failure's first line."""
    text = str(exc).strip()
    raised = re.findall(r"^(?:[\w.]+\.)?\w+Error: (.+)$", text, re.MULTILINE)
    return raised[-1] if raised else (text.splitlines() or [type(exc).__name__])[0]


def require_pyspark() -> None:
    """Refuse, in one line, when pyspark is not installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError("the Spark backend needs pyspark: pip install "
                                    "'ppdp[spark]'") from None


def java_version() -> int | None:
    """The major version of the Java runtime Spark would start (``$JAVA_HOME/bin/java``, else
    ``java`` on the PATH), or None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not os.path.exists(java):
        return None
    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True,
                               timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if found is None:
        return None
    major = int(found.group(1))
    # Java 8 and older call themselves "1.8".
    return int(found.group(2) or 0) if major == 1 else major


def require_java() -> None:
    """Refuse, in one line, when no Java runtime of `MINIMUM_JAVA` or later is found."""
    version = java_version()
    if version is None:
        raise SparkUnavailableError(f"the Spark backend needs a Java runtime {MINIMUM_JAVA} or "
                                    f"later; none found (install one, or set JAVA_HOME)")
    if version < MINIMUM_JAVA:
        raise SparkUnavailableError(f"the Spark backend needs Java {MINIMUM_JAVA} or later; "
                                    f"the Java found is {version} (set JAVA_HOME to a newer one)")


def spark_session(app_name: str = "ppdp") -> Any:
    """The active Spark session, or one on the master the Spark configuration names
    (``spark.master`` from ``spark-submit``, ``$MASTER`` or ``spark-defaults.conf``),
    ``local[*]`` when it names none."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    require_java()
    from pyspark import SparkConf

    master = SparkConf().get("spark.master", None) or os.environ.get("MASTER")
    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    if (master or "local").startswith("local"):
        # Local workers run this interpreter (where ppdp is) unless told otherwise.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def read_parquet(spark: Any, path: str | os.PathLike[str]) -> Any:
    """A Parquet file or folder of files as a Spark DataFrame with a stable row id (`ROW_ID`).

    A row's id is its position in its file (Spark's hidden ``_metadata.row_index``) plus the
    rows of the files before its file, in name order: it depends on the files alone, not on
    how Spark splits them into partitions, and equals the row's position in the table the
    in-memory executor reads (the files concatenated in name order)."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(path))
    if ROW_ID in frame.columns:
        raise SchemaError(f"a column is named {ROW_ID!r}, the name of the row id; rename it")
    located = frame.select("*", F.col("_metadata.file_path").alias(_FILE),
                           F.col("_metadata.row_index").alias(_INDEX))
    # One row per file reaches the driver.
    files = located.groupBy(_FILE).count().toArrow().sort_by(_FILE)
    rows = files.column("count").to_numpy()
    offsets = spark.createDataFrame(
        [(name, int(first)) for name, first in zip(files.column(_FILE).to_pylist(),
                                                     np.cumsum(rows) - rows, strict=True)],
        f"{_FILE} string, {_OFFSET} long")
    return located.join(F.broadcast(offsets), _FILE).select(
        *frame.columns, (F.col(_OFFSET) + F.col(_INDEX)).alias(ROW_ID))


ARROW_BATCH_ROWS = 1 << 17
"""Rows of the Arrow batches Spark hands ppdp's tasks (Spark's default is 10,000): a batch
costs a fixed overhead in each task (cutting it into runs, encoding each column, a kernel
call), which 10^7 rows in batches of 10,000 paid a thousand times."""

_ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"

Method = TypeVar("Method", bound=Callable[..., Any])


def in_arrow_batches(method: Method) -> Method:
    """Run a method with Spark's Arrow batches of `ARROW_BATCH_ROWS` rows on the active
    session, the session's own setting restored after."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        if session is None:
            return method(*args, **kwargs)
        before = session.conf.get(_ARROW_BATCH, None)
        session.conf.set(_ARROW_BATCH, str(ARROW_BATCH_ROWS))
        try:
            return method(*args, **kwargs)
        finally:
            if before is None:
                session.conf.unset(_ARROW_BATCH)
            else:
                session.conf.set(_ARROW_BATCH, before)

    return run  # type: ignore[return-value]
