"""The report of an attack run (ppdp.attack.report): its files, and the per-individual risks
kept out of every release."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import ppdp
from ppdp.release.load import load_release


@pytest.fixture(scope="module")
def sample() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation").take(np.arange(3000))


def listing(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.rglob("*"))}


def test_per_individual_risks_never_go_into_a_release(sample: ppdp.Table,
                                                      tmp_path: Path) -> None:
    """Writing the report into the release's directory, or inside it, is refused before
    anything is written; written elsewhere, the release's files are untouched and it loads
    as before."""
    directory = ppdp.Anatomy(l=3).publish(sample, random_state=1).save(tmp_path / "release")
    before = listing(directory)
    report = ppdp.attack(load_release(directory), sample, random_state=1)
    for target in (directory, directory / "inside", directory / "inside" / "deeper"):
        with pytest.raises(ValueError, match="release directory"):
            report.write(target)
    files = report.write(tmp_path / "custodian", top=10)
    assert listing(directory) == before
    assert not any(path.resolve().is_relative_to(directory.resolve()) for path in files)
    reloaded = load_release(directory)
    assert reloaded.n_rows == sample.n_rows and reloaded.parameters["l"] == 3


def test_files_and_summary(sample: ppdp.Table, tmp_path: Path) -> None:
    """attacks.csv has a line per result, individuals.csv the top rows by risk (with their
    values), attack-risk.png is a PNG; the summary holds no per-individual risk."""
    release = ppdp.Anatomy(l=3).publish(sample, random_state=2)
    report = ppdp.attack(release, sample, random_state=2)
    written = report.write(tmp_path / "out", top=25)
    assert [p.name for p in written] == ["attacks.csv", "individuals.csv", "attack-risk.png"]
    with open(tmp_path / "out" / "attacks.csv") as handle:
        lines = list(csv.DictReader(handle))
    assert [line["attack"] for line in lines] == ["inference", "definetti"]
    with open(tmp_path / "out" / "individuals.csv") as handle:
        individuals = list(csv.DictReader(handle))
    risks = [float(line["risk"]) for line in individuals]
    assert len(individuals) == 25 and risks == sorted(risks, reverse=True)
    best = max(np.nanmax(r.risk) for r in report.results)
    assert risks[0] == best and individuals[0]["attack"] in ("inference", "definetti")
    row = int(individuals[0]["row"])
    assert individuals[0]["occupation"] == sample.values("occupation")[row]
    assert (tmp_path / "out" / "attack-risk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.dumps(report.to_dict())
    assert len(summary) < 5000 and "risk_inference" not in summary
