"""An Anatomy release loaded with ``engine="spark"`` counts on Spark (`ppdp.spark.anatomy`): the
QIT and ST stay in their files, and every answer is the in-memory load's.

3,000 of Adult's rows, Anatomy with l = 5: 600 groups.

Tolerance: each answer sums non-negative terms ``n(k, g) * c(g, x) / |g|``, the same terms in
memory and on Spark (one multiplication and one division, each correctly rounded on both), in
another order. A sum of m non-negative terms in any order (any tree of additions) is within
``(m - 1) u S`` of the exact sum S (u = 2^-53), so two orders differ by at most
``2 (m - 1) u S``; m is at most the number of QIT rows (each term holds at least one row of its
group and cell), hence a relative tolerance of ``2 N u``.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.engines.spark.anatomy import SparkAnatomyCube, SparkAnatomyRelease
from ppdp.errors import ReleaseError
from ppdp.io.read import read_table
from ppdp.mechanisms import Anatomy
from ppdp.release.format import METADATA_FILE, file_digests, metadata_digest
from ppdp.release.load import load_release

COLUMNS = ["age", "sex", "race", "marital-status", "salary-class", "occupation"]
N_ROWS = 3_000
TOLERANCE = 2 * N_ROWS * 2.0 ** -53

QUERIES = [
    # Quasi-identifiers with a sensitive value: a box of single-column conditions.
    "SELECT COUNT(*) FROM t WHERE sex = 'Female' AND age >= 40 AND occupation = 'Sales'",
    # A disjunction, and a negation: evaluated on the rows' codes in Spark tasks.
    "SELECT COUNT(*) FROM t WHERE (race = 'Black' OR age < 25) AND "
    "occupation IN ('Sales', 'Craft-repair')",
    "SELECT COUNT(*) FROM t WHERE NOT (sex = 'Male' AND race = 'White') AND "
    "occupation != 'Sales'",
    # GROUP BY a quasi-identifier, with and without the sensitive value.
    "SELECT COUNT(*) FROM t WHERE occupation = 'Exec-managerial' GROUP BY race",
    "SELECT COUNT(*) FROM t WHERE sex = 'Male' OR age > 60 GROUP BY occupation, sex",
    "SELECT COUNT(*) FROM t WHERE salary-class = '>50K' GROUP BY occupation",
    # Quasi-identifiers only: integer counts, exact.
    "SELECT COUNT(*) FROM t WHERE race = 'White' OR sex = 'Female' GROUP BY salary-class",
]


@pytest.fixture(scope="module")
def saved(adult_domains, tmp_path_factory):
    with resources.as_file(resources.files(ppdp.datasets) / "adult.parquet") as path:
        rows = pq.read_table(path, columns=COLUMNS).slice(0, N_ROWS)
    table = read_table(rows, sensitive="occupation",
                       domains={name: adult_domains[name] for name in COLUMNS})
    folder = tmp_path_factory.mktemp("anatomy")
    return Anatomy(l=5).publish(table, random_state=3).save(folder / "release")


@pytest.fixture(scope="module")
def loaded(saved, spark):
    return load_release(saved), load_release(saved, engine="spark")


def test_spark_load_holds_no_rows(loaded):
    _, counted = loaded
    assert isinstance(counted, SparkAnatomyRelease)
    assert all(isinstance(cube, SparkAnatomyCube) for cube in counted._cubes)
    # The QIT and ST are not read: nothing of them in the release.
    assert counted._read is None
    assert not counted._cubes[1].codes


@pytest.mark.parametrize("query", QUERIES)
def test_counts_on_spark_equal_in_memory(loaded, query):
    memory, counted = loaded
    expected, found = memory.count(query), counted.count(query)
    assert counted._read is None
    if not hasattr(expected, "groups"):
        expected, found = [((), expected)], [((), found)]
    else:
        expected, found = expected.groups, found.groups
    assert [key for key, _ in found] == [key for key, _ in expected]
    for (_, e), (_, f) in zip(expected, found, strict=True):
        assert e.value > 0
        assert f.value == pytest.approx(e.value, rel=TOLERANCE, abs=0), query
        assert f.stderr == e.stderr


def test_batch_of_queries_and_reading_back(loaded, tmp_path):
    memory, counted = loaded
    ungrouped = [q for q in QUERIES if "GROUP BY" not in q]
    values, _ = counted.count_all(ungrouped)
    np.testing.assert_allclose(values, memory.count_all(ungrouped)[0], rtol=TOLERANCE, atol=0)
    # Asked for, the QIT is read from the files: the same release, saved again the same.
    assert np.array_equal(counted.qit_groups, memory.qit_groups)
    counted.save(tmp_path / "again")
    for name in ("qit.parquet", "st.parquet"):
        assert (tmp_path / "again" / name).read_bytes() == \
            (memory.save(tmp_path / "memory", overwrite=True) / name).read_bytes()


def test_inconsistent_st_is_refused(saved, spark, tmp_path):
    # An ST whose counts no longer add up to the QIT's group sizes, its digests recomputed
    # (the digests catch accidents, not edits): refused on loading, as in memory.
    copy = shutil.copytree(saved, tmp_path / "release")
    st = pq.read_table(copy / "st.parquet")
    counts = st.column("count").to_numpy().copy()
    counts[0] += 1
    pq.write_table(st.set_column(st.schema.get_field_index("count"), "count",
                                 pa.array(counts)), copy / "st.parquet")
    metadata = json.loads((copy / METADATA_FILE).read_text())
    metadata["digests"]["st.parquet"] = file_digests([copy / "st.parquet"])[0]
    metadata["metadata_digest"] = metadata_digest(metadata)
    (copy / METADATA_FILE).write_text(json.dumps(metadata))
    with pytest.raises(ReleaseError, match="do not add up"):
        load_release(copy, engine="spark")
    with pytest.raises(ReleaseError, match="do not add up"):
        load_release(copy, engine="memory")
    # Counted from its pair counts, the streaming engine reads the ST when asked for.
    with pytest.raises(ReleaseError, match="do not add up"):
        load_release(copy).st  # noqa: B018 - the read is the test


def test_count_command_on_spark(saved, loaded):
    memory, _ = loaded
    query = QUERIES[3]
    result = CliRunner().invoke(app, ["count", str(saved), query, "--engine", "spark",
                                      "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["groups"]
    expected = memory.count(query).to_dict()["groups"]
    assert [g["key"] for g in found] == [g["key"] for g in expected]
    for f, e in zip(found, expected, strict=True):
        assert f["estimate"] == pytest.approx(e["estimate"], rel=TOLERANCE, abs=0)


def test_files_replaced_since_loading_are_refused(saved, spark, tmp_path):
    copy = shutil.copytree(saved, tmp_path / "release")
    counted = load_release(copy, engine="spark")
    st = copy / "st.parquet"
    st.write_bytes(st.read_bytes())
    with pytest.raises(ReleaseError, match="replaced or removed since"):
        counted.count(QUERIES[0])
