"""Group mechanisms published block by block (`ppdp.blocks`): quotas, invariants, files.

Blocks are made small (``BLOCK_ROWS`` monkeypatched) so that Adult's 30,162 rows make four.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ppdp
from ppdp.mechanisms import Ambiguity, Anatomy, SPLUGen
from ppdp.mechanisms.grouping import distinct_value_groups
from ppdp.plan import blocks
from ppdp.plan.blocks import block_generator, block_quotas
from ppdp.plan.keyed import make_key
from ppdp.release.load import load_release
from ppdp.release.write import write_parquet
from ppdp.table.source import TableSource
from ppdp.table.table import Table
from tests.release.test_release import rewrite_file

BLOCK_ROWS = 8_000
N_BLOCKS = 4  # ceil(30,162 / 8,000)

MECHANISMS = {
    "splu": lambda: SPLUGen(gamma=5),
    "anatomy": lambda: Anatomy(l=5),
    "ambiguity": lambda: Ambiguity(alpha=0.1, beta=1 / 7),
}


@pytest.fixture(scope="module")
def adult() -> Table:
    return ppdp.datasets.adult(sensitive="occupation")


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(blocks, "BLOCK_ROWS", BLOCK_ROWS)
    return BLOCK_ROWS


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[Table]:
    """The block tables handed to every mechanism's ``publish_block``, in order (one worker:
    several would publish blocks in any order)."""
    monkeypatch.setenv("PPDP_WORKERS", "1")
    tables: list[Table] = []
    for name in MECHANISMS:
        cls = type(MECHANISMS[name]())
        original = cls.publish_block

        def spy(self, table, rng, original=original):
            tables.append(table)
            return original(self, table, rng)

        monkeypatch.setattr(cls, "publish_block", spy)
    return tables


def published(mechanism, table: Table, directory: Path, seed: int = 7, **options) -> Path:
    return mechanism.publish_source(TableSource(table), directory, random_state=seed,
                                    **options)


def rows(codes, names) -> Counter:
    """The multiset of rows over some columns."""
    return Counter(zip(*(codes[n].tolist() for n in names), strict=True))


def histogram(values: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(values, minlength=size)


# -- quotas ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("counts", "n_blocks"), [
    ([7, 0, 3, 12, 5], 4), ([1, 1, 1, 1, 1, 1, 1], 3), ([100], 7), ([9, 9, 9], 1),
    (list(range(50)), 6)])
def test_quotas_are_proportional_and_blocks_balanced(counts: list[int], n_blocks: int) -> None:
    quotas = block_quotas(np.array(counts), n_blocks)
    assert quotas.shape == (n_blocks, len(counts))
    assert np.array_equal(quotas.sum(axis=0), counts)
    floor = np.array(counts) // n_blocks
    assert np.all((quotas == floor) | (quotas == floor + 1))
    sizes = quotas.sum(axis=1)
    assert sizes.max() - sizes.min() <= 1


# -- one block: the in-memory release ----------------------------------------------------------


@pytest.mark.parametrize("ignored", [False, True])
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_one_block_writes_the_in_memory_release(name: str, ignored: bool, adult: Table,
                                                tmp_path: Path) -> None:
    """The same random_state gives the same files, byte for byte, as publish + save (also
    when some columns are ignored: they are never read)."""
    if ignored:
        quasi = [n for n in adult.schema.quasi_identifiers if n != "salary-class"]
        adult = adult.with_roles(sensitive="occupation", quasi_identifiers=quasi)
    mechanism = MECHANISMS[name]()
    mechanism.publish(adult, random_state=3).save(tmp_path / "memory")
    published(mechanism, adult, tmp_path / "blocked", seed=3)
    memory = json.loads((tmp_path / "memory" / "release.json").read_text())
    blocked = json.loads((tmp_path / "blocked" / "release.json").read_text())
    assert blocked == memory


# -- several blocks ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_blocks_hold_their_quotas(name: str, adult: Table, tmp_path: Path, small_blocks: int,
                                  recorded: list[Table]) -> None:
    published(MECHANISMS[name](), adult, tmp_path / "r")
    size = adult.schema["occupation"].size
    quotas = block_quotas(histogram(adult.codes["occupation"], size), N_BLOCKS)
    assert len(recorded) == N_BLOCKS
    for block, table in enumerate(recorded):
        assert np.array_equal(histogram(table.codes["occupation"], size), quotas[block])


def test_blocks_stratify_several_sensitive_columns_jointly(tmp_path: Path, small_blocks: int,
                                                           recorded: list[Table]) -> None:
    table = ppdp.datasets.adult(sensitive=["occupation", "education"])
    published(SPLUGen(gamma=3), table, tmp_path / "r")
    sensitive = table.schema.sensitive
    shape = tuple(table.schema[c].size for c in sensitive)

    def joint(codes) -> np.ndarray:
        cells = np.ravel_multi_index(tuple(codes[c] for c in sensitive), shape)
        return np.bincount(cells, minlength=np.prod(shape))

    quotas = block_quotas(joint(table.codes), N_BLOCKS)
    for block, part in enumerate(recorded):
        assert np.array_equal(joint(part.codes), quotas[block])


def test_blocks_are_batching_independent(adult: Table, tmp_path: Path, small_blocks: int
                                         ) -> None:
    """Keyed randomness: batches of 1,000 rows publish the same files as one batch."""
    published(SPLUGen(gamma=5), adult, tmp_path / "a", batch_rows=1_000)
    published(SPLUGen(gamma=5), adult, tmp_path / "b", batch_rows=1 << 20)
    first, second = (json.loads((tmp_path / d / "release.json").read_text())
                     for d in ("a", "b"))
    assert first == second


def test_splu_blocks_keep_every_row_in_distinct_value_groups(
        adult: Table, tmp_path: Path, small_blocks: int, recorded: list[Table]) -> None:
    path = published(SPLUGen(gamma=5), adult, tmp_path / "r", seed=11)
    release = load_release(path)
    quasi = adult.schema.quasi_identifiers
    assert rows(release.codes, quasi) == rows(adult.codes, quasi)
    meta = json.loads((path / "release.json").read_text())
    assert meta["parameters"] == {"gamma": 5}
    assert len(meta["files"]["rows"]) == N_BLOCKS
    key = make_key(11)
    for block, table in enumerate(list(recorded)):
        # Part b is the in-memory publish of block b with its generator.
        name = meta["files"]["rows"][block]
        expected = SPLUGen(gamma=5).publish_block(table, block_generator(key, "splu", block))
        digest = write_parquet(tmp_path / name, expected._tables()["rows"])
        assert digest == meta["digests"][name]
        # Its decoy groups: gamma (or gamma + 1) rows of distinct values.
        values = table.codes["occupation"]
        groups = distinct_value_groups(values, 5, domain_size=table.schema["occupation"].size,
                                       column="occupation", symbol="gamma")
        assert groups.n_rows == table.n_rows and groups.sizes.min() >= 5
        for members, size in zip(groups.members, groups.sizes, strict=True):
            assert len(set(values[members[:size]].tolist())) == size


def test_anatomy_blocks_keep_l_diverse_groups(adult: Table, tmp_path: Path, small_blocks: int
                                              ) -> None:
    path = published(Anatomy(l=5), adult, tmp_path / "r")
    release = load_release(path)
    quasi = adult.schema.quasi_identifiers
    assert rows(release.qit, quasi) == rows(adult.codes, quasi)
    groups, values, counts = release.st
    size = adult.schema["occupation"].size
    assert np.array_equal(histogram(values[np.repeat(np.arange(len(values)), counts)], size),
                          histogram(adult.codes["occupation"], size))
    # Every group: at least l lines, each value once, and as many QIT rows as ST counts.
    n_groups = release.parameters["n_groups"]
    assert np.bincount(groups, minlength=n_groups).min() >= 5
    assert np.all(counts == 1)
    assert len(np.unique(groups.astype(np.int64) * size + values)) == len(groups)
    assert np.array_equal(np.bincount(release.qit_groups, minlength=n_groups),
                          np.bincount(groups, weights=counts, minlength=n_groups))
    # Group ids of the parts follow one another and hold the block's quotas.
    meta = json.loads((path / "release.json").read_text())
    quotas = block_quotas(histogram(adult.codes["occupation"], size), N_BLOCKS)
    start = 0
    for block, name in enumerate(meta["files"]["st"]):
        part = pq.read_table(path / name)
        ids = part.column("GroupID").to_numpy()
        assert ids.min() == start
        start = ids.max() + 1
        part_values = part.column("occupation").combine_chunks().indices.to_numpy()
        assert np.array_equal(histogram(part_values, size), quotas[block])
    assert start == n_groups


def test_ambiguity_blocks_meet_alpha_and_beta(adult: Table, tmp_path: Path, small_blocks: int
                                              ) -> None:
    path = published(Ambiguity(alpha=0.1, beta=1 / 7), adult, tmp_path / "r")
    release = load_release(path)
    assert release.presence().max() <= 0.1
    assert release.association().max() <= 1 / 7
    groups, values, counts = release.st
    size = adult.schema["occupation"].size
    assert len(np.unique(groups.astype(np.int64) * size + values)) == len(groups)
    assert np.array_equal(np.bincount(values, weights=counts, minlength=size),
                          histogram(adult.codes["occupation"], size))
    assert release.group_sizes().min() >= 7
    assert release.n_rows == adult.n_rows


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_blocked_releases_answer_counts(name: str, adult: Table, tmp_path: Path,
                                        small_blocks: int) -> None:
    release = load_release(published(MECHANISMS[name](), adult, tmp_path / "r"))
    assert release.n_rows == adult.n_rows
    assert release.count("SELECT COUNT(*) FROM t").value == pytest.approx(adult.n_rows)
    if name != "splu":
        # Anatomy's and ambiguity's ST publish the sensitive counts exactly.
        query = "occupation = 'Sales'"
        assert release.count(query).value == pytest.approx(adult.count(query).value)
    grouped = release.count("SELECT COUNT(*) FROM t WHERE sex = 'Female' GROUP BY occupation")
    women = release.count("sex = 'Female'").value
    assert sum(e.value for _, e in grouped.groups) == pytest.approx(women)
    if name != "ambiguity":
        # Published as they are (ambiguity's estimate assumes independence inside groups).
        assert women == adult.count("sex = 'Female'").value


def test_splu_is_calibrated_on_blocked_releases(adult: Table, tmp_path: Path,
                                                small_blocks: int) -> None:
    """Over R publications (fixed seeds) the estimates scatter by their reported standard
    error and centre on the truth.

    The sample standard deviation of R estimates has a relative standard error of about
    1/sqrt(2 (R - 1)); with R = 150 that is 0.058, so the band 0.85 - 1.15 is 2.6 of them
    (about 1 % per query by chance) while a standard error 15 % off fails half the time.
    Each publication draws its own blocks, so decoy partitions vary as they do in use.
    """
    runs = 150
    queries = ["sex = 'Female' AND occupation = 'Adm-clerical'",
               "age >= 40 AND occupation = 'Exec-managerial'",
               "education = 'Bachelors' AND occupation = 'Prof-specialty'",
               "occupation = 'Sales'",
               "age < 30 AND occupation IN ('Sales', 'Craft-repair')"]
    truth = np.array([adult.count(q).value for q in queries])
    source = TableSource(adult)
    values, stderr = [], []
    for run in range(runs):
        path = SPLUGen(gamma=5).publish_source(source, tmp_path / "r", random_state=1000 + run,
                                               overwrite=True)
        estimates, errors = load_release(path).count_all(queries)
        values.append(estimates)
        stderr.append(errors)
    values, stderr = np.array(values), np.array(stderr)
    mean_stderr = stderr.mean(axis=0)
    ratio = values.std(axis=0, ddof=1) / mean_stderr
    assert np.all((ratio > 0.85) & (ratio < 1.15)), dict(zip(queries, ratio, strict=True))
    # The mean of R estimates within 4 of its standard errors of the truth.
    bias = (values.mean(axis=0) - truth) / (mean_stderr / np.sqrt(runs))
    assert np.all(np.abs(bias) < 4), dict(zip(queries, bias, strict=True))


# -- progress, failures, existing targets --------------------------------------------------------


def test_progress_reports_every_pass(adult: Table, tmp_path: Path, small_blocks: int) -> None:
    heard: list[tuple[str, int, int]] = []
    published(Anatomy(l=5), adult, tmp_path / "r", batch_rows=5_000,
              progress=lambda stage, done, total: heard.append((stage, done, total)))
    n = adult.n_rows
    assert all(total == n for _, _, total in heard)
    finished = Counter(stage for stage, done, _ in heard if done == n)
    # One assign pass: its thresholds fall where the first pass predicted (see QuotaAssignment).
    assert finished == {"assign": 1, "exchange": 1, "publish": 1}
    assert [done for stage, done, _ in heard if stage == "publish"] == sorted(
        done for stage, done, _ in heard if stage == "publish")


def test_an_interrupted_publish_leaves_nothing(adult: Table, tmp_path: Path, small_blocks: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = Anatomy.publish_block

    def failing(self, table, rng):
        calls.append(table.n_rows)
        if len(calls) == 3:
            raise RuntimeError("interrupted")
        return original(self, table, rng)

    monkeypatch.setattr(Anatomy, "publish_block", failing)
    with pytest.raises(RuntimeError, match="interrupted"):
        published(Anatomy(l=5), adult, tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_an_infeasible_block_is_named(tmp_path: Path, small_blocks: int) -> None:
    table = ppdp.datasets.adult(sensitive="occupation")
    with pytest.raises(ppdp.InfeasibleError, match=r"block 1 of 4 .*largest feasible gamma"):
        published(SPLUGen(gamma=8), table, tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_existing_targets(adult: Table, tmp_path: Path, small_blocks: int) -> None:
    first = published(Anatomy(l=5), adult, tmp_path / "r", seed=1)
    with pytest.raises(FileExistsError):
        published(Anatomy(l=5), adult, first, seed=2)
    published(Anatomy(l=5), adult, first, seed=2, overwrite=True)
    assert load_release(first).n_rows == adult.n_rows
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(ppdp.ReleaseError):
        published(Anatomy(l=5), adult, other, overwrite=True)
    assert (other / "notes.txt").read_text() == "keep me"


def test_parts_join_whether_their_columns_are_stored_required_or_optional(
        adult: Table, tmp_path: Path, small_blocks: int) -> None:
    """Parts written by this version store columns without nulls as required; a part stored
    with optional columns (as earlier versions wrote them) joins the others, and a part whose
    column has another type is refused."""
    path = published(Anatomy(l=5), adult, tmp_path / "r")
    expected = load_release(path)
    first = json.loads((path / "release.json").read_text())["files"]["qit"][0]
    stored = pq.read_table(path / first)
    assert not any(field.nullable for field in stored.schema)
    rewrite_file(path, first, stored.cast(pa.schema([f.with_nullable(True)
                                                     for f in stored.schema])))
    assert pq.read_schema(path / first).field(0).nullable
    joined = load_release(path)
    for name, codes in expected.qit.items():
        np.testing.assert_array_equal(joined.qit[name], codes)
    changed = stored.set_column(stored.schema.get_field_index("GroupID"), "GroupID",
                                stored.column("GroupID").cast(pa.int64()))
    rewrite_file(path, first, changed)
    with pytest.raises(ppdp.ReleaseError, match="parts of 'qit' have different columns"):
        load_release(path, engine="memory")
    # Counted from its pair counts, the release reads its QIT when asked for: refused then.
    with pytest.raises(ppdp.ReleaseError, match="differ in the type of column 'GroupID'"):
        load_release(path).qit  # noqa: B018 - the read is the test
