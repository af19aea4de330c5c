"""Helpers of the workbench's tests: a small table of visits written as CSV, and reading the
workbench's pages as a browser would."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np

DISEASES = ["flu", "asthma", "diabetes", "migraine", "gastritis", "bronchitis"]


def visits_csv(path: Path, rows: int = 400, seed: int = 7) -> Path:
    """A CSV of ``rows`` visits: a record number (not to publish), age, sex, zip and the
    sensitive disease, drawn from a fixed seed."""
    rng = np.random.default_rng(seed)
    ages = rng.integers(20, 70, size=rows)
    sexes = rng.choice(["F", "M"], size=rows)
    zips = rng.choice(["10115", "10117", "10119", "10178"], size=rows)
    diseases = rng.choice(DISEASES, size=rows)
    lines = ["record,age,sex,zip,disease"] + [
        f"{i},{a},{s},{z},{d}" for i, (a, s, z, d) in enumerate(zip(ages, sexes, zips, diseases,
                                                                    strict=True))]
    path.write_text("\n".join(lines) + "\n")
    return path


def form_of(page: str) -> dict[str, str]:
    """The fields of a table's page as the browser would send them: each select's selected
    option, each text input's value, each checked checkbox."""
    fields: dict[str, str] = {}
    for match in re.finditer(r'<select id="[^"]+" name="([^"]+)">(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected', match.group(2))
        fields[match.group(1)] = html.unescape(chosen.group(1)) if chosen else ""
    for match in re.finditer(r'<input type="text" id="[^"]+" name="([^"]+)" value="([^"]*)"',
                             page):
        fields[match.group(1)] = html.unescape(match.group(2))
    for match in re.finditer(r'<input type="checkbox" id="[^"]+" name="([^"]+)"( checked)?',
                             page):
        if match.group(2):
            fields[match.group(1)] = "on"
    return fields


def error_line(page: str) -> str:
    """The one line of the page's error, or ''."""
    match = re.search(r'id="error">(.*?)</p>', page, re.S)
    return html.unescape(match.group(1)).strip() if match else ""
