"""Tests of ppdp.io.read_table: CSV sniffing and typing, Parquet, DataFrames, missing values."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdp.errors import MissingValuesError, SchemaError
from ppdp.io import read_table
from ppdp.table import Role

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
ADULT_DIR = SHARED / "adult"
UCI_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "salary-class",
]


@pytest.fixture
def adult_dir() -> Path:
    if not ADULT_DIR.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED}")
    return ADULT_DIR


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the UCI Adult files ---------------------------------------------------------------------

def test_adult_data_missing_values_error(adult_dir: Path) -> None:
    with pytest.raises(MissingValuesError) as info:
        read_table(adult_dir / "adult.data", header=False, names=UCI_NAMES)
    message = str(info.value)
    assert message.startswith(
        "missing values in 3 columns: workclass (1836), occupation (1843), "
        "native-country (583)")
    assert 'missing="drop"' in message
    assert "--drop-missing" in message


def test_adult_data_drop_missing(adult_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ppdp"):
        table = read_table(str(adult_dir / "adult.data"), header=False, names=UCI_NAMES,
                           missing="drop", sensitive="salary-class")
    assert len(table) == 30_162
    assert table.dropped_rows == 2_399
    assert any("2399" in record.getMessage() for record in caplog.records)
    assert table.schema.names == tuple(UCI_NAMES)
    assert table.schema.sensitive == ("salary-class",)
    assert table.schema["sex"].domain == ("Female", "Male")
    assert table.schema["salary-class"].domain == ("<=50K", ">50K")
    assert table.schema["age"].kind == "int"
    assert table.schema["fnlwgt"].kind == "int"
    assert table.schema["workclass"].size == 7
    assert "?" not in table.schema["native-country"].domain
    assert all(v == v.strip() for v in table.schema["occupation"].domain)


def test_adult_test_skip_rows(adult_dir: Path) -> None:
    table = read_table(adult_dir / "adult.test", header=False, names=UCI_NAMES, skip_rows=1,
                       missing="drop")
    assert len(table) + table.dropped_rows == 16_281
    assert table.schema["salary-class"].domain == ("<=50K.", ">50K.")
    assert table.schema["age"].kind == "int"


def test_adult_9attr_csv_sniffs_semicolon(adult_dir: Path) -> None:
    table = read_table(adult_dir / "adult-arx-9attr.csv", sensitive=["occupation"],
                       quasi_identifiers="sex, age, race")
    assert len(table) == 30_162
    assert table.dropped_rows == 0
    assert table.schema.names == ("sex", "age", "race", "marital-status", "education",
                                  "native-country", "workclass", "occupation", "salary-class")
    assert table.schema.quasi_identifiers == ("sex", "age", "race")
    assert table.schema["education"].role is Role.IGNORED
    assert table.schema["age"].size == 72


def test_adult_columns_subset(adult_dir: Path) -> None:
    table = read_table(adult_dir / "adult.data", header=False, names=UCI_NAMES,
                       columns=["sex", "age", "workclass"], missing="drop")
    assert table.schema.names == ("sex", "age", "workclass")
    assert table.dropped_rows == 1_836
    assert len(table) == 32_561 - 1_836


# --- CSV parsing -----------------------------------------------------------------------------

@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_sniff_separator(tmp_path: Path, sep: str) -> None:
    rows = [["name", "age", "city"], ["Ann", "31", "Oslo"], ["Bob", "42", "Rome"],
            ["Cid", "27", "Lima"]]
    path = write(tmp_path, "\n".join(sep.join(r) for r in rows) + "\n")
    table = read_table(path)
    assert table.schema.names == ("name", "age", "city")
    assert table.values("city").tolist() == ["Oslo", "Rome", "Lima"]
    assert table.values("age").tolist() == [31, 42, 27]


def test_explicit_separator_and_extensions(tmp_path: Path) -> None:
    path = write(tmp_path, "a|b\n1|x\n2|y\n", name="data.txt")
    table = read_table(path, sep="|")
    assert table.values("b").tolist() == ["x", "y"]
    with pytest.raises(ValueError, match="single character"):
        read_table(path, sep="||")


def test_whitespace_is_stripped(tmp_path: Path) -> None:
    path = write(tmp_path, " a , b \n 1 ,  x y \n2, z\n\n", name="data.data")
    table = read_table(path)
    assert table.schema.names == ("a", "b")
    assert table.values("b").tolist() == ["x y", "z"]
    assert table.values("a").tolist() == [1, 2]


def test_header_false_needs_names(tmp_path: Path) -> None:
    path = write(tmp_path, "1,x\n2,y\n")
    with pytest.raises(SchemaError, match="header=False needs the column names"):
        read_table(path, header=False)
    table = read_table(path, header=False, names=["n", "s"])
    assert table.schema.names == ("n", "s")
    assert len(table) == 2


def test_names_count_mismatch(tmp_path: Path) -> None:
    path = write(tmp_path, "1,x\n2,y\n")
    with pytest.raises(SchemaError, match=r"3 column names given but the rows of .* have 2"):
        read_table(path, header=False, names=["a", "b", "c"])


def test_names_replace_header(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b\n1,x\n")
    assert read_table(path, names=["n", "s"]).schema.names == ("n", "s")


def test_type_inference(tmp_path: Path) -> None:
    path = write(tmp_path, "i,f,s,mixed\n1,1.5,a,1\n-2,2,b,x\n30,1e3,c,2.5\n")
    table = read_table(path)
    assert table.schema["i"].kind == "int"
    assert table.schema["i"].domain == (-2, 1, 30)
    assert table.schema["f"].kind == "float"
    assert table.schema["f"].domain == (1.5, 2.0, 1000.0)
    assert table.schema["s"].kind == "string"
    assert table.schema["mixed"].kind == "string"
    assert table.schema["mixed"].domain == ("1", "2.5", "x")


def test_na_values(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b\n1,x\n?,y\nNA,z\n4,\n5,-\n")
    with pytest.raises(MissingValuesError, match=r"missing values in 2 columns: a \(2\), b \(1\)"):
        read_table(path)
    table = read_table(path, missing="drop")
    assert table.dropped_rows == 3
    assert table.values("a").tolist() == [1, 5]
    assert table.schema["a"].kind == "int"
    custom = read_table(path, na_values=["-"], missing="drop")
    assert custom.dropped_rows == 1
    assert custom.schema["a"].kind == "string"
    assert "?" in custom.schema["a"].domain
    assert "" in custom.schema["b"].domain
    none = read_table(path, na_values=None)
    assert len(none) == 5


def test_single_missing_column_message(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b\n1,x\n2,?\n")
    with pytest.raises(MissingValuesError, match=r"missing values in 1 column: b \(1\)"):
        read_table(path)


def test_invalid_missing_value(tmp_path: Path) -> None:
    path = write(tmp_path, "a\n1\n")
    with pytest.raises(ValueError, match="missing must be 'error' or 'drop'"):
        read_table(path, missing="ignore")


def test_columns_subset_and_unknown_column(tmp_path: Path) -> None:
    path = write(tmp_path, "age,sex,zip\n30,M,1\n40,F,2\n")
    table = read_table(path, columns=["zip", "age"])
    assert table.schema.names == ("zip", "age")
    with pytest.raises(SchemaError, match="unknown column 'sexx'; did you mean 'sex'"):
        read_table(path, columns=["age", "sexx"])


def test_missing_outside_kept_columns_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b\n1,?\n2,y\n")
    assert len(read_table(path, columns=["a"])) == 2


def test_domains_wider(tmp_path: Path) -> None:
    path = write(tmp_path, "grade,zip\nb,02139\na,02139\n")
    table = read_table(path, domains={"grade": ["a", "b", "c", "d"], "zip": ["02139", "10001"]})
    assert table.schema["grade"].domain == ("a", "b", "c", "d")
    assert table.values("grade").tolist() == ["b", "a"]
    assert table.schema["zip"].domain == ("02139", "10001")
    with pytest.raises(SchemaError, match="outside its domain"):
        read_table(path, domains={"grade": ["a"]})
    with pytest.raises(SchemaError, match="unknown column 'grad'"):
        read_table(path, domains={"grad": ["a"]})


def test_roles(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b,c\n1,2,3\n")
    table = read_table(path, sensitive="c", quasi_identifiers=["a"])
    assert table.schema.sensitive == ("c",)
    assert table.schema.quasi_identifiers == ("a",)
    assert table.schema["b"].role is Role.IGNORED
    with pytest.raises(SchemaError, match="unknown column 'd'"):
        read_table(path, sensitive="d")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_table(tmp_path / "absent.csv")
    with pytest.raises(FileNotFoundError):
        read_table(tmp_path / "absent.parquet")


def test_corrupt_files(tmp_path: Path) -> None:
    bad_parquet = tmp_path / "bad.parquet"
    bad_parquet.write_bytes(b"this is not parquet")
    with pytest.raises(SchemaError, match=r"cannot read Parquet file .*bad\.parquet"):
        read_table(bad_parquet)
    ragged = write(tmp_path, "a,b\n1,2\n3,4,5\n", name="ragged.csv")
    with pytest.raises(SchemaError, match=r"cannot read CSV file .*ragged\.csv"):
        read_table(ragged)
    not_utf8 = tmp_path / "latin1.csv"
    not_utf8.write_bytes("a,b\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(SchemaError, match=r"latin1\.csv"):
        read_table(not_utf8)
    with pytest.raises(SchemaError, match="empty"):
        read_table(write(tmp_path, "", name="empty.csv"))
    with pytest.raises(SchemaError, match="no rows"):
        read_table(write(tmp_path, "a,b\n", name="header_only.csv"))
    with pytest.raises(SchemaError, match="directory"):
        read_table(tmp_path)


# --- Parquet, DataFrames, Arrow --------------------------------------------------------------

def test_parquet_round_trip(tmp_path: Path) -> None:
    data = pa.table({"age": pa.array([30, 40, None], pa.int64()),
                     "sex": [" M", "F ", "F"],
                     "score": [1.5, float("nan"), 2.5],
                     "tag": pa.array(["x", "?", "y"]).dictionary_encode()})
    for name in ("data.parquet", "data.pq"):
        path = tmp_path / name
        pq.write_table(data, path)
        with pytest.raises(MissingValuesError,
                           match=r"age \(1\), score \(1\), tag \(1\)"):
            read_table(path)
        table = read_table(path, missing="drop")
        assert len(table) == 1
        assert table.dropped_rows == 2
        assert table.values("sex").tolist() == ["M"]
        assert table.values("age").tolist() == [30]
        assert table.values("tag").tolist() == ["x"]
        assert table.schema["score"].kind == "float"
    written = tmp_path / "table.parquet"
    pq.write_table(read_table(tmp_path / "data.pq", missing="drop").to_arrow(), written)
    assert read_table(written).values("sex").tolist() == ["M"]
    assert read_table(written, columns=["tag"]).schema.names == ("tag",)
    with pytest.raises(SchemaError, match="unknown column 'sexx'"):
        read_table(written, columns=["sexx"])


def test_parquet_strings_are_not_retyped(tmp_path: Path) -> None:
    path = tmp_path / "zip.parquet"
    pq.write_table(pa.table({"zip": ["02139", "10001"]}), path)
    assert read_table(path).schema["zip"].domain == ("02139", "10001")


def test_pandas_dataframe() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": [30.0, np.nan, 50.0, 60.0],
                          "sex": ["M ", None, "F", "?"],
                          "n": [1, 2, 3, 4]},
                         index=[10, 11, 12, 13])
    with pytest.raises(MissingValuesError, match=r"age \(1\), sex \(2\)"):
        read_table(frame)
    table = read_table(frame, missing="drop", sensitive="sex")
    assert table.schema.names == ("age", "sex", "n")
    assert table.dropped_rows == 2
    assert table.values("sex").tolist() == ["M", "F"]
    assert table.values("age").tolist() == [30.0, 50.0]
    assert table.values("n").tolist() == [1, 3]
    assert table.schema.sensitive == ("sex",)
    assert read_table(frame, columns=["n"]).schema.names == ("n",)
    categorical = pd.DataFrame({"c": pd.Categorical(["b", "a", "b"])})
    assert read_table(categorical).schema["c"].domain == ("a", "b")


def test_polars_dataframe() -> None:
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"age": [30.0, float("nan"), 50.0, None],
                          "sex": [" M", "F", None, "F"],
                          "n": [1, 2, 3, 4]})
    with pytest.raises(MissingValuesError, match=r"age \(2\), sex \(1\)"):
        read_table(frame)
    table = read_table(frame, missing="drop")
    assert len(table) == 1
    assert table.dropped_rows == 3
    assert table.values("sex").tolist() == ["M"]
    assert table.values("age").tolist() == [30.0]
    assert table.schema["n"].kind == "int"
    with pytest.raises(SchemaError, match="unknown column 'agee'"):
        read_table(frame, columns=["agee"])


def test_arrow_table() -> None:
    data = pa.table({"a": pa.array(["x ", "y", "NULL"], pa.large_string()),
                     "b": pa.array([1, 2, 3], pa.int32())})
    table = read_table(data, missing="drop")
    assert table.values("a").tolist() == ["x", "y"]
    assert table.values("b").tolist() == [1, 2]
    assert table.dropped_rows == 1
    batch = pa.RecordBatch.from_pydict({"a": ["u"]})
    assert read_table(batch).values("a").tolist() == ["u"]


def test_unsupported_source() -> None:
    with pytest.raises(TypeError, match="read_table reads"):
        read_table(42)


def test_float_nan_in_arrow_is_missing() -> None:
    data = pa.table({"f": [1.0, math.nan]})
    with pytest.raises(MissingValuesError, match=r"f \(1\)"):
        read_table(data)
