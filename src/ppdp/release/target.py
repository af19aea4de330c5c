"""What a release may be written over: nothing but a directory that holds a ppdp release and
nothing else (but its own certificate, `ppdp.release.certificate`, which goes with it), so that
``overwrite`` never deletes a user's other files."""

from __future__ import annotations

import os
from pathlib import Path

from ppdp.errors import OutputExistsError, ReleaseError
from ppdp.io.storage import require_outside_working_directory
from ppdp.release.certificate import (
    CERTIFICATE_DIRECTORY,
    CERTIFICATE_FILE,
    CERTIFICATE_FORMAT,
    CERTIFICATE_NAMES,
    MAX_CERTIFICATE_BYTES,
)
from ppdp.release.format import (
    FORMAT_NAME,
    MAX_METADATA_BYTES,
    METADATA_FILE,
    parse_metadata,
    release_file_names,
)


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse a target that exists (unless ``overwrite`` and it holds only a release) before
    any work is done."""
    if os.path.lexists(target):
        if not overwrite:
            raise OutputExistsError(f"{target} already exists")
        require_replaceable_release(target)


def require_replaceable_release(path: Path) -> None:
    """Raise unless ``path`` is a directory holding a ppdp release and nothing else, so that
    ``overwrite`` never deletes a user's other files, nor the directory the user is in."""
    require_outside_working_directory(path)
    if path.is_symlink() or not path.is_dir():
        kind = "a symbolic link" if path.is_symlink() else "a file"
        raise ReleaseError(f"{path} is {kind}, not a ppdp release directory; overwrite replaces "
                           f"only a release; choose another output path")
    try:
        if (path / METADATA_FILE).stat().st_size > MAX_METADATA_BYTES:
            raise ValueError("larger than any release")
        metadata = parse_metadata((path / METADATA_FILE).read_bytes())
        files = set(release_file_names(metadata["files"])) \
            if metadata.get("format") == FORMAT_NAME else None
    except (OSError, ValueError, RecursionError, AttributeError, KeyError, TypeError):
        files = None
    if files is None:
        raise ReleaseError(f"{path} is not a ppdp release (no valid {METADATA_FILE}); overwrite "
                           f"replaces only a release, so its content is left alone; choose "
                           f"another output path")
    ours = files | {METADATA_FILE}
    if holds_certificate(path / CERTIFICATE_DIRECTORY):
        ours.add(CERTIFICATE_DIRECTORY)
    others = sorted(p.name for p in path.iterdir() if p.name not in ours)
    if others:
        shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
        raise ReleaseError(f"{path} holds files that are not part of its release ({shown}); "
                           f"overwrite would delete them, so it is refused; move them or choose "
                           f"another output path")


def holds_certificate(directory: Path) -> bool:
    """Whether ``directory`` is a release's certificate directory and nothing else: a real
    directory of certificate files only (`CERTIFICATE_NAMES`), with a ppdp certificate."""
    if directory.is_symlink() or not directory.is_dir():
        return False
    try:
        entries = list(directory.iterdir())
        if not all(entry.name in CERTIFICATE_NAMES and not entry.is_symlink()
                   and entry.is_file() for entry in entries):
            return False
        document = directory / CERTIFICATE_FILE
        if document.stat().st_size > MAX_CERTIFICATE_BYTES:
            return False
        content = parse_metadata(document.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(content, dict) and content.get("format") == CERTIFICATE_FORMAT
