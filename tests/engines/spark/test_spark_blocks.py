"""Group mechanisms on Spark (`ppdp.spark.blocks`) against the streaming executor: the same key
gives the same release files whatever the input's partitioning; the groups keep their
guarantees and every row.

4,000 of Adult's rows in blocks of at most 1,500 rows make three blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdp.engines.spark import SparkCube, failure_message, publish, read_parquet
from ppdp.engines.spark.anatomy import SparkAnatomyCube
from ppdp.engines.spark.blocks import SparkGroupRelease, publish_groups
from ppdp.engines.spark.source import SparkSource
from ppdp.errors import ReleaseError
from ppdp.io.read import read_table
from ppdp.mechanisms import Ambiguity, Anatomy, SPLUGen
from ppdp.plan import blocks
from ppdp.plan.blocks import block_quotas
from ppdp.plan.keyed import make_key
from ppdp.release.load import load_release
from ppdp.table.source import TableSource
from ppdp.table.table import Table
from tests.engines.spark.test_spark_rows import release_files

MECHANISMS = {
    "splu": lambda: SPLUGen(gamma=5),
    "anatomy": lambda: Anatomy(l=5),
    "ambiguity": lambda: Ambiguity(alpha=0.3, beta=1 / 5),
}
COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "occupation"]
N_ROWS = 4_000
BLOCK_ROWS = 1_500
N_BLOCKS = 3  # ceil(4,000 / 1,500)
PARTITIONINGS = (1, 7)
SEED = 5


@pytest.fixture(scope="module")
def adult_rows(adult_values) -> pa.Table:
    return adult_values(COLUMNS, N_ROWS)


@pytest.fixture(scope="module")
def domains(adult_domains) -> dict:
    return {name: adult_domains[name] for name in COLUMNS}


@pytest.fixture(scope="module")
def table(adult_rows, domains) -> Table:
    return read_table(adult_rows, sensitive="occupation", domains=domains)


@pytest.fixture(scope="module")
def input_folder(adult_rows, tmp_path_factory, parquet_parts) -> Path:
    """The rows in two Parquet files of unequal sizes (rows in name order)."""
    return parquet_parts(adult_rows, tmp_path_factory.mktemp("adult-parts"), [1_700], 600)


@pytest.fixture(scope="module")
def streamed(table, tmp_path_factory) -> dict[str, Path]:
    """Each mechanism's release from the streaming executor, in blocks of 1,500 rows."""
    folder = tmp_path_factory.mktemp("streamed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blocks, "BLOCK_ROWS", BLOCK_ROWS)
        return {name: MECHANISMS[name]().publish_source(TableSource(table), folder / name,
                                                         random_state=SEED)
                for name in MECHANISMS}


@pytest.fixture(scope="module")
def sources(spark, input_folder, domains) -> dict[int, SparkSource]:
    """The input on Spark, for each partitioning."""
    return {partitions: SparkSource(read_parquet(spark, input_folder).repartition(partitions),
                                    sensitive="occupation", domains=domains)
            for partitions in PARTITIONINGS}


@pytest.fixture(scope="module")
def on_spark(sources, tmp_path_factory) -> dict[tuple[str, int], Path]:
    """Each mechanism's release from Spark, for each partitioning of the input."""
    folder = tmp_path_factory.mktemp("on-spark")
    saved = {}
    for partitions, source in sources.items():
        for name in MECHANISMS:
            release = publish_groups(MECHANISMS[name](), source, make_key(SEED),
                                     block_rows=BLOCK_ROWS)
            assert release.n_blocks == N_BLOCKS
            saved[name, partitions] = release.save(folder / f"{name}-{partitions}")
    return saved


def histogram(values: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(values, minlength=size)


def quasi_rows(codes, names) -> np.ndarray:
    """The rows over some columns as sorted tuples (a multiset)."""
    return np.sort(np.rec.fromarrays([codes[n] for n in names]))


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_spark_release_equals_streaming_release(name, on_spark, streamed):
    expected = release_files(streamed[name])
    stem = "rows" if name == "splu" else "st"
    assert [n for n in expected if n.startswith(f"{stem}-")] == \
        [f"{stem}-{b:05d}.parquet" for b in range(N_BLOCKS)]
    for partitions in PARTITIONINGS:
        assert release_files(on_spark[name, partitions]) == expected, partitions


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_one_block_equals_in_memory_release(name, sources, table, tmp_path):
    MECHANISMS[name]().publish(table, random_state=SEED).save(tmp_path / "memory")
    # Blocks of BLOCK_ROWS (10^7) rows: one.
    release = publish_groups(MECHANISMS[name](), sources[7], make_key(SEED))
    assert release.n_blocks == 1
    release.save(tmp_path / "spark")
    assert release_files(tmp_path / "spark") == release_files(tmp_path / "memory")


def test_publish_runs_group_mechanisms_in_blocks(spark, input_folder, domains, tmp_path):
    release = publish(Anatomy(l=5), read_parquet(spark, input_folder), sensitive="occupation",
                      domains=domains)
    assert isinstance(release, SparkGroupRelease)
    assert (release.mechanism, release.n_rows, release.n_blocks) == ("anatomy", N_ROWS, 1)
    # The tables exist once the tasks have published and written them.
    with pytest.raises(ReleaseError, match="anatomy release is published by save"):
        release.tables()
    release.save(tmp_path / "release")
    tables = release.tables()
    assert sorted(tables) == ["qit", "st"]
    # Every input row in the QIT, and the ST's counts adding up to them (Spark's sums).
    assert tables["qit"].count() == N_ROWS
    assert tables["st"].agg({"count": "sum"}).first()[0] == N_ROWS


def test_key_never_written(on_spark):
    key = make_key(SEED)
    secrets = [key.to_bytes(16, "big"), key.to_bytes(16, "little"), str(key).encode(),
               f"{key:x}".encode(), f"{key:032x}".encode()]
    for path in on_spark.values():
        for content in release_files(path).values():
            assert not any(secret in content for secret in secrets)


def test_splu_keeps_every_row(on_spark, table):
    release = load_release(on_spark["splu", 7])
    quasi = table.schema.quasi_identifiers
    # The other columns are published as they are: the same rows, none lost or repeated.
    assert np.array_equal(quasi_rows(release.codes, quasi), quasi_rows(table.codes, quasi))
    # Each part is a block: its rows are the block's quotas.
    size = table.schema["occupation"].size
    quotas = block_quotas(histogram(table.codes["occupation"], size), N_BLOCKS)
    assert release.part_rows == tuple(quotas.sum(axis=1))


def test_anatomy_groups_are_l_diverse(on_spark, table):
    path = on_spark["anatomy", 7]
    release = load_release(path)
    quasi = table.schema.quasi_identifiers
    assert np.array_equal(quasi_rows(release.qit, quasi), quasi_rows(table.codes, quasi))
    groups, values, counts = release.st
    size = table.schema["occupation"].size
    assert np.array_equal(histogram(np.repeat(values, counts), size),
                          histogram(table.codes["occupation"], size))
    n_groups = release.parameters["n_groups"]
    # Every group: at least l values, each once, and as many QIT rows as ST counts.
    assert np.all(counts == 1)
    assert np.bincount(groups, minlength=n_groups).min() >= 5
    assert len(np.unique(groups.astype(np.int64) * size + values)) == len(groups)
    assert np.array_equal(np.bincount(release.qit_groups, minlength=n_groups),
                          np.bincount(groups, weights=counts, minlength=n_groups))
    # The parts' group ids follow one another (offset by the earlier blocks' groups), each
    # part holding its block's quotas.
    quotas = block_quotas(histogram(table.codes["occupation"], size), N_BLOCKS)
    start = 0
    for block in range(N_BLOCKS):
        part = pq.read_table(path / f"st-{block:05d}.parquet")
        ids = part.column("GroupID").to_numpy()
        assert ids.min() == start
        start = ids.max() + 1
        qit_ids = pq.read_table(path / f"qit-{block:05d}.parquet").column("GroupID")
        assert set(qit_ids.to_pylist()) == set(ids.tolist())
        part_values = part.column("occupation").combine_chunks().indices.to_numpy()
        assert np.array_equal(histogram(part_values, size), quotas[block])
    assert start == n_groups


def test_ambiguity_groups_meet_alpha_and_beta(on_spark, table):
    release = load_release(on_spark["ambiguity", 7])
    assert release.presence().max() <= 0.3
    assert release.association().max() <= 1 / 5
    assert release.group_sizes().min() >= 5
    groups, values, counts = release.st
    size = table.schema["occupation"].size
    assert len(np.unique(groups.astype(np.int64) * size + values)) == len(groups)
    assert np.array_equal(np.bincount(values, weights=counts, minlength=size),
                          histogram(table.codes["occupation"], size))
    assert release.n_rows == N_ROWS
    # Every value of every quasi-identifier is in some group's auxiliary table.
    for q in table.schema.quasi_identifiers:
        assert set(release.auxiliary[q][1].tolist()) == set(table.codes[q].tolist())


QUERIES = ["occupation = 'Sales'", "sex = 'Female' AND occupation = 'Exec-managerial'",
           "age >= 40 AND race = 'White'",
           "SELECT COUNT(*) FROM t WHERE sex = 'Female' GROUP BY occupation"]


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_counts_on_spark_equal_in_memory(name, on_spark, spark):
    path = on_spark[name, 7]
    memory, counted = load_release(path), load_release(path, engine="spark")
    if name == "splu":
        # A scanned rows table: every count is a Spark aggregation over the parts.
        assert isinstance(counted._cube, SparkCube)
    if name == "anatomy":
        # The QIT's and ST's parts stay in their files: counted on Spark, none read.
        assert isinstance(counted._cubes[1], SparkAnatomyCube)
    for query in QUERIES:
        expected, found = memory.count(query), counted.count(query)
        if name == "anatomy":
            assert counted._read is None
        if hasattr(expected, "groups"):
            assert [key for key, _ in found.groups] == [key for key, _ in expected.groups]
            pairs = [(e, f) for (_, e), (_, f) in zip(expected.groups, found.groups,
                                                      strict=True)]
        else:
            pairs = [(expected, found)]
        for e, f in pairs:
            # Anatomy on Spark sums the same terms in another order: within 2 N 2^-53
            # relatively (see tests/engines/spark/test_spark_group_count.py), below 1e-12 here.
            assert f.value == pytest.approx(e.value, rel=1e-12, abs=1e-9), query
            if e.stderr is None:
                assert f.stderr is None
            else:
                assert f.stderr == pytest.approx(e.stderr, rel=1e-9, abs=1e-9), query


def test_an_infeasible_block_fails_the_save_and_leaves_nothing(sources, tmp_path):
    from pyspark.errors import PySparkException

    # alpha = 0.1 is feasible on Adult, not on its blocks of about 1,333 rows.
    release = publish_groups(Ambiguity(alpha=0.1, beta=1 / 7), sources[7], make_key(SEED),
                             block_rows=BLOCK_ROWS)
    with pytest.raises(PySparkException) as failed:
        release.save(tmp_path / "release")
    assert re.match(rf"block \d of {N_BLOCKS} \(13\d\d rows, each value in the table's "
                    rf"proportion\): ", failure_message(failed.value))
    # Neither the release nor its staging directory (with the parts written) is left.
    assert [path for path in tmp_path.iterdir() if path.is_dir()] == []
