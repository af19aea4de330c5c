"""Bad Parquet input on the Spark engine is one line, at once, as on the other engines (Spark
failed on it only in its tasks, after 31-75 s and about 500 lines of Java traceback); Spark's
failures are one line; its progress bars and warnings stay off a stderr that is not a
terminal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from py4j.protocol import Py4JJavaError
from typer.testing import CliRunner

import ppdp.engines.spark.engine
import ppdp.engines.spark.session
from ppdp.cli import app
from ppdp.engines.spark.session import check_footers, failure_message, read_parquet
from ppdp.errors import SchemaError


@pytest.fixture
def random_bytes(tmp_path: Path) -> Path:
    path = tmp_path / "random.parquet"
    path.write_bytes(os.urandom(5_000))
    return path


@pytest.fixture
def mixed_types(tmp_path: Path) -> Path:
    """A folder whose files disagree on column a: integers in one, text in the other."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), folder / "p0.parquet")
    pq.write_table(pa.table({"a": ["1", "2"], "b": ["x", "y"]}), folder / "p1.parquet")
    return folder


def publish_on_spark(source: Path, output: Path) -> Any:
    return CliRunner().invoke(app, ["publish", str(source), "-m", "dbr", "-s", "b",
                                    "--observed-domains", "--engine", "spark",
                                    "-o", str(output)])


@pytest.mark.parametrize(("fixture", "message"), [
    ("random_bytes", "error: cannot read Parquet file random.parquet (is it a complete Parquet "
                     "file?): Parquet magic bytes not found in footer"),
    ("mixed_types", "error: the Parquet files disagree on column 'a': int64 in p0.parquet, "
                    "string in p1.parquet; write them with one type"),
])
def test_bad_parquet_is_one_line_before_spark_starts(fixture, message, request, tmp_path,
                                                     monkeypatch):
    def no_spark(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(ppdp.engines.spark.engine, "spark_session", no_spark)
    result = publish_on_spark(request.getfixturevalue(fixture), tmp_path / "out")
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert not (tmp_path / "out").exists()


def test_read_parquet_refuses_bad_files_before_a_job(spark, random_bytes, mixed_types):
    with pytest.raises(SchemaError, match=r"^cannot read Parquet file random\.parquet"):
        read_parquet(spark, random_bytes)
    with pytest.raises(SchemaError, match=r"^the Parquet files disagree on column 'a'"):
        read_parquet(spark, mixed_types)


def test_what_spark_reads_as_one_is_left_to_it(tmp_path):
    """Integers of two widths (Spark widens them), and the hidden files Spark skips
    (``_SUCCESS``, ``.crc``), pass; a truncated file does not."""
    folder = tmp_path / "widths"
    folder.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32())}), folder / "p0.parquet")
    pq.write_table(pa.table({"a": pa.array([3, 4], pa.int64())}), folder / "p1.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".p0.parquet.crc").write_bytes(b"not parquet")
    check_footers(folder)
    check_footers(folder / "p0.parquet")
    whole = (folder / "p1.parquet").read_bytes()
    (folder / "p1.parquet").write_bytes(whole[:-20])
    with pytest.raises(SchemaError, match=r"^cannot read Parquet file p1\.parquet"):
        check_footers(folder)


JAVA_FAILURE = """An error occurred while calling o158.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage \
7.0 failed 1 times, most recent failure: Lost task 0.0 in stage 7.0 (TID 9) (192.0.2.2 executor \
driver): org.apache.spark.SparkException: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] \
Encountered error while reading file file:///data/p1.parquet. Data type mismatches when reading \
Parquet column [a]. Expected Spark type bigint, actual Parquet type BINARY. SQLSTATE: KD001
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.parquetColumnDataTypeMismatchError(\
QueryExecutionErrors.scala:898)
Caused by: org.apache.spark.SparkException: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] \
Encountered error while reading file file:///data/p1.parquet. Data type mismatches when reading \
Parquet column [a]. Expected Spark type bigint, actual Parquet type BINARY. SQLSTATE: KD001
Caused by: org.apache.spark.sql.execution.datasources.SchemaColumnConvertNotSupportedException: \
column: [a], physicalType: BINARY, logicalType: bigint
"""


class JavaFailure(Py4JJavaError):
    """A Py4JJavaError without a JVM behind it: its text is a Java failure's."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def test_a_java_failure_says_its_spark_error_in_one_line():
    assert failure_message(JavaFailure(JAVA_FAILURE)) == (
        "[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] Encountered error while reading "
        "file file:///data/p1.parquet. Data type mismatches when reading Parquet column [a]. "
        "Expected Spark type bigint, actual Parquet type BINARY. SQLSTATE: KD001")
    # Without an error class: the root cause.
    plain = ("An error occurred while calling o1.count.\n: java.io.IOException: disk gone\n"
             "\tat Foo.bar(Foo.java:1)\nCaused by: java.io.FileNotFoundException: /data/x\n")
    assert failure_message(JavaFailure(plain)) == "/data/x"


def test_a_java_failure_in_a_command_is_one_error_line(spark, tmp_path, monkeypatch):
    """A failure pyspark does not convert (a job's result awaited) was a Py4JJavaError
    traceback of about 500 lines."""

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise JavaFailure(JAVA_FAILURE)

    monkeypatch.setattr(ppdp.engines.spark.engine, "publish_rows", failing)
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": [3, 4]}), parquet)
    result = publish_on_spark(parquet, tmp_path / "out")
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output and "Py4J" not in result.output
    # After the line that says where the publish runs:
    assert result.stderr.strip().splitlines()[1:] == [
        "error: Spark failed: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] Encountered "
        "error while reading file file:///data/p1.parquet. Data type mismatches when reading "
        "Parquet column [a]. Expected Spark type bigint, actual Parquet type BINARY. SQLSTATE: "
        "KD001"]


class Builder:
    """A stand-in for ``SparkSession.builder``: records the settings a session starts with."""

    def __init__(self) -> None:
        self.settings: dict[str, str] = {}

    def appName(self, name: str) -> Builder:
        return self

    def master(self, master: str) -> Builder:
        self.settings["spark.master"] = master
        return self

    def config(self, key: str, value: str) -> Builder:
        self.settings[key] = value
        return self

    def getOrCreate(self) -> Any:
        context = type("Context", (), {"setLogLevel": lambda self, level: None})()
        return type("Session", (), {"sparkContext": context})()


@pytest.mark.parametrize("terminal", [False, True])
def test_a_session_started_for_ppdp_logs_errors_only(terminal, monkeypatch):
    """Spark's start-up warnings and progress bars reached a stderr that was a log or a
    pipe: the session ppdp starts logs errors only from the start, and shows no progress
    bars off a terminal."""
    from pyspark.sql import SparkSession

    builder = Builder()
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(SparkSession, "builder", builder)
    monkeypatch.setattr(ppdp.engines.spark.session, "_is_terminal", lambda stream: terminal)
    ppdp.engines.spark.session.spark_session()
    assert builder.settings["spark.log.level"] == "ERROR"
    assert builder.settings.get("spark.ui.showConsoleProgress") == (
        None if terminal else "false")
