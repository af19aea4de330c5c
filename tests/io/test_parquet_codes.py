"""A Parquet file read once into codes (`ppdp.io.parquet_codes`) gives the table of the two
passes of `ppdp.io.scan`, and leaves to them what it does not take on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.io.read
from ppdp.errors import SchemaError
from ppdp.io.parquet_codes import read_parquet_codes
from ppdp.io.read import read_table
from ppdp.table import Table

ADULT_DOMAINS = {c.name: list(c.domain) for c in ppdp.datasets.adult().schema.columns}


@pytest.fixture(scope="module")
def adult_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Adult with padded text (two spellings of one value), in row groups of 7,000 rows,
    each with its own dictionaries."""
    adult = ppdp.datasets.adult().to_arrow()
    padded = pa.array([" a", "a ", "b", "c"] * (adult.num_rows // 4)
                      + ["a"] * (adult.num_rows % 4))
    path = tmp_path_factory.mktemp("codes") / "adult.parquet"
    pq.write_table(adult.append_column("padded", padded), path, row_group_size=7000)
    return path


def _scanned(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Table:
    """The table as the two passes of the scan read it."""
    with monkeypatch.context() as patch:
        patch.setattr(ppdp.io.read, "read_parquet_codes", lambda *a, **k: None)
        return read_table(path, **options)


def _equal(a: Table, b: Table) -> None:
    assert a.schema == b.schema and a.name == b.name and a.dropped_rows == b.dropped_rows
    for column in a.schema.columns:
        assert column.declared == b.schema[column.name].declared
        assert a.codes[column.name].dtype == b.codes[column.name].dtype
        np.testing.assert_array_equal(a.codes[column.name], b.codes[column.name])


@pytest.mark.parametrize("options", [
    {"sensitive": "occupation", "domains": {**ADULT_DOMAINS, "age": {"min": 17, "max": 90}},
     "columns": list(ADULT_DOMAINS)},
    {"sensitive": "occupation", "observed_domains": True},
    {"columns": ["age", "padded", "sex"], "domains": {"age": {"min": 0, "max": 120}},
     "quasi_identifiers": ["age", "sex"]},
    {"domains": {"padded": ["c", "b", "a", "d"]}, "na_values": ["d"]},
])
def test_read_once_gives_the_table_of_the_scan(options: dict[str, Any], adult_file: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[Table | None] = []
    monkeypatch.setattr(ppdp.io.read, "read_parquet_codes",
                        lambda *a, **k: read.append(read_parquet_codes(*a, **k)) or read[-1])
    table = read_table(adult_file, **options)
    assert read and read[-1] is table  # read once, not by the scan
    _equal(table, _scanned(adult_file, monkeypatch, **options))


def test_a_dictionary_value_no_row_holds_is_not_in_the_observed_domain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "unused.parquet"
    pq.write_table(pa.table({"x": pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 0], pa.int32()), pa.array(["a", "b", "unused"]))}), path)
    table = read_parquet_codes(path, columns=None, na_values=[], domains={}, sensitive=None,
                               quasi_identifiers=None, observed_domains=True)
    assert table is not None and table.schema["x"].domain == ("a", "b")
    _equal(table, _scanned(path, monkeypatch, observed_domains=True))


@pytest.mark.parametrize(("data", "options"), [
    ({"x": ["a", "?", "b"]}, {"missing": "drop"}),  # a missing value
    ({"x": [1.5, 2.5, 1.5]}, {}),  # floats
    ({"x": [True, False, True]}, {}),  # booleans
    ({"x": ["a", "b", "zz"]}, {"domains": {"x": ["a", "b", "zz"]}, "na_values": ["zz"],
                                  "missing": "drop"}),
])
def test_what_it_does_not_take_on_is_read_by_the_scan(
        data: dict[str, list[Any]], options: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "small.parquet"
    pq.write_table(pa.table(data), path)
    assert read_parquet_codes(path, columns=None, na_values=["?", *options.get(
        "na_values", [])], domains=options.get("domains", {}), sensitive=None,
        quasi_identifiers=None, observed_domains=False) is None
    _equal(read_table(path, **options), _scanned(path, monkeypatch, **options))


def test_a_value_outside_the_declared_domain_is_the_scans_error(tmp_path: Path) -> None:
    path = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"x": ["a", "b", "zz"], "n": [1, 2, 300]}), path)
    with pytest.raises(SchemaError, match="outside its domain"):
        read_table(path, domains={"x": ["a", "b"]})
    with pytest.raises(SchemaError, match="outside its domain"):
        read_table(path, domains={"n": {"min": 0, "max": 10}})
