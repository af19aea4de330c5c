"""Keyed alpha-beta views: every draw a function of (key, view, row id or chunk of D), so that a
view published batch by batch from a source (``AlphaBeta.publish_source``) is, file for file,
the view published from the table in memory and saved; no key or seed is ever written."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

import ppdp
from ppdp import AlphaBeta
from ppdp.data.schema import Column, Role, Schema
from ppdp.engines.streaming import alphabeta as streaming_alphabeta
from ppdp.errors import UndeclaredDomainError
from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.mechanisms.alphabeta.views import ViewSequence, fingerprint
from ppdp.plan import order as plans
from ppdp.plan.keyed import make_key
from ppdp.table.source import Batch, TableSource
from ppdp.table.table import Table


class ShuffledSource:
    """A source whose batches come in a permuted order."""

    def __init__(self, source: TableSource, seed: int) -> None:
        self.source, self.seed = source, seed
        self.schema, self.n_rows, self.name = source.schema, source.n_rows, source.name

    def histogram(self, columns: Sequence[str]) -> np.ndarray:
        return self.source.histogram(columns)

    def batches(self, batch_rows: int, columns: Sequence[str] | None = None
                ) -> Iterator[Batch]:
        batches = list(self.source.batches(batch_rows, columns))
        for index in np.random.default_rng(self.seed).permutation(len(batches)):
            yield batches[index]


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def adult() -> Table:
    return ppdp.datasets.adult()


@pytest.fixture(scope="module", params=["uniform", "marginal"])
def reference(request, adult, tmp_path_factory) -> tuple[AlphaBeta, dict[str, bytes]]:
    """A view of Adult published in memory and saved: (mechanism, its files)."""
    mechanism = AlphaBeta(k=2, gamma=0.5, noise=request.param)
    target = tmp_path_factory.mktemp("reference") / "view"
    mechanism.publish(adult, random_state=20240601).save(target)
    return mechanism, files_of(target)


@pytest.mark.parametrize("batch_rows", [3333, 10**4, 10**6])
@pytest.mark.parametrize("shuffled", [False, True])
def test_batches_give_the_files_of_the_view_in_memory(adult, reference, tmp_path, batch_rows,
                                                      shuffled):
    mechanism, expected = reference
    source = TableSource(adult)
    if shuffled:
        source = ShuffledSource(source, batch_rows)
    stages: dict[str, list[tuple[int, int]]] = {}
    target = mechanism.publish_source(
        source, tmp_path / "view", random_state=20240601, batch_rows=batch_rows,
        progress=lambda stage, done, total: stages.setdefault(stage, []).append((done, total)))
    assert files_of(target) == expected
    assert set(expected) == {"release.json", "view.parquet"}
    assert [p.name for p in tmp_path.iterdir()] == ["view"]  # no spill or staging left
    for stage in ("tuples", "retain"):
        assert stages[stage][-1] == (adult.n_rows, adult.n_rows)
        assert len(stages[stage]) == math.ceil(adult.n_rows / batch_rows)
    assert stages["write"] == [(1, 1)]
    assert stages["noise"][-1][0] == stages["noise"][-1][1] >= 1
    loaded = ppdp.load_release(target)
    assert loaded.count("age < 30") == mechanism.publish(
        adult, random_state=20240601).count("age < 30")


def test_parts_are_the_same_from_memory_and_from_batches(adult, tmp_path, monkeypatch):
    """A view of about 150,000 rows in parts of 20,000 (ROWS_PER_PART lowered), spilled to 16
    files of ranks: the parts, cut by rank, are the same files either way."""
    monkeypatch.setattr(plans, "ROWS_PER_PART", 20_000)
    monkeypatch.setattr(streaming_alphabeta, "SPILL_ROWS", 10_000)
    mechanism = AlphaBeta(k=2, gamma=0.5)
    release = mechanism.publish(adult, random_state=7)
    assert len(release.part_rows) == math.ceil(release.n_rows / 20_000) > 4
    release.save(tmp_path / "memory")
    mechanism.publish_source(ShuffledSource(TableSource(adult), 1), tmp_path / "batches",
                             random_state=7, batch_rows=5000)
    files = files_of(tmp_path / "memory")
    assert files == files_of(tmp_path / "batches")
    metadata = json.loads(files["release.json"])
    assert metadata["files"]["view"] == [f"view-{i:05d}.parquet"
                                         for i in range(len(release.part_rows))]
    assert metadata["n_rows"] == release.n_rows == sum(release.part_rows)


def test_later_views_write_earlier_tuples_in_parts(tmp_path, monkeypatch):
    """View 2 publishes V' too: beyond ROWS_PER_PART rows (lowered to 50) it is cut into even
    parts, the view by rank, and both load back."""
    monkeypatch.setattr(plans, "ROWS_PER_PART", 50)
    table = distinct_table(300)
    sequence = AlphaBeta(alpha=0.3, beta=0.001, v=2).views(table)
    first = sequence.publish(random_state=1)
    second = sequence.publish(random_state=1)
    second.save(tmp_path / "view2")
    names = json.loads((tmp_path / "view2" / "release.json").read_text())["files"]
    assert len(names["earlier"]) == math.ceil(first.n_rows / 50)
    assert len(names["view"]) == len(second.part_rows) == math.ceil(second.n_rows / 50)
    loaded = ppdp.load_release(tmp_path / "view2")
    for query in ("a < 50", "b >= 30 AND c < 10"):
        assert loaded.count(query) == second.count(query)


def test_later_views_from_batches_are_the_views_in_memory(tmp_path, monkeypatch):
    """Views 1-3 of a table with repeated tuples, written batch by batch from a source
    (`ViewSequence.publish_to`, batches shuffled) are, file for file, the views published in
    memory and saved (V' included, in parts); the source's fingerprint is the table's, and a
    sequence resumed from the saved state continues with the same views."""
    monkeypatch.setattr(plans, "ROWS_PER_PART", 400)
    keys = np.random.default_rng(5).choice(10**6, size=500, replace=False)
    table = keyed_table(np.random.default_rng(6).choice(keys, size=2000))
    mechanism = AlphaBeta(alpha=0.3, beta=0.001, v=3)
    memory = mechanism.views(table)
    source = ShuffledSource(TableSource(table), 7)
    streamed = ViewSequence(mechanism, source)
    assert streamed.fingerprint == fingerprint(table)
    for view in (1, 2, 3):
        if view == 2:
            # A new sequence over the source, resumed from the state saved after view 1.
            streamed.save_state(tmp_path / "state")
            streamed = ViewSequence.load_state(tmp_path / "state", mechanism,
                                                         ShuffledSource(TableSource(table), 8))
        memory.publish(random_state=30 + view).save(tmp_path / f"memory-{view}")
        streamed.publish_to(tmp_path / f"batches-{view}", random_state=30 + view,
                            batch_rows=333)
        files = files_of(tmp_path / f"memory-{view}")
        assert files == files_of(tmp_path / f"batches-{view}"), view
        assert any(name.startswith("earlier-") for name in files) == (view > 1), sorted(files)
        assert streamed.published == memory.published == view
        assert np.array_equal(streamed.earlier, memory.earlier)
    with pytest.raises(ppdp.errors.InfeasibleError, match="bound v = 3"):
        streamed.publish_to(tmp_path / "view-4", random_state=1)
    assert not (tmp_path / "view-4").exists()


def keyed_table(keys: np.ndarray) -> Table:
    """The rows of tuple keys ``keys`` over the 100 x 100 x 100 domain (m = 10^6)."""
    schema = Schema(tuple(Column(c, Role.QUASI_IDENTIFIER, tuple(range(100))) for c in "abc"))
    return Table(schema, dict(zip("abc", np.unravel_index(keys, (100, 100, 100)), strict=True)))


def distinct_table(n_rows: int, seed: int = 3) -> Table:
    """n distinct tuples of the 100 x 100 x 100 domain (m = 10^6), one row each."""
    return keyed_table(np.random.default_rng(seed).choice(10**6, size=n_rows, replace=False))


def test_another_key_draws_anew():
    """20,000 distinct tuples, alpha = 0.3, beta = 0.01 (about 9,800 inserted tuples). The same
    key gives the same view; another key keeps rows independently (both keep a row with
    probability (alpha + beta)^2 = 0.0961: their count within 5 sds of it), inserts other tuples
    (both insert a tuple with probability beta^2) and puts almost no tuple at the same place."""
    table = distinct_table(20_000)
    mechanism = AlphaBeta(alpha=0.3, beta=0.01)
    domain = TupleDomain.of(table.schema)
    in_table = np.sort(domain.keys(table.codes))
    views = [domain.keys(mechanism.publish(table, random_state=seed).codes)
             for seed in (11, 11, 12)]
    assert np.array_equal(views[0], views[1])
    first, other = views[0], views[2]
    kept = [np.intersect1d(v, in_table) for v in (first, other)]
    noise = [np.setdiff1d(v, in_table) for v in (first, other)]
    p = 0.31
    both = len(np.intersect1d(*kept))
    assert abs(both - 20_000 * p**2) <= 5 * math.sqrt(20_000 * p**2 * (1 - p**2))
    assert len(np.intersect1d(*noise)) <= 0.05 * min(len(n) for n in noise)
    shared = min(len(first), len(other))
    assert np.mean(first[:shared] == other[:shared]) < 0.01


def test_views_of_one_key_are_drawn_apart():
    """The view number is part of every stream: two views made from the same seed keep
    different rows."""
    table = distinct_table(5000)
    sequence = AlphaBeta(alpha=0.3, beta=0.001, v=2).views(table)
    domain = TupleDomain.of(table.schema)
    first, second = (domain.keys(sequence.publish(random_state=5).codes) for _ in range(2))
    in_table = domain.keys(table.codes)
    assert not np.array_equal(np.intersect1d(first, in_table), np.intersect1d(second, in_table))


def secret_forms(seed: int) -> list[bytes]:
    """The seed and the key it makes, as text (decimal, hex) and as bytes."""
    key = make_key(seed)
    forms = [str(seed), f"{seed:x}", str(key), f"{key:x}", f"{key:032x}", f"{key:X}"]
    words = [key >> 64, key & (2**64 - 1)]
    forms += [str(w) for w in words] + [f"{w:016x}" for w in words]
    raw = [key.to_bytes(16, "big"), key.to_bytes(16, "little"), seed.to_bytes(8, "little"),
           seed.to_bytes(8, "big")]
    raw += [w.to_bytes(8, order) for w in words for order in ("big", "little")]
    return [f.encode() for f in forms] + raw


def test_no_key_or_seed_is_written(adult, tmp_path):
    seed = 8675309123
    table = distinct_table(2000)
    mechanism = AlphaBeta(alpha=0.3, beta=0.01, v=2)
    sequence = mechanism.views(table)
    for view in (1, 2):
        sequence.publish(random_state=seed).save(tmp_path / "releases" / f"view{view}")
    sequence.save_state(tmp_path / "state")
    AlphaBeta(k=2, gamma=0.5).publish_source(TableSource(adult), tmp_path / "releases" / "source",
                                             random_state=seed, batch_rows=4096)
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {p.name for p in written} >= {"release.json", "view.parquet", "earlier.parquet",
                                         "state.json"}
    forms = secret_forms(seed)
    for path in written:
        data = path.read_bytes()
        for form in forms:
            assert form not in data, (path.name, form)


def test_publish_source_checks_like_publish(adult, tmp_path):
    """An existing directory is replaced only when told; undeclared domains and views beyond
    max_rows are refused before anything is written."""
    mechanism = AlphaBeta(k=2, gamma=0.5)
    target = mechanism.publish_source(TableSource(adult), tmp_path / "view", random_state=1)
    first = files_of(target)
    with pytest.raises(FileExistsError, match="already exists"):
        mechanism.publish_source(TableSource(adult), target, random_state=2)
    mechanism.publish_source(TableSource(adult), target, random_state=2, overwrite=True)
    assert files_of(target)["release.json"] != first["release.json"]
    schema = Schema(tuple(Column(c, Role.QUASI_IDENTIFIER, tuple(range(100)), declared=False)
                          for c in "abc"))
    undeclared = Table(schema, dict(distinct_table(100).codes))
    with pytest.raises(UndeclaredDomainError):
        mechanism.publish_source(TableSource(undeclared), tmp_path / "undeclared")
    with pytest.raises(ppdp.InfeasibleError, match=r"more than max_rows = 1,000; .* disk space"):
        AlphaBeta(k=2, gamma=0.5, max_rows=1000).publish_source(TableSource(adult),
                                                                tmp_path / "big")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["view"]
