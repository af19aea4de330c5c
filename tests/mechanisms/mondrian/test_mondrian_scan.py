"""Tests of Mondrian over a source (``Mondrian.publish_source``): the top levels cut from
histograms, the rest partitioned in memory per spilled partition. The release must be the one
``publish(table).save(directory)`` writes, byte for byte, whatever the split between the two
and the batch size; an interrupted publication must leave nothing behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppdp
from ppdp.data.hierarchy import Hierarchy, read_hierarchies
from ppdp.data.schema import Role
from ppdp.engines.streaming import mondrian as streaming_mondrian
from ppdp.errors import InfeasibleError
from ppdp.io.storage import PARTIAL_SUFFIX
from ppdp.mechanisms.mondrian import steps
from ppdp.mechanisms.mondrian.mechanism import STREAM, Mondrian
from ppdp.mechanisms.mondrian.partition import DIVERSITIES
from ppdp.mechanisms.mondrian.release import MondrianRelease
from ppdp.plan import order as plans
from ppdp.plan.keyed import KeyedStream, make_key
from ppdp.release.load import load_release
from ppdp.table.source import TableSource
from ppdp.table.table import Table, table_from_arrow
from tests.mechanisms.mondrian.test_mondrian import feasible, hand_table, random_tables

N_ROWS = 1_000_000
LOCAL = 100_000
QUERIES = ["age BETWEEN 30 AND 45 AND occupation = 'Sales'",
           "education = 'Bachelors' OR sex = 'Male'", "NOT (race = 'White')",
           "marital-status = 'Divorced' AND salary-class = '>50K'"]


@pytest.fixture(scope="module")
def big_adult() -> Table:
    """Adult resampled to 10^6 rows (its values present are public, as in the UCI codebook)."""
    adult = ppdp.datasets.adult(sensitive="occupation", observed_domains=True)
    return adult.resample(N_ROWS, random_state=11)


@pytest.fixture(scope="module")
def adult_hierarchies() -> dict[str, Hierarchy]:
    return read_hierarchies("adult")


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def publish_both(mechanism: Mondrian, table: Table, tmp_path: Path, local_rows: int,
                 joint_cells: int = steps.JOINT_CELLS, **options: Any
                 ) -> tuple[MondrianRelease, Path, Path, list[str]]:
    """The in-memory release saved, and the same published from a source with
    ``LOCAL_ROWS = local_rows`` and ``JOINT_CELLS = joint_cells``; the stages the source
    publication reported."""
    release = mechanism.publish(table, random_state=5)
    in_memory = release.save(tmp_path / "in-memory")
    stages: list[str] = []

    def progress(stage: str, done: int, total: int) -> None:
        assert 0 <= done <= total
        if stage not in stages:
            stages.append(stage)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(steps, "LOCAL_ROWS", local_rows)
        patch.setattr(steps, "JOINT_CELLS", joint_cells)
        hybrid = mechanism.publish_source(TableSource(table), tmp_path / "hybrid",
                                          random_state=5, progress=progress, **options)
    return release, in_memory, hybrid, stages


# -- 10^6 rows, several levels cut from histograms ------------------------------------------


@pytest.mark.parametrize("diversity", DIVERSITIES)
def test_the_hybrid_partition_is_the_in_memory_one(big_adult: Table, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   diversity: str) -> None:
    # Without hierarchies any two classes differ in a label (their boxes are apart on some
    # attribute, and so are their ranges or sets of values there): the rows' label tuples give
    # the partition of row sets.
    mechanism = Mondrian(k=10, l=3, diversity=diversity)
    release, in_memory, hybrid, stages = publish_both(mechanism, big_adult, tmp_path, LOCAL,
                                                      joint_cells=0, batch_rows=300_000)
    # 10^6 rows come down to partitions of 10^5 after at least four levels, each cut from
    # histograms, then (with no room for counts by sensitive value) from the sensitive values
    # around the medians, counted in a second pass.
    levels = [s for s in stages if s.startswith("cutting level")]
    assert levels == [f"cutting level {level}" for level in range(1, len(levels) + 1)]
    assert len(levels) >= 4 and "l-diversity at level 4" in stages
    loaded = load_release(hybrid)
    assert isinstance(loaded, MondrianRelease)
    # Row i of both releases is input row order[i] (the keyed release order).
    draws = KeyedStream(make_key(5), STREAM).raw(0, big_adult.n_rows)
    order = plans.rank_order(draws)
    truth = mechanism.partition(big_adult)[order]
    published = loaded._classes[0]
    pairs = np.unique(np.stack([truth, published], axis=1), axis=0)
    n_classes = int(truth.max()) + 1
    assert len(pairs) == n_classes == loaded._classes[2]
    assert files_of(hybrid) == files_of(in_memory)
    assert loaded.risk() == release.risk()
    assert loaded.risk()["k"] >= 10 and loaded.risk()["l"] >= 3
    if diversity == "frequency":
        assert loaded.risk()["association_max"] <= 1 / 3


@pytest.mark.parametrize(("l", "diversity"), [(2, "distinct"), (5, "frequency")])
def test_the_hybrid_release_with_hierarchies_is_the_in_memory_one(
        big_adult: Table, adult_hierarchies: dict[str, Hierarchy], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, l: int, diversity: str) -> None:  # noqa: E741
    mechanism = Mondrian(k=5, l=l, diversity=diversity, hierarchies=adult_hierarchies)
    release, in_memory, hybrid, stages = publish_both(mechanism, big_adult, tmp_path, LOCAL)
    # Counts by rank and sensitive value decide each level in one pass.
    assert "cutting level 3" in stages
    assert not any(s.startswith("l-diversity") for s in stages)
    assert files_of(hybrid) == files_of(in_memory)
    loaded = load_release(hybrid)
    assert isinstance(loaded, MondrianRelease)
    np.testing.assert_array_equal(loaded.count_all(QUERIES)[0], release.count_all(QUERIES)[0])
    grouped = "SELECT sex, COUNT(*) FROM t WHERE age > 50 GROUP BY sex"
    assert loaded.count(grouped) == release.count(grouped)


# -- classes cut by aggregation alone, several parts, random tables --------------------------


def test_large_classes_and_several_parts(big_adult: Table, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Three quasi-identifiers and a large k: partitions of more than LOCAL_ROWS rows that no cut
    # divides become classes straight from their histograms (sets, ranges) and go to the
    # parts without being spilled by partition.
    table = big_adult.take(np.arange(200_000)).with_roles(
        sensitive="occupation", quasi_identifiers=["sex", "race", "age"])
    monkeypatch.setattr(plans, "ROWS_PER_PART", 30_000)
    mechanism = Mondrian(k=12_000, l=4)
    release, in_memory, hybrid, _ = publish_both(mechanism, table, tmp_path, 5_000,
                                                 batch_rows=7_777)
    files = files_of(hybrid)
    assert sum(name.startswith("rows-") for name in files) == 7
    assert files == files_of(in_memory)
    assert release.risk()["k"] >= 12_000


@settings(max_examples=60, deadline=None)
@given(case=random_tables(), k=st.integers(1, 4), l=st.integers(1, 3),
       diversity=st.sampled_from(DIVERSITIES), local_rows=st.integers(1, 40),
       batch_rows=st.integers(1, 64), joint=st.booleans())
def test_random_tables_give_the_in_memory_files(
        tmp_path_factory: pytest.TempPathFactory, case: tuple[Table, dict[str, Hierarchy]],
        k: int, l: int, diversity: str, local_rows: int, batch_rows: int,  # noqa: E741
        joint: bool) -> None:
    table, hierarchies = case
    if not feasible(table.codes["s"], k, l, diversity):
        return
    mechanism = Mondrian(k=k, l=l, diversity=diversity, hierarchies=hierarchies)
    folder = tmp_path_factory.mktemp("random")
    in_memory = mechanism.publish(table, random_state=9).save(folder / "in-memory")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(steps, "LOCAL_ROWS", local_rows)
        patch.setattr(steps, "JOINT_CELLS", steps.JOINT_CELLS if joint else 0)
        hybrid = mechanism.publish_source(TableSource(table), folder / "hybrid",
                                          random_state=9, batch_rows=batch_rows)
    assert files_of(hybrid) == files_of(in_memory)


def test_a_small_source_is_published_in_memory_alone(tmp_path: Path) -> None:
    stages: list[str] = []
    target = Mondrian(k=4).publish_source(
        TableSource(hand_table()), tmp_path / "release", random_state=1,
        progress=lambda stage, done, total: stages.append(stage))
    assert files_of(target) == files_of(
        Mondrian(k=4).publish(hand_table(), random_state=1).save(tmp_path / "in-memory"))
    assert not any(s.startswith("cutting") for s in stages)
    assert stages[-1] == "writing parts"


# -- failures -------------------------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@pytest.mark.parametrize("failing", ["_partition", "write_parquet", "write_metadata"])
def test_an_interrupted_publication_leaves_nothing(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   failing: str) -> None:
    rng = np.random.default_rng(3)
    table = table_from_arrow(pa.table({"a": rng.integers(0, 50, 3_000),
                                       "b": rng.integers(0, 30, 3_000),
                                       "s": rng.choice(["x", "y", "z"], 3_000)}),
                             roles={"s": Role.SENSITIVE}).declare_observed_domains(warn=False)
    # Every module that calls the function: the parts are written by the streaming engine,
    # the covers and release.json by Mondrian's steps.
    homes = {"_partition": [steps], "write_parquet": [streaming_mondrian, steps],
             "write_metadata": [steps]}[failing]
    original = getattr(homes[0], failing)
    calls = []

    def fail_on_second_call(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2 or failing == "write_metadata":
            raise RuntimeError("interrupted")
        return original(*args, **kwargs)

    for home in homes:
        monkeypatch.setattr(home, failing, fail_on_second_call)
    monkeypatch.setattr(steps, "LOCAL_ROWS", 300)
    with pytest.raises(RuntimeError, match="interrupted"):
        Mondrian(k=4).publish_source(TableSource(table), tmp_path / "release",
                                     random_state=0, batch_rows=128)
    assert leftovers(tmp_path) == []
    assert calls


def test_an_existing_target_is_refused_before_any_work(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    source = TableSource(hand_table())
    target = Mondrian(k=4).publish_source(source, tmp_path / "release", random_state=0)
    before = files_of(target)

    def no_pass(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the source was read")

    with monkeypatch.context() as patch:
        patch.setattr(streaming_mondrian, "cut_top", no_pass)
        with pytest.raises(FileExistsError, match="already exists"):
            Mondrian(k=2).publish_source(source, target, random_state=0)
    assert files_of(target) == before
    Mondrian(k=2).publish_source(source, target, random_state=0, overwrite=True)
    assert files_of(target) != before
    assert load_release(target).parameters["k"] == 2
    assert not any(name.endswith(PARTIAL_SUFFIX) for name in leftovers(tmp_path))


def test_infeasible_parameters_write_nothing(tmp_path: Path) -> None:
    with pytest.raises(InfeasibleError, match="k = 9 exceeds"):
        Mondrian(k=9).publish_source(TableSource(hand_table()), tmp_path / "release")
    with pytest.raises(InfeasibleError, match="l must be at most 3"):
        Mondrian(k=1, l=4).publish_source(TableSource(hand_table()), tmp_path / "release")
    with pytest.raises(InfeasibleError, match=r"'cold' makes up 0\.5 .* l must be at most 2"):
        Mondrian(k=1, l=3, diversity="frequency").publish_source(TableSource(hand_table()),
                                                                 tmp_path / "release")
    assert leftovers(tmp_path) == []
