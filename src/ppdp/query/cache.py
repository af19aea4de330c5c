"""The user's cache of what was counted from a release's files, kept by the files'
content (SHA-256), bounded in size, written atomically."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

CACHE_FORMAT = 1
"""Version of the files in the summary cache (`cache_directory`); others are ignored."""


MAX_CACHE_BYTES = 1 << 30
"""Size of the summary cache beyond which the least recently used files are deleted."""


FileIdentity = tuple[int, int, int, int]


def file_identity(path: str | os.PathLike[str]) -> FileIdentity:
    """Device, inode, size and modification time: what changes when a file is replaced."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def cache_directory() -> Path | None:
    """Where ppdp keeps what it learnt of releases loaded before (`ScanCube`'s summaries of
    their rows, the files whose digests were verified): ``$PPDP_CACHE_DIR`` (empty: no
    cache), else ``$XDG_CACHE_HOME/ppdp``, else ``~/.cache/ppdp``.

    The directory is created private (0700) and used only while it belongs to this user and no
    one else may write to it, as ssh treats its keys: what is read from it is trusted to be
    what this user's ppdp wrote. None when there is to be no cache or it cannot be used."""
    chosen = os.environ.get("PPDP_CACHE_DIR")
    if chosen is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        chosen = os.path.join(base, "ppdp")
    if not chosen:
        return None
    directory = Path(chosen)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        stat = directory.lstat()
    except OSError:
        return None
    owner = getattr(os, "getuid", None)
    private = (stat.st_mode & 0o022 == 0 and (owner is None or stat.st_uid == owner()))
    return directory if directory.is_dir() and not directory.is_symlink() and private else None


def _arrays_digest(key: str, arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of a cache file's key and arrays (names, types, shapes and bytes)."""
    digest = hashlib.sha256(key.encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}:".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def write_cache_file(name: str, write: Callable[[BinaryIO], object]) -> None:
    """Write a file of the cache (aside, then renamed: readers never see half of one), then
    trim the cache; a cache that cannot be written is no cache, so failures pass silently."""
    directory = cache_directory()
    if directory is None:
        return
    try:
        descriptor, staged = tempfile.mkstemp(dir=directory, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        os.replace(staged, directory / name)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        return
    _trim_cache(directory)


def _trim_cache(directory: Path) -> None:
    """Delete the least recently used files beyond `MAX_CACHE_BYTES` in all."""
    entries = []
    for entry in directory.iterdir():
        if entry.suffix == ".tmp":  # being written
            continue
        with contextlib.suppress(OSError):  # another process may be trimming too
            stat = entry.stat()
            entries.append((stat.st_mtime_ns, stat.st_size, entry))
    total = 0
    for _, size, entry in sorted(entries, reverse=True):
        total += size
        if total > MAX_CACHE_BYTES:
            with contextlib.suppress(OSError):
                entry.unlink()
