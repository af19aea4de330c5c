"""The Spark executor of row plans against the in-memory one: the same key gives the same
release files whatever the input's partitioning."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.plan.order
from ppdp.engines.spark import ROW_ID, SparkSource, failure_message, publish, read_parquet
from ppdp.engines.spark.session import parquet_files
from ppdp.errors import ReleaseError, SchemaError
from ppdp.io.read import read_table
from ppdp.mechanisms import (
    DBR,
    FRAPP,
    LaplaceCounts,
    PerturbationPartitioning,
    UniformPerturbation,
)
from ppdp.plan.keyed import make_key
from ppdp.plan.quotas import QuotaAssignment

MECHANISMS = {
    "uniform": lambda: UniformPerturbation(rho1=0.1, rho2=0.5),
    "dbr": DBR,
    "frapp": lambda: FRAPP(k=0.01, gamma=0.2),
    # Two sub-tables: the exact quotas' summary pass runs on Spark.
    "sdr": lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2),
}
COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "occupation"]
SEED = 11
PARTITIONINGS = {"sdr": (None, 1, 7, 12)}
"""The input's partitionings each mechanism is published from: None (the files as read), or
the rows shuffled into that many partitions. Every mechanism's kernel meets the file splits and
the short runs of shuffled rows (None, 7); the counts of tasks (one, more than the parts) matter
to the executor's exchange, which is the same for every mechanism, and to the summary passes
merged from the tasks, which only sdr has: sdr is published from every partitioning."""


@pytest.fixture(scope="module")
def adult_rows(adult_values) -> pa.Table:
    """Adult's 30,162 rows (six columns), as values."""
    return adult_values(COLUMNS)


@pytest.fixture(scope="module")
def domains(adult_domains) -> dict:
    return {name: domain for name, domain in adult_domains.items() if name in COLUMNS}


@pytest.fixture(scope="module")
def input_folder(adult_rows, tmp_path_factory, parquet_parts) -> Path:
    """Adult cut into three Parquet files of unequal sizes (rows in name order)."""
    return parquet_parts(adult_rows, tmp_path_factory.mktemp("adult-parts"), [9_000, 21_500],
                         4_000)


def release_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_row_ids_are_positions_in_file_name_order(spark, input_folder, adult_rows):
    frame = read_parquet(spark, input_folder).repartition(5)
    # Each row's id finds the row at that position of the files read in name order (the
    # comparison runs in Spark; only the count of mismatches reaches the driver).
    expected = spark.createDataFrame(
        adult_rows.append_column(ROW_ID, pa.array(range(adult_rows.num_rows))))
    assert frame.count() == adult_rows.num_rows
    assert frame.exceptAll(expected).count() == 0


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_spark_release_equals_in_memory_release(name, spark, input_folder, adult_rows, domains,
                                                tmp_path, monkeypatch):
    # Five parts of about 6,000 rows: the exchange by part and the per-part files are tested.
    monkeypatch.setattr(ppdp.plan.order, "ROWS_PER_PART", 7_000)
    table = read_table(adult_rows, sensitive="occupation", domains=domains)
    MECHANISMS[name]().publish(table, random_state=SEED).save(tmp_path / "memory")
    expected = release_files(tmp_path / "memory")
    assert len([n for n in expected if n.startswith("rows-")]) == 5
    # None: the files as read_parquet read them, their row groups read by the tasks.
    for partitions in PARTITIONINGS.get(name, (None, 7)):
        frame = read_parquet(spark, input_folder)
        if partitions is not None:
            frame = frame.repartition(partitions)
        release = publish(MECHANISMS[name](), frame, sensitive="occupation", domains=domains,
                          random_state=SEED)
        assert release.n_rows == adult_rows.num_rows
        assert (release.source.files is None) == (partitions is not None)
        release.save(tmp_path / f"spark-{partitions}")
        assert release_files(tmp_path / f"spark-{partitions}") == expected, partitions


def test_sdr_second_pass_on_spark(spark, input_folder, adult_rows, domains, tmp_path,
                                  monkeypatch):
    # No bin collected in the first pass: every threshold is found by the second pass, whose
    # collected rows come from the tasks (the equality test above needs the first pass only).
    monkeypatch.setattr(QuotaAssignment, "_PREDICTED_ROWS", 0)
    finished = []
    finish = QuotaAssignment.finish
    monkeypatch.setattr(QuotaAssignment, "finish",
                        lambda self: finished.append(self._stage) or finish(self))
    mechanism = MECHANISMS["sdr"]
    table = read_table(adult_rows, sensitive="occupation", domains=domains)
    mechanism().publish(table, random_state=SEED).save(tmp_path / "memory")
    assert finished == [0, 1]
    frame = read_parquet(spark, input_folder).repartition(7)
    publish(mechanism(), frame, sensitive="occupation", domains=domains,
            random_state=SEED).save(tmp_path / "spark")
    assert finished == [0, 1, 0, 1]
    assert release_files(tmp_path / "spark") == release_files(tmp_path / "memory")


def test_key_never_written(spark, input_folder, domains, tmp_path):
    frame = read_parquet(spark, input_folder)
    publish(DBR(), frame, sensitive="occupation", domains=domains,
            random_state=SEED).save(tmp_path / "release")
    key = make_key(SEED)
    secrets = [key.to_bytes(16, "big"), key.to_bytes(16, "little"), str(key).encode(),
               f"{key:x}".encode(), f"{key:032x}".encode()]
    for content in release_files(tmp_path / "release").values():
        assert not any(secret in content for secret in secrets)


def test_release_rows_are_a_spark_frame_of_values(spark, input_folder, domains):
    frame = read_parquet(spark, input_folder)
    rows = publish(UniformPerturbation(rho1=0.1, rho2=0.5), frame, sensitive="occupation",
                   domains=domains, random_state=SEED).rows
    assert rows.columns == COLUMNS
    assert rows.count() == 30_162
    # The quasi-identifiers are published as they are: their counts by value are the input's.
    published = rows.groupBy("sex").count().toArrow().sort_by("sex")
    original = frame.groupBy("sex").count().toArrow().sort_by("sex")
    assert published.equals(original)


def test_collecting_the_rows_fails(spark, input_folder):
    # The session's result limit is what the tests above rely on to show that the executor
    # never brings rows to the driver.
    with pytest.raises(Exception, match="maxResultSize"):
        read_parquet(spark, input_folder).toArrow()


def test_refusals(spark, input_folder, domains, tmp_path):
    frame = read_parquet(spark, input_folder)
    with pytest.raises(SchemaError, match="row-id column 'id'"):
        publish(DBR(), frame, sensitive="occupation", domains=domains, row_id="id")
    with pytest.raises(SchemaError, match="distinct non-negative"):
        publish(DBR(), frame.withColumn(ROW_ID, frame[ROW_ID] - 5), sensitive="occupation",
                domains=domains)
    # Laplace gives a query session: no release to write.
    with pytest.raises(ReleaseError, match="laplace answers queries over the private data"):
        publish(LaplaceCounts(epsilon=1.0), frame, sensitive="occupation",
                domains=domains).save(tmp_path / "release")
    assert not (tmp_path / "release").exists()


def test_a_named_row_id_column(spark, input_folder, adult_rows, domains, tmp_path):
    table = read_table(adult_rows, sensitive="occupation", domains=domains)
    DBR().publish(table, random_state=SEED).save(tmp_path / "memory")
    frame = read_parquet(spark, input_folder).withColumnRenamed(ROW_ID, "id").repartition(3)
    publish(DBR(), frame, sensitive="occupation", domains=domains, row_id="id",
            random_state=SEED).save(tmp_path / "spark")
    assert release_files(tmp_path / "spark") == release_files(tmp_path / "memory")


def test_a_value_outside_the_domain_is_refused_in_the_kernel():
    # The plan is built from the domains found first; a row that then holds another value (an
    # input that changed) fails its task instead of being published with a wrong code.
    from ppdp.data.schema import Column
    from ppdp.engines.spark.source import _in_domain

    sex = Column("sex", "quasi-identifier", ("Female", "Male"))
    assert _in_domain(sex, np.array([1, 0, 1])).tolist() == [1, 0, 1]
    with pytest.raises(SchemaError, match="'sex' holds a value outside its domain"):
        _in_domain(sex, np.array([1, -1, 0]))


def test_repeated_row_ids_fail_the_save(spark, input_folder, domains, tmp_path):
    from pyspark.errors import PySparkException

    frame = read_parquet(spark, input_folder)
    # Ids distinct within each of two tasks, repeated across them: found after the exchange.
    repeated = frame.repartitionByRange(2, ROW_ID).withColumn(ROW_ID, frame[ROW_ID] % 20_000)
    release = publish(DBR(), repeated, sensitive="occupation", domains=domains,
                      random_state=SEED)
    with pytest.raises(PySparkException, match="repeats an id") as failed:
        release.save(tmp_path / "release")
    assert not (tmp_path / "release").exists()
    # The CLI's one line: the task's error, not Spark's wrapping of it.
    assert failure_message(failed.value) == (f"the row-id column {ROW_ID!r} repeats an id; it "
                                             f"must hold distinct non-negative integers")
    # Repeated within a task: refused before publishing, on one line.
    with pytest.raises(SchemaError, match=f"^the row-id column {ROW_ID!r} repeats an id"):
        publish(DBR(), frame.withColumn(ROW_ID, frame[ROW_ID] % 20_000).coalesce(1),
                sensitive="occupation", domains=domains)


def test_kernel_runs_in_place_on_file_splits_only(spark, input_folder):
    """The files' splits hold long runs of distinct ids: no exchange before the kernel; a
    round-robin partitioning leaves runs of a row or two, which are exchanged by range."""
    frame = read_parquet(spark, input_folder)
    # A DataFrame derived from read_parquet's: Spark's rows, on the files' splits.
    derived = SparkSource(frame.select("*"), sensitive="occupation")
    assert derived.in_place and derived.files is None
    assert not SparkSource(frame.repartition(7), sensitive="occupation").in_place


def test_tasks_read_the_row_groups(spark, input_folder, adult_rows):
    """read_parquet's DataFrame, published as it is: the footers give the rows and their ids,
    the tasks read each row group with pyarrow; the domains equal those Spark counts."""
    frame = read_parquet(spark, input_folder)
    files = parquet_files(frame)
    # Three files of 9,000, 12,500 and 8,662 rows in row groups of at most 4,000.
    assert [rows for _, _, _, rows in files.row_groups] == [
        4_000, 4_000, 1_000, 4_000, 4_000, 4_000, 500, 4_000, 4_000, 662]
    assert [first for _, _, first, _ in files.row_groups] == [
        0, 4_000, 8_000, 9_000, 13_000, 17_000, 21_000, 21_500, 25_500, 29_500]
    read = SparkSource(frame, sensitive="occupation")
    spark_rows = SparkSource(frame.select("*"), sensitive="occupation")
    assert read.files is not None and read.n_rows == adult_rows.num_rows
    assert read.schema == spark_rows.schema
    for name in COLUMNS:
        assert np.array_equal(read.histogram((name,)), spark_rows.histogram((name,)))


def test_files_whose_uris_are_escaped(spark, input_folder, adult_rows, domains, tmp_path):
    """Spark names files by URI, escaping a space but not an é, and calls a local file
    file:/path in its rows but file:///path in its file list; the ids and the release are
    those of the plain folder."""
    folder = tmp_path / "adult parts é"
    shutil.copytree(input_folder, folder)
    (folder / "part-2.parquet").rename(folder / "part-2 é.parquet")
    frame = read_parquet(spark, folder)
    assert parquet_files(frame) is not None
    assert frame.where(f"{ROW_ID} is null").count() == 0
    assert frame.agg({ROW_ID: "max"}).first()[0] == adult_rows.num_rows - 1
    publish(DBR(), frame, sensitive="occupation", domains=domains,
            random_state=SEED).save(tmp_path / "escaped")
    table = read_table(adult_rows, sensitive="occupation", domains=domains)
    DBR().publish(table, random_state=SEED).save(tmp_path / "memory")
    assert release_files(tmp_path / "escaped") == release_files(tmp_path / "memory")


def test_row_groups_read_by_tasks_refuse_missing_values_and_changed_files(spark, adult_rows,
                                                                           domains, tmp_path):
    folder = tmp_path / "input"
    folder.mkdir()
    sex = adult_rows.column("sex").to_pylist()
    sex[123] = None
    pq.write_table(adult_rows.set_column(COLUMNS.index("sex"), "sex", pa.array(sex)),
                   folder / "part.parquet", row_group_size=10_000)
    frame = read_parquet(spark, folder)
    with pytest.raises(SchemaError, match=r"^column 'sex' has 1 missing values"):
        publish(DBR(), frame, sensitive="occupation", domains=domains)
    pq.write_table(adult_rows, folder / "part.parquet", row_group_size=10_000)
    frame = read_parquet(spark, folder)
    release = publish(DBR(), frame, sensitive="occupation", domains=domains)
    # The file rewritten after it was read, in other row groups: the tasks refuse it.
    pq.write_table(adult_rows, folder / "part.parquet", row_group_size=7_000)
    with pytest.raises(Exception) as failed:
        release.save(tmp_path / "release")
    assert failure_message(failed.value).endswith("part.parquet changed since it was read; "
                                                  "read it again")
    assert not (tmp_path / "release").exists()


def test_columns_spark_reads_otherwise_are_spark_rows(spark, adult_rows, domains, tmp_path):
    """A column neither text nor a signed integer in the files (here unsigned) is read by
    Spark: its values are Spark's, and so are the rows."""
    folder = tmp_path / "input"
    folder.mkdir()
    unsigned = adult_rows.set_column(COLUMNS.index("age"), "age",
                                     adult_rows.column("age").cast(pa.uint16()))
    pq.write_table(unsigned, folder / "part.parquet")
    frame = read_parquet(spark, folder)
    assert parquet_files(frame) is not None
    source = SparkSource(frame, sensitive="occupation", domains=domains)
    assert source.files is None and source.n_rows == adult_rows.num_rows
