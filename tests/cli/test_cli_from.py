"""A query's FROM on a release: the name of the table it was published from works there too
(``FROM german`` on german.csv and on its release), since a release records no source name
and holds one table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.errors import QueryError

runner = CliRunner()

QUERY = "SELECT COUNT(*) FROM german WHERE sex = 'F'"


def ok(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def german(tmp_path: Path) -> Path:
    path = tmp_path / "german.csv"
    path.write_text("age,sex,credit\n" + "".join(
        f"{20 + i % 9},{'FM'[i % 2]},{['good', 'bad', 'fair'][i % 3]}\n" for i in range(60)))
    return path


def test_from_the_source_name_on_the_file_and_on_its_release(german: Path,
                                                              tmp_path: Path) -> None:
    release = tmp_path / "g-splu"
    ok("publish", german, "-m", "dbr", "-s", "credit", "--observed-domains", "--seed", "1",
       "-o", release)
    exact = json.loads(ok("count", german, QUERY, "--json"))["estimate"]
    estimated = json.loads(ok("count", release, QUERY, "--json"))["estimate"]
    by_t = json.loads(ok("count", release, QUERY.replace("german", "t"), "--json"))["estimate"]
    assert exact == 30 and estimated == by_t
    by_name = json.loads(ok("count", release, QUERY.replace("german", '"g-splu"'),
                            "--json"))["estimate"]
    assert by_name == by_t


def test_from_on_a_release_in_python(german: Path) -> None:
    table = ppdp.read_table(german, sensitive="credit", observed_domains=True)
    release = ppdp.DBR().publish(table, random_state=1)
    assert release.count(QUERY) == release.count("sex = 'F'")
    values, _ = release.count_all([QUERY, "SELECT COUNT(*) FROM t WHERE sex = 'F'"])
    assert values[0] == values[1]
    # A table knows its name: another one is still refused there.
    assert table.count(QUERY).value == 30
    with pytest.raises(QueryError, match="this table is 'german'"):
        table.count(QUERY.replace("german", "users"))
