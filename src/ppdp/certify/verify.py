"""Verifying a release against its signed certificate, without the source data.

    result = verify("adult-anatomy", public_key="keys/signing.pub")
    result.ok          # every check holds
    result.checks      # [Check(name, ok, detail), ...], in the order below

The checks, each one line: the certificate can be read (a ppdp certificate of a format this
ppdp reads); the public key signed it and nothing in it changed since; it is in force (not
expired, not signed in the future); each release file's SHA-256, hashed afresh, is the one the
certificate records; ``release.json`` is the one the certificate records (its parameters,
schema, digests and its own digest); the guarantee the certificate states is the mechanism's
for those parameters (`recompute_guarantee`); and the release loads. With the source and the
commitment key, also the keyed commitment to the source (`ppdp.certify.commitment`).

Checks after a failed one still run where they can (a changed file does not keep the others
from being reported), except that nothing is checked without a readable certificate and a key.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdp.certify.commitment import source_commitment, source_table
from ppdp.data.schema import Schema
from ppdp.errors import CertificateError, PpdpError, ReleaseError, first_line
from ppdp.jsonable import json_ready
from ppdp.mechanisms.base import mechanism_with
from ppdp.release.certificate import (
    CERTIFICATE_DIRECTORY,
    CERTIFICATE_FILE,
    canonical_json,
    certificate_path,
    check_release_metadata,
    check_signature,
    check_validity,
    read_certificate,
    short_json,
)
from ppdp.release.format import (
    MAX_METADATA_BYTES,
    METADATA_FILE,
    file_digests,
    metadata_bytes,
    metadata_digest,
    parse_metadata,
)
from ppdp.release.keys import load_public_key
from ppdp.release.load import load_release
from ppdp.release.verify import file_states, remember_verified
from ppdp.table.table import Table

if TYPE_CHECKING:  # the certify extra
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["Check", "Verification", "recompute_guarantee", "verify"]

NOT_RECOMPUTABLE = "recorded, not recomputable without the source"


@dataclass(frozen=True)
class Check:
    """One check of a verification: its name, whether it holds, and what was found."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class Verification:
    """The checks of a release against its certificate (`verify`); ``ok`` if all hold."""

    release: str
    certificate: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether there were checks and every one holds."""
        return bool(self.checks) and all(check.ok for check in self.checks)

    def failed(self) -> list[Check]:
        """The checks that do not hold."""
        return [check for check in self.checks if not check.ok]

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, "certificate": self.certificate, "ok": self.ok,
                "checks": [check.to_dict() for check in self.checks]}


def verify(release: str | os.PathLike[str], *, certificate: str | os.PathLike[str] | None = None,
           public_key: str | os.PathLike[str] | Ed25519PublicKey,
           source: str | os.PathLike[str] | None = None, commitment_key: bytes | None = None,
           table: Table | None = None) -> Verification:
    """Check the release in directory ``release`` against its certificate (``certificate``:
    its certificate.json or directory; default ``RELEASE/certificate``) signed with
    ``public_key`` (a PEM file or a key).

    With ``source`` (the file or bundled dataset it was published from) and
    ``commitment_key`` (the custodian's), the source commitment is checked too; ``table`` is
    the source as read when reading it needs options (a separator, say; by default it is
    read with the release's domains)."""
    root = Path(release)
    cert = certificate_path(certificate if certificate is not None
                            else root / CERTIFICATE_DIRECTORY / CERTIFICATE_FILE)
    result = Verification(str(root), str(cert))
    if (source is None) != (commitment_key is None):
        raise ValueError("the source commitment is checked with both the source and the "
                         "commitment key; give both or neither")
    checks = result.checks
    document = _run(checks, "certificate", lambda: _read(cert))
    if document is None:
        return result
    key = _run(checks, "signature", lambda: _signature(document, public_key))
    if key is None:
        return result
    _run(checks, "validity", lambda: _validity(document))
    _run(checks, "files", lambda: _files(root, document))
    _run(checks, METADATA_FILE, lambda: _metadata(root, document))
    _run(checks, "guarantee", lambda: recompute_guarantee(document["content"]))
    _run(checks, "loads", lambda: _loads(root, cert, key))
    if source is not None and commitment_key is not None:
        _run(checks, "source commitment",
             lambda: _commitment(document, source, commitment_key, table))
    return result


def _run(checks: list[Check], name: str, check: Callable[[], tuple[Any, str]]) -> Any:
    """Run ``check`` (its value and what it found), appending its `Check`; its value, or
    None when it fails with an expected error (its message is the detail)."""
    try:
        value, detail = check()
    except (PpdpError, ValueError, OSError) as exc:
        checks.append(Check(name, False, first_line(exc)))
        return None
    checks.append(Check(name, True, detail))
    return value


def _read(path: Path) -> tuple[dict[str, Any], str]:
    document = read_certificate(path)
    return document, f"a ppdp certificate, format {document['format_version']}"


def _signature(document: Mapping[str, Any], public_key: Any) -> tuple[Any, str]:
    key = load_public_key(public_key) if isinstance(public_key, str | os.PathLike) \
        else public_key
    check_signature(document, key)
    return key, f"signed by {document['signature']['key_fingerprint']}"


def _validity(document: Mapping[str, Any]) -> tuple[None, str]:
    check_validity(document)
    content = document["content"]
    until = content.get("valid_until")
    return None, f"signed {content['signed_at']}, " + (f"valid until {until}" if until
                                                      else "no expiry date")


def _files(root: Path, document: Mapping[str, Any]) -> tuple[None, str]:
    """Every file the certificate lists, hashed afresh (no cache: a verifier trusts none);
    the files that match are remembered in the cache as `ppdp.release.verify` does."""
    digests = document["content"]["release"].get("digests")
    if not isinstance(digests, dict) or not digests or not all(
            isinstance(name, str) and Path(name).name == name and isinstance(value, str)
            for name, value in digests.items()):
        raise CertificateError("the certificate lists no valid file digests")
    names = sorted(digests)
    missing = [name for name in names if not (root / name).is_file()]
    if missing:
        raise ReleaseError(f"{root} is missing {missing[0]!r}, which the certificate lists"
                           + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    paths = [root / name for name in names]
    states = file_states(paths)  # before hashing: a file replaced meanwhile is not remembered
    actual = file_digests(paths)
    changed = [name for name, value in zip(names, actual, strict=True) if value != digests[name]]
    if changed:
        raise ReleaseError(f"{changed[0]} differs from the file that was signed (its SHA-256 "
                           f"is not the certificate's)"
                           + (f"; {len(changed) - 1} more files too" if len(changed) > 1 else ""))
    # Remembered as loading would remember them (same release digest, the one load_release
    # passes if release.json is the signed one), so that the loads check hashes none again.
    release_digest = document["content"]["release"].get("metadata_digest")
    if isinstance(release_digest, str):
        remember_verified(root, states, names, digests, release_digest)
    total = sum(state[2] for state in states)
    files = "1 file" if len(names) == 1 else f"{len(names)} files"
    return None, f"{files} ({total:,} bytes) match their signed SHA-256 digests"


def _metadata(root: Path, document: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    path = root / METADATA_FILE
    try:
        if path.stat().st_size > MAX_METADATA_BYTES:
            raise ReleaseError(f"{path} is larger than any release description")
        content = path.read_bytes()
        metadata = parse_metadata(content)
    except FileNotFoundError:
        raise ReleaseError(f"{root} has no {METADATA_FILE}") from None
    except (ValueError, RecursionError) as exc:
        raise ReleaseError(f"{path} is corrupt: {first_line(exc)}") from None
    if not isinstance(metadata, dict):
        raise ReleaseError(f"{path} is not a release description")
    check_release_metadata(document, metadata)
    if metadata_digest(metadata) != metadata.get("metadata_digest"):
        raise ReleaseError(f"{path} was changed: its content is not the one its signed digest "
                           f"covers")
    if content != metadata_bytes(metadata):
        raise ReleaseError(f"{path} is not byte for byte the file that was certified (its "
                           f"layout was edited)")
    return metadata, (f"{metadata['mechanism']} with {short_json(metadata['parameters'])}, "
                      f"{metadata['n_rows']:,} rows, as signed")


def recompute_guarantee(content: Mapping[str, Any]) -> tuple[None, str]:
    """Check the certificate's guarantee against the mechanism's for the release's
    parameters; raise `CertificateError` on a difference.

    A guarantee that depends on the table is recomputed with the domain size m and the row
    count n taken from the release (the sensitive columns' domains, its rows) or, failing
    that, as the certificate records them; one that depends on more of the table (the
    partition of perturbation partitioning) is said to be recorded, not recomputable."""
    summary = content["release"]
    recorded = content.get("guarantee")
    mechanism = mechanism_with(summary["mechanism"], summary["parameters"])
    cls = type(mechanism)
    if recorded is None:
        return None, "none recorded"
    if not isinstance(recorded, dict):
        raise CertificateError("the certificate's guarantee is not a JSON object")
    options = {p.name: recorded[p.name] for p in cls.guarantee_parameters if p.name in recorded}
    candidates: list[tuple[str, dict[str, Any]]] = []
    if cls.guarantee_uses_table:
        from_release = _table_size(summary, options)
        if from_release:
            candidates.append((" and the release's m and n", {**options, **from_release}))
        candidates.append((" and m and n as recorded", options))
    else:
        candidates.append(("", options))
    difference = None
    for source, values in candidates:
        try:
            actual = json_ready(mechanism.guarantee(**values).to_dict())
        except (PpdpError, ValueError, TypeError) as exc:
            difference = f"it cannot be recomputed: {first_line(exc)}"
            continue
        if canonical_json(actual) == canonical_json(recorded):
            return None, f"recomputed from the release's parameters{source}: the same"
        difference = _difference(recorded, actual)
    if cls.guarantee_uses_table:
        return None, NOT_RECOMPUTABLE
    raise CertificateError(f"the certificate's guarantee is not {cls.name}'s for the release's "
                           f"parameters: {difference}")


def _table_size(summary: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, int]:
    """m (the sensitive columns' joint domain size) and n (the rows) from the release, for
    the guarantee options among them."""
    values: dict[str, int] = {}
    if "n" in options:
        values["n"] = int(summary["n_rows"])
    if "m" in options:
        try:
            schema = Schema.from_json(summary["schema"])
        except (PpdpError, ValueError, TypeError, KeyError):
            return values
        sizes = [schema[name].size for name in schema.sensitive]
        if sizes:
            values["m"] = math.prod(sizes)
    return values


def _difference(recorded: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    for key in sorted(set(recorded) | set(actual)):
        a, b = recorded.get(key), actual.get(key)
        if canonical_json(a) != canonical_json(b):
            return f"{key} is {short_json(a)} in the certificate, {short_json(b)} recomputed"
    return "they differ"


def _loads(root: Path, certificate: Path, key: Any) -> tuple[None, str]:
    release = load_release(root, public_key=key, certificate=certificate)
    return None, f"loads as a {release.mechanism} release of {release.n_rows:,} rows"


def _commitment(document: Mapping[str, Any], source: str | os.PathLike[str],
                key: bytes, table: Table | None) -> tuple[None, str]:
    recorded = (document["content"].get("source") or {}).get("commitment")
    if not isinstance(recorded, dict):
        raise CertificateError("the certificate records no source commitment")
    if table is None:
        table = source_table(source, Schema.from_json(document["content"]["release"]["schema"]))
    actual = source_commitment(source, table, key)
    for part in ("file", "table"):
        if actual.get(part) != recorded.get(part):
            what = "the source file's bytes" if part == "file" else "the table as read"
            raise CertificateError(f"the source commitment does not match {what}: not the data "
                                   f"that was certified, or another commitment key")
    return None, f"the source {Path(source).name} and the table as read are the ones certified"
