"""The small source of the certificate tests: the first rows of the bundled Adult, with two
columns the release does not publish (a row id and a note) whose values must appear in no
certificate file."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ppdp

PUBLISHED = ["age", "sex", "race", "occupation"]
ROWS = 1_500
SEED = 8_675_309_123
"""The seed passed to certify: its digits must appear in no certificate file."""
MARKER = "zq8xMARKERvw"
"""Begins every value of a column the release does not publish."""
ROW_ID = "RID7741"
"""Begins every row id (a column the release does not publish)."""


@dataclass(frozen=True)
class Certified:
    """A release of a small source, its keys and its signed certificate."""

    source: Path
    table: ppdp.Table
    release: Path
    keys: Path
    document: dict[str, Any]
    files: list[Path]


def write_source(path: Path) -> Path:
    """The first rows of the bundled Adult with a row id and a private note column."""
    adult = ppdp.datasets.adult(sensitive="occupation").select(PUBLISHED)
    values = {name: adult.values(name)[:ROWS] for name in PUBLISHED}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["row_id", *PUBLISHED, "note"])
        for i in range(ROWS):
            writer.writerow([f"{ROW_ID}{i:05d}", *(values[n][i] for n in PUBLISHED),
                             f"{MARKER}{i:05d}"])
    return path


def read_source(path: Path) -> ppdp.Table:
    """The source as ppdp certify reads it: the release's columns typed by its domains."""
    adult = ppdp.datasets.adult(sensitive="occupation")
    return ppdp.read_table(path, sensitive="occupation", quasi_identifiers=PUBLISHED[:-1],
                           domains={name: list(adult.schema[name].domain)
                                    for name in PUBLISHED})
