"""Tests of ppdp.release.keys and ppdp.release.certificate: key files, the signed document
and its checks, load_release with a public key, and overwriting a certified release."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ppdp
import ppdp.release.keys as keys_module
from ppdp.errors import CertificateError, MissingDependencyError, OutputExistsError, ReleaseError
from ppdp.jsonable import json_ready
from ppdp.release import certificate as cert
from ppdp.release.keys import (
    COMMITMENT_KEY_FILE,
    KEY_FILE,
    PUBLIC_KEY_FILE,
    create_keys,
    key_fingerprint,
    load_commitment_key,
    load_private_key,
    load_public_key,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def signed_content(release_dir: Path, **changes: Any) -> dict[str, Any]:
    """A certificate's content filled minimally (the builder fills the rest)."""
    metadata = json.loads((release_dir / "release.json").read_text())
    content = {"release": cert.release_summary(metadata),
               "guarantee": json_ready(ppdp.Anatomy(l=2).guarantee().to_dict()),
               "signed_at": "2026-05-01T00:00:00+00:00", "valid_until": None}
    return {**content, **changes}


def write(document: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / cert.CERTIFICATE_FILE
    path.write_bytes(cert.certificate_bytes(document))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two small Anatomy releases (l=2 and l=3), a key pair and another key pair."""
    root = tmp_path_factory.mktemp("certificates")
    table = ppdp.datasets.adult(sensitive="occupation").take(np.arange(300))
    for diversity in (2, 3):
        ppdp.Anatomy(l=diversity).publish(table, random_state=1).save(root / f"l{diversity}")
    create_keys(root / "keys")
    create_keys(root / "other", passphrase=b"correct horse")
    key = load_private_key(root / "keys" / KEY_FILE)
    document = cert.sign_certificate(signed_content(root / "l2"), key)
    write(document, root / "l2" / cert.CERTIFICATE_DIRECTORY)
    return {"root": root, "key": key, "public": root / "keys" / PUBLIC_KEY_FILE,
            "document": document}


# ---------------------------------------------------------------------------------------------
# Key files


def test_key_files_are_private_and_never_overwritten(setup: dict[str, Any]) -> None:
    keys = setup["root"] / "keys"
    assert os.stat(keys / KEY_FILE).st_mode & 0o777 == 0o600
    assert os.stat(keys / COMMITMENT_KEY_FILE).st_mode & 0o777 == 0o600
    assert os.stat(keys / PUBLIC_KEY_FILE).st_mode & 0o777 == 0o644
    assert len(load_commitment_key(keys / COMMITMENT_KEY_FILE)) == 32
    before = (keys / KEY_FILE).read_bytes()
    with pytest.raises(FileExistsError, match="keys are never overwritten"):
        create_keys(keys)
    assert (keys / KEY_FILE).read_bytes() == before


def test_a_passphrase_encrypts_the_private_key(setup: dict[str, Any]) -> None:
    path = setup["root"] / "other" / KEY_FILE
    assert b"ENCRYPTED" in path.read_bytes()
    key = load_private_key(path, passphrase=b"correct horse")
    assert key_fingerprint(key.public_key()) == key_fingerprint(
        load_public_key(setup["root"] / "other" / PUBLIC_KEY_FILE))
    with pytest.raises(ValueError, match="wrong passphrase"):
        load_private_key(path, passphrase=b"wrong")
    with pytest.raises(ValueError, match="is encrypted; give its passphrase"):
        load_private_key(path)


def test_a_key_others_may_read_is_refused(tmp_path: Path, setup: dict[str, Any]) -> None:
    for name in (KEY_FILE, COMMITMENT_KEY_FILE):
        shutil.copy(setup["root"] / "keys" / name, tmp_path / name)
        (tmp_path / name).chmod(0o640)
    with pytest.raises(ValueError, match=r"may be read by others \(mode 0640\).*chmod 600"):
        load_private_key(tmp_path / KEY_FILE)
    with pytest.raises(ValueError, match="may be read by others"):
        load_commitment_key(tmp_path / COMMITMENT_KEY_FILE)


def test_wrong_key_files_are_named_in_one_line(tmp_path: Path, setup: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_public_key(tmp_path / "missing.pub")
    with pytest.raises(ValueError, match=r"it is a private key: give the \.pub file"):
        load_public_key(setup["root"] / "keys" / KEY_FILE)
    (tmp_path / "junk.key").write_text("not a key\n")
    (tmp_path / "junk.key").chmod(0o600)
    with pytest.raises(ValueError, match="not a private key in PEM format"):
        load_private_key(tmp_path / "junk.key")
    fingerprint = key_fingerprint(load_public_key(setup["public"]))
    assert fingerprint.startswith("SHA256:") and len(fingerprint) == 7 + 64


# ---------------------------------------------------------------------------------------------
# The document


def test_canonical_json_is_sorted_compact_utf8_and_refuses_nan() -> None:
    assert cert.canonical_json({"b": [1, 2.5], "a": "é"}) == '{"a":"é","b":[1,2.5]}'.encode()
    with pytest.raises(ValueError, match="NaN"):
        cert.canonical_json({"x": float("nan")})
    assert json_ready({"x": np.float64("nan"), "y": (np.int64(3),)}) == {"x": None,
                                                                             "y": [3]}


def test_a_signed_certificate_reads_back_and_verifies(setup: dict[str, Any]) -> None:
    path = setup["root"] / "l2" / cert.CERTIFICATE_DIRECTORY
    document = cert.read_certificate(path)
    assert document == setup["document"]
    assert set(document) == {"format", "format_version", "content", "signature"}
    assert document["signature"]["algorithm"] == "Ed25519"
    cert.check_signature(document, load_public_key(setup["public"]))
    cert.check_validity(document, now=NOW)
    metadata = json.loads((setup["root"] / "l2" / "release.json").read_text())
    cert.check_release_metadata(document, metadata)


def test_a_certificate_signed_by_another_key_is_refused(setup: dict[str, Any]) -> None:
    other = load_public_key(setup["root"] / "other" / PUBLIC_KEY_FILE)
    with pytest.raises(CertificateError, match=r"signed by another key \(SHA256:[0-9a-f]{64}, "
                                               r"expected SHA256:"):
        cert.check_signature(setup["document"], other)


def test_content_changed_after_signing_is_refused(setup: dict[str, Any]) -> None:
    changed = json.loads(json.dumps(setup["document"]))
    changed["content"]["release"]["parameters"]["l"] = 3
    with pytest.raises(CertificateError, match="does not match its content: changed after"):
        cert.check_signature(changed, load_public_key(setup["public"]))


def test_expired_and_future_certificates_are_refused(setup: dict[str, Any]) -> None:
    content = signed_content(setup["root"] / "l2", valid_until="2026-05-31T00:00:00+00:00")
    document = cert.sign_certificate(content, setup["key"])
    with pytest.raises(CertificateError, match="expired on 2026-05-31 00:00:00 UTC"):
        cert.check_validity(document, now=NOW)
    cert.check_validity(document, now=NOW - timedelta(days=2))
    future = cert.sign_certificate(signed_content(setup["root"] / "l2",
                                                  signed_at="2026-06-01T12:10:00Z"), setup["key"])
    with pytest.raises(CertificateError, match="not valid before 2026-06-01 12:10:00 UTC"):
        cert.check_validity(future, now=NOW)
    cert.check_validity(future, now=NOW + timedelta(minutes=6))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(format="arx-certificate"), "unknown format 'arx-certificate'"),
    (lambda d: d.update(format_version=2), "certificate format 2, newer than this ppdp reads"),
    (lambda d: d.update(format_version="1"), "unknown format_version '1'"),
    (lambda d: d.pop("signature"), "lacks signature"),
    (lambda d: d.update(note="unsigned"), "fields no certificate has: note"),
    (lambda d: d["signature"].update(algorithm="RSA"), "signed with 'RSA'"),
])
def test_unknown_or_malformed_certificates_get_one_clear_line(
        tmp_path: Path, setup: dict[str, Any], edit: Any, message: str) -> None:
    document = json.loads(json.dumps(setup["document"]))
    edit(document)
    path = tmp_path / cert.CERTIFICATE_FILE
    path.write_bytes(cert.certificate_bytes(document))
    with pytest.raises(CertificateError, match=message):
        cert.read_certificate(path)


def test_unreadable_certificates_are_refused(tmp_path: Path, setup: dict[str, Any],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / cert.CERTIFICATE_FILE
    with pytest.raises(CertificateError, match="does not exist"):
        cert.read_certificate(tmp_path)
    path.write_text('{"format": "ppdp-certificate", "format": "x"}')
    with pytest.raises(CertificateError, match=r"ambiguous.*'format' appears twice"):
        cert.read_certificate(path)
    path.write_text("{not json")
    with pytest.raises(CertificateError, match="is not JSON"):
        cert.read_certificate(path)
    text = cert.certificate_bytes(setup["document"])
    path.write_bytes(text.replace(b'{"content"', b'{ "content"', 1))
    with pytest.raises(CertificateError, match="not in the canonical form"):
        cert.read_certificate(path)
    monkeypatch.setattr(cert, "MAX_CERTIFICATE_BYTES", 100)
    path.write_bytes(text)
    with pytest.raises(CertificateError, match="more than any certificate holds"):
        cert.read_certificate(path)


def test_parameters_swapped_between_releases_are_found(setup: dict[str, Any]) -> None:
    root = setup["root"]
    metadata = json.loads((root / "l3" / "release.json").read_text())
    with pytest.raises(CertificateError, match=r"not this release's: parameters\['l'\] is 2 in "
                                               r"the certificate, 3 in the release"):
        cert.check_release_metadata(setup["document"], metadata)
    with pytest.raises(CertificateError, match="not this release's"):
        ppdp.load_release(root / "l3", public_key=setup["public"],
                          certificate=root / "l2" / cert.CERTIFICATE_DIRECTORY)


# ---------------------------------------------------------------------------------------------
# Loading and overwriting


def test_load_release_checks_the_certificate(setup: dict[str, Any]) -> None:
    root = setup["root"]
    release = ppdp.load_release(root / "l2", public_key=load_public_key(setup["public"]))
    assert release.parameters["l"] == 2
    with pytest.raises(CertificateError, match="signed by another key"):
        ppdp.load_release(root / "l2", public_key=root / "other" / PUBLIC_KEY_FILE)
    with pytest.raises(CertificateError, match="no certificate there"):
        ppdp.load_release(root / "l3", public_key=setup["public"])
    with pytest.raises(ValueError, match="give public_key too"):
        ppdp.load_release(root / "l2", certificate=root / "l2" / "certificate")


def test_a_certified_release_may_be_overwritten_with_its_certificate(
        tmp_path: Path, setup: dict[str, Any]) -> None:
    target = tmp_path / "release"
    shutil.copytree(setup["root"] / "l2", target)
    release = ppdp.load_release(target)
    release.save(target, overwrite=True)
    assert not (target / cert.CERTIFICATE_DIRECTORY).exists()
    shutil.copytree(setup["root"] / "l2" / "certificate", target / "certificate")
    (target / "certificate" / "notes.txt").write_text("mine")
    with pytest.raises(ReleaseError, match=r"holds files that are not part of its release "
                                           r"\(certificate\)"):
        release.save(target, overwrite=True)
    (target / "certificate" / "notes.txt").unlink()
    (target / "certificate" / "certificate.json").write_text('{"format": "other"}')
    with pytest.raises(ReleaseError, match="not part of its release"):
        release.save(target, overwrite=True)
    with pytest.raises(OutputExistsError):
        release.save(target)


def test_without_the_library_signing_names_the_extra(tmp_path: Path, setup: dict[str, Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys_module, "HAS_CRYPTOGRAPHY", False)
    with pytest.raises(MissingDependencyError, match=re.escape(
            "creating keys needs the certify extra: pip install 'ppdp[certify]'")):
        create_keys(tmp_path / "keys")
    with pytest.raises(MissingDependencyError, match="needs the certify extra"):
        ppdp.load_release(setup["root"] / "l2", public_key=setup["public"])
    assert ppdp.load_release(setup["root"] / "l2").parameters["l"] == 2
