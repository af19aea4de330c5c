"""Tests of ppdp.verify: every check of a release against its signed certificate, and that
tampering with any byte of any release file or of the certificate is found by the right one."""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ppdp
from ppdp.certify.verify import NOT_RECOMPUTABLE, recompute_guarantee
from ppdp.errors import CertificateError
from ppdp.jsonable import json_ready
from ppdp.release import certificate as cert
from ppdp.release.keys import (
    COMMITMENT_KEY_FILE,
    KEY_FILE,
    PUBLIC_KEY_FILE,
    create_keys,
    load_commitment_key,
    load_private_key,
)

CHECKS = ["certificate", "signature", "validity", "files", "release.json", "guarantee",
          "loads"]


def content_of(release_dir: Path, mechanism: Any, **changes: Any) -> dict[str, Any]:
    """A certificate's content filled minimally (the builder fills the rest); the guarantee
    as the builder states it, from the mechanism with the release's parameters."""
    metadata = json.loads((release_dir / "release.json").read_text())
    content = {"release": cert.release_summary(metadata),
               "guarantee": json_ready(mechanism.guarantee().to_dict()),
               "signed_at": "2026-05-01T00:00:00+00:00", "valid_until": None}
    return {**content, **changes}


def sign(release_dir: Path, key: Any, content: dict[str, Any]) -> Path:
    directory = release_dir / cert.CERTIFICATE_DIRECTORY
    directory.mkdir(exist_ok=True)
    path = directory / cert.CERTIFICATE_FILE
    path.write_bytes(cert.certificate_bytes(cert.sign_certificate(content, key)))
    return path


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A SPLU-Gen release of 300 rows in three Parquet parts, certified."""
    root = tmp_path_factory.mktemp("verify")
    table = ppdp.datasets.adult(sensitive="occupation").take(np.arange(300))
    release = ppdp.SPLUGen(gamma=5).publish(table, random_state=3)
    release.part_rows = (100, 100, 100)
    release.save(root / "release")
    create_keys(root / "keys")
    key = load_private_key(root / "keys" / KEY_FILE)
    sign(root / "release", key, content_of(root / "release", ppdp.SPLUGen(gamma=5)))
    return {"root": root, "release": root / "release", "key": key, "table": table,
            "public": root / "keys" / PUBLIC_KEY_FILE}


def test_a_certified_release_verifies(certified: dict[str, Any]) -> None:
    result = ppdp.verify(certified["release"], public_key=certified["public"])
    assert result.ok, result.failed()
    assert [check.name for check in result.checks] == CHECKS
    details = {check.name: check.detail for check in result.checks}
    assert details["files"].startswith("4 files")  # three parts and the distinct rows' counts
    assert "recomputed from the release's parameters" in details["guarantee"]
    assert details["loads"] == "loads as a splu release of 300 rows"
    assert json.loads(json.dumps(result.to_dict()))["ok"] is True


def test_each_file_is_hashed_once(certified: dict[str, Any], tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With a cache that does not know the release, the files check hashes every file and
    remembers them, so that the loads check hashes none again."""
    from ppdp.certify import verify as certify_verify
    from ppdp.release import verify as release_verify
    monkeypatch.setenv("PPDP_CACHE_DIR", str(tmp_path / "cache"))
    hashed: dict[str, list[str]] = {"files": [], "loads": []}

    def counting(check: str, digests: Any) -> Any:
        def wrapped(paths: Any) -> Any:
            hashed[check].extend(Path(path).name for path in paths)
            return digests(paths)
        return wrapped

    monkeypatch.setattr(certify_verify, "file_digests",
                        counting("files", certify_verify.file_digests))
    monkeypatch.setattr(release_verify, "file_digests",
                        counting("loads", release_verify.file_digests))
    result = ppdp.verify(certified["release"], public_key=certified["public"])
    assert result.ok, result.failed()
    listed = json.loads((certified["release"] / "release.json").read_text())["digests"]
    assert sorted(hashed["files"]) == sorted(listed)
    assert len(listed) == 4
    assert hashed["loads"] == []


def _tamper_targets(release: Path) -> list[Path]:
    files = sorted(p for p in release.iterdir() if p.suffix == ".parquet")
    assert len(files) == 4
    return [*files, release / "release.json",
            release / cert.CERTIFICATE_DIRECTORY / cert.CERTIFICATE_FILE]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 5), where=st.floats(0, 1, exclude_max=True),
       flip=st.integers(1, 255))
def test_any_changed_byte_is_found(certified: dict[str, Any], tmp_path: Path, which: int,
                                   where: float, flip: int) -> None:
    copy = tmp_path / f"copy-{which}-{flip}-{where}"
    shutil.copytree(certified["release"], copy)
    target = _tamper_targets(copy)[which]
    data = bytearray(target.read_bytes())
    position = int(where * len(data))
    data[position] ^= flip
    target.write_bytes(bytes(data))
    result = ppdp.verify(copy, public_key=certified["public"])
    failed = [check.name for check in result.failed()]
    assert not result.ok
    if target.suffix == ".parquet":
        assert failed[0] == "files" and "loads" in failed, failed
    elif target.name == "release.json":
        assert failed[0] == "release.json", failed
        assert "files" not in failed
    else:  # the certificate: unreadable, or its signature no longer holds
        assert failed == [result.checks[-1].name] and failed[0] in ("certificate", "signature")
    with pytest.raises(CertificateError):
        ppdp.load_release(copy, public_key=certified["public"])
    shutil.rmtree(copy)


def test_another_releases_certificate_is_refused(certified: dict[str, Any],
                                                 tmp_path: Path) -> None:
    """Parameters swapped: the certificate of a gamma = 5 release beside a gamma = 4 one."""
    other = tmp_path / "gamma4"
    ppdp.SPLUGen(gamma=4).publish(certified["table"], random_state=3).save(other)
    shutil.copytree(certified["release"] / "certificate", other / "certificate")
    result = ppdp.verify(other, public_key=certified["public"])
    failed = {check.name: check.detail for check in result.failed()}
    assert set(failed) == {"files", "release.json", "loads"}
    assert "parameters['gamma'] is 5 in the certificate, 4 in the release" in \
        failed["release.json"]


def test_a_wrong_key_stops_before_the_release_is_read(certified: dict[str, Any],
                                                      tmp_path: Path) -> None:
    create_keys(tmp_path / "other")
    result = ppdp.verify(certified["release"], public_key=tmp_path / "other" / PUBLIC_KEY_FILE)
    assert [(c.name, c.ok) for c in result.checks] == [("certificate", True),
                                                       ("signature", False)]
    assert "signed by another key" in result.checks[1].detail


def test_an_expired_certificate_fails_its_validity_only(certified: dict[str, Any],
                                                        tmp_path: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(certified["release"], copy)
    sign(copy, certified["key"], content_of(copy, ppdp.SPLUGen(gamma=5),
                                            valid_until="2026-05-02T00:00:00+00:00"))
    result = ppdp.verify(copy, public_key=certified["public"])
    assert [check.name for check in result.failed()] == ["validity", "loads"]
    assert result.failed()[0].detail == "the certificate expired on 2026-05-02 00:00:00 UTC"


def test_a_guarantee_that_is_not_the_mechanisms_fails(certified: dict[str, Any],
                                                      tmp_path: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(certified["release"], copy)
    content = content_of(copy, ppdp.SPLUGen(gamma=5))
    content["guarantee"]["T_P"] = 0.99
    sign(copy, certified["key"], content)
    result = ppdp.verify(copy, public_key=certified["public"])
    assert [check.name for check in result.failed()] == ["guarantee"]
    assert "T_P is 0.99 in the certificate, 0.5904 recomputed" in result.failed()[0].detail


def test_a_table_dependent_guarantee_is_recomputed_where_the_release_tells(
        certified: dict[str, Any], tmp_path: Path) -> None:
    table = certified["table"]
    for mechanism, expected in ((ppdp.UniformPerturbation(rho1=0.077, rho2=0.2),
                                 "the release's m and n: the same"),
                                (ppdp.PerturbationPartitioning(rho1=0.077, rho2=0.2),
                                 NOT_RECOMPUTABLE)):
        directory = tmp_path / mechanism.name
        mechanism.publish(table, random_state=1).save(directory)
        metadata = json.loads((directory / "release.json").read_text())
        content = {"release": cert.release_summary(metadata),
                   "guarantee": json_ready(mechanism.guarantee(table).to_dict())}
        assert recompute_guarantee(content)[1].endswith(expected)
    content["guarantee"] = None
    assert recompute_guarantee(content)[1] == "none recorded"


def _commitment_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The builder's commitment module, or a stand-in of the same signature where it is not
    installed (it checks how verify compares, not the commitment itself)."""
    try:
        return importlib.import_module("ppdp.certify.commitment")
    except ImportError:
        fake = types.ModuleType("ppdp.certify.commitment")

        def source_commitment(source: Any, table: Any, key: bytes) -> dict[str, Any]:
            codes = b"".join(np.ascontiguousarray(table.codes[name]).tobytes()
                             for name in table.schema.names)
            return {"algorithm": "HMAC-SHA256", "file": None,
                    "table": hmac.new(key, codes, hashlib.sha256).hexdigest()}

        fake.source_commitment = source_commitment  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "ppdp.certify.commitment", fake)
        return fake


def test_the_source_commitment_is_checked_with_the_source_and_key(
        certified: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _commitment_module(monkeypatch)
    key = load_commitment_key(certified["root"] / "keys" / COMMITMENT_KEY_FILE)
    table = certified["table"]
    copy = tmp_path / "release"
    shutil.copytree(certified["release"], copy)
    source = {"name": "adult", "n_rows": 300,
              "commitment": module.source_commitment("adult", table, key)}
    sign(copy, certified["key"], content_of(copy, ppdp.SPLUGen(gamma=5), source=source))
    result = ppdp.verify(copy, public_key=certified["public"], source="adult",
                         commitment_key=key, table=table)
    assert result.ok and result.checks[-1].name == "source commitment"
    other = ppdp.datasets.adult(sensitive="occupation").take(np.arange(1, 301))
    result = ppdp.verify(copy, public_key=certified["public"], source="adult",
                         commitment_key=key, table=other)
    assert [check.name for check in result.failed()] == ["source commitment"]
    assert "does not match the table as read" in result.failed()[0].detail
    with pytest.raises(ValueError, match="give both or neither"):
        ppdp.verify(copy, public_key=certified["public"], source="adult")
