"""Writes that cannot destroy (ppdp.storage, Release.save): what overwrite may replace,
concurrent publishes, and what SIGTERM and SIGKILL leave behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ppdp.errors import OutputError, OutputExistsError, ReleaseError
from ppdp.io.storage import PARTIAL_SUFFIX, commit_directory, hidden_name, staged_directory
from ppdp.release.load import load_release
from tests.release.test_release import publish


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- overwrite replaces only a release -----------------------------------------------------


def test_overwrite_refuses_a_folder_that_is_not_a_release(tmp_path: Path) -> None:
    target = tmp_path / "mydata"
    (target / "notes").mkdir(parents=True)
    (target / "notes" / "a.txt").write_text("keep me")
    (target / "readme.md").write_text("mine")
    with pytest.raises(ReleaseError, match=r"not a ppdp release.*left alone"):
        publish("dbr").save(target, overwrite=True)
    assert listing(target) == ["notes", "readme.md"]
    assert (target / "notes" / "a.txt").read_text() == "keep me"
    assert listing(tmp_path) == ["mydata"]


def test_overwrite_refuses_a_release_holding_other_files(tmp_path: Path) -> None:
    target = tmp_path / "release"
    publish("dbr").save(target)
    (target / "notes.txt").write_text("my notes")
    with pytest.raises(ReleaseError, match=r"not part of its release \(notes\.txt\)"):
        publish("splu").save(target, overwrite=True)
    assert (target / "notes.txt").read_text() == "my notes"
    assert type(load_release(target)).mechanism == "dbr"


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_overwrite_refuses_a_file_and_leaves_it_alone(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "afile"
    if kind == "file":
        target.write_text("precious")
    else:
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
    with pytest.raises(ReleaseError, match=f"is a {'file' if kind == 'file' else 'symbolic'}"):
        publish("splu").save(target, overwrite=True)
    if kind == "file":
        assert target.read_text() == "precious"
    assert listing(tmp_path) == sorted(["afile", *(["real"] if kind == "symlink" else [])])


def test_overwrite_of_a_release_leaves_no_trace_of_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "release"
    publish("dbr").save(target)
    publish("splu").save(target, overwrite=True)
    assert listing(tmp_path) == ["release"]
    assert type(load_release(target)).mechanism == "splu"


# -- concurrent publishes ------------------------------------------------------------------


def test_a_target_taken_while_publishing_is_not_replaced(tmp_path: Path) -> None:
    """The race of two publishes: the second finds the name taken at commit time."""
    target = tmp_path / "same"
    with pytest.raises(FileExistsError), staged_directory(target) as staging:
        (staging / "x").write_text("second")
        publish("dbr").save(target)  # the first publish lands meanwhile
        commit_directory(staging, target)
    assert type(load_release(target)).mechanism == "dbr"
    assert listing(tmp_path) == ["same"]


def test_concurrent_saves_exactly_one_wins(tmp_path: Path) -> None:
    for trial in range(4):
        target = tmp_path / f"same{trial}"
        releases = [publish(name) for name in ("splu", "dbr", "anatomy", "splu")]
        outcomes: list[str] = []
        barrier = threading.Barrier(len(releases))

        def save(release, outcomes=outcomes, barrier=barrier, target=target) -> None:
            barrier.wait()
            try:
                release.save(target)
                outcomes.append("saved")
            except FileExistsError:
                outcomes.append("exists")

        threads = [threading.Thread(target=save, args=(r,)) for r in releases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["exists", "exists", "exists", "saved"]
        load_release(target)
    assert all(PARTIAL_SUFFIX not in name for name in listing(tmp_path))


CONCURRENT_SCRIPT = textwrap.dedent("""
    import sys, time
    from tests.release.test_release import publish
    release = publish(sys.argv[2])
    print("ready", flush=True)
    time.sleep(max(0.0, float(sys.stdin.readline()) - time.time()))
    try:
        release.save(sys.argv[1])
    except FileExistsError:
        sys.exit(3)
""")


def test_concurrent_processes_exactly_one_wins(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    for trial in range(2):
        target = tmp_path / f"same{trial}"
        processes = [subprocess.Popen([sys.executable, "-c", CONCURRENT_SCRIPT, str(target),
                                       name], cwd=root, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
                     for name in ("splu", "dbr", "anatomy", "dbr")]
        # Every process has its release in memory before any saves: then all save at once.
        assert all(p.stdout is not None and p.stdout.readline() == "ready\n"
                   for p in processes)
        start = time.time() + 0.2
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(f"{start}\n")
            process.stdin.close()
        codes = sorted(p.wait(timeout=120) for p in processes)
        assert codes == [0, 3, 3, 3]
        load_release(target)
    assert all(PARTIAL_SUFFIX not in name for name in listing(tmp_path))


# -- interrupted writes --------------------------------------------------------------------

SLOW_SAVE_SCRIPT = textwrap.dedent("""
    import sys, time
    import pyarrow.parquet as pq
    from tests.release.test_release import publish
    release = publish("splu")
    original = pq.write_table
    def slow(*args, **kwargs):
        original(*args, **kwargs)
        print("writing", flush=True)
        time.sleep(60)
    pq.write_table = slow
    release.save(sys.argv[1])
""")


def start_slow_save(target: Path) -> subprocess.Popen[str]:
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-c", SLOW_SAVE_SCRIPT, str(target)], cwd=root,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "writing"
    return process


def test_sigterm_during_save_leaves_nothing(tmp_path: Path) -> None:
    process = start_slow_save(tmp_path / "release")
    assert any(PARTIAL_SUFFIX in name for name in listing(tmp_path))
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    assert listing(tmp_path) == []


def test_sigkill_leftovers_are_ignored_and_cleaned_by_the_next_save(tmp_path: Path) -> None:
    process = start_slow_save(tmp_path / "release")
    process.kill()
    process.wait(timeout=30)
    leftovers = [name for name in listing(tmp_path) if PARTIAL_SUFFIX in name]
    assert len(leftovers) == 1
    with pytest.raises(ReleaseError):
        load_release(tmp_path / "release")
    publish("dbr").save(tmp_path / "other")
    assert listing(tmp_path) == ["other"]


def test_a_live_writer_is_not_cleaned_away(tmp_path: Path) -> None:
    process = start_slow_save(tmp_path / "release")
    try:
        publish("dbr").save(tmp_path / "other")
        assert len([n for n in listing(tmp_path) if PARTIAL_SUFFIX in n]) == 1
    finally:
        process.kill()
        process.wait(timeout=30)


def test_staging_directories_of_other_programs_are_never_touched(tmp_path: Path) -> None:
    foreign = [tmp_path / ".notes.partial", tmp_path / f".x.zz{PARTIAL_SUFFIX}",
               tmp_path / "data.ppdp-partial"]
    for path in foreign:
        path.mkdir()
        (path / "file").write_text("mine")
    publish("dbr").save(tmp_path / "release")
    assert all((path / "file").read_text() == "mine" for path in foreign)


# -- tampering -----------------------------------------------------------------------------


@pytest.fixture
def two_releases(tmp_path: Path) -> tuple[Path, Path]:
    from ppdp import SPLUGen
    from tests.release.test_release import small_table

    three = SPLUGen(gamma=3).publish(small_table(), random_state=1).save(tmp_path / "g3")
    four = SPLUGen(gamma=4).publish(small_table(), random_state=2).save(tmp_path / "g4")
    return three, four


def test_swapped_data_files_are_refused(two_releases: tuple[Path, Path]) -> None:
    three, four = two_releases
    (four / "rows.parquet").write_bytes((three / "rows.parquet").read_bytes())
    with pytest.raises(ReleaseError, match=r"rows\.parquet does not match the digest"):
        load_release(four)


@pytest.mark.parametrize("edit", [
    lambda m: m["parameters"].update(gamma=2),
    lambda m: m.update(mechanism="dbr"),
    lambda m: [c.update(role="quasi-identifier") for c in m["schema"]
               if c["role"] == "sensitive"],
    lambda m: m.update(n_rows=m["n_rows"] + 1),
    lambda m: m["schema"][0]["domain"].reverse(),
])
def test_edited_release_json_is_refused(two_releases: tuple[Path, Path], edit) -> None:
    path = two_releases[0] / "release.json"
    metadata = json.loads(path.read_text())
    edit(metadata)
    path.write_text(json.dumps(metadata, indent=2))
    with pytest.raises(ReleaseError, match="changed after the release was written"):
        load_release(two_releases[0])


def test_release_json_of_another_release_is_refused(two_releases: tuple[Path, Path]) -> None:
    three, four = two_releases
    (three / "release.json").write_bytes((four / "release.json").read_bytes())
    with pytest.raises(ReleaseError, match="does not match the digest"):
        load_release(three)


def test_an_unchanged_release_loads_after_a_copy(two_releases: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(two_releases[0], tmp_path / "copy"))
    os.utime(copy / "rows.parquet", (0, 0))
    assert load_release(copy).count("disease = 'flu'") == load_release(
        two_releases[0]).count("disease = 'flu'")


def test_deeply_nested_release_json_is_one_error(two_releases: tuple[Path, Path]) -> None:
    (two_releases[0] / "release.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ReleaseError, match="nested too deeply"):
        load_release(two_releases[0])


def test_older_format_without_digests_is_refused(two_releases: tuple[Path, Path]) -> None:
    path = two_releases[0] / "release.json"
    metadata = json.loads(path.read_text())
    for key in ("digests", "metadata_digest"):
        metadata.pop(key)
    metadata["format_version"] = 1
    path.write_text(json.dumps(metadata))
    with pytest.raises(ReleaseError, match="format 1, without the digests"):
        load_release(two_releases[0])


def test_without_file_locks_saves_go_on_and_nothing_is_cleaned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system without flock: a save still lands, and a staging directory is never
    taken for an abandoned one."""
    import errno

    import ppdp.io.storage as storage

    stale = tmp_path / f".old.{'0' * 16}{PARTIAL_SUFFIX}"
    stale.mkdir()

    def no_locks(descriptor: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(storage.fcntl, "flock", no_locks)
    publish("dbr").save(tmp_path / "release")
    assert stale.is_dir()
    assert type(load_release(tmp_path / "release")).mechanism == "dbr"


# -- output names and places -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["r" * 224, "r" * 255, "é" * 127 + "r"])
def test_names_up_to_255_bytes_are_written(name: str, tmp_path: Path) -> None:
    """The staging name ``.NAME.<16 hex>.ppdp-partial`` is 31 bytes longer than NAME: cut short
    so that it fits, for names up to the file system's 255 bytes."""
    target = publish("dbr").save(tmp_path / name)
    publish("splu").save(target, overwrite=True)
    assert listing(tmp_path) == [name]
    assert type(load_release(target)).mechanism == "splu"


def test_a_staging_directory_of_a_long_name_is_recognised_as_a_leftover(tmp_path: Path) -> None:
    """Left by a SIGKILL, a staging directory whose name was cut short is still cleaned."""
    leftover = tmp_path / hidden_name("é" * 127 + "\n", f".{'0' * 16}{PARTIAL_SUFFIX}")
    assert len(os.fsencode(leftover.name)) <= 255 - len(".old")
    leftover.mkdir()
    publish("dbr").save(tmp_path / "other")
    assert listing(tmp_path) == ["other"]


@pytest.mark.parametrize("relative", [True, False])
def test_overwriting_the_current_directory_is_refused_up_front(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool) -> None:
    """``-o . --overwrite`` inside a release: refused, the same way every time (it once worked,
    leaving its staging directory inside, then blamed it)."""
    target = publish("dbr").save(tmp_path / "release")
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    monkeypatch.chdir(target)
    for _ in range(2):
        with pytest.raises(OutputError, match=r"is the current directory; it cannot be replaced "
                                              r"from inside: run from another directory or "
                                              r"choose another output path$"):
            publish("splu").save("." if relative else target, overwrite=True)
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert listing(tmp_path) == ["release"]


def test_a_directory_holding_the_current_directory_is_never_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "outer" / "inner").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "outer" / "inner")
    with pytest.raises(OutputError, match="is a directory holding the current directory"), \
            staged_directory(Path("..")) as staging:
        commit_directory(staging, "..", overwrite=True)
    assert listing(tmp_path) == ["outer"]
    assert listing(tmp_path / "outer") == ["inner"]


@pytest.mark.parametrize("existing", [0, 1])
def test_a_failed_save_removes_the_parents_it_made(tmp_path: Path, existing: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    parents = [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"]
    for parent in parents[:existing]:
        parent.mkdir()
    release = publish("dbr")
    monkeypatch.setattr(pq, "write_table", lambda *args, **kwargs: (_ for _ in ()).throw(
        OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        release.save(parents[-1] / "release")
    assert [p for p in parents if p.exists()] == parents[:existing]
    monkeypatch.undo()
    assert load_release(release.save(parents[-1] / "release")).n_rows == release.n_rows


def test_an_existing_target_names_the_python_option(tmp_path: Path) -> None:
    target = publish("dbr").save(tmp_path / "release")
    with pytest.raises(OutputExistsError, match=r"release already exists; choose another "
                                                r"directory or pass overwrite=True$"):
        publish("dbr").save(target)
    with staged_directory(target) as staging, pytest.raises(
            FileExistsError, match=r"release already exists; choose another directory or pass "
                                   r"overwrite=True$"):
        commit_directory(staging, target)
