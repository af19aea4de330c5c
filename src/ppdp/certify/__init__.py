"""Certificates of releases: what was guaranteed and measured, signed, and verified by anyone.

`verify` checks a release against its signed certificate (`ppdp.release.certificate`) with the
signer's public key (`ppdp.release.keys`): the signature, every file's digest, the release's
description and guarantee, and that it loads; given the source and the commitment key, also the
commitment to the data it was published from.
"""

from ppdp.certify.verify import Check, Verification, verify

__all__ = ["Check", "Verification", "verify"]
