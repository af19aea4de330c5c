"""The release format: ``release.json`` and the Parquet files it lists (a table whole, or in
parts), with the SHA-256 digest of every file and of the description itself."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ppdp.workers import run_all

FORMAT_NAME = "ppdp-release"


FORMAT_VERSION = 2


METADATA_FILE = "release.json"


MAX_METADATA_BYTES = 256 << 20
"""The largest ``release.json`` written or read: room for a declared domain of the most
values a ``min..max`` may span (`ppdp.data.domains.MAX_BOUNDED_VALUES`: 169 MB as written for
0..9,999,999), while a file padded beyond any release (its digest covers its parsed content,
not its bytes) is refused before it is read."""


def part_names(stem: str, parts: int) -> list[str]:
    """File names of a published table written in ``parts`` parts (one: ``STEM.parquet``)."""
    if parts == 1:
        return [f"{stem}.parquet"]
    return [f"{stem}-{index:05d}.parquet" for index in range(parts)]


def release_file_names(files: Mapping[str, Any]) -> list[str]:
    """Every data file a release's ``files`` entry lists (a name, or a list of parts)."""
    names: list[str] = []
    for entry in files.values():
        names.extend(entry if isinstance(entry, list) else [entry])
    return names


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice (which one would count is not said)."""


def parse_metadata(text: str | bytes) -> Any:
    """``release.json``'s content, refusing duplicate keys (`DuplicateKeyError`): JSON leaves
    their meaning open, and Python's reader would silently keep the last."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def metadata_digest(metadata: Mapping[str, Any]) -> str:
    """SHA-256 of ``release.json``'s content (all but this digest), in canonical JSON."""
    content = {k: v for k, v in metadata.items() if k != "metadata_digest"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def metadata_bytes(metadata: Mapping[str, Any]) -> bytes:
    """The bytes of ``release.json`` as ppdp writes them (indented JSON, in the metadata's
    order, and a newline): the same again from the file's parsed content, so a certificate's
    check sees any byte of the file changed, even where JSON ignores it."""
    return (json.dumps(metadata, indent=2) + "\n").encode()


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, as hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_digests(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """SHA-256 of several files, as hex, a file a worker (`ppdp.workers`): hashlib releases
    the GIL while it hashes, so the parts of a large release are hashed on every core."""
    return run_all(file_digest, list(paths))
