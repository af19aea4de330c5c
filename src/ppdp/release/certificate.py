"""The signed certificate of a release: its format, its signature and its checks.

A certificate (``certificate.json``) is canonical JSON (`canonical_json`): ``format``
(`CERTIFICATE_FORMAT`), ``format_version``, ``content`` (what the signer states: the
release's summary, `release_summary`, its guarantee, what was measured, who signed and when)
and ``signature``, an Ed25519 signature of the canonical JSON of the first three. Anyone with
the signer's public key checks, each in one line on failure (`CertificateError`): that the
file is a certificate (`read_certificate`), that the key signed it and nothing changed since
(`check_signature`), that it is in force (`check_validity`) and that it is the certificate of
the release at hand (`check_release_metadata`: the release's digests of every file and of its
description are in the signed content, so no byte of the release changes unnoticed).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ppdp.errors import CertificateError, first_line
from ppdp.jsonable import json_ready
from ppdp.release.format import DuplicateKeyError, parse_metadata
from ppdp.release.keys import key_fingerprint, require_cryptography

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )
except ImportError:  # the certify extra: `require_cryptography` says so where it is needed
    pass

__all__ = [
    "CERTIFICATE_DIRECTORY",
    "CERTIFICATE_FILE",
    "CERTIFICATE_FORMAT",
    "CERTIFICATE_NAMES",
    "CERTIFICATE_VERSION",
    "HTML_FILE",
    "MAX_CERTIFICATE_BYTES",
    "PDF_FILE",
    "canonical_json",
    "certificate_bytes",
    "check_release_metadata",
    "check_signature",
    "check_validity",
    "read_certificate",
    "release_summary",
    "short_json",
    "sign_certificate",
]

CERTIFICATE_FORMAT = "ppdp-certificate"
CERTIFICATE_VERSION = 1
CERTIFICATE_FILE = "certificate.json"
CERTIFICATE_DIRECTORY = "certificate"
"""The default place of a release's certificate: ``RELEASE/certificate/``."""
HTML_FILE = "certificate.html"
"""The certificate's page, beside its ``certificate.json``."""
PDF_FILE = "certificate.pdf"
"""The certificate's page printed, where a browser was found to print it."""
CERTIFICATE_NAMES = frozenset({CERTIFICATE_FILE, HTML_FILE, PDF_FILE})
"""The files a certificate directory holds (replaced with the release it certifies)."""
MAX_CERTIFICATE_BYTES = 16 << 20
SIGNATURE_ALGORITHM = "Ed25519"
CLOCK_SKEW = timedelta(minutes=5)
"""How far in the future ``signed_at`` may be (the signer's clock ahead of the reader's)."""
SUMMARY_FIELDS = ("mechanism", "parameters", "n_rows", "schema", "format_version",
                  "metadata_digest", "digests")
"""What a certificate records of its release's ``release.json`` (`release_summary`), in the
order `check_release_metadata` compares them."""
_DOCUMENT_KEYS = frozenset({"format", "format_version", "content", "signature"})
_SIGNATURE_KEYS = frozenset({"algorithm", "key_fingerprint", "value"})


def canonical_json(value: Any) -> bytes:
    """The canonical JSON of ``value``: keys sorted, no whitespace, UTF-8 (not escaped to
    ASCII). NaN and infinities are refused (`ppdp.jsonable.json_ready` turns them into null
    first)."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"a certificate holds no NaN or infinity (make it JSON-safe first): "
                         f"{exc}") from None
    return text.encode("utf-8")


def _signed_part(document: Mapping[str, Any]) -> bytes:
    """The bytes the signature covers: the canonical JSON of format, version and content."""
    return canonical_json({"format": document["format"],
                           "format_version": document["format_version"],
                           "content": document["content"]})


def sign_certificate(content: Mapping[str, Any], private_key: Ed25519PrivateKey
                     ) -> dict[str, Any]:
    """The certificate of ``content`` signed with ``private_key`` (Ed25519)."""
    require_cryptography()
    document: dict[str, Any] = {"format": CERTIFICATE_FORMAT,
                                "format_version": CERTIFICATE_VERSION,
                                "content": dict(content)}
    value = private_key.sign(_signed_part(document))
    document["signature"] = {"algorithm": SIGNATURE_ALGORITHM,
                             "key_fingerprint": key_fingerprint(private_key.public_key()),
                             "value": base64.b64encode(value).decode("ascii")}
    return document


def certificate_bytes(document: Mapping[str, Any]) -> bytes:
    """The bytes of ``certificate.json``: the document's canonical JSON and a newline."""
    return canonical_json(document) + b"\n"


def certificate_path(path: str | os.PathLike[str]) -> Path:
    """``path`` itself, or the certificate file in it when it is a directory."""
    path = Path(path)
    return path / CERTIFICATE_FILE if path.is_dir() else path


def read_certificate(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The certificate in ``path`` (``certificate.json``, or a directory holding it), checked
    to be a well-formed certificate of a format this ppdp reads (not yet its signature)."""
    file = certificate_path(path)
    try:
        size = file.stat().st_size
        if size > MAX_CERTIFICATE_BYTES:
            raise CertificateError(f"{file} is {size:,} bytes, more than any certificate "
                                   f"holds ({MAX_CERTIFICATE_BYTES:,}); it is not a certificate")
        with open(file, "rb") as handle:
            data = handle.read(MAX_CERTIFICATE_BYTES + 1)
    except FileNotFoundError:
        raise CertificateError(f"{file} does not exist: no certificate there") from None
    except IsADirectoryError:
        raise CertificateError(f"{file} is a directory, not a certificate") from None
    except OSError as exc:
        raise CertificateError(f"{file} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_CERTIFICATE_BYTES:
        raise CertificateError(f"{file} is more than {MAX_CERTIFICATE_BYTES:,} bytes; it is "
                               f"not a certificate")
    try:
        document = parse_metadata(data)
    except DuplicateKeyError as exc:
        raise CertificateError(f"{file} is ambiguous: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise CertificateError(f"{file} is not JSON: {first_line(exc)}") from None
    document = check_document(document, file)
    if data != certificate_bytes(document):
        # The signature covers the parsed content: bytes JSON ignores (spacing, escapes)
        # must not change unnoticed either.
        raise CertificateError(f"{file} is not in the canonical form it was signed in "
                               f"(changed after signing)")
    return document


def check_document(document: Any, where: object = "the certificate") -> dict[str, Any]:
    """``document`` if it has a certificate's form, of this format and version."""
    if not isinstance(document, dict) or "format" not in document:
        raise CertificateError(f"{where} is not a ppdp certificate (no format)")
    if document["format"] != CERTIFICATE_FORMAT:
        raise CertificateError(f"{where} is of an unknown format {document['format']!r}, not "
                               f"{CERTIFICATE_FORMAT!r}")
    version = document.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CertificateError(f"{where} has an unknown format_version {version!r}")
    if version > CERTIFICATE_VERSION:
        raise CertificateError(f"{where} is in certificate format {version}, newer than this "
                               f"ppdp reads ({CERTIFICATE_VERSION}); upgrade ppdp")
    missing = sorted(_DOCUMENT_KEYS - set(document))
    if missing:
        raise CertificateError(f"{where} lacks {', '.join(missing)}")
    extra = sorted(set(document) - _DOCUMENT_KEYS)
    if extra:  # outside the signature: nothing unsigned is accepted
        raise CertificateError(f"{where} holds fields no certificate has: {', '.join(extra)}")
    content, signature = document["content"], document["signature"]
    if not isinstance(content, dict) or not isinstance(content.get("release"), dict):
        raise CertificateError(f"{where} has no valid content (with the release it certifies)")
    if not (isinstance(signature, dict) and set(signature) == _SIGNATURE_KEYS
            and all(isinstance(v, str) for v in signature.values())):
        raise CertificateError(f"{where} has no valid signature (algorithm, key_fingerprint, "
                               f"value)")
    if signature["algorithm"] != SIGNATURE_ALGORITHM:
        raise CertificateError(f"{where} is signed with {signature['algorithm']!r}; ppdp "
                               f"verifies {SIGNATURE_ALGORITHM} signatures")
    try:
        canonical_json(content)
    except ValueError:  # NaN or infinity, which Python's reader accepts and JSON has not
        raise CertificateError(f"{where} holds NaN or infinity, which no certificate "
                               f"holds") from None
    return document


def check_signature(document: Mapping[str, Any], public_key: Ed25519PublicKey) -> None:
    """Raise unless ``public_key`` signed ``document`` and nothing in it changed since."""
    require_cryptography()
    expected = key_fingerprint(public_key)
    signature = document["signature"]
    if signature["key_fingerprint"] != expected:
        raise CertificateError(f"the certificate is signed by another key "
                               f"({signature['key_fingerprint']}, expected {expected})")
    try:
        value = base64.b64decode(signature["value"], validate=True)
        public_key.verify(value, _signed_part(document))
    except (binascii.Error, ValueError, InvalidSignature):
        raise CertificateError("the certificate's signature does not match its content: "
                               "changed after signing") from None


def check_validity(document: Mapping[str, Any], *, now: datetime | None = None) -> None:
    """Raise if the certificate has expired (``valid_until`` past) or is signed in the
    future (``signed_at`` later than ``now`` by more than `CLOCK_SKEW`)."""
    content = document["content"]
    now = now or datetime.now(UTC)
    signed_at = _instant(content.get("signed_at"), "signed_at")
    if signed_at is None:
        raise CertificateError("the certificate has no signed_at")
    if signed_at > now + CLOCK_SKEW:
        raise CertificateError(f"the certificate is not valid before {_shown(signed_at)} (its "
                               f"signing time, in the future)")
    valid_until = _instant(content.get("valid_until"), "valid_until")
    if valid_until is not None and valid_until < now:
        raise CertificateError(f"the certificate expired on {_shown(valid_until)}")


def _instant(value: Any, name: str) -> datetime | None:
    """An ISO 8601 time in UTC (None stays None)."""
    if value is None:
        return None
    try:
        instant = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise CertificateError(f"the certificate's {name} is not an ISO 8601 time with its "
                               f"time zone: {value!r}")
    return instant.astimezone(UTC)


def _shown(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%d %H:%M:%S UTC")


def release_summary(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What a certificate records of a release, from its ``release.json``: mechanism,
    parameters, n_rows, schema, format_version, metadata_digest and the files' digests."""
    return {field: json_ready(metadata.get(field)) for field in SUMMARY_FIELDS}


def check_release_metadata(document: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
    """Raise unless the certificate's release is the one described by ``metadata`` (its
    ``release.json``), naming the first difference."""
    recorded = document["content"]["release"]
    actual = release_summary(metadata)
    for field in SUMMARY_FIELDS:
        if field not in recorded:
            raise CertificateError(f"the certificate does not record the release's {field}")
        difference = _first_difference(recorded[field], actual[field], field)
        if difference is not None:
            raise CertificateError(f"the certificate is not this release's: {difference}")


def _first_difference(recorded: Any, actual: Any, where: str) -> str | None:
    """Where two JSON values first differ, with both values shortened (None: equal)."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in sorted(set(recorded) | set(actual)):
            inner = f"{where}[{key!r}]"
            if key not in actual:
                return f"{inner} is in the certificate, not in the release"
            if key not in recorded:
                return f"{inner} is in the release, not in the certificate"
            found = _first_difference(recorded[key], actual[key], inner)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list) and len(recorded) == len(actual):
        for index, (a, b) in enumerate(zip(recorded, actual, strict=True)):
            found = _first_difference(a, b, f"{where}[{index}]")
            if found is not None:
                return found
        return None
    if canonical_json(recorded) == canonical_json(actual):
        return None
    return (f"{where} is {short_json(recorded)} in the certificate, {short_json(actual)} in "
            f"the release")


def short_json(value: Any, limit: int = 60) -> str:
    """``value`` as compact JSON (`ppdp.jsonable.json_ready` first), cut to ``limit``
    characters, for messages."""
    text = canonical_json(json_ready(value)).decode("utf-8")
    return text if len(text) <= limit else text[:limit - 3] + "..."
