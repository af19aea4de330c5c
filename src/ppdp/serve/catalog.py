"""The releases of a directory, by name: loaded on first use, verified, kept, and loaded again
when the directory was replaced on disk (`Catalog`).

A release is saved over an old one by exchanging the directories (`ppdp.io.storage`), so a
replaced release has a new directory, and its ``release.json`` a new inode and time. Each
request compares those (two ``stat`` calls, three with the certificate when certificates are
checked) with the ones seen when the release was loaded, or refused, and loads it again if they
differ: a release that failed its checks is refused without reading its files again.
`ppdp.release.load.load_release` reads a release through a snapshot of its directory: the
release loaded is the old one or the new one, whole, and a request being answered keeps the
release it started with.

A name is a single component of a path, and only names of release directories directly in
the directory are served: no ``..``, no separators, no hidden names (the staging directories
of a save in progress), no symbolic links (which could lead out of the directory)."""

from __future__ import annotations

import functools
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.errors import PpdpError, ReleaseError
from ppdp.release.base import Release
from ppdp.release.format import METADATA_FILE
from ppdp.release.keys import load_public_key
from ppdp.release.load import load_release

__all__ = ["CERTIFICATE_FILE", "Catalog", "Entry", "UnknownReleaseError", "release_loader"]

CERTIFICATE_FILE = Path("certificate") / "certificate.json"
"""Where a certified release keeps its certificate: a new certificate means a new check."""

Loader = Callable[[Path], Release]


class UnknownReleaseError(PpdpError, LookupError):
    """No release of that name is served (the HTTP answer: 404)."""


@dataclass(frozen=True)
class Entry:
    """A loaded release, the identity of its files when it was loaded, and the lock that
    makes its counts one at a time (its caches are filled as it answers)."""

    release: Release
    identity: tuple[Any, ...]
    lock: threading.Lock


def release_loader(public_key: Path | None) -> Loader:
    """How the server loads a release: `load_release`, given the public key its certificate
    must verify with when one is configured, read here once (a key file that is not an
    Ed25519 public key, or a missing certify extra, is refused before the server starts)."""
    if public_key is None:
        return load_release
    return functools.partial(load_release, public_key=load_public_key(public_key))


class Catalog:
    """The releases in ``directory``, loaded by ``loader`` on first use and again when their
    files change (module docstring). Thread-safe: requests run on a pool of threads."""

    def __init__(self, directory: Path, *, loader: Loader = load_release,
                 certified: bool = False) -> None:
        self.directory = directory
        self._loader = loader
        self._certified = certified
        self._entries: dict[str, Entry] = {}
        # A release that failed its checks, with the identity it was read at: refused again
        # without reading its files until they are replaced.
        self._failures: dict[str, tuple[tuple[Any, ...], ReleaseError]] = {}
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}

    def names(self) -> list[str]:
        """The names of the release directories, sorted."""
        try:
            children = sorted(os.listdir(self.directory))
        except OSError as exc:
            raise ReleaseError(f"the directory of releases cannot be read: "
                               f"{exc.strerror or exc}") from None
        return [name for name in children if self._identity(name) is not None]

    def get(self, name: str) -> Entry:
        """The release ``name``, loaded (again) if its files are not the ones loaded;
        `UnknownReleaseError` if there is no such release."""
        identity = self._identity(name)
        if identity is None:
            with self._lock:  # a release removed from the directory is no longer kept
                self._entries.pop(name, None)
                self._failures.pop(name, None)
            raise UnknownReleaseError(f"no release named {name!r}")
        with self._lock:
            entry = self._entries.get(name)
            loading = self._loading.setdefault(name, threading.Lock())
        if entry is not None and entry.identity == identity:
            return entry
        # One load per release at a time: the requests that arrive meanwhile wait for it.
        with loading:
            with self._lock:
                entry = self._entries.get(name)
            identity = self._identity(name)
            if identity is None:
                raise UnknownReleaseError(f"no release named {name!r}")
            if entry is not None and entry.identity == identity:
                return entry
            with self._lock:
                failed = self._failures.get(name)
            if failed is not None and failed[0] == identity:
                raise failed[1]
            try:
                release = self._loader(self.directory / name)
            except ReleaseError as exc:
                # The server's directory is the operator's business, not the client's.
                refused = ReleaseError(f"release {name!r} cannot be served: "
                                       f"{str(exc).replace(str(self.directory), 'DIR')}")
                with self._lock:
                    self._failures[name] = (identity, refused)
                raise refused from None
            # The identity read before loading: if the release was replaced meanwhile, the
            # next request sees a newer one and loads it again.
            entry = Entry(release, identity, threading.Lock())
            with self._lock:
                self._entries[name] = entry
                self._failures.pop(name, None)
            return entry

    def _identity(self, name: str) -> tuple[Any, ...] | None:
        """What changes when the release ``name`` is replaced: the inode and time of its
        directory and of its ``release.json`` (and of its certificate, when certificates are
        checked); None if ``name`` is not a release directory of the catalog."""
        if not _plain_name(name):
            return None
        path = self.directory / name
        try:
            folder = os.lstat(path)
            if not stat.S_ISDIR(folder.st_mode):
                return None
            metadata = os.stat(path / METADATA_FILE)
        except (OSError, ValueError):
            return None
        identity: tuple[Any, ...] = (folder.st_dev, folder.st_ino, folder.st_mtime_ns,
                                     metadata.st_ino, metadata.st_mtime_ns, metadata.st_size)
        if self._certified:
            try:
                certificate = os.stat(path / CERTIFICATE_FILE)
                identity += (certificate.st_ino, certificate.st_mtime_ns, certificate.st_size)
            except OSError:
                identity += (None,)
        return identity


def _plain_name(name: str) -> bool:
    """Whether ``name`` is one visible component of a path: no separator, no ``.`` or
    ``..``, not hidden, no NUL."""
    return (bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name
            and "\0" not in name and os.sep not in name
            and (os.altsep is None or os.altsep not in name))
