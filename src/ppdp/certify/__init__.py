"""Certificates of releases: what was guaranteed and measured, signed, and verified by anyone.

`build`: `certify` gathers a release's guarantee, measured privacy, attacks and accuracy by
count band and signs them (`ppdp.release.certificate`); `write_certificate` writes
certificate.json, certificate.html (`_html` and its template) and, with a browser, its PDF
(`_pdf`). `commitment`: the keyed commitment to the source data.

`verify` checks a release against its signed certificate (`ppdp.release.certificate`) with the
signer's public key (`ppdp.release.keys`): the signature, every file's digest, the release's
description and guarantee, and that it loads; given the source and the commitment key, also the
commitment to the data it was published from.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "certify": "ppdp.certify.build",
    "write_certificate": "ppdp.certify.build",
    "source_commitment": "ppdp.certify.commitment",
    "Check": "ppdp.certify.verify",
    "Verification": "ppdp.certify.verify",
    "verify": "ppdp.certify.verify",
}
"""Where each public name lives: imported on first use (PEP 562), so that verifying a release
loads neither the attacks nor the builder's statistics (about 2 s of imports)."""

__all__ = ["Check", "Verification", "certify", "source_commitment", "verify",
           "write_certificate"]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ppdp.certify' has no attribute {name!r}")


if TYPE_CHECKING:
    from ppdp.certify.build import certify, write_certificate
    from ppdp.certify.commitment import source_commitment
    from ppdp.certify.verify import Check, Verification, verify
