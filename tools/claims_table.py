"""Turn the ``claims.csv`` of ``ppdp evaluate`` into the Markdown table of the full run's
summary in docs/papers/evaluation.md, printed or written in place.

    ppdp evaluate --all --seed 1 -o evaluation
    python tools/claims_table.py evaluation/claims.csv --update docs/papers/evaluation.md

A verdict other than "holds" is set in bold, as the page does; ``|`` in a cell is escaped.
``--update`` replaces the table that follows the line starting "Summary of the full run".
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

SUMMARY = "Summary of the full run"


def markdown(claims: Path) -> list[str]:
    """The table's lines: its header, its rule and one row per claim."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| experiment | paper says | we measured | verdict |", "|---|---|---|---|"]
    with open(claims, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            verdict = row["verdict"]
            shown = verdict if verdict == "holds" else f"**{verdict}**"
            lines.append(f"| {row['experiment']} | {cell(row['paper says'])} | "
                         f"{cell(row['we measured'])} | {shown} |")
    return lines


def update(page: Path, table: list[str]) -> None:
    """Replace the table after the summary line of ``page`` with ``table``."""
    lines = page.read_text(encoding="utf-8").split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith(SUMMARY)), None)
    if start is None:
        raise SystemExit(f"{page}: no line starting {SUMMARY!r}")
    first = start + 1
    while first < len(lines) and not lines[first].startswith("|"):
        first += 1
    end = first
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    page.write_text("\n".join([*lines[:first], *table, *lines[end:]]), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claims", type=Path, help="claims.csv of ppdp evaluate")
    parser.add_argument("--update", type=Path, help="the page whose summary table to replace")
    arguments = parser.parse_args()
    table = markdown(arguments.claims)
    if arguments.update is None:
        sys.stdout.write("\n".join(table) + "\n")
    else:
        update(arguments.update, table)


if __name__ == "__main__":
    main()
