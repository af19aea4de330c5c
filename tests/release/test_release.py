"""Tests of ppdp.release: Estimate, GroupedEstimate, exact counting, and saving and loading
release directories (contents, atomicity, validation on load)."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.io.snapshot
import ppdp.release.write
from ppdp.data.schema import Role
from ppdp.errors import ReleaseError
from ppdp.estimate import Z95, Estimate, GroupedEstimate
from ppdp.mechanisms.anatomy.pairs import SIZE_COLUMN
from ppdp.query.row_counts import COUNT_COLUMN
from ppdp.release.base import Release
from ppdp.release.format import (
    FORMAT_VERSION,
    MAX_METADATA_BYTES,
    file_digest,
    metadata_digest,
)
from ppdp.release.load import load_release
from ppdp.table.table import Table, exact_count, exact_counts, table_from_arrow

# ---------------------------------------------------------------------------------------------
# Estimate and GroupedEstimate


def test_estimate_exact() -> None:
    estimate = Estimate.exact(7)
    assert estimate.value == 7.0
    assert isinstance(estimate.value, float)
    assert estimate.stderr == 0.0
    assert estimate.ci95 == (7.0, 7.0)


def test_estimate_with_stderr_normal_interval() -> None:
    estimate = Estimate.with_stderr(100.0, 5.0)
    assert estimate.value == 100.0
    assert estimate.stderr == 5.0
    assert estimate.ci95 == pytest.approx((100.0 - Z95 * 5.0, 100.0 + Z95 * 5.0))
    assert abs(Z95 - 1.959964) < 1e-6


def test_estimate_interval_is_clipped_at_zero() -> None:
    estimate = Estimate.with_stderr(2.0, 5.0)
    assert estimate.ci95 is not None
    assert estimate.ci95[0] == 0.0
    assert estimate.ci95[1] == pytest.approx(2.0 + Z95 * 5.0)


@pytest.mark.parametrize("stderr", [None, math.nan, math.inf])
def test_estimate_without_a_usable_stderr(stderr: float | None) -> None:
    estimate = Estimate.with_stderr(3.0, stderr)
    assert estimate.value == 3.0
    assert estimate.stderr is None
    assert estimate.ci95 is None


def test_estimate_to_dict() -> None:
    data = Estimate.with_stderr(10.0, 1.0).to_dict()
    assert set(data) == {"estimate", "stderr", "ci95"}
    assert data["estimate"] == 10.0
    assert data["stderr"] == 1.0
    assert data["ci95"] == pytest.approx([10.0 - Z95, 10.0 + Z95])
    assert isinstance(data["ci95"], list)
    assert Estimate.with_stderr(1.0, None).to_dict() == {"estimate": 1.0, "stderr": None,
                                                          "ci95": None}
    json.dumps(Estimate.exact(2).to_dict())


def grouped_example(exact: bool) -> GroupedEstimate:
    make = Estimate.exact if exact else (lambda v: Estimate.with_stderr(v, 1.0))
    return GroupedEstimate(("sex", "age"), (
        ({"sex": "F", "age": 30}, make(4.0)),
        ({"sex": "M", "age": 40}, make(2.0)),
    ))


def test_grouped_estimate_indexing() -> None:
    grouped = grouped_example(exact=True)
    assert len(grouped) == 2
    assert grouped[{"sex": "F", "age": 30}].value == 4.0
    assert grouped[("M", 40)].value == 2.0
    # A key that is not listed: zero, exact when every listed estimate is exact.
    assert grouped[("M", 30)] == Estimate.exact(0.0)
    assert grouped_example(exact=False)[("M", 30)] == Estimate(0.0)
    with pytest.raises(ValueError):
        grouped[("M",)]
    single = GroupedEstimate(("sex",), (({"sex": "F"}, Estimate.exact(1.0)),))
    assert single["F"].value == 1.0
    assert single["M"].value == 0.0


def test_grouped_estimate_to_dict() -> None:
    data = grouped_example(exact=False).to_dict()
    assert list(data) == ["groups"]
    first = data["groups"][0]
    assert set(first) == {"key", "estimate", "stderr", "ci95"}
    assert first["key"] == {"sex": "F", "age": 30}
    assert first["estimate"] == 4.0
    assert first["stderr"] == 1.0
    json.dumps(data)


# ---------------------------------------------------------------------------------------------
# Exact counts against brute force


def random_table(seed: int, n_rows: int = 300) -> Table:
    rng = np.random.default_rng(seed)
    return table_from_arrow(pa.table({
        "age": rng.choice([18, 25, 33, 41, 57, 64], size=n_rows),
        "sex": rng.choice(["F", "M"], size=n_rows),
        "hours": rng.integers(10, 15, size=n_rows),
        "disease": rng.choice(["cold", "flu", "hiv", "ulcer"], size=n_rows),
    }), roles={"disease": Role.SENSITIVE})


QUERIES: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
    ("age >= 33", lambda r: r["age"] >= 33),
    ("age >= 33 AND sex = 'F'", lambda r: r["age"] >= 33 and r["sex"] == "F"),
    ("disease IN ('flu', 'hiv') OR hours < 12",
     lambda r: r["disease"] in ("flu", "hiv") or r["hours"] < 12),
    ("NOT (age BETWEEN 25 AND 41) AND disease != 'cold'",
     lambda r: not 25 <= r["age"] <= 41 and r["disease"] != "cold"),
    ("age < 4 * hours - 10", lambda r: r["age"] < 4 * r["hours"] - 10),
    ("age > 1000", lambda r: False),
    ("TRUE", lambda r: True),
]


def decoded_rows(table: Table) -> list[dict[str, Any]]:
    columns = {name: table.values(name).tolist() for name in table.schema.names}
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(),
                                                                       strict=True)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_count_and_exact_counts_agree_with_brute_force(seed: int) -> None:
    table = random_table(seed)
    rows = decoded_rows(table)
    expected = [sum(test(r) for r in rows) for _, test in QUERIES]
    for (text, _), truth in zip(QUERIES, expected, strict=True):
        estimate = exact_count(table, text)
        assert isinstance(estimate, Estimate)
        assert estimate == Estimate.exact(truth), text
        assert table.count(text) == estimate
    batch = exact_counts(table, [text for text, _ in QUERIES])
    np.testing.assert_array_equal(batch, np.asarray(expected, dtype=float))


def test_exact_count_group_by_agrees_with_brute_force() -> None:
    table = random_table(3)
    rows = decoded_rows(table)
    grouped = exact_count(table, "SELECT sex, disease, COUNT(*) FROM t WHERE age < 41 "
                                 "GROUP BY sex, disease")
    assert isinstance(grouped, GroupedEstimate)
    assert grouped.columns == ("sex", "disease")
    for sex in ("F", "M"):
        for disease in ("cold", "flu", "hiv", "ulcer"):
            truth = sum(r["sex"] == sex and r["disease"] == disease and r["age"] < 41
                        for r in rows)
            assert grouped[(sex, disease)] == Estimate.exact(truth)
    # Only keys with a non-zero count are listed.
    assert all(e.value > 0 for _, e in grouped.groups)


def test_exact_counts_refuses_group_by() -> None:
    with pytest.raises(ValueError, match="ungrouped"):
        exact_counts(random_table(0), ["age > 3", "SELECT COUNT(*) FROM t GROUP BY sex"])


# ---------------------------------------------------------------------------------------------
# Saving and loading


def small_table() -> Table:
    """12 rows; every disease occurs 3 times (eligible for gamma = 3 and l = 3)."""
    return table_from_arrow(pa.table({
        "age": [23, 27, 31, 35, 39, 44, 48, 52, 56, 61, 29, 33],
        "zip": ["100", "100", "200", "200", "300", "300", "100", "200", "300", "100", "200",
                "300"],
        "note": ["x"] * 12,
        "disease": ["flu", "cold", "hiv", "ulcer", "flu", "cold", "hiv", "ulcer", "flu",
                    "cold", "hiv", "ulcer"],
    }), roles={"disease": Role.SENSITIVE}).with_roles(
        sensitive="disease", quasi_identifiers=["age", "zip"]).declare_observed_domains(warn=False)


MECHANISMS: dict[str, Callable[[], ppdp.Mechanism]] = {
    "splu": lambda: ppdp.SPLUGen(gamma=3),
    "anatomy": lambda: ppdp.Anatomy(l=3),
    "dbr": lambda: ppdp.DBR(),
}

ROUND_TRIP_QUERIES = [
    "disease = 'flu'",
    "age < 40 AND disease = 'flu'",
    "zip = '100' AND disease IN ('hiv', 'cold')",
    "age >= 30",
    "SELECT disease, COUNT(*) FROM t WHERE zip != '300' GROUP BY disease",
    "SELECT zip, COUNT(*) FROM t GROUP BY zip",
]


def publish(name: str, table: Table | None = None, seed: int = 5) -> Release:
    return MECHANISMS[name]().publish(table or small_table(), random_state=seed)


def walk_keys(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from walk_keys(value)
    elif isinstance(data, list):
        for item in data:
            yield from walk_keys(item)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_save_load_round_trip(name: str, tmp_path: Path) -> None:
    release = publish(name)
    target = release.save(tmp_path / "release")
    assert target == tmp_path / "release"
    loaded = load_release(target)
    assert type(loaded) is type(release)
    assert loaded.parameters == release.parameters
    assert loaded.schema == release.schema
    assert loaded.n_rows == release.n_rows == 12
    for query in ROUND_TRIP_QUERIES:
        assert loaded.count(query).to_dict() == release.count(query).to_dict(), query
    values, stderr = release.count_all(ROUND_TRIP_QUERIES[:4])
    loaded_values, loaded_stderr = loaded.count_all(ROUND_TRIP_QUERIES[:4])
    np.testing.assert_array_equal(loaded_values, values)
    np.testing.assert_array_equal(loaded_stderr, stderr)

    metadata = json.loads((target / "release.json").read_text())
    assert metadata["format"] == "ppdp-release"
    assert metadata["format_version"] == FORMAT_VERSION
    assert metadata["mechanism"] == name
    assert {"parameters", "schema", "files"} <= set(metadata)
    assert [c["name"] for c in metadata["schema"]] == ["age", "zip", "disease"]
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["release.json", *metadata["files"].values()])


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_saved_files_hold_only_published_columns(name: str, tmp_path: Path) -> None:
    release = publish(name)
    target = release.save(tmp_path / "release")
    metadata = json.loads((target / "release.json").read_text())
    published = ["age", "zip", "disease"]  # "note" is ignored: never published
    counted = [*published, "__count"]  # each distinct published row and its count
    expected_columns = {
        "splu": {"rows": published, "row_counts": counted},
        "dbr": {"rows": published, "row_counts": counted},
        "anatomy": {"qit": ["age", "zip", "GroupID"], "st": ["GroupID", "disease", "count"],
                    "pair_counts": [*published, "__group_size", "__count"]},
    }[name]
    assert set(metadata["files"]) == set(expected_columns)
    for stem, file_name in metadata["files"].items():
        schema = pq.read_schema(target / file_name)
        assert schema.names == expected_columns[stem]
        # No key-value metadata beyond Arrow's own schema record.
        assert schema.metadata is None or not any(
            word in key.decode().lower() for key in schema.metadata
            for word in ("seed", "group", "decoy", "row"))
        file_metadata = pq.read_metadata(target / file_name).metadata or {}
        assert set(file_metadata) <= {b"ARROW:schema"}
    allowed = {"n_groups"} if name == "anatomy" else set()
    for key in walk_keys(metadata):
        lowered = key.lower()
        if key in allowed:
            continue
        assert not any(word in lowered for word in ("seed", "group", "decoy")), key
    if name == "splu":
        assert metadata["parameters"] == {"gamma": 3}
    if name == "anatomy":
        assert set(metadata["parameters"]) == {"l", "n_groups"}


def sorted_input_table() -> Table:
    """30 rows sorted by the sensitive value; ``rank`` is sorted too (0..29)."""
    return table_from_arrow(pa.table({
        "rank": list(range(30)),
        "disease": [f"d{k}" for k in range(10) for _ in range(3)],
    }), roles={"disease": Role.SENSITIVE}).declare_observed_domains(warn=False)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_published_rows_are_shuffled(name: str, tmp_path: Path) -> None:
    release = publish(name, sorted_input_table(), seed=11)
    target = release.save(tmp_path / "release")
    stem = "qit" if name == "anatomy" else "rows"
    ranks = pq.read_table(target / f"{stem}.parquet").column("rank").to_pylist()
    assert sorted(ranks) == list(range(30))
    assert ranks != list(range(30))
    in_memory = release.qit["rank"] if name == "anatomy" else release.codes["rank"]  # type: ignore[attr-defined]
    assert list(in_memory) != list(range(30))


# -- load errors ----------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return publish("splu").save(tmp_path / "release")


def edit_metadata(directory: Path, change: Callable[[dict[str, Any]], None], *,
                  redigest: bool = True) -> None:
    """Change release.json; with ``redigest`` its digest is recomputed, as a crafted release
    would be, so that the checks behind the digest are reached."""
    path = directory / "release.json"
    metadata = json.loads(path.read_text())
    change(metadata)
    if redigest and isinstance(metadata, dict):
        metadata["metadata_digest"] = metadata_digest(metadata)
    path.write_text(json.dumps(metadata))


def rewrite_file(directory: Path, name: str, content: pa.Table | bytes) -> None:
    """Replace a data file and record its new digest (a crafted, self-consistent release)."""
    if isinstance(content, bytes):
        (directory / name).write_bytes(content)
    else:
        pq.write_table(content, directory / name)
    digest = file_digest(directory / name)
    edit_metadata(directory, lambda m: m["digests"].update({name: digest}))


def test_load_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="not a release directory"):
        load_release(tmp_path / "nowhere")


def test_load_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file.txt"
    path.write_text("hello")
    with pytest.raises(ReleaseError, match=r"not a release directory.*is a file"):
        load_release(path)


def test_load_without_release_json(saved: Path) -> None:
    (saved / "release.json").unlink()
    with pytest.raises(ReleaseError, match=r"has no release\.json"):
        load_release(saved)


def test_load_corrupt_json(saved: Path) -> None:
    (saved / "release.json").write_text("{not json")
    with pytest.raises(ReleaseError, match=r"release\.json is corrupt"):
        load_release(saved)
    (saved / "release.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ReleaseError, match="corrupt"):
        load_release(saved)


def test_load_refuses_a_release_json_larger_than_any_release_before_reading_it(
        saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Padded with 300 MB (the digest covers the parsed content, not the bytes): refused by
    its size, without reading it."""
    os.truncate(saved / "release.json", 300 << 20)
    monkeypatch.setattr(ppdp.io.snapshot.SnapshotFile, "read", lambda *args: pytest.fail())
    with pytest.raises(ReleaseError, match=r"release\.json is 314,572,800 bytes, more than any "
                                           r"release holds \(268,435,456\); it is not a ppdp "
                                           r"release$"):
        load_release(saved)


def test_load_refuses_duplicate_keys_in_release_json(saved: Path) -> None:
    """JSON leaves a key given twice open; the digest of the parsed content would match."""
    path = saved / "release.json"
    text = path.read_text().rstrip()
    path.write_text(text[:-1] + ', "mechanism": "splu"}\n')
    with pytest.raises(ReleaseError, match=r"release\.json is ambiguous: the key 'mechanism' "
                                           r"appears twice in one object$"):
        load_release(saved)


def test_every_release_json_written_fits_the_limit_or_is_refused_on_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = publish("dbr")
    path = release.save(tmp_path / "release")
    assert (path / "release.json").stat().st_size <= MAX_METADATA_BYTES
    monkeypatch.setattr(ppdp.release.write, "MAX_METADATA_BYTES", 100)
    with pytest.raises(ReleaseError, match=r"release\.json would take [\d,]+ bytes, more than "
                                           r"a release may \(100\)"):
        release.save(tmp_path / "other")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]


@pytest.mark.parametrize("content", [{"format": "something-else"}, [1, 2], "text"])
def test_load_wrong_format(saved: Path, content: Any) -> None:
    (saved / "release.json").write_text(json.dumps(content))
    with pytest.raises(ReleaseError, match="not a ppdp release description"):
        load_release(saved)


def test_load_newer_format_version(saved: Path) -> None:
    edit_metadata(saved, lambda m: m.update(format_version=FORMAT_VERSION + 1))
    with pytest.raises(ReleaseError, match=rf"format {FORMAT_VERSION + 1}.*upgrade ppdp"):
        load_release(saved)


@pytest.mark.parametrize("version", [None, "1", 1.5])
def test_load_invalid_format_version(saved: Path, version: Any) -> None:
    edit_metadata(saved, lambda m: m.update(format_version=version))
    with pytest.raises(ReleaseError, match="format_version"):
        load_release(saved)


def test_load_unknown_mechanism(saved: Path) -> None:
    edit_metadata(saved, lambda m: m.update(mechanism="teleport"))
    with pytest.raises(ReleaseError, match=r"unknown mechanism 'teleport'.*splu"):
        load_release(saved)


def test_load_missing_data_file(saved: Path) -> None:
    (saved / "rows.parquet").unlink()
    with pytest.raises(ReleaseError, match=r"missing its data file 'rows\.parquet'"):
        load_release(saved)


def test_load_refuses_a_data_file_outside_the_directory(saved: Path) -> None:
    shutil.copy(saved / "rows.parquet", saved.parent / "outside.parquet")
    edit_metadata(saved, lambda m: m.update(files={"rows": "../outside.parquet"},
                                            digests={"../outside.parquet": "0" * 64}))
    with pytest.raises(ReleaseError, match="missing its data file"):
        load_release(saved)


def test_load_corrupt_parquet(saved: Path) -> None:
    rewrite_file(saved, "rows.parquet", b"this is not parquet at all")
    with pytest.raises(ReleaseError, match=r"rows\.parquet is corrupt"):
        load_release(saved)


def test_load_incomplete_metadata(saved: Path) -> None:
    edit_metadata(saved, lambda m: m.pop("schema"))
    with pytest.raises(ReleaseError, match="incomplete or invalid"):
        load_release(saved)


def narrow_age_domain(metadata: dict[str, Any]) -> None:
    for column in metadata["schema"]:
        if column["name"] == "age":
            column["domain"] = column["domain"][1:]


def test_load_value_outside_the_schema_domain(saved: Path) -> None:
    edit_metadata(saved, narrow_age_domain)
    with pytest.raises(ReleaseError, match=r"does not match its release\.json.*'age'.*outside"):
        load_release(saved)


def test_load_wrong_row_count(saved: Path) -> None:
    edit_metadata(saved, lambda m: m.update(n_rows=13))
    with pytest.raises(ReleaseError, match="expected 13 rows, found 12"):
        load_release(saved)


def test_load_missing_column(saved: Path) -> None:
    rows = pq.read_table(saved / "rows.parquet")
    rewrite_file(saved, "rows.parquet", rows.drop_columns(["zip"]))
    with pytest.raises(ReleaseError, match="column 'zip' is missing"):
        load_release(saved)


@pytest.mark.parametrize("replacement", [
    pa.array(["a"] * 12),
    pa.array([20.5] * 12),
    pa.array([[1]] * 12),
])
def test_load_column_of_the_wrong_type(saved: Path, replacement: pa.Array) -> None:
    rows = pq.read_table(saved / "rows.parquet")
    rewrite_file(saved, "rows.parquet", rows.set_column(0, "age", replacement))
    with pytest.raises(ReleaseError, match=r"does not match its release\.json"):
        load_release(saved)


def test_load_invalid_parameters(saved: Path) -> None:
    edit_metadata(saved, lambda m: m.update(parameters={"gamma": 1}))
    with pytest.raises(ReleaseError, match="gamma"):
        load_release(saved)


def test_load_anatomy_with_inconsistent_groups(tmp_path: Path) -> None:
    target = publish("anatomy").save(tmp_path / "anatomy")
    edit_metadata(target, lambda m: m["parameters"].update(n_groups=1))
    with pytest.raises(ReleaseError, match="does not match"):
        load_release(target)
    target = publish("anatomy").save(tmp_path / "anatomy2")
    st = pq.read_table(target / "st.parquet")
    counts = st.column("count").to_numpy().copy()
    counts[0] += 1
    rewrite_file(target, "st.parquet", st.set_column(2, "count", pa.array(counts)))
    with pytest.raises(ReleaseError, match="ST counts do not add up"):
        load_release(target, engine="memory")
    # Counted from its pair counts, the release reads its ST when asked for: checked then.
    loaded = load_release(target)
    with pytest.raises(ReleaseError, match="ST counts do not add up"):
        loaded.st  # noqa: B018 - the read is the test


def test_load_anatomy_with_damaged_pair_counts(tmp_path: Path) -> None:
    """Pair counts that do not add up to whole groups, the release's rows or its groups, or
    hold groups smaller than l, are refused on loading, by every engine that reads them."""
    target = publish("anatomy").save(tmp_path / "anatomy")
    pairs = pq.read_table(target / "pair_counts.parquet")
    counts = pairs.column(COUNT_COLUMN).to_numpy().copy()
    sizes = pairs.column(SIZE_COLUMN).to_numpy().copy()
    for changed, reason in [
            (pairs.set_column(pairs.schema.get_field_index(COUNT_COLUMN), COUNT_COLUMN,
                              pa.array(counts + 1)), "whole groups|QIT rows"),
            (pairs.set_column(pairs.schema.get_field_index(SIZE_COLUMN), SIZE_COLUMN,
                              pa.array(sizes * 0 + 1, pa.uint32())), "fewer than"),
            (pairs.slice(1), "whole groups|QIT rows|groups")]:
        rewrite_file(target, "pair_counts.parquet", changed)
        for engine in ("memory", "streaming"):
            with pytest.raises(ReleaseError, match=reason):
                load_release(target, engine=engine)


# -- atomic save ----------------------------------------------------------------------------


def test_save_refuses_an_existing_directory(tmp_path: Path) -> None:
    target = tmp_path / "release"
    target.mkdir()
    (target / "keep.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        publish("splu").save(target)
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    assert (target / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]


def test_save_overwrite_replaces_a_release(tmp_path: Path) -> None:
    target = tmp_path / "release"
    publish("dbr").save(target)
    publish("anatomy").save(target, overwrite=True)
    assert sorted(p.name for p in target.iterdir()) == ["pair_counts.parquet", "qit.parquet",
                                                         "release.json", "st.parquet"]
    assert isinstance(load_release(target), ppdp.mechanisms.AnatomyRelease)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]


def failing_write(*args: Any, **kwargs: Any) -> None:
    raise OSError("disk full")


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_failed_save_leaves_nothing_behind(name: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    release = publish(name)
    monkeypatch.setattr(pq, "write_table", failing_write)
    with pytest.raises(OSError, match="disk full"):
        release.save(parent / "release")
    assert list(parent.iterdir()) == []


def test_failed_overwrite_keeps_the_old_release(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "release"
    old = publish("splu")
    old.save(target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    monkeypatch.setattr(pq, "write_table", failing_write)
    with pytest.raises(OSError, match="disk full"):
        publish("dbr").save(target, overwrite=True)
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]
    monkeypatch.undo()
    assert load_release(target).count("disease = 'flu'") == old.count("disease = 'flu'")


def test_save_creates_missing_parents(tmp_path: Path) -> None:
    target = publish("splu").save(tmp_path / "a" / "b" / "release")
    assert (target / "release.json").is_file()
