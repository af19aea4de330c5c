"""The workers the engines share work among (`ppdp.workers`): how many, in what order the work
comes back, chunks of a batch, and the command line's ``--workers``."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ppdp.cli import app
from ppdp.errors import SettingError
from ppdp.table.source import read_ahead
from ppdp.workers import (
    CHUNK_ROWS,
    MAX_CHUNK_ROWS,
    POLARS_THREADS_VARIABLE,
    WORKERS_VARIABLE,
    available_cores,
    chunk_bounds,
    in_chunks,
    in_worker,
    map_ordered,
    run_all,
    threads_for,
    using_workers,
    worker_count,
)


def test_the_default_is_the_cores_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    assert worker_count() == available_cores() >= 1


def test_the_variable_then_the_block_choose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKERS_VARIABLE, " 3 ")
    assert worker_count() == 3
    with using_workers(5):
        assert worker_count() == 5
        with using_workers(None):
            assert worker_count() == 5
    assert worker_count() == 3


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5", ""])
def test_a_bad_variable_is_one_clear_error(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKERS_VARIABLE, bad)
    if not bad:
        assert worker_count() == available_cores()  # empty: unset
        return
    with pytest.raises(SettingError, match="PPDP_WORKERS must be a positive integer"):
        worker_count()


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_a_bad_count_is_refused(bad: object) -> None:
    with pytest.raises(SettingError, match="workers must be a positive integer"), \
            using_workers(bad):  # type: ignore[arg-type]
        pass


def test_map_ordered_keeps_the_order_and_holds_few_results() -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def work(item: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        # The later items finish first: the order must come from the items, not the threads.
        time.sleep(0.002 * (20 - item))
        with lock:
            running[0] -= 1
        return item * item

    with using_workers(3):
        assert list(map_ordered(work, range(20))) == [i * i for i in range(20)]
    assert 1 < most[0] <= 3 + 1


def test_map_ordered_raises_where_the_result_would_have_been() -> None:
    def work(item: int) -> int:
        if item == 4:
            raise ValueError("item 4")
        return item

    seen = []
    with using_workers(2), pytest.raises(ValueError, match="item 4"):
        for value in map_ordered(work, range(10)):
            seen.append(value)
    assert seen == [0, 1, 2, 3]


def test_work_inside_a_worker_runs_on_it_alone() -> None:
    def inner(item: int) -> tuple[bool, int, str]:
        return in_worker(), threads_for(8), threading.current_thread().name

    def outer(item: int) -> list[tuple[bool, int, str]]:
        return run_all(inner, [1, 2, 3])

    with using_workers(4):
        assert not in_worker() and threads_for(8) == 4
        results = run_all(outer, [0, 1])
    for inside in results:
        # Every inner item ran on the worker that ran the outer one: pools never nest.
        assert {name for _, _, name in inside} == {inside[0][2]}
        assert all(flag and threads == 1 for flag, threads, _ in inside)


@pytest.mark.parametrize("rows", [0, 1, CHUNK_ROWS - 1, CHUNK_ROWS * 2 + 5, MAX_CHUNK_ROWS * 3 + 1,
                                  10**7])
@pytest.mark.parametrize("pieces", [1, 2, 7])
def test_chunks_cover_the_rows_in_order(rows: int, pieces: int) -> None:
    bounds = chunk_bounds(rows, pieces)
    assert bounds[0][0] == 0 and bounds[-1][1] == rows
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    sizes = [b - a for a, b in bounds]
    assert max(sizes) <= MAX_CHUNK_ROWS
    assert len(bounds) == 1 or min(sizes) >= min(CHUNK_ROWS, rows)
    if rows >= pieces * CHUNK_ROWS:
        assert len(bounds) >= pieces


def test_in_chunks_gives_each_chunk_its_first_row_id() -> None:
    codes = {"v": np.arange(3 * CHUNK_ROWS)}
    with using_workers(3):
        chunks = in_chunks(lambda start, batch: (start, batch["v"][0], len(batch["v"])), 100,
                           codes)
    assert [(start - 100, int(first)) for start, first, _ in chunks] == \
        [(0, 0), (CHUNK_ROWS, CHUNK_ROWS), (2 * CHUNK_ROWS, 2 * CHUNK_ROWS)]


def test_the_command_line_takes_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Set, then removed: the variables the command sets are put back as they were.
    for variable in (WORKERS_VARIABLE, POLARS_THREADS_VARIABLE):
        monkeypatch.setenv(variable, "1")
        monkeypatch.delenv(variable)
    runner = CliRunner()
    written = {}
    for workers in ("1", "2"):
        out = tmp_path / workers
        result = runner.invoke(app, ["publish", "adult", "-m", "sdr", "-s", "occupation",
                                     "-p", "rho1=0.077", "-p", "rho2=0.2", "--seed", "3",
                                     "--workers", workers, "-o", str(out)])
        assert result.exit_code == 0, result.output
        written[workers] = {p.name: p.read_bytes() for p in out.iterdir()}
    assert written["1"] == written["2"]
    refused = runner.invoke(app, ["count", "adult", "age > 30", "--workers", "0"])
    assert refused.exit_code == 2
    monkeypatch.setenv(WORKERS_VARIABLE, "many")
    refused = runner.invoke(app, ["count", "adult", "age > 30"])
    assert refused.exit_code == 2 and "PPDP_WORKERS must be a positive integer" in \
        " ".join(refused.output.split())


def test_the_chosen_count_holds_on_every_thread_the_work_reaches() -> None:
    """`using_workers` holds on the workers and on the thread that reads ahead (a generator
    run there asks for the workers too)."""

    def counts() -> Iterator[int]:
        for _ in range(3):
            yield worker_count()

    with using_workers(3):
        assert list(read_ahead(counts())) == [3, 3, 3]
        assert list(map_ordered(lambda _: worker_count(), range(4))) == [3, 3, 3, 3]
        assert run_all(lambda _: list(read_ahead(counts())), [0, 1]) == [[3, 3, 3]] * 2
