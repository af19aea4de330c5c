"""``ppdp certify``: the certificate of a release from the command line, its options and its
one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppdp.cli import app
from ppdp.release.certificate import read_certificate
from tests.certify.sources import Certified


def test_certify_without_attacks_and_without_a_browser(certified: Certified, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PPDP_BROWSER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser on it
    target = tmp_path / "certificate"
    command = ["certify", str(certified.release), "--source", str(certified.source), "--key",
               str(certified.keys / "signing.key"), "--no-attacks", "--seed", "5",
               "--valid-days", "0", "-o", str(target)]
    runner = CliRunner()
    result = runner.invoke(app, [*command, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["pdf"] is False and summary["valid_until"] is None
    assert sorted(Path(p).name for p in summary["files"]) == ["certificate.html",
                                                              "certificate.json"]
    content = read_certificate(target)["content"]
    assert content["attacks"] is None and content["valid_until"] is None
    assert "No attack was run" in " ".join(content["not_covered"])
    # The same data and commitment key: the same commitment as the module's certificate.
    assert content["source"] == certified.document["content"]["source"]

    again = runner.invoke(app, command)
    assert again.exit_code == 2 and "--overwrite" in again.output
    replaced = runner.invoke(app, [*command, "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert "no browser found" in replaced.output and "no PDF written" in replaced.output

    # ppdp verify reads the source as ppdp certify did: the commitment is the same.
    verified = runner.invoke(app, [
        "verify", str(certified.release), "--certificate", str(target), "--public-key",
        str(certified.keys / "signing.pub"), "--source", str(certified.source),
        "--commitment-key", str(certified.keys / "commitment.key"), "--json"])
    assert verified.exit_code == 0, verified.output
    checks = {c["name"]: c["ok"] for c in json.loads(verified.stdout)["checks"]}
    assert checks["source commitment"] is True and all(checks.values())


def test_certify_errors_are_one_line(certified: Certified, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["certify", str(certified.release), "--source", str(certified.source), "--no-attacks",
            "-o", str(tmp_path / "certificate")]
    missing = runner.invoke(app, [*base, "--key", str(tmp_path / "nothing.key")])
    assert missing.exit_code != 0 and missing.output.startswith("error: ")
    assert len(missing.output.strip().splitlines()) == 1
    days = runner.invoke(app, [*base, "--key", str(certified.keys / "signing.key"),
                               "--valid-days", "-3"])
    assert days.exit_code == 2 and "--valid-days" in days.output
    assert not (tmp_path / "certificate").exists()
