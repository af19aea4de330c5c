"""Releases loaded lazily: counts from Polars aggregations over their Parquet files
(`ppdp.query.ScanCube`) equal, exactly, those of the release published in memory."""

from __future__ import annotations

import importlib.metadata
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.plan.order
import ppdp.query.cache
import ppdp.query.codes
import ppdp.query.cube
import ppdp.query.encoding
import ppdp.query.row_counts
import ppdp.query.scan_cube
import ppdp.release.load
import ppdp.release.verify
from ppdp import DBR, FRAPP, Anatomy, PerturbationPartitioning, UniformPerturbation
from ppdp.data.schema import Role
from ppdp.errors import ReleaseError
from ppdp.plan.engine import get_engine
from ppdp.query.cube import Cube
from ppdp.query.scan_cube import ScanCube
from ppdp.release.base import Release, rows_domains
from ppdp.release.format import file_digest, metadata_digest
from ppdp.release.load import load_release
from ppdp.table.table import Table, table_from_arrow
from tests.release.test_release import edit_metadata, rewrite_file

pytest.importorskip("polars")

MECHANISMS: dict[str, Callable[[], ppdp.Mechanism]] = {
    "dbr": DBR,
    "frapp": lambda: FRAPP(k=10, gamma=0.2),
    "uniform": lambda: UniformPerturbation(rho1=0.077, rho2=0.2),
    "sdr": lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2),
}

QUERIES = [
    "sex = 'Female'",
    "age > 40 AND occupation = 'Sales'",
    "age >= 30 AND age < 50 AND education = 'Bachelors' AND race = 'White'",
    "occupation IN ('Sales', 'Tech-support')",
    # Not boxes: evaluated on the cells of a contingency table (or on batches of rows).
    "age > 40 OR occupation = 'Sales'",
    "sex = 'Female' OR race = 'Black'",
    "occupation NOT IN ('Sales', 'Craft-repair') AND education = 'Bachelors'",
    "NOT (sex = 'Male' AND race = 'White') OR occupation = 'Exec-managerial'",
    "(occupation = 'Sales' AND age < 30) OR (occupation = 'Prof-specialty' AND sex = 'Female')",
    "age * 2 - 10 > 70 OR workclass = 'Private'",
    "age BETWEEN 20 AND 29 AND NOT sex = 'Male'",
    "occupation = 'Armed-Forces' AND occupation = 'Sales'",
]

GROUPED = [
    "SELECT COUNT(*) FROM t GROUP BY race",
    "SELECT COUNT(*) FROM t WHERE age > 50 GROUP BY sex, occupation",
    "SELECT COUNT(*) FROM t WHERE age > 50 OR sex = 'Female' GROUP BY occupation, sex",
    "SELECT COUNT(*) FROM t WHERE occupation = 'Sales' OR race = 'Black' GROUP BY salary-class",
]


@pytest.fixture(autouse=True)
def cache_directory(tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> Path:
    """A summary cache of these tests' own, shared by them (loads after the first read it)."""
    directory = tmp_path_factory.getbasetemp() / "ppdp-cache"
    monkeypatch.setenv("PPDP_CACHE_DIR", str(directory))
    return directory


@pytest.fixture(scope="module")
def adult() -> Table:
    return ppdp.datasets.adult(sensitive="occupation")


def save_uncounted(release: Release, path: Path) -> Path:
    """Save a release as one whose rows are too many distinct rows to count (more than
    `MAX_COUNTED_ROWS`): without `row_counts.parquet`, so that loading reads its rows."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.query.row_counts, "MAX_COUNTED_ROWS", 0)
        saved = release.save(path)
    assert not (saved / "row_counts.parquet").exists()
    return saved


@pytest.fixture(scope="module", params=sorted(MECHANISMS))
def published(request: pytest.FixtureRequest, adult: Table,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[Release, Path]:
    """A release of Adult saved without the counts of its distinct rows."""
    release = MECHANISMS[request.param]().publish(adult, random_state=3)
    return release, save_uncounted(release, tmp_path_factory.mktemp("scan") / request.param)


def assert_same_answers(loaded: Release, release: Release, queries: list[str]) -> None:
    values, stderr = loaded.count_all(queries)
    expected_values, expected_stderr = release.count_all(queries)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(stderr, expected_stderr)
    for query in queries:
        assert loaded.count(query) == release.count(query), query


def test_loaded_release_counts_from_its_files(published: tuple[Release, Path]) -> None:
    release, path = published
    loaded = load_release(path)
    assert type(loaded) is type(release)
    assert isinstance(loaded._cube, ScanCube)  # type: ignore[attr-defined]
    assert_same_answers(loaded, release, QUERIES)
    for query in GROUPED:
        assert loaded.count(query) == release.count(query), query


def test_rows_are_read_only_when_asked_for(published: tuple[Release, Path]) -> None:
    release, path = published
    loaded = load_release(path)
    assert loaded._codes is None  # type: ignore[attr-defined]
    for name, codes in release.codes.items():  # type: ignore[attr-defined]
        np.testing.assert_array_equal(loaded.codes[name], codes)  # type: ignore[attr-defined]
        assert loaded.codes[name].dtype == codes.dtype  # type: ignore[attr-defined]
    if hasattr(release, "subtable"):
        np.testing.assert_array_equal(loaded.subtable, release.subtable)  # type: ignore[attr-defined]


@pytest.mark.parametrize("summary", [True, False], ids=["summary", "no-summary"])
def test_conditions_too_large_for_a_table(published: tuple[Release, Path], summary: bool,
                                          tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Evaluated on the distinct rows of the summary, or else on batches of rows."""
    release, path = published
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path / "cache"))
    if not summary:
        monkeypatch.setattr(ppdp.query.codes, "MAX_SUMMARY_ROWS", 100)
    loaded = load_release(path)
    # Tables of more than 200 cells are not built: conditions over age (72 values) and any
    # other column are evaluated on the summary's distinct rows, or on batches of 4,096 rows.
    monkeypatch.setattr(ppdp.query.cube, "MAX_CUBE_CELLS", 200)
    monkeypatch.setattr(ppdp.query.scan_cube, "MAX_CUBE_CELLS", 200)
    monkeypatch.setattr(ppdp.query.scan_cube, "SCAN_BATCH_ROWS", 4096)
    batches: list[int] = []
    read = ScanCube.code_batches

    def counted(self: ScanCube, columns: list[str]):  # type: ignore[no-untyped-def]
        for codes in read(self, columns):
            batches.append(len(next(iter(codes.values()))))
            yield codes

    monkeypatch.setattr(ScanCube, "code_batches", counted)
    queries = ["age > 40 AND sex = 'Female'", "age > 40 OR occupation = 'Sales'",
               "(age < 30 AND race = 'Black') OR occupation = 'Tech-support'"]
    assert_same_answers(loaded, release, queries)
    grouped = "SELECT COUNT(*) FROM t WHERE age > 60 OR race = 'Other' GROUP BY sex"
    assert loaded.count(grouped) == release.count(grouped)
    if summary:
        assert not batches
    else:
        assert max(batches) == 4096 and sum(batches) % release.n_rows == 0


def test_count_all_reuses_the_contingency_tables(published: tuple[Release, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    release, path = published
    # Without the summary of distinct rows: the tables come from passes over the files.
    monkeypatch.setattr(ppdp.query.codes, "MAX_SUMMARY_ROWS", 100)
    monkeypatch.setenv("PPDP_CACHE_DIR", "")
    loaded = load_release(path)
    cube = loaded._cube  # type: ignore[attr-defined]
    passes: list[object] = []
    aggregate = cube._aggregate
    monkeypatch.setattr(cube, "_aggregate", lambda groups: passes.append(groups) or
                        aggregate(groups))
    queries = [f"age > {a} AND sex = 'Female'" for a in range(20, 70)]
    queries += [f"age < {a} OR sex = 'Male'" for a in range(20, 70)]
    assert_same_answers(loaded, release, queries)
    assert len(passes) <= 1
    loaded.count_all(queries)
    assert len(passes) <= 1


def random_conjunctions(table: Table, count: int, seed: int) -> list[str]:
    """Conjunctions of equalities and IN lists on 1 to 3 columns, drawn from the domains."""
    rng = np.random.default_rng(seed)
    columns = list(table.schema.columns)
    queries = []
    for _ in range(count):
        chosen = rng.choice(len(columns), size=int(rng.integers(1, 4)), replace=False)
        terms = []
        for column in (columns[i] for i in sorted(chosen)):
            values = [column.domain[i] for i in rng.choice(column.size, size=2, replace=False)]
            literals = [repr(v) if isinstance(v, str) else str(v) for v in values]
            terms.append(f'"{column.name}" IN ({", ".join(literals)})')
        queries.append(" AND ".join(terms))
    return queries


def test_many_queries_are_counted_in_a_few_passes(published: tuple[Release, Path],
                                                  adult: Table,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    release, path = published
    monkeypatch.setattr(ppdp.query.codes, "MAX_SUMMARY_ROWS", 100)
    monkeypatch.setenv("PPDP_CACHE_DIR", "")
    loaded = load_release(path)
    cube = loaded._cube  # type: ignore[attr-defined]
    passes: list[object] = []
    aggregate = cube._aggregate
    monkeypatch.setattr(cube, "_aggregate", lambda groups: passes.extend(groups) or
                        aggregate(groups))
    queries = random_conjunctions(adult, 150, seed=6)
    values, stderr = loaded.count_all(queries)
    expected_values, expected_stderr = release.count_all(queries)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(stderr, expected_stderr)
    # Far fewer passes (one union of columns each) than sets of columns asked ...
    asked = {frozenset(loaded.schema.names) & frozenset(query.replace('"', " ").split())
             for query in queries}
    assert len(passes) < len(asked) / 5, (len(passes), len(asked))
    # ... after which every table comes from what they counted.
    counted = len(passes)
    for query in queries[:40]:
        assert loaded.count(query) == release.count(query), query
    assert len(passes) == counted


def test_conditions_relating_columns(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n = 3000
    table = table_from_arrow(pa.table({
        "a": rng.integers(0, 20, n), "b": rng.integers(1, 10, n),
        "flag": rng.random(n) < 0.3, "x": rng.choice([0.5, 1.5, 2.5], n),
        "s": rng.choice(["p", "q", "r", "t"], n),
    }), roles={"s": Role.SENSITIVE}).declare_observed_domains(warn=False)
    queries = ["a < 2 * b", "a + b > 12 OR s = 'p'", "a / b >= 2 AND NOT flag",
               "x * a > 10 OR (flag AND s IN ('q', 'r'))", "a - b = 3 AND s != 't'"]
    grouped = "SELECT COUNT(*) FROM t WHERE a > b OR x > 2 GROUP BY s, flag"
    for name in ("dbr", "uniform"):
        mechanism = DBR() if name == "dbr" else UniformPerturbation(rho1=0.3, rho2=0.6)
        release = mechanism.publish(table, random_state=8)
        loaded = load_release(release.save(tmp_path / name))
        assert isinstance(loaded._cube, ScanCube)  # type: ignore[attr-defined]
        assert_same_answers(loaded, release, queries)
        assert loaded.count(grouped) == release.count(grouped)


def test_without_polars_releases_are_read_into_memory(published: tuple[Release, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    release, path = published
    monkeypatch.setattr(ppdp.release.load, "scan_engine_available", lambda: False)
    loaded = load_release(path)
    cube = loaded._cube  # type: ignore[attr-defined]
    assert type(cube) is Cube
    assert_same_answers(loaded, release, QUERIES[:6])


# -- releases in parts -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def in_parts(adult: Table, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, tuple[Release, Path]]:
    """Releases of Adult's 30,162 rows in parts of about 8,000 rows, saved without the
    counts of their distinct rows."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.plan.order, "ROWS_PER_PART", 8000)
        releases = {name: make().publish(adult, random_state=5)
                    for name, make in MECHANISMS.items()}
    root = tmp_path_factory.mktemp("parts")
    return {name: (release, save_uncounted(release, root / name))
            for name, release in releases.items()}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_a_release_in_parts_loads_and_answers_identically(
        in_parts: dict[str, tuple[Release, Path]], name: str, tmp_path: Path) -> None:
    release, path = in_parts[name]
    files = json.loads((path / "release.json").read_text())["files"]
    assert files["rows"] == [f"rows-{i:05d}.parquet" for i in range(4)]
    loaded = load_release(path)
    assert loaded.part_rows == release.part_rows
    assert_same_answers(loaded, release, QUERIES)
    for query in GROUPED:
        assert loaded.count(query) == release.count(query), query
    # Saved again, the parts hold the same bytes.
    again = save_uncounted(loaded, tmp_path / "again")
    assert json.loads((again / "release.json").read_text())["digests"] == \
        json.loads((path / "release.json").read_text())["digests"]


def copy_release(source: Path, target: Path) -> Path:
    target.mkdir()
    for file in source.iterdir():
        (target / file.name).write_bytes(file.read_bytes())
    return target


def test_a_tampered_part_is_detected(in_parts: dict[str, tuple[Release, Path]],
                                     tmp_path: Path) -> None:
    path = copy_release(in_parts["dbr"][1], tmp_path / "dbr")
    part = path / "rows-00002.parquet"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(ReleaseError, match=r"rows-00002\.parquet does not match the digest"):
        load_release(path)


def set_value(directory: Path, name: str, column: str, row: int, value: str) -> None:
    """Set one value of a part's text column and record the part's new digest."""
    rows = pq.read_table(directory / name)
    values = rows.column(column).combine_chunks().dictionary_decode().to_pylist()
    values[row] = value
    rewrite_file(directory, name, rows.set_column(rows.column_names.index(column), column,
                                                  pa.array(values).dictionary_encode()))


@pytest.mark.parametrize("name", ["dbr", "sdr"])
def test_a_value_outside_the_domain_in_a_part_fails_to_load(
        in_parts: dict[str, tuple[Release, Path]], name: str, tmp_path: Path) -> None:
    path = copy_release(in_parts[name][1], tmp_path / name)
    # Digests recomputed: a crafted release that passes the integrity check.
    set_value(path, "rows-00001.parquet", "sex", 17, "Unknown")
    with pytest.raises(ReleaseError, match=r"does not match.*'sex' holds values outside"):
        load_release(path)


def test_a_part_with_missing_rows_fails_to_load(in_parts: dict[str, tuple[Release, Path]],
                                                tmp_path: Path) -> None:
    path = copy_release(in_parts["frapp"][1], tmp_path / "frapp")
    rows = pq.read_table(path / "rows-00003.parquet")
    rewrite_file(path, "rows-00003.parquet", rows.slice(1))
    with pytest.raises(ReleaseError, match="expected 30162 rows, found 30161"):
        load_release(path)


def test_a_row_outside_its_subtable_in_a_part_fails_to_load(
        in_parts: dict[str, tuple[Release, Path]], tmp_path: Path) -> None:
    release, source = in_parts["sdr"]
    path = copy_release(source, tmp_path / "sdr")
    domains = release.domains  # type: ignore[attr-defined]
    subtable = next(i for i in range(len(domains)) if not domains[i].all())
    outside = release.schema["occupation"].domain[int(np.flatnonzero(~domains[subtable])[0])]
    rows = pq.read_table(path / "rows-00002.parquet")
    row = int(np.flatnonzero(rows.column("subtable").to_numpy() == subtable)[0])
    set_value(path, "rows-00002.parquet", "occupation", row, outside)
    with pytest.raises(ReleaseError, match="outside its sub-table"):
        load_release(path)


def test_eager_releases_accept_parts(adult: Table, tmp_path: Path) -> None:
    """Releases read into memory get their parts concatenated, in order."""
    release = Anatomy(l=4).publish(adult, random_state=2)
    path = release.save(tmp_path / "anatomy")
    qit = pq.read_table(path / "qit.parquet")
    (path / "qit.parquet").unlink()
    names = ["qit-00000.parquet", "qit-00001.parquet", "qit-00002.parquet"]
    bounds = [0, 1000, 20000, qit.num_rows]
    digests = {}
    for name, start, stop in zip(names, bounds, bounds[1:], strict=False):
        pq.write_table(qit.slice(start, stop - start), path / name)
        digests[name] = file_digest(path / name)

    def use_parts(metadata: dict[str, object]) -> None:
        metadata["files"]["qit"] = names  # type: ignore[index]
        metadata["digests"].pop("qit.parquet")  # type: ignore[attr-defined]
        metadata["digests"].update(digests)  # type: ignore[attr-defined]

    edit_metadata(path, use_parts)
    loaded = load_release(path)
    for query in ("occupation = 'Sales' AND age > 40", "sex = 'Female' OR age < 25"):
        assert loaded.count(query) == release.count(query)


@pytest.mark.parametrize("files", [
    {"rows": []},
    {"rows": ["rows-00000.parquet", 3]},
    {"rows": ["rows-00000.parquet", "rows-00000.parquet"]},
    {"rows": "rows-00000.parquet", "other": ["rows-00000.parquet"]},
    {"rows": [["rows-00000.parquet"]]},
])
def test_an_invalid_list_of_parts_is_refused(in_parts: dict[str, tuple[Release, Path]],
                                             files: dict[str, object], tmp_path: Path) -> None:
    path = copy_release(in_parts["dbr"][1], tmp_path / "dbr")
    metadata = json.loads((path / "release.json").read_text())
    metadata["files"] = files
    metadata["digests"] = {"rows-00000.parquet": metadata["digests"]["rows-00000.parquet"]}
    metadata["metadata_digest"] = metadata_digest(metadata)
    (path / "release.json").write_text(json.dumps(metadata))
    with pytest.raises(ReleaseError, match="lacks a valid file list"):
        load_release(path)


def test_a_release_saved_over_a_loaded_one_changes_nothing_it_counts(adult: Table,
                                                                    tmp_path: Path) -> None:
    """The loaded release keeps the files it opened: the old release, whole, counts on."""
    first = DBR().publish(adult, random_state=1)
    path = first.save(tmp_path / "dbr")
    loaded = load_release(path)
    assert loaded.count("sex = 'Female'") == first.count("sex = 'Female'")  # counted at load
    DBR().publish(adult, random_state=2).save(path, overwrite=True)
    query = "age > 40 AND occupation = 'Sales'"
    assert loaded.count(query) == first.count(query)
    np.testing.assert_array_equal(loaded.codes["occupation"],  # type: ignore[attr-defined]
                                  first.codes["occupation"])  # type: ignore[attr-defined]


def test_a_file_written_in_place_after_loading_is_refused(adult: Table, tmp_path: Path) -> None:
    path = DBR().publish(adult, random_state=1).save(tmp_path / "dbr")
    loaded = load_release(path)
    with open(path / "rows.parquet", "ab") as handle:
        handle.write(b"more")
    with pytest.raises(ReleaseError, match=r"rows\.parquet was changed, replaced or removed since "
                                           r"the release was loaded"):
        loaded.count("age > 40 AND sex = 'Female'")


# -- the summary of distinct rows, and its cache ---------------------------------------------


def summary_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record every pass a ScanCube makes over its files to check and summarize them."""
    passes: list[int] = []
    summarize = ScanCube._summarize
    monkeypatch.setattr(ScanCube, "_summarize",
                        lambda self: passes.append(1) or summarize(self))
    return passes


def distinct_counts(codes: dict[str, np.ndarray], names: list[str],
                    counts: np.ndarray | None = None) -> dict[tuple[int, ...], int]:
    """Each distinct combination of values of these columns, with its rows (or counts)."""
    stacked = np.stack([codes[name].astype(np.int64) for name in names], axis=1)
    rows, inverse = np.unique(stacked, axis=0, return_inverse=True)
    totals = np.bincount(inverse.reshape(-1), weights=counts, minlength=len(rows))
    return {tuple(map(int, row)): int(n) for row, n in zip(rows, totals, strict=True)}


def test_the_cache_holds_only_the_published_rows_distinct_counts(
        published: tuple[Release, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing private: every array kept is counted from the published rows alone."""
    release, path = published
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path))
    cube = load_release(path)._cube  # type: ignore[attr-defined]
    codes = dict(release.codes)  # type: ignore[attr-defined]
    if "subtable" in cube.domains:
        codes["subtable"] = release.subtable  # type: ignore[attr-defined]
    [entry] = tmp_path.glob("*.npz")
    with np.load(entry) as arrays:
        stored = {name: arrays[name] for name in arrays.files}
    summaries = sum(name.startswith("counts") for name in stored)
    # One summary per column, and one over them all (Adult's rows are few enough).
    assert summaries == len(cube.domains) + 1
    kept = {"digest"}
    for i in range(summaries):
        names = [str(c) for c in stored[f"columns{i}"]]
        columns = {name: stored[f"codes{i}_{j}"] for j, name in enumerate(names)}
        assert distinct_counts(columns, names, stored[f"counts{i}"]) == \
            distinct_counts(codes, names)
        kept |= {f"columns{i}", f"counts{i}", *(f"codes{i}_{j}" for j in range(len(names)))}
    assert set(stored) == kept


def test_a_second_load_reads_the_check_from_the_cache(
        published: tuple[Release, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    release, path = published
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path / "cache"))
    passes = summary_passes(monkeypatch)
    load_release(path)
    loaded = load_release(path)
    # A copy holds the same bytes: the cache is named by the files' digests, not their paths.
    copied = load_release(copy_release(path, tmp_path / "copy"))
    assert len(passes) == 1
    assert_same_answers(loaded, release, QUERIES)
    assert_same_answers(copied, release, QUERIES[:4])
    for query in GROUPED:
        assert loaded.count(query) == release.count(query), query


def cached_release(in_parts: dict[str, tuple[Release, Path]], name: str, cache: Path,
                   monkeypatch: pytest.MonkeyPatch) -> tuple[Release, Path, Path]:
    """A release in parts, its cache file written by loading it once."""
    release, path = in_parts[name]
    monkeypatch.setenv("PPDP_CACHE_DIR", str(cache))
    load_release(path)
    [entry] = cache.glob("*.npz")
    return release, path, entry


@pytest.mark.parametrize("damage", ["truncated", "edited", "outside", "total", "foreign"])
def test_a_damaged_cache_file_is_ignored(in_parts: dict[str, tuple[Release, Path]],
                                         damage: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    release, path, entry = cached_release(in_parts, "sdr", tmp_path / "cache", monkeypatch)
    with np.load(entry) as stored:
        arrays = {name: stored[name] for name in stored.files if name != "digest"}
    full = max(range(len(arrays)), key=lambda i: len(arrays.get(f"columns{i}", ())))
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:-100])
    elif damage == "foreign":  # another release's summaries under this release's name
        other = cached_release(in_parts, "dbr", tmp_path / "other", monkeypatch)[2]
        entry.write_bytes(other.read_bytes())
        monkeypatch.setenv("PPDP_CACHE_DIR", str(entry.parent))
    else:
        counts = arrays[f"counts{full}"]
        if damage == "outside":  # a value outside its domain (race has 5)
            j = list(arrays[f"columns{full}"]).index("race")
            arrays[f"codes{full}_{j}"][0] = 7
        elif damage == "total":  # counts that do not add up to the release's rows
            counts[0] += 1
        else:  # counts swapped: consistent, caught by the file's digest only
            low, high = counts.argmin(), counts.argmax()
            counts[[low, high]] = counts[[high, low]]
        # Only an edit that also recomputes the file's digest reaches the consistency checks.
        digest = ppdp.query.cache._arrays_digest(entry.stem, arrays) if damage != "edited" else "x"
        np.savez(entry, **arrays, digest=np.asarray(digest))
    passes = summary_passes(monkeypatch)
    loaded = load_release(path)
    assert len(passes) == 1
    assert_same_answers(loaded, release, QUERIES[:5])


def test_a_crafted_part_is_checked_despite_the_cache(in_parts: dict[str, tuple[Release, Path]],
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A part replaced (digests recomputed) has other bytes: the cache of the original does
    not apply to it."""
    path = cached_release(in_parts, "dbr", tmp_path / "cache", monkeypatch)[1]
    path = copy_release(path, tmp_path / "dbr")
    set_value(path, "rows-00001.parquet", "race", 3, "Martian")
    with pytest.raises(ReleaseError, match="'race' holds values outside"):
        load_release(path)


def test_a_cache_directory_others_may_write_is_not_used(
        in_parts: dict[str, tuple[Release, Path]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    release, path = in_parts["uniform"]
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("PPDP_CACHE_DIR", str(shared))
    passes = summary_passes(monkeypatch)
    load_release(path)
    monkeypatch.setenv("PPDP_CACHE_DIR", "")  # no cache at all
    loaded = load_release(path)
    assert len(passes) == 2 and not any(shared.iterdir())
    assert_same_answers(loaded, release, QUERIES[:4])


def test_only_verified_files_are_cached(in_parts: dict[str, tuple[Release, Path]],
                                        cache_directory: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ScanCube built outside load_release knows no digests: it reads, keeps nothing."""
    release, path = in_parts["dbr"]
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path))
    cube = get_engine("streaming").cube(sorted(path.glob("rows-*.parquet")),
                                        rows_domains(release.schema), release.n_rows)
    assert cube.histogram(["sex"]).sum() == release.n_rows
    assert not any(tmp_path.iterdir())


def test_the_cache_keeps_the_most_recently_used(in_parts: dict[str, tuple[Release, Path]],
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path))
    load_release(in_parts["dbr"][1])
    [first] = tmp_path.glob("*.npz")
    load_release(in_parts["frapp"][1])
    load_release(in_parts["dbr"][1])  # read again: the most recently used
    monkeypatch.setattr(ppdp.query.cache, "MAX_CACHE_BYTES", first.stat().st_size + 1)
    ppdp.query.cache._trim_cache(tmp_path)
    assert list(tmp_path.glob("*.npz")) == [first]


def hashed_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the name of every file load_release hashes."""
    hashed: list[str] = []
    digests = ppdp.release.verify.file_digests
    monkeypatch.setattr(ppdp.release.verify, "file_digests", lambda paths: hashed.extend(
        path.name for path in paths) or digests(paths))
    return hashed


def test_files_verified_before_and_unchanged_are_not_hashed_again(
        in_parts: dict[str, tuple[Release, Path]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    release, source = in_parts["uniform"]
    path = copy_release(source, tmp_path / "uniform")
    hashed = hashed_files(monkeypatch)
    load_release(path)
    assert sorted(hashed) == sorted(p.name for p in path.glob("*.parquet"))
    hashed.clear()
    loaded = load_release(path)
    assert not hashed
    assert_same_answers(loaded, release, QUERIES[:4])
    # Rewritten in place with its modification time put back: its status-change time moved.
    part = path / "rows-00001.parquet"
    before = part.stat()
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    os.utime(part, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ReleaseError, match=r"rows-00001\.parquet does not match the digest"):
        load_release(path)
    assert hashed == ["rows-00001.parquet"]


def test_a_damaged_record_of_verified_files_is_ignored(
        in_parts: dict[str, tuple[Release, Path]], cache_directory: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = copy_release(in_parts["dbr"][1], tmp_path / "dbr")
    load_release(path)
    for record in cache_directory.glob("*.json"):
        record.write_text(record.read_text()[:-20])
    hashed = hashed_files(monkeypatch)
    load_release(path)
    assert sorted(hashed) == sorted(p.name for p in path.glob("*.parquet"))


# -- the counts of distinct rows written by the publisher -------------------------------------


@pytest.fixture(scope="module")
def counted(adult: Table, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, tuple[Release, Path]]:
    """Releases of Adult in parts of about 8,000 rows, saved with their row counts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.plan.order, "ROWS_PER_PART", 8000)
        releases = {name: make().publish(adult, random_state=7)
                    for name, make in MECHANISMS.items()}
    root = tmp_path_factory.mktemp("counted")
    return {name: (release, release.save(root / name)) for name, release in releases.items()}


def published_codes(release: Release, columns: list[str]) -> dict[str, np.ndarray]:
    codes = dict(release.codes)  # type: ignore[attr-defined]
    if "subtable" in columns:
        codes["subtable"] = release.subtable  # type: ignore[attr-defined]
    return codes


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_row_counts_are_the_counts_of_the_distinct_published_rows(
        counted: dict[str, tuple[Release, Path]], name: str) -> None:
    release, path = counted[name]
    table = pq.read_table(path / "row_counts.parquet")
    columns = [c for c in table.column_names if c != "__count"]
    assert columns == pq.read_schema(path / "rows-00000.parquet").names
    domains = {c.name: c.dictionary() for c in release.schema.columns}
    if "subtable" in columns:
        domains["subtable"] = pa.array(range(256), pa.int64())
    codes = {c: ppdp.query.encoding.encode_values(c, table.column(c), domains[c]) for c in columns}
    counts = table.column("__count").to_numpy()
    expected = distinct_counts(published_codes(release, columns), columns)
    assert distinct_counts(codes, columns, counts) == expected
    assert len(counts) == len(expected) and counts.min() >= 1
    # Sorted by the rows' codes: every executor writes the same bytes.
    keys = np.stack([codes[c] for c in columns], axis=1)
    assert [tuple(k) for k in keys] == sorted(tuple(k) for k in keys)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_a_release_with_row_counts_loads_without_reading_its_rows(
        counted: dict[str, tuple[Release, Path]], name: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    release, path = counted[name]
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path / "cache"))
    passes = summary_passes(monkeypatch)
    loaded = load_release(path)
    assert_same_answers(loaded, release, QUERIES)
    for query in GROUPED:
        assert loaded.count(query) == release.count(query), query
    assert not passes and loaded._codes is None  # type: ignore[attr-defined]
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").glob("*.npz"))


def test_row_counts_of_too_many_distinct_rows_are_not_written(
        counted: dict[str, tuple[Release, Path]], tmp_path: Path) -> None:
    path = counted["dbr"][1]
    distinct = pq.read_metadata(path / "row_counts.parquet").num_rows
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppdp.query.row_counts, "MAX_COUNTED_ROWS", distinct - 1)
        saved = load_release(path).save(tmp_path / "again")
    assert "row_counts" not in json.loads((saved / "release.json").read_text())["files"]
    again = load_release(path).save(tmp_path / "once-more")
    assert (again / "row_counts.parquet").read_bytes() == \
        (path / "row_counts.parquet").read_bytes()


def rows_table(keys: range) -> pa.Table:
    """A published table of one dictionary column whose rows hold these codes."""
    return pa.table({"x": pa.DictionaryArray.from_arrays(pa.array(list(keys), pa.int32()),
                                                         pa.array(range(1000)))})


def test_counting_stops_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of 100 distinct rows each: 300 distinct rows in three parts pass a limit of 250,
    and later parts are not counted; 100 distinct rows in three parts are counted."""
    monkeypatch.setattr(ppdp.query.row_counts, "MAX_COUNTED_ROWS", 250)
    counter = ppdp.query.row_counts.RowCounter()
    for start in (0, 100, 200):
        counter.add(counter.count_part(rows_table(range(start, start + 100))))
    assert counter.table() is None and counter.count_part(rows_table(range(5))) is None
    counter = ppdp.query.row_counts.RowCounter()
    for _ in range(3):
        counter.add(counter.count_part(rows_table(range(100))))
    table = counter.table()
    assert table is not None
    assert table.column("x").combine_chunks().indices.to_pylist() == list(range(100))
    assert table.column("__count").to_pylist() == [3] * 100


def crafted_counts(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    rewrite_file(path, "row_counts.parquet", change(pq.read_table(path / "row_counts.parquet")))


@pytest.mark.parametrize(("damage", "message"), [
    ("outside", "'race' holds values outside"),
    ("total", "do not add up"),
    ("zero", "do not add up"),
    ("column", r"lack the columns \['sex'\]"),
    ("type", "not 64-bit integers"),
])
def test_crafted_row_counts_fail_to_load(counted: dict[str, tuple[Release, Path]], damage: str,
                                         message: str, tmp_path: Path) -> None:
    """Digests recomputed: counts that pass the integrity check are checked themselves."""
    path = copy_release(counted["sdr"][1], tmp_path / "sdr")

    def change(table: pa.Table) -> pa.Table:
        counts = table.column("__count").to_numpy().copy()
        index = table.column_names.index("__count")
        if damage == "outside":
            values = table.column("race").combine_chunks().dictionary_decode().to_pylist()
            values[0] = "Martian"
            return table.set_column(table.column_names.index("race"), "race",
                                    pa.array(values).dictionary_encode())
        if damage == "column":
            return table.drop_columns(["sex"])
        if damage == "type":
            return table.set_column(index, "__count", pa.array(counts.astype(np.float64)))
        counts[0] += 1 if damage == "total" else 0
        if damage == "zero":
            counts[0], counts[1] = 0, counts[1] + counts[0]
        return table.set_column(index, "__count", pa.array(counts))

    crafted_counts(path, change)
    with pytest.raises(ReleaseError, match=message):
        load_release(path)


def test_a_crafted_part_is_checked_when_its_rows_are_read(
        counted: dict[str, tuple[Release, Path]], tmp_path: Path) -> None:
    """Counts come from the row counts, as the publisher wrote them; the rows themselves are
    checked when read."""
    release, source = counted["dbr"]
    path = copy_release(source, tmp_path / "dbr")
    set_value(path, "rows-00001.parquet", "race", 3, "Martian")
    loaded = load_release(path)
    assert loaded.count("race = 'White'") == release.count("race = 'White'")
    with pytest.raises(ValueError, match="'race' holds values outside"):
        loaded.codes  # type: ignore[attr-defined]  # noqa: B018


def test_codes_pack_into_few_int64_keys_and_back() -> None:
    rng = np.random.default_rng(1)
    sizes = [2**31, 3, 2**31, 1, 70_000, 2]
    codes = [rng.integers(0, size, 1000) for size in sizes]
    keys = ppdp.query.codes.pack_codes(codes, sizes)
    assert len(keys) == 2 and all(key.dtype == np.int64 for key in keys)
    for unpacked, original in zip(ppdp.query.codes.unpack_codes(keys, sizes), codes, strict=True):
        np.testing.assert_array_equal(unpacked, original)


@pytest.mark.parametrize(("installed", "available"), [
    ("0.20.31", False), ("1.30.0", False), ("1.31.0", True), ("2.1.0", True)])
def test_the_scan_engine_needs_a_streaming_polars(installed: str, available: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed)
    assert ppdp.query.encoding.scan_engine_available() is available
