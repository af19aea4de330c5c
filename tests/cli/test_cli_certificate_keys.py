"""Tests of ``ppdp keys create`` and ``ppdp verify``: the key files, the one line per check
and the exit codes (0 only if every check holds, 4 otherwise)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.cli._app import EXIT_RELEASE, EXIT_USAGE
from ppdp.jsonable import json_ready
from ppdp.release import certificate as cert
from ppdp.release.keys import KEY_FILE, PUBLIC_KEY_FILE, load_private_key

runner = CliRunner()


def run(*args: object) -> Any:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An Anatomy release of 300 rows, certified with keys made by ``ppdp keys create``."""
    root = tmp_path_factory.mktemp("cli-certificate")
    (root / "passphrase.txt").write_text("a long passphrase\n")
    result = run("keys", "create", root / "keys", "--passphrase-file", root / "passphrase.txt",
                 "--json")
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    assert made["encrypted"] is True and made["key_fingerprint"].startswith("SHA256:")
    table = ppdp.datasets.adult(sensitive="occupation").take(np.arange(300))
    ppdp.Anatomy(l=2).publish(table, random_state=1).save(root / "release")
    metadata = json.loads((root / "release" / "release.json").read_text())
    content = {"release": cert.release_summary(metadata),
               "guarantee": json_ready(ppdp.Anatomy(l=2).guarantee().to_dict()),
               "signed_at": "2026-05-01T00:00:00Z", "valid_until": None}
    key = load_private_key(root / "keys" / KEY_FILE, passphrase=b"a long passphrase")
    (root / "cert").mkdir()
    (root / "cert" / cert.CERTIFICATE_FILE).write_bytes(
        cert.certificate_bytes(cert.sign_certificate(content, key)))
    return {"root": root, "release": root / "release", "cert": root / "cert",
            "public": root / "keys" / PUBLIC_KEY_FILE}


def test_keys_create_writes_private_keys_and_refuses_to_overwrite(tmp_path: Path) -> None:
    result = run("keys", "create", tmp_path / "keys")
    assert result.exit_code == 0, result.output
    assert "signing.pub (public key, give to verifiers)" in result.stdout
    assert os.stat(tmp_path / "keys" / KEY_FILE).st_mode & 0o777 == 0o600
    before = (tmp_path / "keys" / KEY_FILE).read_bytes()
    result = run("keys", "create", tmp_path / "keys")
    assert result.exit_code == EXIT_USAGE
    assert "keys are never overwritten" in result.stderr
    assert (tmp_path / "keys" / KEY_FILE).read_bytes() == before
    (tmp_path / "empty.txt").write_text("\n")
    result = run("keys", "create", tmp_path / "more", "--passphrase-file", tmp_path / "empty.txt")
    assert result.exit_code == EXIT_USAGE and "holds no passphrase" in result.stderr
    assert not (tmp_path / "more").exists()


def test_verify_prints_one_line_per_check_and_exits_0(certified: dict[str, Path]) -> None:
    result = run("verify", certified["release"], "--certificate", certified["cert"],
                 "--public-key", certified["public"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines[:7]] == [
        "✓ certificate", "✓ signature", "✓ validity", "✓ files", "✓ release.json",
        "✓ guarantee", "✓ loads"]
    assert lines[-1] == "verified: every check holds"


def test_verify_exits_4_on_a_changed_file(certified: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(certified["release"], copy)
    part = next(copy.glob("*.parquet"))
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 1
    part.write_bytes(bytes(data))
    result = run("verify", copy, "--certificate", certified["cert"] / cert.CERTIFICATE_FILE,
                 "--public-key", certified["public"], "--json")
    assert result.exit_code == EXIT_RELEASE
    report = json.loads(result.stdout)
    assert report["ok"] is False
    failed = [check for check in report["checks"] if not check["ok"]]
    assert failed[0]["name"] == "files" and part.name in failed[0]["detail"]


def test_verify_refuses_a_source_without_its_key(certified: dict[str, Path]) -> None:
    result = run("verify", certified["release"], "--public-key", certified["public"],
                 "--source", "adult")
    assert result.exit_code == EXIT_USAGE and "go together" in result.stderr
    result = run("verify", certified["release"], "--public-key", certified["release"])
    assert result.exit_code == EXIT_RELEASE
    assert "✗ certificate: FAILED" in result.stdout
