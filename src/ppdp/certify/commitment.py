"""A keyed commitment to the data a release was published from.

The custodian keeps a secret key (`ppdp.release.keys.COMMITMENT_KEY_FILE`); the certificate
holds only HMAC-SHA256 values made with it: one of the source file's bytes and one of the
table as read. Without the key nobody can test a guess of the data against them; an auditor
given the source and the key recomputes them and so confirms which data was released.

The table's value is computed from a fixed byte layout, the same on any machine: a version
tag, the number of rows, then for each column in schema order its name, role, declared
domain (canonical JSON) and its codes as little-endian 64-bit integers; every field is
preceded by its length in bytes (8 bytes, little-endian) so that no two tables share a byte
string.

The table is the source as `source_table` reads it (no roles given, the release's domains for
its columns): `ppdp certify` and `ppdp verify` read it so, and so get the same value from
the same file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.data.schema import Schema
from ppdp.jsonable import json_ready
from ppdp.plan.engine import get_engine
from ppdp.table.table import Table

__all__ = ["ALGORITHM", "file_commitment", "source_commitment", "source_table",
           "table_commitment"]

ALGORITHM = "HMAC-SHA256"
_LAYOUT = b"ppdp-table-commitment/1"
"""The first field of the table's byte layout: a new layout gets a new tag."""
_CHUNK_BYTES = 1 << 20
_CHUNK_ROWS = 1 << 17


def source_commitment(source: str | os.PathLike[str], table: Table, key: bytes
                      ) -> dict[str, Any]:
    """The commitment to ``source`` (a file, or a bundled dataset by name) and to ``table``,
    the source as read: ``{"algorithm", "file", "table"}``, hex digests (``file`` is None for
    a bundled dataset, which ships with ppdp and is not a file of the custodian's)."""
    _check_key(key)
    path = Path(source)
    return {"algorithm": ALGORITHM,
            "file": file_commitment(path, key) if path.is_file() else None,
            "table": table_commitment(table, key)}


def source_table(source: str | os.PathLike[str], schema: Schema, **options: Any) -> Table:
    """The source (a CSV/Parquet file, or a bundled dataset by name) read into memory as a
    certificate commits to it: each column the release publishes typed by the release's
    domain (its ``schema``), the others as read, no roles given. ``options``: those of
    `ppdp.io.read_table` that describe the file (``sep``, ``names``, ``header``,
    ``missing``, ``non_numeric``, ``encoding``)."""
    domains = {column.name: {"ordered": list(column.domain)} if column.ordered
               else list(column.domain) for column in schema.columns}
    engine = get_engine("memory")
    table: Table = engine.open(source, **engine.read_options(source, domains=domains,
                                                             **options))
    return table


def file_commitment(path: str | os.PathLike[str], key: bytes) -> str:
    """HMAC-SHA256 of a file's bytes, read in blocks (any size of file)."""
    _check_key(key)
    mac = hmac.new(key, digestmod=hashlib.sha256)
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK_BYTES):
            mac.update(block)
    return mac.hexdigest()


def table_commitment(table: Table, key: bytes) -> str:
    """HMAC-SHA256 of a table's schema and codes in the module doc's byte layout."""
    _check_key(key)
    mac = hmac.new(key, digestmod=hashlib.sha256)
    _field(mac, _LAYOUT)
    _field(mac, int(table.n_rows).to_bytes(8, "little"))
    for column in table.schema.columns:
        _field(mac, column.name.encode("utf-8"))
        _field(mac, column.role.value.encode("utf-8"))
        domain = json.dumps(json_ready([_plain(value) for value in column.domain]),
                            ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        _field(mac, domain.encode("utf-8"))
        codes = table.codes[column.name]
        mac.update(int(codes.size * 8).to_bytes(8, "little"))
        # In slices: a 10^8-row column is not copied whole to 64-bit integers.
        for start in range(0, codes.size, _CHUNK_ROWS):
            mac.update(np.ascontiguousarray(codes[start:start + _CHUNK_ROWS],
                                            dtype="<i8").tobytes())
    return mac.hexdigest()


def _field(mac: Any, data: bytes) -> None:
    mac.update(len(data).to_bytes(8, "little"))
    mac.update(data)


def _plain(value: Any) -> Any:
    """A domain value as JSON writes it: numbers and text as they are, anything else (dates)
    as its ISO text."""
    if isinstance(value, str | bool | int | float) or value is None \
            or type(value).__module__ == "numpy":
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _check_key(key: bytes) -> None:
    if not isinstance(key, bytes | bytearray) or len(key) < 16:
        raise ValueError("the commitment key must be at least 16 bytes (a commitment.key file "
                         "made by ppdp keys create)")
