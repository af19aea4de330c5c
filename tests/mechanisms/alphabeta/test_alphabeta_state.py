"""The bound v on the views of a table holds (Algorithm 4): the views' private state is kept
per table, not per output folder, and written before a view appears."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.mechanisms.alphabeta.views import ViewSequence

runner = CliRunner()
PARAMS = ["-m", "alphabeta", "-p", "k=1", "-p", "gamma=0.5", "-p", "v=3"]


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def view_number(directory: Path) -> int:
    return json.loads((directory / "release.json").read_text())["parameters"]["view"]


def test_another_output_folder_does_not_reset_the_count(tmp_path: Path) -> None:
    for index, folder in enumerate(("a/view1", "b/view2", "c/d/view3")):
        result = run("publish", "adult", *PARAMS, "-o", tmp_path / folder, "--seed", index)
        assert result.exit_code == 0, result.output
        assert view_number(tmp_path / folder) == index + 1
    result = run("publish", "adult", *PARAMS, "-o", tmp_path / "elsewhere" / "view4",
                 "--seed", 9)
    assert result.exit_code == 3 and "3 views of this table were published" in result.stderr
    assert not (tmp_path / "elsewhere" / "view4").exists()


def test_the_state_lives_in_one_place_per_user(tmp_path: Path) -> None:
    result = run("publish", "adult", *PARAMS, "-o", tmp_path / "out" / "view1", "--seed", 1)
    assert result.exit_code == 0, result.output
    states = list(Path(os.environ["PPDP_STATE_DIR"]).glob("alphabeta-*/state.json"))
    assert len(states) == 1
    assert not list((tmp_path / "out").rglob("state.json"))


def test_an_unwritable_state_dir_leaves_no_release(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    for attempt in range(2):
        result = run("publish", "adult", *PARAMS, "-o", tmp_path / f"view{attempt}",
                     "--state-dir", blocked / "state", "--seed", attempt)
        assert result.exit_code == 2, result.output
        assert "state of alpha-beta views" in result.stderr
        assert "Traceback" not in result.output
        assert not (tmp_path / f"view{attempt}").exists()


def test_a_failure_to_record_the_state_leaves_no_release(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(self, directory):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(ViewSequence, "save_state", failing)
        result = run("publish", "adult", *PARAMS, "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 3 and "No space left" in result.stderr
    assert not (tmp_path / "view1").exists()
    assert [p.name for p in tmp_path.iterdir()] == []
    # Nothing was counted: the next publish is view 1.
    result = run("publish", "adult", *PARAMS, "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 0, result.output
    assert view_number(tmp_path / "view1") == 1


def test_other_parameters_do_not_start_a_fresh_count(tmp_path: Path) -> None:
    result = run("publish", "adult", *PARAMS, "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 0, result.output
    other = ["-m", "alphabeta", "-p", "k=1", "-p", "gamma=0.6", "-p", "v=3"]
    result = run("publish", "adult", *other, "-o", tmp_path / "view2", "--seed", 2)
    assert result.exit_code == 4 and "same parameters" in result.stderr
    assert not (tmp_path / "view2").exists()


def test_state_is_not_replaced_over_a_foreign_folder(tmp_path: Path) -> None:
    table = ppdp.datasets.adult()
    sequence = ppdp.AlphaBeta(k=1, gamma=0.5, v=2).views(table)
    sequence.publish(random_state=1)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    with pytest.raises(ppdp.ReleaseError, match="not the state of alpha-beta views"):
        sequence.save_state(foreign)
    assert (foreign / "notes.txt").read_text() == "keep"


SMALL = ["-m", "alphabeta", "-p", "k=0.1", "-p", "gamma=0.5", "-p", "v=3"]
DOMAINS = ["--domain", "age=17..90", "--domain", "sex=M,F", "--domain", "edu=a,b,c"]


@pytest.fixture()
def rows_csv(tmp_path: Path) -> Path:
    """300 rows of (age, sex, edu)."""
    generator = np.random.default_rng(1)
    lines = ["age,sex,edu"] + [
        f"{age},{sex},{edu}" for age, sex, edu in zip(
            generator.integers(17, 91, 300), generator.choice(["M", "F"], 300),
            generator.choice(["a", "b", "c"], 300), strict=True)]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_other_domains_do_not_start_a_fresh_count(tmp_path: Path, rows_csv: Path) -> None:
    for view in (1, 2, 3):
        result = run("publish", rows_csv, *SMALL, *DOMAINS, "-o", tmp_path / f"view{view}",
                     "--seed", view)
        assert result.exit_code == 0, result.output
        assert view_number(tmp_path / f"view{view}") == view
    result = run("publish", rows_csv, *SMALL, *DOMAINS, "-o", tmp_path / "view4", "--seed", 4)
    assert result.exit_code == 3 and "3 views of this table were published" in result.stderr
    # The same rows with a wider declared age domain: still the same rows, refused.
    wider = ["--domain", "age=17..91", "--domain", "sex=M,F", "--domain", "edu=a,b,c"]
    result = run("publish", rows_csv, *SMALL, *wider, "-o", tmp_path / "wider", "--seed", 5)
    assert result.exit_code == 3, result.output
    assert "3 alpha-beta view(s) of these rows were published with other columns or " \
           "domains" in result.stderr
    assert not (tmp_path / "wider").exists()
    assert len(list(Path(os.environ["PPDP_STATE_DIR"]).glob("alphabeta-*"))) == 1


@pytest.mark.parametrize("roles", [["-s", "edu", "--qi", "age"],  # sex dropped
                                   ["-s", "sex", "--qi", "age"]])  # edu dropped
def test_a_column_dropped_does_not_start_a_fresh_count(tmp_path: Path, rows_csv: Path,
                                                       roles: list[str]) -> None:
    result = run("publish", rows_csv, *SMALL, *DOMAINS, "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 0, result.output
    result = run("publish", rows_csv, *SMALL, *DOMAINS, *roles, "-o", tmp_path / "fewer",
                 "--seed", 2)
    assert result.exit_code == 3 and "other columns or domains" in result.stderr
    assert not (tmp_path / "fewer").exists()


def test_a_column_added_does_not_start_a_fresh_count(tmp_path: Path, rows_csv: Path) -> None:
    result = run("publish", rows_csv, *SMALL, *DOMAINS, "-s", "sex", "--qi", "age",
                 "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 0, result.output
    result = run("publish", rows_csv, *SMALL, *DOMAINS, "-o", tmp_path / "more", "--seed", 2)
    assert result.exit_code == 3 and "other columns or domains" in result.stderr
    assert not (tmp_path / "more").exists()


def test_other_rows_are_counted_apart(tmp_path: Path, rows_csv: Path) -> None:
    result = run("publish", rows_csv, *SMALL, *DOMAINS, "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 0, result.output
    other = tmp_path / "other.csv"
    lines = rows_csv.read_text().splitlines()
    other.write_text("\n".join([lines[0], *lines[2:], "40,M,a"]) + "\n")
    result = run("publish", other, *SMALL, *DOMAINS, "-o", tmp_path / "other1", "--seed", 2)
    assert result.exit_code == 0, result.output
    assert view_number(tmp_path / "other1") == 1


def test_a_view_refused_by_max_rows_leaves_no_state(tmp_path: Path, rows_csv: Path) -> None:
    root = tmp_path / "state" / "ppdp"
    result = run("publish", rows_csv, *SMALL, *DOMAINS, "-p", "max_rows=10",
                 "--state-dir", root, "-o", tmp_path / "view1", "--seed", 1)
    assert result.exit_code == 3 and "more than max_rows = 10" in result.stderr
    assert not (tmp_path / "state").exists() and not (tmp_path / "view1").exists()
