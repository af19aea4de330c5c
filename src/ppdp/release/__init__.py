"""The release format: what a mechanism publishes, saved as Parquet files and ``release.json``
(format version, mechanism, public parameters, schema, file list, SHA-256 digests of every file
and of itself), and loaded back, verified, to answer count queries.

Modules: `base` (the Release contract and releases of rows), `format` (file names, digests,
the metadata's own digest), `write` (Parquet files, ``release.json`` last), `arrow` (rows to and
from Arrow), `target` (what may be overwritten), `verify` (digests checked on loading, the
verified ones remembered), `keys` (a signer's key files), `certificate` (the signed
certificate of a release and its checks), `load` (`load_release`, the top of the package: it
reads a release with the engine that counts it, checked against its certificate when given the
signer's public key).
"""

from __future__ import annotations

import warnings
from typing import Any

from ppdp import estimate
from ppdp.release.base import Release, RowsRelease
from ppdp.release.format import METADATA_FILE
from ppdp.release.load import load_release

__all__ = ["METADATA_FILE", "Release", "RowsRelease", "load_release"]


def __getattr__(name: str) -> Any:
    if name in ("Estimate", "GroupedEstimate"):
        warnings.warn(f"ppdp.release.{name} is deprecated and will be removed in ppdp 0.3: use "
                      f"ppdp.{name}", DeprecationWarning, stacklevel=2)
        return getattr(estimate, name)
    raise AttributeError(f"module 'ppdp.release' has no attribute {name!r}")
