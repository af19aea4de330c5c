"""Verifying a release's files on loading: each file's SHA-256 against ``release.json``,
files verified before and unchanged since remembered in the user's cache (same inode, size,
modification and status-change times). The digests catch accidents, swapped files and careless
edits; they are not a signature (anyone can recompute them)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ppdp.errors import ReleaseError
from ppdp.query.cache import FileIdentity, cache_directory, write_cache_file
from ppdp.release.format import METADATA_FILE, file_digests

FileState = tuple[int, int, int, int, int]
"""A file's device, inode, size, modification and status-change times (nanoseconds)."""

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
    states = file_states(paths)
    verified = _read_verified(_memo(root, release_digest)) if os.name == "posix" else {}
    unknown = [i for i, state in enumerate(states) if verified.get(state) != digests[names[i]]]
    for i, actual in zip(unknown, file_digests([paths[i] for i in unknown]), strict=True):
        if actual != digests[names[i]]:
            raise ReleaseError(f"{paths[i]} does not match the digest in {METADATA_FILE} "
                               f"(replaced or damaged); the release cannot be trusted: publish "
                               f"it again")
    if unknown:
        remember_verified(root, states, names, digests, release_digest)
    return [state[:4] for state in states]


def file_states(paths: Sequence[str | os.PathLike[str]]) -> list[FileState]:
    """Each file's state (device, inode, size, modification and status-change times), which
    `remember_verified` records; take it before hashing, so that a file replaced meanwhile
    does not inherit the digest."""
    stats = [os.stat(path) for path in paths]
    return [(s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats]


def remember_verified(root: Path, states: Sequence[FileState], names: Sequence[str],
                      digests: Mapping[str, str], release_digest: str) -> None:
    """Remember in the user's cache that the files of release ``release_digest`` in ``root``
    named ``names``, in ``states`` (`file_states`, taken before hashing), were hashed to their
    ``digests``: `verify_digests` then hashes them again only once changed. Only on POSIX
    systems (see `verify_digests`)."""
    if os.name != "posix":
        return
    content = json.dumps({"format": VERIFIED_FORMAT, "files": [
        [*state, digests[name]] for state, name in zip(states, names, strict=True)]})
    write_cache_file(_memo(root, release_digest), lambda handle: handle.write(content.encode()))


def _memo(root: Path, release_digest: str) -> str:
    """The name of the cache file remembering the verified files of a release in ``root``."""
    return f"{hashlib.sha256(f'{release_digest}:{root.resolve()}'.encode()).hexdigest()}.json"


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
