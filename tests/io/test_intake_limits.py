"""Input at the edges of what reading takes: very wide files, integers beyond int64, text in
UTF-16, Parquet files of many tiny row groups, column names that look alike."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdp.data.schema import Column, Role, Schema, list_names, lookalike_names, show_name
from ppdp.errors import SchemaError
from ppdp.io.read import read_table
from ppdp.io.scan import _row_group_runs, scan_table


def write_wide(path: Path, n_columns: int, n_rows: int = 3) -> Path:
    lines = [",".join(f"c{i}" for i in range(n_columns))]
    lines += [",".join(str((i + r) % 2) for i in range(n_columns)) for r in range(n_rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_schema_finds_its_columns_by_name_in_a_dictionary() -> None:
    columns = tuple(Column(f"c{i}", Role.QUASI_IDENTIFIER, (0, 1)) for i in range(5))
    schema = Schema(columns)
    assert schema["c3"] is columns[3]
    assert schema.index("c3") == 3
    assert "c4" in schema and "c9" not in schema and ["c1"] not in schema
    with pytest.raises(SchemaError, match="unknown column 'c9'"):
        schema["c9"]
    with pytest.raises(SchemaError, match=r"duplicate column names: \['c1'\]"):
        Schema((*columns, columns[1]))


def test_roles_of_a_wide_schema() -> None:
    schema = Schema(tuple(Column(f"c{i}", Role.QUASI_IDENTIFIER, (0, 1))
                          for i in range(20_000)))
    roles = schema.with_roles(sensitive="c7",
                              quasi_identifiers=[f"c{i}" for i in range(10) if i != 7])
    assert roles.sensitive == ("c7",)
    assert roles.quasi_identifiers == tuple(f"c{i}" for i in range(10) if i != 7)
    assert roles["c19999"].role == Role.IGNORED


def test_a_csv_of_many_columns_is_read(tmp_path: Path) -> None:
    # The checks by name took quadratic time (16,000 columns: 35 s); reading still costs
    # about a millisecond a column, so the file here is only as wide as a test affords.
    table = read_table(write_wide(tmp_path / "wide.csv", 3000), sensitive="c0",
                       observed_domains=True)
    assert table.schema.names[-1] == "c2999"
    assert table.schema.sensitive == ("c0",)
    assert table.count("c2999 = 1").value == 2


def test_messages_list_at_most_fifty_names() -> None:
    names = [f"c{i}" for i in range(120)]
    assert list_names(names) == ", ".join(names[:50]) + " and 70 more"
    schema = Schema(tuple(Column(n, Role.QUASI_IDENTIFIER, (0, 1)) for n in names))
    with pytest.raises(SchemaError) as error:
        schema["nope"]
    assert str(error.value).endswith("c49 and 70 more)")


# -- integers beyond int64 ----------------------------------------------------------------

def test_csv_integers_beyond_int64_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("big,sex\n9223372036854775809,M\n9223372036854775808,F\n5,M\n")
    message = (r"column 'big' of .*big\.csv holds integers beyond the int64 range "
               r"\(-9223372036854775808 to 9223372036854775807\), such as "
               r"'9223372036854775809', '9223372036854775808', which ppdp cannot hold exactly")
    with pytest.raises(SchemaError, match=message):
        read_table(path, observed_domains=True)
    with pytest.raises(SchemaError, match=message):
        scan_table(path, observed_domains=True)


def test_csv_integers_at_the_ends_of_int64_are_read_exactly(tmp_path: Path) -> None:
    path = tmp_path / "edge.csv"
    path.write_text("big\n-9223372036854775808\n9223372036854775807\n+5\n")
    table = read_table(path, observed_domains=True)
    assert table.schema["big"].kind == "int"
    assert table.schema["big"].domain == (-2 ** 63, 5, 2 ** 63 - 1)
    assert table.count("big = 9223372036854775807").value == 1
    assert table.count("big = -9223372036854775808").value == 1


def test_a_column_of_decimals_with_a_huge_integer_stays_float(tmp_path: Path) -> None:
    path = tmp_path / "float.csv"
    path.write_text("x\n1.5\n99999999999999999999\n")
    assert read_table(path, observed_domains=True).schema["x"].kind == "float"


# -- UTF-16 and UTF-32 --------------------------------------------------------------------

@pytest.mark.parametrize(("codec", "said"), [
    ("utf-16", "it starts with a UTF-16 byte-order mark"),
    ("utf-32", "it starts with a UTF-32 byte-order mark"),
    ("utf-16-le", "it holds NUL bytes, as UTF-16 or UTF-32 text does"),
    ("utf-16-be", "it holds NUL bytes, as UTF-16 or UTF-32 text does"),
])
def test_utf16_text_read_as_utf8_gets_the_encoding_message(tmp_path: Path, codec: str,
                                                           said: str) -> None:
    path = tmp_path / "wide-text.csv"
    path.write_bytes("age,sex\n30,M\n31,F\n".encode(codec))
    message = (rf"CSV file .*wide-text\.csv is not utf-8 text \({said}\); give its encoding "
               r"with encoding=\"\.\.\.\" \(CLI: --encoding ENCODING\)")
    with pytest.raises(SchemaError, match=message):
        read_table(path)
    with pytest.raises(SchemaError, match=message):
        scan_table(path)


def test_utf16_text_with_its_encoding_is_read(tmp_path: Path) -> None:
    path = tmp_path / "utf16.csv"
    path.write_bytes("age,sex\n30,M\n31,F\n".encode("utf-16"))
    table = read_table(path, encoding="utf-16", observed_domains=True)
    assert table.count("sex = 'F'").value == 1


# -- Parquet files of many small row groups -----------------------------------------------

def test_small_row_groups_are_read_in_runs(tmp_path: Path) -> None:
    path = tmp_path / "groups.parquet"
    rng = np.random.default_rng(5)
    data = pa.table({"age": rng.integers(20, 60, 3000),
                     "sex": np.array(["M", "F", " F"])[rng.integers(0, 3, 3000)]})
    pq.write_table(data, path, row_group_size=1)
    metadata = pq.ParquetFile(path).metadata
    runs = list(_row_group_runs(metadata, 1024))
    assert [len(run) for run in runs] == [1024, 1024, 952]
    assert [g for run in runs for g in run] == list(range(3000))
    table = read_table(path, observed_domains=True)
    assert table.count("sex = 'F'").value == int(np.sum(data.column("sex").to_numpy(
        zero_copy_only=False) != "M"))
    source = scan_table(path, observed_domains=True, batch_rows=1000)
    starts = [start for start, _ in source.batches(1000)]
    assert starts == [0, 1000, 2000]
    assert np.array_equal(np.concatenate([codes["age"] for _, codes in source.batches(1000)]),
                          table.codes["age"])


def test_a_large_row_group_is_a_run_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "mixed.parquet"
    with pq.ParquetWriter(path, pa.schema([("x", pa.int64())])) as writer:
        for size in (3, 2, 10, 1, 1):
            writer.write_table(pa.table({"x": np.arange(size)}))
    assert list(_row_group_runs(pq.ParquetFile(path).metadata, 5)) == [[0, 1], [2], [3, 4]]


# -- names ----------------------------------------------------------------------------------

def test_names_with_control_characters_are_shown_escaped() -> None:
    assert show_name("age") == "age"
    assert show_name("caf\u00e9") == "caf\u00e9"
    assert show_name("\x1b[31mred") == repr("\x1b[31mred")
    schema = Schema((Column("\x1b[31mred\x1b[0m", Role.QUASI_IDENTIFIER, (0, 1)),))
    with pytest.raises(SchemaError) as error:
        schema["nope"]
    assert "\x1b" not in str(error.value) and "\\x1b[31mred" in str(error.value)


def test_names_that_differ_only_in_unicode_normalisation_are_refused(tmp_path: Path) -> None:
    decomposed, composed = "cafe\u0301", "caf\u00e9"
    assert lookalike_names(["a", decomposed, "b", composed]) == (decomposed, composed)
    assert lookalike_names(["a", composed, "Caf\u00e9"]) is None
    path = tmp_path / "cafe.csv"
    path.write_text(f"{decomposed},{composed},age\n1,2,30\n3,4,31\n")
    with pytest.raises(SchemaError, match=r"columns 'cafe\\u0301' and 'caf\\xe9' are the "
                                          r"same name written with different Unicode"):
        read_table(path, observed_domains=True)


def test_a_name_in_the_other_normal_form_is_pointed_at(tmp_path: Path) -> None:
    path = tmp_path / "cafe.csv"
    path.write_text("cafe\u0301,age\n1,30\n3,31\n")
    with pytest.raises(SchemaError, match=r"unknown column 'caf\\xe9': column 'cafe\\u0301' "
                                          r"looks the same but is written with other Unicode"):
        read_table(path, sensitive="caf\u00e9", observed_domains=True)


def test_a_parquet_file_replaced_between_passes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "input.parquet"
    pq.write_table(pa.table({"age": np.arange(100) % 40, "sex": ["M", "F"] * 50}), path,
                   row_group_size=10)
    source = scan_table(path, observed_domains=True, batch_rows=1000)
    replacement = tmp_path / "other.parquet"
    pq.write_table(pa.table({"age": np.arange(50) % 7, "sex": ["F"] * 50}), replacement,
                   row_group_size=25)
    os.replace(replacement, path)
    with pytest.raises(SchemaError, match="changed since it was first read"):
        list(source.batches(1000))
