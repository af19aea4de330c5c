"""Loading is isolated from writers: a release saved over the directory being loaded or counted
leaves the reader with the old release or the new one, whole, and never makes it fail
(`ppdp.io.snapshot`, `ppdp.release.load`)."""

from __future__ import annotations

import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ppdp
import ppdp.io.snapshot
import ppdp.release.load
from ppdp.data.schema import Role
from ppdp.errors import ReleaseError
from ppdp.io.snapshot import Snapshot
from ppdp.release.base import Release
from ppdp.release.load import load_release
from ppdp.table.table import Table, table_from_arrow

QUERY = "sex = 'M' AND disease = 'flu'"

ENGINES = ["memory", "streaming"]


def table(n_rows: int = 2000) -> Table:
    rng = np.random.default_rng(7)
    return table_from_arrow(pa.table({
        "age": rng.choice([18, 25, 33, 41, 57, 64], size=n_rows),
        "sex": rng.choice(["F", "M"], size=n_rows),
        "disease": rng.choice(["cold", "flu", "hiv", "ulcer"], size=n_rows),
    }), roles={"disease": Role.SENSITIVE}).declare_observed_domains(warn=False)


MECHANISMS: dict[str, tuple[Callable[[], ppdp.Mechanism], Callable[[], ppdp.Mechanism]]] = {
    # Rows left in their files and counted from them (a ScanCube on the streaming engine).
    "uniform": (lambda: ppdp.UniformPerturbation(rho1=0.3, rho2=0.5),
                lambda: ppdp.UniformPerturbation(rho1=0.3, rho2=0.7)),
    # Tables read whole on loading, as in the probe (gamma 2 against gamma 3).
    "splu": (lambda: ppdp.SPLUGen(gamma=2), lambda: ppdp.SPLUGen(gamma=3)),
}


@pytest.fixture(scope="module", params=list(MECHANISMS))
def releases(request: pytest.FixtureRequest) -> tuple[Release, Release]:
    first, second = MECHANISMS[request.param]
    data = table()
    return first().publish(data, random_state=1), second().publish(data, random_state=2)


def answer(release: Release) -> float:
    return float(release.count(QUERY).value)  # type: ignore[union-attr]


def writer_at(monkeypatch: pytest.MonkeyPatch, target: Any, name: str,
              write: Callable[[], object], *, when: Callable[..., bool] = lambda *a: True
              ) -> list[int]:
    """Make ``target.name`` run ``write`` once, before itself, the first time ``when`` holds
    for its arguments; the calls made, counted."""
    original = getattr(target, name)
    calls: list[int] = []

    def interleaved(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if when(*args, **kwargs) and not getattr(interleaved, "done", False):
            interleaved.done = True  # type: ignore[attr-defined]
            write()
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, interleaved)
    return calls


@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_saved_while_the_files_are_verified_leaves_the_old_one(
        releases: tuple[Release, Release], engine: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer commits the new release and removes the old one after the reader opened
    every file and before it verified them: the reader counts the old release."""
    old, new = releases
    path = old.save(tmp_path / "release")
    writer_at(monkeypatch, ppdp.release.load, "verify_digests",
              lambda: new.save(path, overwrite=True))
    loaded = load_release(path, engine=engine)
    assert answer(loaded) == answer(old) != answer(new)
    assert answer(load_release(path, engine=engine)) == answer(new)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_saved_while_its_files_are_opened_is_loaded_again(
        releases: tuple[Release, Release], engine: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer commits and removes the old release after the reader opened its directory
    and ``release.json`` but before the data files: the load starts again and gives the new
    release, whole."""
    old, new = releases
    path = old.save(tmp_path / "release")
    opened: list[Path] = []
    monkeypatch.setattr(Snapshot, "__init__", lambda self, root, init=Snapshot.__init__: (
        opened.append(Path(root)), init(self, root))[-1])
    writer_at(monkeypatch, Snapshot, "open", lambda: new.save(path, overwrite=True),
              when=lambda self, name: name.endswith(".parquet"))
    loaded = load_release(path, engine=engine)
    assert answer(loaded) == answer(new)
    assert len(opened) == 2  # once for the old release, once for the new


@pytest.mark.parametrize("engine", ENGINES)
def test_a_release_saved_while_counting_leaves_the_old_one(
        releases: tuple[Release, Release], engine: str, tmp_path: Path) -> None:
    """Loaded, the old release counts on after the new one replaced it (its files removed)."""
    old, new = releases
    path = old.save(tmp_path / "release")
    loaded = load_release(path, engine=engine)
    new.save(path, overwrite=True)
    assert answer(loaded) == answer(old)
    assert not list(tmp_path.glob(".*"))  # the old directory is gone


def test_read_by_path_a_release_replaced_while_loading_is_loaded_again(
        releases: tuple[Release, Release], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where files are read by path (Spark's tasks; systems without /proc/self/fd), a
    release whose directory was replaced while it was loaded may mix the two: it is loaded
    again."""
    old, new = releases
    monkeypatch.setattr(ppdp.release.load, "ISOLATED", False)
    path = old.save(tmp_path / "release")
    opened: list[Path] = []
    monkeypatch.setattr(Snapshot, "__init__", lambda self, root, init=Snapshot.__init__: (
        opened.append(Path(root)), init(self, root))[-1])
    writer_at(monkeypatch, ppdp.release.load, "verify_digests",
              lambda: new.save(path, overwrite=True))
    assert answer(load_release(path, engine="streaming")) == answer(new)
    assert len(opened) == 2


def test_a_release_replaced_at_every_load_is_refused_in_one_line(
        releases: tuple[Release, Release], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = releases
    path = old.save(tmp_path / "release")
    saved = iter([new, old] * ppdp.release.load.LOAD_ATTEMPTS)
    original = Snapshot.open

    def replaced_first(self: Snapshot, name: str) -> Any:
        if name.endswith(".parquet") and not getattr(self, "replaced_once", False):
            self.replaced_once = True  # type: ignore[attr-defined]
            next(saved).save(path, overwrite=True)
        return original(self, name)

    monkeypatch.setattr(Snapshot, "open", replaced_first)
    with pytest.raises(ReleaseError, match=r"release was replaced 5 times while it was being "
                                           r"loaded; load it again$"):
        load_release(path)


def test_files_removed_while_loading_are_refused_as_missing(
        releases: tuple[Release, Release], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Removed, not replaced: the load does not start again, and says what is missing."""
    old, _ = releases
    path = old.save(tmp_path / "release")
    writer_at(monkeypatch, Snapshot, "open", lambda: [p.unlink() for p in path.iterdir()])
    with pytest.raises(ReleaseError, match=r"has no release\.json; it is not a ppdp release$"):
        load_release(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_concurrent_saves_and_loads_give_the_old_or_the_new_release(
        releases: tuple[Release, Release], engine: str, tmp_path: Path) -> None:
    """One thread saves A and B alternately over the same directory (as ``ppdp publish
    --overwrite`` does), another loads it and counts in a loop: every answer is A's or B's,
    and at most 2 % of the loads are refused."""
    first, second = releases
    path = first.save(tmp_path / "release")
    expected = {answer(first), answer(second)}
    stop = threading.Event()
    failures: list[BaseException] = []
    saves = [0]

    def write() -> None:
        try:
            while not stop.is_set():
                (second if saves[0] % 2 == 0 else first).save(path, overwrite=True)
                saves[0] += 1
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    answers: list[float] = []
    refused: list[str] = []
    deadline = time.monotonic() + 2.0
    try:
        while time.monotonic() < deadline or len(answers) + len(refused) < 50:
            try:
                answers.append(answer(load_release(path, engine=engine)))
            except ReleaseError as exc:
                refused.append(str(exc))
    finally:
        stop.set()
        writer.join()
    assert not failures
    assert saves[0] > 0
    assert set(answers) <= expected, sorted(set(answers) - expected)
    assert len(refused) <= 0.02 * (len(answers) + len(refused)), refused[:3]
    assert not [p for p in tmp_path.iterdir() if p.name != "release"]


MANY_PARTS_SCRIPT = """
import resource, sys
import ppdp, ppdp.plan.order
from ppdp.release.load import load_release
from tests.release.test_release_snapshot import QUERY, answer, table
ppdp.plan.order.ROWS_PER_PART = 10
release = ppdp.DBR().publish(table(), random_state=1)
path = release.save(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
loaded = load_release(path, engine="streaming")
print(len(release.part_rows), answer(loaded) == answer(release),
      resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 64)
"""


@pytest.mark.skipif(not ppdp.io.snapshot.ISOLATED, reason="files read by path here")
def test_a_release_in_more_parts_than_open_files_allowed_loads(tmp_path: Path) -> None:
    """A loaded release keeps a descriptor per part it counts from: the limit of open files is
    raised to the system's hard limit when it is reached."""
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] <= 1024:
        pytest.skip("the hard limit of open files leaves no room")
    result = subprocess.run([sys.executable, "-c", MANY_PARTS_SCRIPT, str(tmp_path / "release")],
                            capture_output=True, text=True, check=True,
                            cwd=Path(__file__).parents[2])
    assert result.stdout.split() == ["200", "True", "True"], result.stderr
