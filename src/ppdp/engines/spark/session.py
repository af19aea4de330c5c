"""Starting Spark, and reading Parquet input with a stable row id."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ppdp.errors import PpdpError, SchemaError

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
    ``...Error: message`` line of the worker's traceback), else the first Spark error with an
    error class (``[FAILED_READ_FILE...] ...``) in a Java failure's chain, else its root
    cause, else the failure's first line."""
    text = str(exc).strip()
    raised = re.findall(r"^(?:[\w.]+\.)?\w+Error: (.+)$", text, re.MULTILINE)
    if raised:
        return raised[-1]
    # A Java failure (Py4JJavaError) holds the JVM's stack trace: its exceptions' lines.
    java = re.findall(r"^(?:: |Caused by: )?[a-z][\w$]*(?:\.[\w$]+)+(?:Exception|Error): (\S.*)$",
                      text, re.MULTILINE)
    classed = [message for message in java if re.match(r"\[[A-Z][A-Z0-9_.]*\] ", message)]
    if classed or java:
        return (classed or java)[0 if classed else -1]
    return (text.splitlines() or [type(exc).__name__])[0]


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
    # Spark's own lines on stderr: errors only, from the start (setLogLevel below comes after
    # the start-up warnings), and no progress bars where stderr is not a terminal (a log, a
    # pipe, where each redraw is a line).
    builder = (SparkSession.builder.appName(app_name).master(master or "local[*]")
               .config("spark.log.level", "ERROR"))
    if not _is_terminal(sys.stderr):
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    if (master or "local").startswith("local"):
        # Local workers run this interpreter (where ppdp is) unless told otherwise.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced by an object without a descriptor, closed
        return False


@dataclass(frozen=True)
class ParquetFiles:
    """The Parquet files behind a DataFrame `read_parquet` returned, as their footers describe
    them: each file's URI (in name order) and each row group's file, index within the file,
    first row id and rows. Python tasks read them with pyarrow (`ppdp.spark.source`)."""

    uris: tuple[str, ...]
    row_groups: tuple[tuple[int, int, int, int], ...]
    schema: pa.Schema

    @property
    def n_rows(self) -> int:
        return sum(group[3] for group in self.row_groups)


_READ_FILES: weakref.WeakKeyDictionary[Any, ParquetFiles] = weakref.WeakKeyDictionary()
"""The files of every DataFrame `read_parquet` returned and pyarrow can read, by DataFrame (a
DataFrame derived from it, by ``select`` or ``repartition`` say, is another object: not here)."""


def parquet_files(frame: Any) -> ParquetFiles | None:
    """The files behind a DataFrame exactly as `read_parquet` returned it, else None."""
    return _READ_FILES.get(frame)


def read_parquet(spark: Any, path: str | os.PathLike[str]) -> Any:
    """A Parquet file or folder of files as a Spark DataFrame with a stable row id (`ROW_ID`).

    A row's id is its position in its file (Spark's hidden ``_metadata.row_index``) plus the
    rows of the files before its file, in name order: it depends on the files alone, not on
    how Spark splits them into partitions, and equals the row's position in the table the
    in-memory executor reads (the files concatenated in name order).

    The rows before each file come from the files' footers when pyarrow can open the files
    (pyarrow's filesystems: ``file:``, ``hdfs:``, ``s3:``, ``gs:``), else from a Spark job
    counting each file's rows.
    The DataFrame returned is then remembered with its files (`parquet_files`): publishing it
    as it is, ppdp's tasks read its row groups with pyarrow instead of taking Spark's rows."""
    from pyspark.sql import functions as F

    check_footers(path)
    frame = spark.read.parquet(str(path))
    if ROW_ID in frame.columns:
        raise SchemaError(f"a column is named {ROW_ID!r}, the name of the row id; rename it")
    located = frame.select("*", F.col("_metadata.file_path").alias(_FILE),
                           F.col("_metadata.row_index").alias(_INDEX))
    files = _footers(sorted(frame.inputFiles()), frame.columns)
    if files is None:
        # One row per file reaches the driver.
        counted = located.groupBy(_FILE).count().toArrow().sort_by(_FILE)
        names = counted.column(_FILE).to_pylist()
        rows = counted.column("count").to_numpy()
    else:
        names = list(files.uris)
        rows = np.bincount([group[0] for group in files.row_groups],
                           weights=[group[3] for group in files.row_groups],
                           minlength=len(names)).astype(np.int64)
    # inputFiles names a local file file:///path, the rows' file_path file:/path: both kept.
    offsets = spark.createDataFrame(
        [(form, int(first)) for name, first in zip(names, np.cumsum(rows) - rows, strict=True)
         for form in {name, re.sub(r"^([A-Za-z][\w+.-]*):///", r"\1:/", name)}],
        f"{_FILE} string, {_OFFSET} long")
    # A left join: a row whose file went unmatched has no id (refused), rather than vanishing.
    read = located.join(F.broadcast(offsets), _FILE, "left").select(
        *frame.columns, (F.col(_OFFSET) + F.col(_INDEX)).alias(ROW_ID))
    if files is not None:
        _READ_FILES[read] = files
    return read


def open_parquet(uri: str, **options: Any) -> Any:
    """A `pyarrow.parquet.ParquetFile` from a Spark file URI (its non-ASCII characters
    escaped, as pyarrow's URI parser wants them)."""
    filesystem, where = pafs.FileSystem.from_uri(quote(uri, safe=_URI_SAFE))
    return pq.ParquetFile(where, filesystem=filesystem, **options)


_URI_SAFE = "%:/?#[]@!$&'()*+,;=~"
"""Characters a URI keeps as they are (``%`` too: Spark's URIs are escaped already)."""


def check_footers(path: str | os.PathLike[str]) -> None:
    """Refuse, in one line, Parquet input that Spark would fail on only in its tasks, after
    a job's worth of waiting and pages of Java traceback: a file whose footer pyarrow finds
    invalid (not Parquet, truncated), or files that disagree on the kind of a column's values
    (numbers in one, text in another; integers of two widths Spark reads as one).

    The files are those Spark reads (hidden ``.name`` and ``_name`` files left out). Input
    that pyarrow cannot reach (a file system it does not know, no credentials) is left to
    Spark, as `read_parquet` leaves it."""
    name = os.fspath(path)
    try:
        if re.match(r"^[A-Za-z][\w+.-]*://", name):
            filesystem, root = pafs.FileSystem.from_uri(name)
        else:
            filesystem, root = pafs.LocalFileSystem(), os.path.abspath(name)
        found = filesystem.get_file_info(root)
        if found.type == pafs.FileType.Directory:
            entries = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
            files = sorted(entry.path for entry in entries
                           if entry.type == pafs.FileType.File and not any(
                               part.startswith((".", "_"))
                               for part in entry.path[len(root):].split("/") if part))
        else:
            files = [root]
    except (pa.ArrowException, OSError, ValueError):
        return
    kinds: dict[str, tuple[str, str, str]] = {}
    for file in files:
        shown = file[len(root):].lstrip("/") or os.path.basename(file)
        try:
            with filesystem.open_input_file(file) as handle:
                schema = pq.ParquetFile(handle).schema_arrow
        except pa.ArrowInvalid as exc:
            raise SchemaError(f"cannot read Parquet file {shown} (is it a complete Parquet "
                              f"file?): {exc}") from None
        except (pa.ArrowException, OSError):
            return
        for field in schema:
            kind = _value_kind(field.type)
            earlier = kinds.setdefault(field.name, (kind, str(field.type), shown))
            if earlier[0] != kind:
                raise SchemaError(f"the Parquet files disagree on column {field.name!r}: "
                                  f"{earlier[1]} in {earlier[2]}, {field.type} in {shown}; "
                                  f"write them with one type")


def _value_kind(dtype: pa.DataType) -> str:
    """What Spark reads a Parquet type as, up to the width it widens to: integers, floats
    and dictionary-encoded values as their kind, every other type as itself."""
    if pa.types.is_dictionary(dtype):
        return _value_kind(dtype.value_type)
    if pa.types.is_integer(dtype):
        return "integer"
    if pa.types.is_floating(dtype):
        return "floating"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "text"
    return str(dtype)


def _footers(uris: list[str], columns: list[str]) -> ParquetFiles | None:
    """The files' row groups from their footers, or None when pyarrow cannot open one or
    they disagree on the columns' types (Spark then reads them its own way)."""
    groups: list[tuple[int, int, int, int]] = []
    schema = None
    first = 0
    try:
        for index, uri in enumerate(uris):
            with open_parquet(uri) as file:
                found = file.schema_arrow
                metadata = file.metadata
            found = pa.schema([found.field(name) for name in columns])
            if schema is None:
                schema = found
            elif not found.equals(schema):
                return None
            for group in range(metadata.num_row_groups):
                rows = metadata.row_group(group).num_rows
                groups.append((index, group, first, rows))
                first += rows
    except (pa.ArrowException, OSError, KeyError, ValueError):
        return None
    if schema is None:
        return None
    return ParquetFiles(tuple(uris), tuple(groups), schema)


ARROW_BATCH_ROWS = 1 << 17
"""Rows of the Arrow batches Spark hands ppdp's tasks (Spark's default is 10,000): a batch
costs a fixed overhead in each task (cutting it into runs, encoding each column, a kernel
call), which 10^7 rows in batches of 10,000 paid a thousand times."""

_ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"

_Arguments = ParamSpec("_Arguments")
_Result = TypeVar("_Result")


def in_arrow_batches(method: Callable[_Arguments, _Result]) -> Callable[_Arguments, _Result]:
    """Run a method with Spark's Arrow batches of `ARROW_BATCH_ROWS` rows on the active
    session, the session's own setting restored after."""

    @functools.wraps(method)
    def run(*args: _Arguments.args, **kwargs: _Arguments.kwargs) -> _Result:
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

    return run
