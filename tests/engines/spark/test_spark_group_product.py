"""Mondrian and ambiguity releases loaded with ``engine="spark"`` count on Spark
(`ppdp.spark.group_product`, `ppdp.spark.mondrian_count`, `ppdp.spark.ambiguity`): their rows
and tables stay in their files, and every answer is the in-memory load's.

3,000 of Adult's rows; Mondrian with k = 10, ambiguity with alpha = 0.1, beta = 1/7 (the
parameters of the ambiguity tests on Adult).

Tolerance: an answer is ``sum_b s_b sum_j t_jb`` over the B signed conjunctions b the condition
is rewritten into (`group_product._signed_boxes`) and the groups j, where a term t_jb is a
product of one factor per column, each a sum of at most |domain| non-negative weights (integer
counts, and 1/m correctly rounded). In memory and on Spark the same exact answer is computed
from the same inputs, the terms grouped differently (a batch's classes on Spark) and summed in
another order. With u = 2^-53, a term then carries a relative error of at most K u to first
order, K = the sum of the columns' domain sizes (the additions in its factors) + the columns
(its roundings of the weights and its products) + 2 (GROUP BY's products); summing at most N
groups (any tree of additions) and the B conjunctions adds at most (N + B) u times the sum of
the terms' absolute values, which is at most B N: each conjunction's terms are non-negative and
add up to at most N (a quasi-identifier's weights in a group add up to at most 1, the
sensitive ones to the group's size). Each computation is thus within (K + N + B) u B N of the
exact answer, and the two within twice that of each other, in every cell.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ppdp.cli import app
from ppdp.engines.spark.ambiguity import SparkAmbiguityRelease
from ppdp.engines.spark.mondrian_count import SparkCountedMondrianRelease
from ppdp.errors import ReleaseError
from ppdp.estimators.group_product import _signed_boxes
from ppdp.io.read import read_table
from ppdp.mechanisms import Ambiguity, Mondrian
from ppdp.plan.order import split_parts
from ppdp.query.binding import BoundQuery, bind
from ppdp.release.base import Release
from ppdp.release.format import METADATA_FILE, metadata_digest, part_names
from ppdp.release.load import load_release
from ppdp.release.write import write_parquet
from tests.engines.spark.test_spark_group_count import QUERIES as GROUP_QUERIES

COLUMNS = ["age", "sex", "race", "marital-status", "salary-class", "occupation"]
N_ROWS = 3_000
MECHANISMS = {"mondrian": lambda: Mondrian(k=10),
              "ambiguity": lambda: Ambiguity(alpha=0.1, beta=1 / 7)}
SPARK_CLASSES = {"mondrian": SparkCountedMondrianRelease, "ambiguity": SparkAmbiguityRelease}

# Anatomy's queries (boxes, OR, NOT, GROUP BY a quasi-identifier, two columns, the sensitive
# column), and the sensitive column alone: estimated as signed sums of boxes here.
QUERIES = [*GROUP_QUERIES,
           "SELECT COUNT(*) FROM t WHERE occupation IN ('Sales', 'Tech-support')"]


def tolerance(release: Release, query: BoundQuery) -> float:
    """The bound of the module's docstring on the difference of two computations of a cell."""
    boxes = len(_signed_boxes(query.predicate))
    terms = sum(release.schema.sizes().values()) + len(release.schema.names) + 2
    return 2 * (terms + N_ROWS + boxes) * 2.0 ** -53 * boxes * N_ROWS


@pytest.fixture(scope="module")
def table(adult_values, adult_domains):
    return read_table(adult_values(COLUMNS, N_ROWS), sensitive="occupation",
                      domains={name: adult_domains[name] for name in COLUMNS})


@pytest.fixture(scope="module")
def published(table):
    return {name: make().publish(table, random_state=3) for name, make in MECHANISMS.items()}


@pytest.fixture(scope="module")
def saved(published, tmp_path_factory):
    folder = tmp_path_factory.mktemp("groups")
    return {name: release.save(folder / name) for name, release in published.items()}


@pytest.fixture(scope="module")
def loaded(saved, spark):
    return {name: (load_release(path), load_release(path, engine="spark"))
            for name, path in saved.items()}


def assert_same_estimates(memory: Release, counted: Release) -> None:
    """Every query's estimate, over its whole GROUP BY domain, within the tolerance."""
    bound = [bind(q, memory.schema) for q in QUERIES]
    expected = memory._estimate(bound)
    found = counted._estimate(bound)
    for query, (e, _), (f, stderr) in zip(bound, expected, found, strict=True):
        assert stderr is None
        assert f.shape == e.shape
        assert np.abs(e).max() > 1, query.query.text
        np.testing.assert_allclose(f, e, rtol=0, atol=tolerance(memory, query),
                                   err_msg=query.query.text)


@pytest.mark.parametrize("name", MECHANISMS)
def test_estimates_on_spark_equal_in_memory(name, loaded, collected):
    memory, counted = loaded[name]
    assert isinstance(counted, SPARK_CLASSES[name])
    assert_same_estimates(memory, counted)
    # One Spark job for all the queries; at most their cells reached the driver.
    cells = sum(int(np.prod([memory.schema[c].size for c in bind(q, memory.schema).group_by]))
                for q in QUERIES)
    assert len(collected) == 1 and collected[0] <= cells
    # Nothing was read into memory.
    assert counted._read is None


def test_count_on_spark(loaded):
    memory, counted = loaded["ambiguity"]
    query = QUERIES[5]
    bound = bind(query, memory.schema)
    expected, found = memory.count(query).groups, counted.count(query).groups
    assert [key for key, _ in found] == [key for key, _ in expected]
    for (_, e), (_, f) in zip(expected, found, strict=True):
        assert f.value == pytest.approx(e.value, rel=0, abs=tolerance(memory, bound))
        assert f.stderr is None and e.stderr is None
    assert counted._read is None


def split_tables(saved: Path, target: Path, stems: list[str]) -> Path:
    """A copy of a release with the tables of ``stems`` written in three parts each."""
    folder = shutil.copytree(saved, target)
    metadata = json.loads((folder / METADATA_FILE).read_text())
    for stem in stems:
        name = metadata["files"][stem]
        table = pq.read_table(folder / name)
        (folder / name).unlink()
        del metadata["digests"][name]
        third = table.num_rows // 3
        parts = split_parts(table, (third, third, table.num_rows - 2 * third))
        names = part_names(stem, 3)
        for part_name, part in zip(names, parts, strict=True):
            metadata["digests"][part_name] = write_parquet(folder / part_name, part)
        metadata["files"][stem] = names
    metadata["metadata_digest"] = metadata_digest(metadata)
    (folder / METADATA_FILE).write_text(json.dumps(metadata))
    return folder


def test_mondrian_in_parts_counts_and_reads_back(published, loaded, spark, tmp_path):
    release = copy.copy(published["mondrian"])
    memory, _ = loaded["mondrian"]
    release.part_rows = (1_000, 1_200, 800)
    path = release.save(tmp_path / "parts")
    assert json.loads((path / METADATA_FILE).read_text())["files"]["rows"] == \
        part_names("rows", 3)
    counted = load_release(path, engine="spark")
    assert counted.part_rows == (1_000, 1_200, 800)
    assert_same_estimates(memory, counted)
    # Asked for, the rows are read from the files: the same release, saved again the same.
    assert counted._read is None
    assert counted.risk() == memory.risk()
    again = counted.save(tmp_path / "again")
    assert {p.name: p.read_bytes() for p in again.iterdir()} == \
        {p.name: p.read_bytes() for p in path.iterdir()}


def test_ambiguity_in_parts_counts_and_reads_back(saved, loaded, spark, tmp_path):
    memory, _ = loaded["ambiguity"]
    path = split_tables(saved["ambiguity"], tmp_path / "parts", ["at_1", "at_4", "st"])
    counted = load_release(path, engine="spark")
    assert_same_estimates(memory, counted)
    assert counted._read is None
    np.testing.assert_array_equal(counted.presence(), memory.presence())
    np.testing.assert_array_equal(counted.association(), memory.association())


def rewrite(folder: Path, name: str, table: pa.Table) -> None:
    """Replace a file of a release, its digests recomputed (they catch accidents, not
    edits)."""
    metadata = json.loads((folder / METADATA_FILE).read_text())
    metadata["digests"][name] = write_parquet(folder / name, table)
    metadata["metadata_digest"] = metadata_digest(metadata)
    (folder / METADATA_FILE).write_text(json.dumps(metadata))


def changed(table: pa.Table, column: str, edit) -> pa.Table:
    values = table.column(column).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    values = values.to_pylist()
    edit(values)
    return table.set_column(table.schema.get_field_index(column), column, pa.array(values))


def label_without_cover(table: pa.Table) -> pa.Table:
    return changed(table, "age", lambda values: values.__setitem__(0, "[no such label]"))


def frequency_changed(table: pa.Table) -> pa.Table:
    return changed(table, "Frequency", lambda values: values.__setitem__(0, values[0] + 1))


def pair_repeated(table: pa.Table) -> pa.Table:
    return pa.concat_tables([table, table.slice(0, 1)])


def value_outside_domain(table: pa.Table) -> pa.Table:
    return changed(table, "race", lambda values: values.__setitem__(0, "Martian"))


DAMAGES = [("mondrian", "rows.parquet", label_without_cover, "labels of 'age' without a cover"),
           ("ambiguity", "st.parquet", frequency_changed, "must be positive and add up"),
           ("ambiguity", "at_2.parquet", pair_repeated, r"AT_2 \(sex\) repeats"),
           ("ambiguity", "at_3.parquet", value_outside_domain, "holds values outside")]


@pytest.mark.parametrize(("name", "file", "damage", "message"), DAMAGES,
                         ids=[d.__name__ for _, _, d, _ in DAMAGES])
def test_damaged_release_is_refused_on_loading(name, file, damage, message, saved, spark,
                                               collected, tmp_path):
    folder = shutil.copytree(saved[name], tmp_path / "release")
    rewrite(folder, file, damage(pq.read_table(folder / file)))
    with pytest.raises(ReleaseError, match=message):
        load_release(folder)
    with pytest.raises(ReleaseError, match=message):
        load_release(folder, engine="spark")
    # The rows were checked in Spark tasks: nothing but one line reached the driver.
    assert max(collected, default=0) <= 1


def test_files_replaced_since_loading_are_refused(saved, spark, tmp_path):
    folder = shutil.copytree(saved["mondrian"], tmp_path / "release")
    counted = load_release(folder, engine="spark")
    rows = folder / "rows.parquet"
    rows.write_bytes(rows.read_bytes())
    with pytest.raises(ReleaseError, match="replaced or removed since"):
        counted.count(QUERIES[0])


def test_count_command_on_spark(saved, loaded):
    memory, _ = loaded["mondrian"]
    query = QUERIES[4]
    result = CliRunner().invoke(app, ["count", str(saved["mondrian"]), query, "--engine",
                                      "spark", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["groups"]
    expected = memory.count(query).to_dict()["groups"]
    assert [g["key"] for g in found] == [g["key"] for g in expected]
    bound = tolerance(memory, bind(query, memory.schema))
    for f, e in zip(found, expected, strict=True):
        assert f["estimate"] == pytest.approx(e["estimate"], rel=0, abs=bound)
