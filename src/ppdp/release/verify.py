"""Verifying a release's files on loading: each file's SHA-256 against ``release.json``,
files verified before and unchanged since remembered in the user's cache (same inode, size,
modification and status-change times). The digests catch accidents, swapped files and careless
edits; they are not a signature (anyone can recompute them)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from ppdp.errors import ReleaseError
from ppdp.query.cache import FileIdentity, cache_directory, write_cache_file
from ppdp.release.format import METADATA_FILE, file_digests

VERIFIED_FORMAT = 1
"""Version of the files remembering verified digests in the user's cache; others are
ignored."""


def verify_digests(root: Path, files: Mapping[str, os.PathLike[str]],
                   digests: Mapping[str, str], release_digest: str) -> list[FileIdentity]:
    """Check every file of a release against its SHA-256 digest; their identities, taken
    before hashing (a file replaced meanwhile does not inherit the digest).

    ``files`` gives where each file named in ``digests`` is read: the files that
    `ppdp.release.load` opened (`ppdp.io.snapshot.SnapshotFile`), so that what is verified is
    what is read after.

    Hashing costs about a second per GB and core, so files already verified whose inode,
    size, modification and status-change times are unchanged are not hashed again: they are
    remembered in the user's cache (`ppdp.query.cache_directory`), per release and directory.
    Any write to a file, and any reset of its modification time, moves its status-change time,
    which no user can set; so this is as safe as hashing, short of someone who may write to
    the cache. Only on POSIX systems, where the status-change time is that."""
    names = list(digests)
    paths = [files[name] for name in names]
    stats = [os.stat(path) for path in paths]
    states = [(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats]
    memo = f"{hashlib.sha256(f'{release_digest}:{root.resolve()}'.encode()).hexdigest()}.json"
    verified = _read_verified(memo) if os.name == "posix" else {}
    unknown = [i for i, state in enumerate(states) if verified.get(state) != digests[names[i]]]
    for i, actual in zip(unknown, file_digests([paths[i] for i in unknown]), strict=True):
        if actual != digests[names[i]]:
            raise ReleaseError(f"{paths[i]} does not match the digest in {METADATA_FILE} "
                               f"(replaced or damaged); the release cannot be trusted: publish "
                               f"it again")
    if unknown and os.name == "posix":
        content = json.dumps({"format": VERIFIED_FORMAT, "files": [
            [*state, digests[name]] for state, name in zip(states, names, strict=True)]})
        write_cache_file(memo, lambda handle: handle.write(content.encode()))
    return [state[:4] for state in states]


def _read_verified(name: str) -> dict[tuple[int, ...], str]:
    """Digests of files verified before, by their state (device, inode, size, times)."""
    directory = cache_directory()
    try:
        content = json.loads((directory / name).read_text()) if directory else None
        if not isinstance(content, dict) or content.get("format") != VERIFIED_FORMAT:
            return {}
        return {tuple(int(v) for v in entry[:5]): str(entry[5]) for entry in content["files"]}
    # Whatever is wrong with the file (missing, damaged, edited), every file is hashed.
    except Exception:
        return {}
