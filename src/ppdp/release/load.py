"""Loading a saved release, verified, with the engine that counts it.

Every digest is verified before a file is read (`ppdp.release.verify`). The engine decides which
tables stay in their files: the memory engine reads every table; the streaming engine leaves the
published rows in their files and counts from the counts of their distinct rows, which the
publisher wrote beside them (``row_counts.parquet``, `ppdp.query.row_counts`), or from
streaming Polars aggregations (`ppdp.query.scan_cube.ScanCube`): a release of 10^9 rows loads
in about two seconds and answers a query in milliseconds; the Spark engine counts with Spark
aggregations.

Loading is isolated from writers (`ppdp.io.snapshot`): the directory and every file are opened
once, verified and read through those descriptors, which the loaded release keeps; a release
saved over the directory meanwhile (exchanged with it, the old one removed) changes nothing it
counts, and if it came between opening the directory and its files, the load starts again from
the path (`LOAD_ATTEMPTS`). A reader sees the old release or the new one, whole. The Spark
engine's tasks read the files by path: a release it loaded refuses to count files replaced
since.

With the signer's public key, the release must also match its signed certificate
(`ppdp.release.certificate`): signed by that key, in force, and recording the very
``release.json`` read, whose digests cover every file; else nothing is loaded."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.schema import Schema
from ppdp.errors import CertificateError, ReleaseError, SchemaError, first_line
from ppdp.io.snapshot import ISOLATED, Snapshot, SnapshotFile
from ppdp.plan.engine import Engine, ScannedFiles, engine_choices, get_engine
from ppdp.plan.registry import MECHANISM_MODULES, mechanism_module
from ppdp.query.encoding import scan_engine_available
from ppdp.query.row_counts import ROW_COUNTS
from ppdp.release.arrow import joined_parts
from ppdp.release.base import Release
from ppdp.release.certificate import (
    CERTIFICATE_DIRECTORY,
    CERTIFICATE_FILE,
    check_release_metadata,
    check_signature,
    check_validity,
    read_certificate,
)
from ppdp.release.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_METADATA_BYTES,
    METADATA_FILE,
    DuplicateKeyError,
    metadata_bytes,
    metadata_digest,
    parse_metadata,
    release_file_names,
)
from ppdp.release.keys import load_public_key
from ppdp.release.verify import verify_digests

if TYPE_CHECKING:  # the certify extra, needed only to check a certificate
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

LOAD_ATTEMPTS = 5
"""How often a load starts again when the directory was replaced while it was being opened."""


def load_engines() -> tuple[str, ...]:
    """The engines a release may be loaded with: ``auto`` and every registered engine."""
    return engine_choices()


def counting_engine(name: str) -> Engine:
    """The engine that counts a loaded release: the one named, or for ``auto`` the streaming
    engine (streaming Polars aggregations over the files of its rows, `ScanCube`) when Polars
    is installed, else the memory engine (every table read)."""
    if name not in load_engines():
        raise ValueError(f"engine must be one of {', '.join(load_engines())}, not {name!r}")
    if name == "auto":
        name = "streaming" if scan_engine_available() else "memory"
    return get_engine(name)


def load_release(directory: str | os.PathLike[str], engine: str = "auto", *,
                 public_key: str | os.PathLike[str] | Ed25519PublicKey | None = None,
                 certificate: str | os.PathLike[str] | None = None) -> Release:
    """Read a release directory written by `Release.save`, verifying every digest.

    With ``public_key`` (a PEM file or an Ed25519 public key) the release's certificate
    (``certificate``: a certificate.json or its directory; by default the ``certificate``
    directory in the release) must be signed by that key, in force and the certificate of
    this very release, else `CertificateError` and nothing is loaded.

    ``engine`` (`load_engines`; `counting_engine`) says what counts the rows of a release
    that publishes rows: ``memory`` from its tables read into memory, ``streaming`` from
    streaming Polars aggregations over its files (``auto``: streaming when Polars is
    installed), ``spark`` from Spark aggregations (on the active Spark session, or one
    `ppdp.engines.spark.spark_session` starts); the estimators are the same."""
    counting = counting_engine(engine)
    root = Path(directory)
    document = None
    if public_key is not None:
        key = load_public_key(public_key) if isinstance(public_key, str | os.PathLike) \
            else public_key
        document = read_certificate(certificate if certificate is not None
                                    else root / CERTIFICATE_DIRECTORY / CERTIFICATE_FILE)
        check_signature(document, key)
        check_validity(document)
    elif certificate is not None:
        raise ValueError("a certificate is checked with its signer's public key: give "
                         "public_key too")
    # Spark's tasks read by path: a release it loaded must not have been built from files
    # replaced after they were verified.
    by_path = not (ISOLATED and counting.reads_snapshots)
    for _ in range(LOAD_ATTEMPTS):
        try:
            snapshot = Snapshot(root)
        except (FileNotFoundError, NotADirectoryError):
            raise ReleaseError(f"{root} is not a release directory (it does not exist or is a "
                               f"file)") from None
        except OSError as exc:
            raise ReleaseError(f"{root} cannot be read: {exc.strerror or exc}") from None
        with snapshot:
            try:
                release = _load(root, snapshot, counting, by_path=by_path,
                                certificate=document)
            except ReleaseError as exc:
                if snapshot.replaced():
                    continue
                if document is not None and not isinstance(exc, CertificateError):
                    raise CertificateError(f"the release does not verify against its "
                                           f"certificate: {exc}") from exc
                raise
            # Opened before the directory was replaced, a release read through its descriptors
            # is the old one, whole; one read by path may mix the two: loaded again.
            if not (by_path and snapshot.replaced()):
                return release
    raise ReleaseError(f"{root} was replaced {LOAD_ATTEMPTS} times while it was being loaded; "
                       f"load it again")


def _load(root: Path, snapshot: Snapshot, counting: Engine, *, by_path: bool,
          certificate: Mapping[str, Any] | None = None) -> Release:
    """Load the release in the directory opened as ``snapshot`` (`load_release`), checked
    against its ``certificate`` (already verified) when one is given."""
    meta_path = root / METADATA_FILE
    try:
        meta_file = snapshot.open(METADATA_FILE)
    except OSError:
        raise ReleaseError(f"{root} has no {METADATA_FILE}; it is not a ppdp release") from None
    if meta_file.size > MAX_METADATA_BYTES:
        meta_file.close()
        raise ReleaseError(f"{meta_path} is {meta_file.size:,} bytes, more than any release "
                           f"holds ({MAX_METADATA_BYTES:,}); it is not a ppdp release")
    try:
        content = meta_file.read(MAX_METADATA_BYTES + 1)
        if len(content) > MAX_METADATA_BYTES:  # grown since it was opened
            raise ReleaseError(f"{meta_path} is more than {MAX_METADATA_BYTES:,} bytes, more "
                               f"than any release holds; it is not a ppdp release")
        metadata = parse_metadata(content)
    except (ValueError, RecursionError, OSError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else first_line(exc)
        kind = "ambiguous" if isinstance(exc, DuplicateKeyError) else "corrupt"
        raise ReleaseError(f"{meta_path} is {kind}: {reason}") from None
    finally:
        meta_file.close()
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise ReleaseError(f"{meta_path} is not a ppdp release description")
    if certificate is not None:
        # The certificate records the digests checked below: the files are the signed ones.
        check_release_metadata(certificate, metadata)
        if content != metadata_bytes(metadata):
            raise CertificateError(f"{meta_path} is not byte for byte the file that was "
                                   f"certified (its layout was edited)")
    version = metadata.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReleaseError(f"{meta_path} has no valid format_version")
    if version > FORMAT_VERSION:
        raise ReleaseError(f"{root} was written in release format {version}, newer than this "
                           f"ppdp reads ({FORMAT_VERSION}); upgrade ppdp to read it")
    if version < FORMAT_VERSION:
        raise ReleaseError(f"{root} was written in release format {version}, without the "
                           f"digests this ppdp verifies; publish the release again")
    files, digests = metadata.get("files"), metadata.get("digests")
    if not (isinstance(files, dict) and isinstance(digests, dict)
            and _valid_file_list(files, digests)):
        raise ReleaseError(f"{meta_path} lacks a valid file list and digests; it is not a "
                           f"complete ppdp release")
    if metadata.get("metadata_digest") != metadata_digest(metadata):
        raise ReleaseError(f"{meta_path} was changed after the release was written (its digest "
                           f"does not match); the release cannot be trusted: publish it again")
    opened: dict[str, SnapshotFile] = {}
    for name in digests:
        try:
            if Path(name).name != name:
                raise FileNotFoundError(name)
            opened[name] = snapshot.open(name)
        except OSError:
            raise ReleaseError(f"{root} is missing its data file {name!r}") from None
    identities = verify_digests(root, opened, digests, metadata["metadata_digest"])
    named = metadata.get("mechanism")
    if not isinstance(named, str) or named not in MECHANISM_MODULES:
        raise ReleaseError(f"{meta_path} names an unknown mechanism {named!r}; known: "
                           f"{sorted(MECHANISM_MODULES)}")
    mechanism_module(named)  # registers the mechanism's release class
    release_class = Release.registry[named]
    try:
        schema = Schema.from_json(metadata["schema"])
        parameters = dict(metadata["parameters"])
        n_rows = int(metadata["n_rows"])
    except (KeyError, TypeError, ValueError, SchemaError) as exc:
        raise ReleaseError(f"{meta_path} is incomplete or invalid: {exc}") from exc
    try:
        release_class.check_parameters(schema, parameters)
    except (KeyError, TypeError, ValueError) as exc:
        reason = f"no parameter {exc.args[0]!r}" if isinstance(exc, KeyError) else \
            first_line(exc)
        raise ReleaseError(f"{meta_path} holds what {named} never publishes: {reason}") from None
    scanned = counting.prepare_load(release_class, files)
    tables: dict[str, pa.Table] = {}
    scans: dict[str, list[Path]] = {}
    snapshots: dict[str, list[SnapshotFile]] = {}
    part_rows: dict[str, tuple[int, ...]] = {}
    for stem, entry in files.items():
        paths = [opened[name] for name in (entry if isinstance(entry, list) else [entry])]
        if stem in scanned:
            # Only the footers now (a file without one is not Parquet); the rows stay there.
            footers = [_read_parquet(path, pq.read_metadata) for path in paths]
            part_rows[stem] = tuple(footer.num_rows for footer in footers)
            scans[stem] = [file.path for file in paths]
            snapshots[stem] = paths
            continue
        parts = [_read_parquet(path, pq.read_table) for path in paths]
        for file in paths:
            file.close()  # read whole: the release needs the file no more
        part_rows[stem] = tuple(part.num_rows for part in parts)
        try:
            tables[stem] = parts[0] if len(parts) == 1 else joined_parts(parts)
        except pa.ArrowException as exc:
            raise ReleaseError(f"{root} does not match its {METADATA_FILE}: the parts of "
                               f"{stem!r} have different columns: {first_line(exc)}") from exc
    # The verified digests let a cube cache what it reads by the files' content, the counts
    # of the distinct rows that the publisher wrote spare it reading the rows (`ScanCube`).
    files_scanned = ScannedFiles(scans, counting,
                                 digests=dict(zip(identities, digests.values(), strict=True)),
                                 row_counts=tables.pop(ROW_COUNTS, None),
                                 opened=None if by_path else snapshots)
    try:
        release = counting.rebuild(release_class, schema, parameters, n_rows, tables,
                                   files_scanned)
    except Exception as exc:  # any failure to rebuild means the files disagree
        raise ReleaseError(f"{root} does not match its {METADATA_FILE}: "
                           f"{first_line(exc) or type(exc).__name__}") from exc
    release.name = root.resolve().name
    if len(part_rows.get("rows", ())) > 1:
        # Saved again, the rows keep their parts.
        release.part_rows = part_rows["rows"]
    return release


def _valid_file_list(files: Mapping[str, Any], digests: Mapping[str, object]) -> bool:
    """Whether ``files`` (read from JSON) maps each stem to a file name or a non-empty list of
    them, no name twice, and ``digests`` maps exactly those names to text."""
    if not (all(isinstance(v, str) for v in digests.values())
            and all(isinstance(entry, str) or (isinstance(entry, list) and entry and all(
                isinstance(name, str) for name in entry)) for entry in files.values())):
        return False
    names = release_file_names(files)
    return len(names) == len(set(names)) and set(names) == set(digests)


def _read_parquet(file: SnapshotFile, read: Callable[[str], Any]) -> Any:
    """``read`` of an opened file (a Parquet table or footer), any failure reported as a
    corrupt file."""
    try:
        return read(os.fspath(file))
    except (pa.ArrowException, OSError) as exc:
        raise ReleaseError(f"{file} is corrupt: {first_line(exc)}") from exc
