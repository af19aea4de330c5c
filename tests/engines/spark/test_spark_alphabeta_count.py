"""Alpha-beta views loaded with ``engine="spark"`` count on Spark (`ppdp.spark.alphabeta_count`):
the view and V' stay in their files, and every answer is the in-memory load's.

4,000 of Adult's rows over all nine columns (m = 761,169,920 tuples), views 1 and 2 of v = 2
with alpha = 0.3, beta = 1e-6 (1,981 and 1,819 rows, V' of 1,918 tuples for view 2), written
in parts of 700 rows.

Equality is exact: the estimator reads integer counts (the view's rows by the query's cells and
the flag "in V'", V''s rows by cell) and n_D from `count_domain`; on Spark those counts are the
same integers as in memory, and the same numpy code turns them into estimates and standard
errors in the same order, so every float is bit for bit the same.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ppdp.plan.order
from ppdp.cli import app
from ppdp.engines.spark.alphabeta_count import SparkAlphaBetaRelease, SparkViewCube
from ppdp.engines.spark.cube import SparkCube
from ppdp.errors import ReleaseError
from ppdp.io.read import read_table
from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
from ppdp.mechanisms.alphabeta.release import SEEN_COLUMN
from ppdp.mechanisms.alphabeta.views import ViewSequence
from ppdp.query.binding import bind
from ppdp.query.cube import Cube
from ppdp.release.format import METADATA_FILE, file_digests, metadata_digest
from ppdp.release.load import load_release

COLUMNS = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex",
           "native-country", "salary-class"]
ROWS = 4_000
SEED = 41

# Six columns of 74 * 8 * 16 * 7 * 14 * 41 = 38 million value combinations, more than a
# contingency table holds (`ppdp.query.MAX_CUBE_CELLS`): the condition runs in Spark tasks.
WIDE = ("SELECT COUNT(*) FROM t WHERE age < 30 OR workclass = 'Self-emp-inc' OR "
        "education = 'Masters' OR marital-status = 'Divorced' OR occupation = 'Sales' OR "
        "native-country = 'Mexico'")

QUERIES = [
    "SELECT COUNT(*) FROM t",
    # A box of single-column conditions.
    "SELECT COUNT(*) FROM t WHERE sex = 'Female' AND age >= 40",
    # A disjunction, and a negation: evaluated on the cells of a table counted by Spark.
    "SELECT COUNT(*) FROM t WHERE (race = 'Black' OR age < 25) AND "
    "occupation IN ('Sales', 'Craft-repair')",
    "SELECT COUNT(*) FROM t WHERE NOT (sex = 'Male' AND race = 'White')",
    # GROUP BY one column and two.
    "SELECT COUNT(*) FROM t WHERE age >= 40 GROUP BY race",
    "SELECT COUNT(*) FROM t WHERE sex = 'Male' OR age > 60 GROUP BY occupation, sex",
    WIDE,
]


@pytest.fixture(scope="module")
def saved(adult_values, adult_domains, tmp_path_factory) -> dict[str, Path]:
    """Views 1 and 2 of one table, saved in several parts."""
    table = read_table(adult_values(COLUMNS, ROWS),
                       domains={name: adult_domains[name] for name in COLUMNS})
    folder = tmp_path_factory.mktemp("views")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.plan.order, "ROWS_PER_PART", 700)
        views = ViewSequence(AlphaBeta(alpha=0.3, beta=1e-6, v=2), table)
        for view in (1, 2):
            views.publish_to(folder / f"view{view}", random_state=SEED + view)
    return {f"view{view}": folder / f"view{view}" for view in (1, 2)}


@pytest.fixture(scope="module")
def loaded(saved, spark) -> dict[str, tuple]:
    return {name: (load_release(path), load_release(path, engine="spark"))
            for name, path in saved.items()}


def test_views_are_saved_in_parts(saved):
    files = {name: json.loads((path / METADATA_FILE).read_text())["files"]
             for name, path in saved.items()}
    assert len(files["view1"]["view"]) > 1 and "earlier" not in files["view1"]
    assert len(files["view2"]["view"]) > 1 and len(files["view2"]["earlier"]) > 1


def test_spark_load_holds_no_rows(loaded):
    _, first = loaded["view1"]
    _, second = loaded["view2"]
    for counted in (first, second):
        assert isinstance(counted, SparkAlphaBetaRelease)
        assert isinstance(counted._cube, SparkViewCube)
        assert counted._read is None
        assert not counted._cube.codes
    # The first view has no V': an empty table, no file.
    assert type(first._earlier_cube) is Cube and first._earlier_cube.n_rows == 0
    assert isinstance(second._earlier_cube, SparkCube)
    assert second._earlier_cube.n_rows > 0


def nonzero(answer: dict) -> bool:
    """Whether some estimate of an answer (``to_dict``) is not zero."""
    return any(g["estimate"] != 0 for g in answer.get("groups", [answer]))


@pytest.mark.parametrize("view", ["view1", "view2"])
def test_counts_on_spark_equal_in_memory(saved, loaded, view):
    memory, _ = loaded[view]
    # Loaded again: no table counted yet.
    counted = load_release(saved[view], engine="spark")
    grouped = [q for q in QUERIES if "GROUP BY" in q]
    ungrouped = [q for q in QUERIES if "GROUP BY" not in q]
    # One at a time: each query's tables counted by Spark aggregations of their own.
    for query in grouped:
        expected = memory.count(query).to_dict()
        assert counted.count(query).to_dict() == expected, query
        assert nonzero(expected), query
    # Together: their tables counted in a few aggregations (prefetch), then each answered.
    assert [a.tolist() for a in counted.count_all(ungrouped)] == \
        [a.tolist() for a in memory.count_all(ungrouped)]
    for query in ungrouped:
        expected = memory.count(query).to_dict()
        assert counted.count(query).to_dict() == expected, query
        assert nonzero(expected), query
    assert counted._read is None


def test_the_wide_condition_runs_in_spark_tasks(loaded, monkeypatch):
    memory, counted = loaded["view2"]
    bound = bind(WIDE, counted.schema)
    assert not counted._cube.fits((*bound.predicate.columns, SEEN_COLUMN))
    assert not counted._earlier_cube.fits(tuple(bound.predicate.columns))
    with pytest.raises(TypeError, match="computed in Spark"):
        next(counted._cube.code_batches(["sex"]))

    def read_on_the_driver(columns):
        raise AssertionError("rows read on the driver")

    # V''s cube (a plain SparkCube) could read its files on the driver: it does not.
    monkeypatch.setattr(counted._earlier_cube, "code_batches", read_on_the_driver)
    assert counted.count(WIDE).to_dict() == memory.count(WIDE).to_dict()


def test_seen_flag_is_a_shuffle_join(loaded, capsys):
    from pyspark.sql import functions as F

    memory, counted = loaded["view2"]
    flags = counted._cube._frame().groupBy(SEEN_COLUMN).agg(F.count(F.lit(1)).alias("n"))
    found = dict(zip(*flags.toArrow().to_pydict().values(), strict=True))
    # The flag's counts are the in-memory release's (column SEEN_COLUMN of its cube).
    assert found == {flag: int(count) for flag, count in
                     enumerate(memory._cube.histogram([SEEN_COLUMN])) if count}
    flags.explain()
    plan = capsys.readouterr().out
    assert "SortMergeJoin" in plan and "Broadcast" not in plan


def test_reading_back(loaded, tmp_path):
    memory, counted = loaded["view2"]
    # Asked for, the rows are read from the files: the same release, saved again the same.
    again, expected = counted.save(tmp_path / "again"), memory.save(tmp_path / "memory")
    assert counted._read is not None
    assert {p.name: p.read_bytes() for p in again.iterdir() if p.suffix == ".parquet"} == \
        {p.name: p.read_bytes() for p in expected.iterdir() if p.suffix == ".parquet"}


def rewrite(copy: Path, change_metadata=None, name: str | None = None,
            table: pa.Table | None = None) -> None:
    """Change a release's files, its digests recomputed (they catch accidents, not edits)."""
    metadata = json.loads((copy / METADATA_FILE).read_text())
    if table is not None:
        pq.write_table(table, copy / name)
        metadata["digests"][name] = file_digests([copy / name])[0]
    if change_metadata is not None:
        change_metadata(metadata)
    metadata["metadata_digest"] = metadata_digest(metadata)
    (copy / METADATA_FILE).write_text(json.dumps(metadata))


def test_wrong_row_count_is_refused(saved, spark, tmp_path):
    copy = shutil.copytree(saved["view2"], tmp_path / "release")
    n_rows = json.loads((copy / METADATA_FILE).read_text())["n_rows"]
    rewrite(copy, lambda metadata: metadata.update(n_rows=n_rows + 1))
    with pytest.raises(ReleaseError, match=f"expected {n_rows + 1} rows, found {n_rows}$"):
        load_release(copy, engine="spark")


def test_values_outside_the_domain_are_refused(saved, spark, tmp_path):
    copy = shutil.copytree(saved["view2"], tmp_path / "release")
    name = json.loads((copy / METADATA_FILE).read_text())["files"]["earlier"][0]
    earlier = pq.read_table(copy / name)
    sex = pa.array(["Unknown"] * earlier.num_rows).dictionary_encode().cast(
        earlier.schema.field("sex").type)
    rewrite(copy, name=name,
            table=earlier.set_column(earlier.schema.get_field_index("sex"), "sex", sex))
    with pytest.raises(ReleaseError, match="outside its domain"):
        load_release(copy)
    # On Spark the files are not read on loading: the value is refused as it is counted.
    counted = load_release(copy, engine="spark")
    with pytest.raises(ValueError, match="outside its domain"):
        counted.count("SELECT COUNT(*) FROM t WHERE sex = 'Female'")


def test_files_replaced_since_loading_are_refused(saved, spark, tmp_path):
    copy = shutil.copytree(saved["view2"], tmp_path / "release")
    counted = load_release(copy, engine="spark")
    name = json.loads((copy / METADATA_FILE).read_text())["files"]["earlier"][-1]
    (copy / name).write_bytes((copy / name).read_bytes())
    with pytest.raises(ReleaseError, match="replaced or removed since"):
        counted.count(QUERIES[1])


def test_count_command_on_spark(saved, loaded):
    memory, _ = loaded["view2"]
    query = QUERIES[5]
    result = CliRunner().invoke(app, ["count", str(saved["view2"]), query, "--engine", "spark",
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(json.dumps(memory.count(query).to_dict()))
