"""Writes that cannot destroy: directories staged beside their target and committed atomically.

A directory (a release, the private state of alpha-beta views) is written into a hidden staging
directory ``.NAME.<random>.ppdp-partial`` beside its target (NAME cut short so that the whole
fits a file name's 255 bytes), then committed:

- to a target that does not exist, by one ``rename``, under an exclusive lock on the parent
  directory, so that of two writers racing for the same name exactly one succeeds and the other
  gets OutputExistsError (a FileExistsError);
- over an existing target only when the caller allows it and the caller's ``replaceable`` check
  accepts what is there (for releases: a directory holding nothing but a ppdp release); the two
  directories are exchanged atomically (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two
  renames under the lock), and the old one is then removed.

While a staging directory is being filled its owner holds an ``flock`` on it. SIGTERM during the
write raises SystemExit in the main thread, so the staging directory is removed on the way out;
after a SIGKILL the lock dies with the process, and the next write beside it removes the
unlocked leftovers of that name pattern (and nothing else). Loading never looks at them.
A failed write also removes the parent directories it created. The current directory, or one
holding it, is never a target: replaced, it would leave the process in a removed directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ppdp.errors import OutputError, OutputExistsError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no locks, renames stay atomic
    _HAS_LOCKS = False
else:
    _HAS_LOCKS = True

__all__ = ["commit_directory", "hidden_name", "locked", "require_outside_working_directory",
           "staged_directory", "write_atomic"]

PARTIAL_SUFFIX = ".ppdp-partial"
# \Z, not $: a name with a newline after the suffix is not one of ours.
_PARTIAL = re.compile(r"\..+\.[0-9a-f]{16}" + re.escape(PARTIAL_SUFFIX) + r"\Z", re.DOTALL)
_NAME_BYTES = 255
"""The longest file name most file systems take (ext4, XFS, btrfs, APFS, NTFS in UTF-16)."""
_ASIDE = ".old"
"""What the rename fallback of `_exchange` adds to a staging name."""
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@contextlib.contextmanager
def locked(path: Path, *, blocking: bool = True) -> Iterator[bool]:
    """An exclusive ``flock`` on a file or directory; yields whether it was obtained.

    Where the file system has no locks, a blocking caller goes on unlocked (the renames stay
    atomic) and a non-blocking one is told the lock is taken, so nothing is cleaned away.
    """
    if not _HAS_LOCKS:
        yield blocking
        return
    descriptor = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            yield blocking
            return
        yield True
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """Turn SIGTERM into SystemExit(143) while the block runs, so cleanup code runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _remove_stale_partials(parent: Path) -> list[Path]:
    """Remove staging directories in ``parent`` that no live writer holds (left by SIGKILL);
    the caller holds the parent's lock."""
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not _PARTIAL.match(entry.name) or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            with locked(entry, blocking=False) as free:
                if free:
                    shutil.rmtree(entry)
                    removed.append(entry)
        except OSError:
            continue
    return removed


def hidden_name(name: str, suffix: str) -> str:
    """``.NAME<suffix>`` with NAME cut short (bytes, as the file system counts them) so that the
    name fits `_NAME_BYTES` with room for `_ASIDE`: a target's name of up to 255 bytes gets a
    staging name too."""
    room = _NAME_BYTES - len(_ASIDE) - len(os.fsencode(f".{suffix}"))
    encoded = os.fsencode(name)
    if len(encoded) <= room:
        return f".{name}{suffix}"
    # A character cut in two is kept as surrogate escapes: the same bytes on disk.
    return f".{os.fsdecode(encoded[:room])}{suffix}"


def require_outside_working_directory(target: Path) -> None:
    """Refuse (OutputError) a target that is the current directory or holds it: replaced, it
    would leave this process, and the shell it was started from, in a removed directory."""
    try:
        resolved, here = target.resolve(), Path.cwd().resolve()
    except OSError:  # the working directory is gone: nothing to protect
        return
    if resolved == here or resolved in here.parents:
        what = "the current directory" if resolved == here else "a directory holding the " \
                                                                "current directory"
        raise OutputError(f"{target} is {what}; it cannot be replaced from inside: run from "
                          f"another directory or choose another output path")


@contextlib.contextmanager
def staged_directory(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A fresh, locked staging directory beside ``target``; removed on any failure, with the
    parent directories it created.

    The caller fills it and commits it with `commit_directory` inside the block.
    """
    target = _named(Path(target))
    if os.path.lexists(target):
        require_outside_working_directory(target)
    parent = target.parent
    staging = parent / hidden_name(target.name, f".{secrets.token_hex(8)}{PARTIAL_SUFFIX}")
    with terminate_cleanly(), contextlib.ExitStack() as stack:
        _make_parents(parent, stack)
        # Created and locked under the parent's lock, so that another writer's clean-up of
        # stale staging directories (under the same lock) never sees it unlocked.
        with locked(parent):
            _remove_stale_partials(parent)
            staging.mkdir()
            stack.callback(shutil.rmtree, staging, ignore_errors=True)
            stack.enter_context(locked(staging))
        # After a commit the name holds the replaced directory (or nothing): removed on exit.
        yield staging


def commit_directory(staging: Path, target: str | os.PathLike[str], *, overwrite: bool = False,
                     replaceable: Callable[[Path], None] | None = None) -> Path:
    """Move a filled staging directory to ``target`` atomically.

    Without ``overwrite`` an existing target is an OutputExistsError, decided under a lock on
    the parent directory so that concurrent writers cannot both succeed. With it,
    ``replaceable`` (which raises when the target must not be replaced) is asked first; the old
    directory ends up at ``staging`` and is removed when the staging block exits.
    """
    target = _named(Path(target))
    _fsync_tree(staging)
    with locked(target.parent):
        if not os.path.lexists(target):
            os.rename(staging, target)
        elif not overwrite:
            raise OutputExistsError(f"{target} already exists")
        else:
            require_outside_working_directory(target)
            if replaceable is not None:
                replaceable(target)
            _exchange(staging, target)
        _fsync_directory(target.parent)
    return target


def _named(target: Path) -> Path:
    """``target`` with a name of its own (``.`` and ``..`` resolved), so that its staging
    directory is made beside it, not inside it."""
    return target.resolve() if target.name in ("", ".", "..") else target


def _make_parents(parent: Path, stack: contextlib.ExitStack) -> None:
    """Create ``parent`` and the directories above it that are missing; on failure (the
    stack unwinding with an exception) remove those created, deepest first, if still empty."""
    missing: list[Path] = []
    directory = parent
    while not os.path.lexists(directory) and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    parent.mkdir(parents=True, exist_ok=True)

    def remove(kind: type[BaseException] | None, *details: object) -> bool:
        if kind is not None:
            for created in missing:
                with contextlib.suppress(OSError):  # not empty: someone else's now
                    created.rmdir()
        return False

    stack.push(remove)


def _exchange(first: Path, second: Path) -> None:
    """Swap two directory entries atomically where the system can, else by two renames."""
    function = getattr(_libc(), "renameat2", None)
    if function is not None:
        result = function(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
                          _RENAME_EXCHANGE)
        if result == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(code, os.strerror(code), str(second))
    aside = first.with_name(f"{first.name}{_ASIDE}")
    os.rename(second, aside)
    os.rename(first, second)
    os.rename(aside, first)


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - no C library to ask
        return None


def _fsync_tree(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write bytes to a temporary file beside ``path``, then rename it into place: a failed
    write leaves the previous file (or none) behind, never a partial one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(hidden_name(path.name, f".{secrets.token_hex(6)}.tmp"))
    with terminate_cleanly():
        try:
            with open(temporary, "xb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    return path
