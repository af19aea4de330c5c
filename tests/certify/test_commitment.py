"""The source commitment: the same data read the same way give the same HMAC, one changed
value, byte, column name, role or domain another one, and so does another key."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import numpy as np
import pytest

import ppdp
from ppdp.certify.commitment import file_commitment, source_commitment, table_commitment
from ppdp.data.schema import Column, Role, Schema

KEY = bytes(range(32))


@pytest.fixture(scope="module")
def table() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation").select(
        ["age", "sex", "occupation"]).take(np.arange(300))


def test_the_same_table_gives_the_same_commitment(table: ppdp.Table) -> None:
    first = table_commitment(table, KEY)
    again = table.take(np.arange(table.n_rows))  # a copy of every code array
    assert table_commitment(again, KEY) == first
    assert len(first) == 64 and int(first, 16) >= 0


def test_the_byte_layout_is_the_documented_one() -> None:
    """The same value on any machine and in later versions: the layout of the module doc,
    rebuilt here byte by byte, and its value pinned."""
    schema = Schema((Column("age", Role.QUASI_IDENTIFIER, (30, 40, 50)),
                     Column("disease", Role.SENSITIVE, ("café", "flu"))))
    codes = {"age": [0, 2, 1, 0], "disease": [1, 0, 0, 1]}
    small = ppdp.Table(schema, {name: np.asarray(c) for name, c in codes.items()})

    def field(data: bytes) -> bytes:
        return len(data).to_bytes(8, "little") + data

    expected = field(b"ppdp-table-commitment/1") + field((4).to_bytes(8, "little"))
    expected += field(b"age") + field(b"quasi-identifier") + field(b"[30,40,50]")
    expected += field(np.asarray(codes["age"], dtype="<i8").tobytes())
    expected += field(b"disease") + field(b"sensitive") + field('["café","flu"]'.encode())
    expected += field(np.asarray(codes["disease"], dtype="<i8").tobytes())
    value = table_commitment(small, KEY)
    assert value == hmac.new(KEY, expected, hashlib.sha256).hexdigest()
    assert value == "ea4995558f4d2474f2fcca0f91f1972705d32788719b7c206ceb8c769d09acee"


def test_one_changed_value_changes_the_commitment(table: ppdp.Table) -> None:
    first = table_commitment(table, KEY)
    codes = {name: np.array(table.codes[name]) for name in table.schema.names}
    codes["sex"][17] = 1 - codes["sex"][17]
    changed = ppdp.Table(table.schema, codes, name=table.name)
    assert table_commitment(changed, KEY) != first
    assert table_commitment(table.take(np.arange(table.n_rows - 1)), KEY) != first
    assert table_commitment(table.with_roles(sensitive="sex"), KEY) != first
    domain = [*table.schema["sex"].domain, "Other"]
    assert table_commitment(table.with_domains({"sex": domain}), KEY) != first


def test_the_key_changes_the_commitment(table: ppdp.Table) -> None:
    assert table_commitment(table, KEY) != table_commitment(table, KEY[::-1])
    with pytest.raises(ValueError, match="at least 16 bytes"):
        table_commitment(table, b"short")


def test_a_file_s_commitment_covers_every_byte(table: ppdp.Table, tmp_path: Path) -> None:
    path = tmp_path / "source.csv"
    path.write_bytes(b"age,sex\n" + b"39,Male\n" * 1000)
    first = source_commitment(path, table, KEY)
    assert first == source_commitment(str(path), table, KEY)
    assert first["algorithm"] == "HMAC-SHA256"
    assert first["table"] == table_commitment(table, KEY)
    data = bytearray(path.read_bytes())
    data[5000] ^= 1
    path.write_bytes(bytes(data))
    assert file_commitment(path, KEY) != first["file"]
    # A bundled dataset is no file of the custodian's: only the table is committed to.
    assert source_commitment("adult", table, KEY)["file"] is None
