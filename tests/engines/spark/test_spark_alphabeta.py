"""Alpha-beta views on Spark against `ViewSequence.publish_to`: the same key gives the same
release files, view 1 and view 2 (after view 1, with the state), whatever the partitioning; the
state written on Spark resumes in memory and on Spark; no key in any file."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.plan.order
from ppdp.engines.spark import SparkSource, publish, read_parquet
from ppdp.engines.spark.alphabeta import SparkViews
from ppdp.errors import InfeasibleError, ReleaseError
from ppdp.io.read import read_table
from ppdp.mechanisms.alphabeta import draws
from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
from ppdp.mechanisms.alphabeta.views import ViewSequence, fingerprint
from ppdp.plan.keyed import make_key

# m = 2 * 5 * 2 * 8 * 16 * 7 = 17,920 tuples; 4,000 rows hold about 1,500 distinct ones.
COLUMNS = ["sex", "race", "salary-class", "workclass", "education", "marital-status"]
ROWS = 4_000
SEED = 23


def mechanism() -> AlphaBeta:
    # About 0.35 * 4,000 kept rows and 0.05 * 17,920 inserted tuples a view.
    return AlphaBeta(alpha=0.3, beta=0.05, v=2)


@pytest.fixture(autouse=True)
def small_parts_and_chunks(monkeypatch):
    # Several parts of the view and of V', several chunks of D (drawn by several tasks).
    monkeypatch.setattr(ppdp.plan.order, "ROWS_PER_PART", 700)
    monkeypatch.setattr(draws, "NOISE_CHUNK", 256)


@pytest.fixture(scope="module")
def domains(adult_domains) -> dict:
    return {name: domain for name, domain in adult_domains.items() if name in COLUMNS}


@pytest.fixture(scope="module")
def rows_file(adult_values, tmp_path_factory) -> Path:
    rows = adult_values(COLUMNS, ROWS)
    target = tmp_path_factory.mktemp("adult") / "rows.parquet"
    pq.write_table(rows, target, row_group_size=1_500)
    return target


@pytest.fixture(scope="module")
def table(rows_file, domains) -> ppdp.Table:
    return read_table(pq.read_table(rows_file), domains=domains)


@pytest.fixture(scope="module")
def in_memory(table, tmp_path_factory) -> dict[str, Any]:
    """Views 1 and 2 written by `ViewSequence.publish_to` (keys SEED and SEED + 1), and the
    state after view 1."""
    folder = tmp_path_factory.mktemp("memory")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.plan.order, "ROWS_PER_PART", 700)
        patch.setattr(draws, "NOISE_CHUNK", 256)
        views = ViewSequence(mechanism(), table)
        views.publish_to(folder / "view1", random_state=SEED,
                         before_commit=partial(views.save_state, folder / "state"))
        views.publish_to(folder / "view2", random_state=SEED + 1)
    return {"view1": files_of(folder / "view1"), "view2": files_of(folder / "view2"),
            "state": folder / "state", "earlier": views.earlier}


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def source_of(spark, rows_file, domains, partitions: int) -> SparkSource:
    return SparkSource(read_parquet(spark, rows_file).repartition(partitions), domains=domains)


@pytest.fixture(scope="module")
def on_spark(spark, rows_file, domains, in_memory, tmp_path_factory) -> dict[int, dict]:
    """Views 1 and 2 on Spark over the input in 1 and 7 partitions: view 1 and its state, then
    view 2 after resuming from the state written on Spark (1 partition) or in memory (7: V'
    one Parquet file)."""
    runs = {}
    for partitions in (1, 7):
        folder = tmp_path_factory.mktemp(f"spark-{partitions}")
        source = source_of(spark, rows_file, domains, partitions)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ppdp.plan.order, "ROWS_PER_PART", 700)
            patch.setattr(draws, "NOISE_CHUNK", 256)
            views = SparkViews(mechanism(), source)
            if partitions == 1:
                views.publish_to(folder / "view1", random_state=SEED)
                with pytest.raises(ReleaseError, match="save_state after a view"):
                    views.publish_to(folder / "too-soon", random_state=SEED + 1)
                views.save_state(folder / "state")
            else:
                views.publish_to(folder / "view1", random_state=SEED,
                                 before_commit=partial(views.save_state, folder / "state"))
            # V' read back from the state (the fingerprint, a Spark job, is not computed again).
            views.resume(folder / "state" if partitions == 1 else in_memory["state"])
            published = views.published
            views.publish_to(folder / "view2", random_state=SEED + 1)
            if partitions == 1:
                # The state replaced in place, V' read from it while the new one is written.
                views.save_state(folder / "state")
        runs[partitions] = {"folder": folder, "fingerprint": views.fingerprint,
                            "resumed": published, "source": source}
    return runs


@pytest.mark.parametrize("partitions", [1, 7])
def test_views_on_spark_are_the_views_in_memory(on_spark, table, in_memory, partitions):
    run = on_spark[partitions]
    assert sum(name.startswith("view-") for name in in_memory["view2"]) >= 2
    assert sum(name.startswith("earlier-") for name in in_memory["view2"]) >= 2
    assert run["fingerprint"] == fingerprint(table)
    assert run["resumed"] == 1
    for view in ("view1", "view2"):
        assert files_of(run["folder"] / view) == in_memory[view], view
    assert (in_memory["state"] / "earlier.parquet").is_file()
    if partitions == 1:
        state = run["folder"] / "state"
        recorded = json.loads((state / "state.json").read_text())
        assert recorded["published"] == 2
        # The rows apart from columns and domains, as the sequence in memory records them.
        in_memory_state = json.loads((in_memory["state"] / "state.json").read_text())
        assert recorded["rows"] == in_memory_state["rows"]
        assert recorded["rows"]["n_rows"] == ROWS
        assert set(recorded["rows"]["columns"]) == set(COLUMNS)
        assert np.array_equal(pq.read_table(state / "earlier.parquet").column("key").to_numpy(),
                              in_memory["earlier"])
    assert not (run["folder"] / "too-soon").exists()


def test_state_written_on_spark_resumes_in_memory(table, in_memory, on_spark, tmp_path):
    state = tmp_path / "state"
    shutil.copytree(on_spark[7]["folder"] / "state", state)
    assert {p.name for p in state.iterdir()} == {"state.json", "earlier.parquet"}
    memory = ViewSequence(mechanism(), table)
    memory.publish(random_state=SEED)
    # V' on Spark: Parquet files whose rows, in name order, are V' sorted.
    assert np.array_equal(pq.read_table(state / "earlier.parquet").column("key").to_numpy(),
                          memory.earlier)
    resumed = ViewSequence.load_state(state, mechanism(), table)
    assert resumed.published == 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.plan.order, "ROWS_PER_PART", 700)
        patch.setattr(draws, "NOISE_CHUNK", 256)
        resumed.publish_to(tmp_path / "view2", random_state=SEED + 1,
                           before_commit=lambda: resumed.save_state(state))
    assert files_of(tmp_path / "view2") == in_memory["view2"]
    # Back on Spark from the state the in-memory sequence wrote: the bound v = 2 is reached.
    source = on_spark[7]["source"]
    last = SparkViews(mechanism(), source).resume(state)
    assert last.published == 2
    with pytest.raises(InfeasibleError, match="bound v = 2"):
        last.publish_to(tmp_path / "view3", random_state=SEED + 2)
    assert not (tmp_path / "view3").exists()
    with pytest.raises(ReleaseError, match="later views must use the same parameters"):
        SparkViews(AlphaBeta(alpha=0.3, beta=0.04, v=2), source).resume(state)


def test_marginal_noise_on_spark(spark, rows_file, domains, table, tmp_path):
    # The first view through `ppdp.spark.publish`, with Algorithm 5's noise.
    marginal = AlphaBeta(alpha=0.3, beta=0.05, noise="marginal")
    ViewSequence(marginal, table).publish_to(tmp_path / "memory", random_state=SEED)
    frame = read_parquet(spark, rows_file)
    publish(marginal, frame, domains=domains, random_state=SEED).save(tmp_path / "spark")
    assert files_of(tmp_path / "spark") == files_of(tmp_path / "memory")


@pytest.mark.parametrize("partitions", [1, 7])
def test_nothing_secret_is_written(on_spark, partitions):
    key = make_key(SEED)
    words = [key >> 64, key & (2**64 - 1)]
    secrets = [key.to_bytes(16, "big"), key.to_bytes(16, "little"), str(key).encode(),
               f"{key:x}".encode(), f"{key:032x}".encode()]
    secrets += [w.to_bytes(8, order) for w in words for order in ("big", "little")]
    run = on_spark[partitions]
    written = [path for path in run["folder"].rglob("*") if path.is_file()]
    assert len(written) > 10
    for path in written:
        assert not any(secret in path.read_bytes() for secret in secrets), path
    # The releases hold the view, V' and public parameters: no state, no fingerprint.
    for view in ("view1", "view2"):
        text = (run["folder"] / view / "release.json").read_text()
        assert set(json.loads(text)["parameters"]) == {"alpha", "beta", "k", "gamma", "v",
                                                       "view"}
        assert run["fingerprint"][:16] not in text


def test_cli_publishes_views_on_spark_under_their_state(spark, rows_file, domains, tmp_path):
    """``ppdp publish -m alphabeta --engine spark``: the in-memory command's files, the view
    counted in the state, and the bound v enforced."""
    from typer.testing import CliRunner

    from ppdp.cli import app

    domains_file = tmp_path / "domains.json"
    domains_file.write_text(json.dumps({"domains": {name: list(values)
                                                    for name, values in domains.items()}}))

    def publish(engine: str, output: str, state: str):
        return CliRunner().invoke(app, [
            "publish", str(rows_file), "-m", "alphabeta", "-p", "alpha=0.3", "-p", "beta=0.05",
            "-p", "v=2", "--domains", str(domains_file), "--seed", "5", "--engine", engine,
            "--state-dir", str(tmp_path / state), "-o", str(tmp_path / output)])

    for engine in ("memory", "spark"):
        result = publish(engine, f"{engine}-1", f"{engine}-state")
        assert result.exit_code == 0, result.output
        assert "view 1 of at most v = 2" in result.output
    assert files_of(tmp_path / "spark-1") == files_of(tmp_path / "memory-1")
    result = publish("spark", "spark-2", "spark-state")
    assert result.exit_code == 0 and "view 2 of at most v = 2" in result.output, result.output
    result = publish("spark", "spark-3", "spark-state")
    assert result.exit_code == 3 and "bound v = 2" in result.output
    assert not (tmp_path / "spark-3").exists()
