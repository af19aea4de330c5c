"""A directory's files opened once and read through their descriptors (`Snapshot`), so that a
writer replacing the directory meanwhile changes nothing that is read.

A release is replaced by exchanging its directory with a new one and removing the old one
(`ppdp.io.storage.commit_directory`). Whoever opened the old directory and its files first
keeps them: on Linux an open file stays whole after it is unlinked, and ``/proc/self/fd/N``
opens it again through its descriptor, with an offset of its own. That is the path Arrow and
Polars are given (`SnapshotFile.__fspath__`), so a reader sees the old release or the new one,
whole, as databases and Git give. Where there is no ``/proc/self/fd``, files are read by path,
and whoever reads them must refuse files replaced since they were opened (`SnapshotFile.replaced`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import weakref
from pathlib import Path
from types import TracebackType

try:
    import resource
except ImportError:  # pragma: no cover - not on POSIX: the limit stays the system's
    resource = None  # type: ignore[assignment]

__all__ = ["ISOLATED", "Snapshot", "SnapshotFile"]

_DESCRIPTORS = "/proc/self/fd"

_RELATIVE_OPENS = os.open in os.supports_dir_fd

ISOLATED = _RELATIVE_OPENS and os.path.isdir(_DESCRIPTORS)
"""Whether files are read through their descriptors here (Linux), hence isolated from writers."""

_READ_BYTES = 1 << 20


class SnapshotFile(os.PathLike[str]):
    """A regular file opened once: its descriptor stays open as long as this object lives.

    ``str()`` gives its path (for messages); ``os.fspath()`` where to read it: its descriptor's
    path where `ISOLATED`, else its path."""

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self.descriptor = descriptor
        status = os.fstat(descriptor)
        self.size = status.st_size
        self.identity = (status.st_dev, status.st_ino)
        self._close = weakref.finalize(self, os.close, descriptor)

    def __fspath__(self) -> str:
        return f"{_DESCRIPTORS}/{self.descriptor}" if ISOLATED else str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    @property
    def name(self) -> str:
        """The file's name, as a path's."""
        return self.path.name

    def __repr__(self) -> str:
        return f"SnapshotFile({str(self.path)!r}, descriptor={self.descriptor})"

    def read(self, limit: int) -> bytes:
        """The file's bytes through its descriptor, at most ``limit`` of them."""
        chunks = []
        offset = 0
        while offset < limit and (chunk := _read_at(self.descriptor,
                                                    min(_READ_BYTES, limit - offset), offset)):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def replaced(self) -> bool:
        """Whether its path no longer names this file (replaced, removed)."""
        return not _names(self.path, self.identity)

    def close(self) -> None:
        """Close the descriptor now (else when the object is collected)."""
        self._close()


class Snapshot:
    """A directory opened once (a context manager: the directory's descriptor is closed on
    exit, the files opened stay open while their `SnapshotFile` lives).

    Files are opened relative to the directory's descriptor, so that all of them come from the
    directory opened, or, if it was removed meanwhile, fail with FileNotFoundError (`replaced`
    then says so, and the caller opens the path again)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._descriptor: int | None = None
        self._closed = False
        if _RELATIVE_OPENS:
            self._descriptor = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            status = os.fstat(self._descriptor)
        else:  # pragma: no cover - no opening relative to a directory (Windows): by path
            status = os.stat(self.root)
        if not stat.S_ISDIR(status.st_mode):
            self.close()
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(root))
        self.identity = (status.st_dev, status.st_ino)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the directory's descriptor (the files opened stay open)."""
        self._closed = True
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None

    def open(self, name: str) -> SnapshotFile:
        """The regular file ``name`` of the directory opened (symbolic links followed);
        FileNotFoundError when there is none (or something else by that name)."""
        if self._closed:
            raise ValueError("the snapshot's directory is closed")
        path = self.root / name
        # Non-blocking: a FIFO by that name must not hang the open; regular files ignore it.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        try:
            descriptor = self._open(name, flags)
        except OSError as exc:
            if exc.errno != errno.EMFILE or not _more_descriptors():
                raise
            descriptor = self._open(name, flags)
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path))
        return SnapshotFile(path, descriptor)

    def _open(self, name: str, flags: int) -> int:
        if self._descriptor is None:  # pragma: no cover - Windows: by path
            return os.open(self.root / name, flags)
        return os.open(name, flags, dir_fd=self._descriptor)

    def replaced(self) -> bool:
        """Whether the path no longer names the directory opened (replaced, removed)."""
        return not _names(self.root, self.identity)


def _names(path: Path, identity: tuple[int, int]) -> bool:
    """Whether ``path`` still names the file or directory of this (device, inode)."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    return (status.st_dev, status.st_ino) == identity


def _read_at(descriptor: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset``; without pread (Windows), by seeking the descriptor,
    which no one else reads."""
    if hasattr(os, "pread"):
        return os.pread(descriptor, size, offset)
    os.lseek(descriptor, offset, os.SEEK_SET)  # pragma: no cover - Windows
    return os.read(descriptor, size)  # pragma: no cover - Windows


def _more_descriptors() -> bool:
    """Raise this process's limit of open files to the hard limit (a release in many parts
    keeps a descriptor per part); whether it was raised."""
    if resource is None:  # pragma: no cover - not on POSIX
        return False
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinite = resource.RLIM_INFINITY
    if soft == infinite or (hard != infinite and soft >= hard):
        return False
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != infinite else soft * 4, hard))
        return True
    return False
