"""Laplace counts over a Source: the answers of the session over the table in memory.

Seeded sessions draw the i-th noise value at position i of one keyed stream, so two sessions
with the same key give equal noisy answers exactly when they count the same truths in the same
order; every check below compares every noisy value, its interval and the spent budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp import LaplaceCounts, read_table
from ppdp.cli import app
from ppdp.errors import QueryError, ReleaseError
from ppdp.io.read import write_table
from ppdp.io.scan import ScanSource, scan_table
from ppdp.mechanisms import LaplaceSession
from ppdp.query.binding import bind
from ppdp.query.cube import MAX_CUBE_CELLS
from ppdp.table.source import TableSource

# x and y span 5000^2 > MAX_CUBE_CELLS combinations: conditions relating them are counted on
# batches of rows, the others on the cells of contingency tables.
SPAN = 5000
assert SPAN**2 > MAX_CUBE_CELLS

GROUPED = [
    "SELECT sex, COUNT(*) FROM t WHERE age > 50 GROUP BY sex",
    "SELECT race, sex, COUNT(*) FROM t WHERE occupation = 'Sales' OR age < 25 "
    "GROUP BY race, sex",
    "SELECT education, COUNT(*) FROM t WHERE NOT (sex = 'Male' AND age >= 40) "
    "GROUP BY education",
    "SELECT sex, COUNT(*) FROM t WHERE x < y GROUP BY sex",
    "SELECT sex, COUNT(*) FROM t GROUP BY sex",
]
UNGROUPED = [
    "SELECT COUNT(*) FROM t",
    "age > 1000",
    "age >= 40 AND sex = 'Female' AND occupation = 'Sales'",
    "age BETWEEN 30 AND 45 AND race = 'White'",
    "education IN ('Bachelors', 'Masters', 'Doctorate')",
    "workclass NOT IN ('Private') AND salary-class = '>50K'",
    "sex = 'Male' OR race = 'Black'",
    "NOT (age < 30 AND sex = 'Female')",
    "(occupation = 'Sales' OR education = 'Masters') AND NOT race = 'White'",
    "age * 100 < x",
    "x < 100 AND y > 4000",
    "x + y > 5000 AND sex = 'Female'",
    "x = y OR age = 30",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Adult with two numeric columns of large declared domains, as Parquet and as CSV."""
    adult = ppdp.datasets.adult().to_arrow()
    rng = np.random.default_rng(4)
    data = adult.append_column("x", pa.array(rng.integers(0, SPAN, adult.num_rows))) \
        .append_column("y", pa.array(rng.integers(0, SPAN, adult.num_rows)))
    folder = tmp_path_factory.mktemp("laplace-source")
    paths = {}
    for suffix in ("parquet", "csv"):
        paths[suffix] = folder / f"adult.{suffix}"
        write_table(data, paths[suffix])
    return paths


def domains() -> dict[str, Any]:
    adult = ppdp.datasets.adult()
    return {**{c.name: list(c.domain) for c in adult.schema.columns},
            "x": range(SPAN), "y": range(SPAN)}


@pytest.fixture(scope="module")
def table(files: dict[str, Path]) -> ppdp.Table:
    return read_table(files["parquet"], domains=domains())


def scanned(path: Path, batch_rows: int) -> ScanSource:
    return scan_table(path, domains=domains(), batch_rows=batch_rows)


def answers(session: LaplaceSession) -> list[Any]:
    """Every answer of a pool, grouped queries one by one, the others together (count_all)
    and then one by one, and the budget spent."""
    result: list[Any] = [session.count(q).to_dict() for q in GROUPED]
    values, stderr = session.count_all(UNGROUPED)
    result += [values.tolist(), stderr.tolist()]
    result += [session.count(q).to_dict() for q in UNGROUPED]
    return [*result, session.spent_epsilon]


def publish(data: Any, *, batch_rows: int | None = None) -> LaplaceSession:
    return LaplaceCounts(epsilon=0.5).publish(data, random_state=7, batch_rows=batch_rows)


@pytest.fixture(scope="module")
def expected(table: ppdp.Table) -> list[Any]:
    return answers(publish(table))


def test_the_pool_covers_both_ways_of_counting(table: ppdp.Table) -> None:
    cube = publish(table)._cube
    fitting = [cube.fits(tuple(bind(q, table.schema).columns)) for q in GROUPED + UNGROUPED]
    assert any(fitting) and not all(fitting)


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
@pytest.mark.parametrize("batch_rows", [3_333, 10_000, 1_000_000])
def test_a_scanned_file_gives_the_answers_of_the_table_in_memory(
        suffix: str, batch_rows: int, files: dict[str, Path], table: ppdp.Table,
        expected: list[Any]) -> None:
    source = scanned(files[suffix], batch_rows)
    assert source.schema == table.schema and source.n_rows == table.n_rows
    assert answers(publish(source, batch_rows=batch_rows)) == expected


def test_a_table_source_gives_the_answers_of_its_table(table: ppdp.Table,
                                                       expected: list[Any]) -> None:
    assert answers(publish(TableSource(table), batch_rows=3_333)) == expected


def test_the_seed_changes_the_answers_over_a_source(files: dict[str, Path],
                                                    expected: list[Any]) -> None:
    session = LaplaceCounts(epsilon=0.5).publish(scanned(files["parquet"], 10_000),
                                                random_state=8)
    assert answers(session) != expected


class Reads:
    """Records the columns and batch sizes of every pass over a source's rows."""

    def __init__(self, source: ScanSource, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[int, tuple[str, ...] | None]] = []
        batches = source.batches

        def spy(batch_rows: int = 1 << 20, columns: Any = None) -> Any:
            self.calls.append((batch_rows, None if columns is None else tuple(columns)))
            return batches(batch_rows, columns)

        # On the instance: the source's own histogram passes go through it too.
        monkeypatch.setattr(source, "batches", spy)

    def take(self) -> list[tuple[int, tuple[str, ...] | None]]:
        calls, self.calls = self.calls, []
        return calls


def test_only_the_columns_a_query_needs_are_read(files: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source = scanned(files["parquet"], 10_000)
    reads = Reads(source, monkeypatch)
    session = publish(source, batch_rows=4_000)
    assert reads.take() == []
    for query in GROUPED + UNGROUPED:
        needed = bind(query, session.schema).columns
        session.count(query)
        for _, columns in reads.take():
            assert columns is not None and set(columns) <= needed, (query, columns)
    # Rows are read batch by batch at the session's size only where a table would be too
    # large; asked again, every table comes from the cache.
    session.count("x < y")
    assert reads.take() == [(4_000, ("x", "y"))]
    session.count("sex = 'Male' OR race = 'Black'")
    assert reads.take() == []
    assert session._cube.codes == {}


def test_count_all_counts_its_tables_in_one_pass(files: dict[str, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    source = scanned(files["parquet"], 10_000)
    reads = Reads(source, monkeypatch)
    session = publish(source, batch_rows=4_000)
    fitting = [q for q in UNGROUPED if "x" not in q]
    session.count_all(fitting)
    ((batch_rows, columns),) = reads.take()
    assert batch_rows == 4_000
    assert set(columns or ()) == set().union(*(bind(q, session.schema).columns
                                               for q in fitting))


def test_failing_queries_spend_nothing_and_draw_nothing(files: dict[str, Path],
                                                        table: ppdp.Table) -> None:
    sessions = [publish(table), publish(scanned(files["csv"], 10_000), batch_rows=10_000)]
    for session in sessions:
        for query in ("height > 3", "SELECT x, y, COUNT(*) FROM t GROUP BY x, y",
                      "SELECT x, COUNT(*) FROM t WHERE x < y GROUP BY x, y"):
            with pytest.raises(QueryError):
                session.count(query)
        assert session.spent_epsilon == 0
    assert [answers(s) for s in sessions[1:]] == [answers(sessions[0])]


def test_an_unseeded_session_over_a_source_uses_os_entropy(files: dict[str, Path],
                                                           table: ppdp.Table) -> None:
    session = LaplaceCounts(epsilon=1.0).publish(scanned(files["parquet"], 10_000))
    assert session._noise is None
    estimate = session.count("sex = 'Female'")
    truth = table.count("sex = 'Female'").value  # type: ignore[union-attr]
    assert float(estimate.value - truth).is_integer()  # type: ignore[union-attr]


def test_publishing_a_source_to_a_directory_is_refused(files: dict[str, Path],
                                                       tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="no data release to write"):
        LaplaceCounts(epsilon=1.0).publish_source(scanned(files["parquet"], 10_000),
                                                  tmp_path / "out", random_state=1)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("query", ["x < y AND sex = 'Female'",
                                   "SELECT race, COUNT(*) FROM t WHERE age > 60 GROUP BY race"])
def test_the_cli_streams_laplace_counts(query: str, files: dict[str, Path]) -> None:
    outputs = []
    for engine in ("memory", "streaming"):
        result = CliRunner().invoke(app, [
            "count", str(files["parquet"]), query, "-m", "laplace", "-p", "epsilon=1",
            "--seed", "3", "--engine", engine, "--batch-rows", "3333", "--json"])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.stdout))
    assert outputs[0] == outputs[1]


def test_the_cli_refuses_streaming_exact_counts(files: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["count", str(files["parquet"]), "age > 40",
                                      "--engine", "streaming"])
    assert result.exit_code == 2
    assert "--engine streaming counts with --mechanism laplace" in result.stderr


def test_the_cli_refuses_a_streamed_laplace_release(files: dict[str, Path],
                                                    tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["publish", str(files["parquet"]), "-m", "laplace",
                                      "-p", "epsilon=1", "-o", str(tmp_path / "out"),
                                      "--engine", "streaming"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "no data release to write" in result.stderr
    assert not (tmp_path / "out").exists()
