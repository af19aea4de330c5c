"""What the command line prints of column names from a file: control characters escaped,
never sent to the terminal; many columns summarised."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ppdp.cli import app
from ppdp.cli._output import printable

runner = CliRunner()

RED = "\x1b[31mred\x1b[0m"


def write_rows(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    path.write_text("\n".join(",".join(map(str, row)) for row in [header, *rows]) + "\n")
    return path


def test_printable_escapes_control_characters() -> None:
    assert printable("age, café") == "age, café"
    assert printable(f"a {RED}\tb") == "a \\x1b[31mred\\x1b[0m\\tb"


def test_control_characters_in_names_are_escaped_everywhere(tmp_path: Path) -> None:
    source = write_rows(tmp_path / "ctrl.csv", ["age", RED, "sex"],
                        [[30 + i % 5, f"x{i % 3}", "MF"[i % 2]] for i in range(20)])
    published = runner.invoke(app, ["publish", str(source), "-m", "dbr", "-s", "sex",
                                    "--observed-domains", "-o", str(tmp_path / "rel"),
                                    "--seed", "1"])
    assert published.exit_code == 0, published.output
    unknown = runner.invoke(app, ["count", str(source), "nope = 1"])
    assert unknown.exit_code == 2
    grouped = runner.invoke(app, ["count", str(source),
                                  f'SELECT COUNT(*) GROUP BY "{RED}"'])
    assert grouped.exit_code == 0, grouped.output
    for result in (published, unknown, grouped):
        assert "\x1b" not in result.output
        assert "\\x1b[31mred\\x1b[0m" in result.output


def test_a_value_with_control_characters_is_escaped(tmp_path: Path) -> None:
    source = write_rows(tmp_path / "values.csv", ["sex", "age"],
                        [["\x1b[2J", 30], ["M", 31], ["M", 32]])
    result = runner.invoke(app, ["count", str(source), "SELECT COUNT(*) GROUP BY sex"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\\x1b[2J" in result.output


def test_the_summary_of_a_wide_publish_lists_100_columns(tmp_path: Path) -> None:
    header = [f"c{i}" for i in range(150)]
    source = write_rows(tmp_path / "wide.csv", header,
                        [[(i + r) % 2 for i in range(150)] for r in range(4)])
    result = runner.invoke(app, ["publish", str(source), "-m", "dbr", "-s", "c0",
                                 "--qi", "c1,c120", "--observed-domains",
                                 "-o", str(tmp_path / "rel"), "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert " c99 " in result.output and " c100 " not in result.output
    assert "and 50 more columns (1 published; release.json lists them all)" in result.output
