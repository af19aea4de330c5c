"""The source of an attack or a risk measure is read with the release's domains, so each column
is typed as the release types it: codes that look like numbers, declared as text when
published, stay text when the source is read again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from ppdp.cli import app


def test_an_attack_reads_its_source_as_the_release_typed_it(tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(7)
    n = 600
    pd.DataFrame({"age": rng.integers(18, 90, n), "zip": rng.choice(["1010", "1020"], n),
                  "disease": rng.choice(["flu", "cold", "asthma"], n)}).to_csv(
        "visits.csv", index=False)
    Path("domains.json").write_text(json.dumps({"domains": {
        "age": {"min": 0, "max": 120}, "zip": ["1010", "1020", "1030"],
        "disease": ["flu", "cold", "asthma", "hiv"]}}))
    runner = CliRunner()
    published = runner.invoke(app, ["publish", "visits.csv", "-m", "anatomy", "-s", "disease",
                                    "-p", "l=2", "--domains", "domains.json", "-o", "release"])
    assert published.exit_code == 0, published.output
    attacked = runner.invoke(app, ["attack", "release", "visits.csv", "--json"])
    assert attacked.exit_code == 0, attacked.output
    results = json.loads(attacked.stdout)
    assert results["rows"] == n and results["attacks"]
