"""Tests of ppdp.io.read_table: CSV sniffing and typing, Parquet, DataFrames, missing values."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ppdp.data.schema import Role
from ppdp.errors import MissingValuesError, SchemaError
from ppdp.io.read import read_table
from ppdp.io.scan import scan_table

UCI_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "salary-class",
]


@pytest.fixture
def adult_dir(shared_datasets: Path) -> Path:
    """The raw UCI Adult files (adult.data, adult.test) of the shared datasets."""
    return shared_datasets / "adult"


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


# --- mostly numeric CSV columns --------------------------------------------------------------

def ages_with_typos(tmp_path: Path) -> Path:
    """200 ages and three cells that are not numbers: 'abc' twice and '4O' (letter O)."""
    ages = [str(20 + i % 60) for i in range(200)]
    ages[10], ages[50], ages[120] = "abc", "4O", "abc"
    return write(tmp_path, "age,sex\n" + "".join(f"{a},{'MF'[i % 2]}\n"
                                                  for i, a in enumerate(ages)))


def test_mostly_numeric_column_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaError) as info:
        read_table(ages_with_typos(tmp_path))
    message = str(info.value)
    assert "column 'age'" in message
    assert "3 of its 200 values are not: 'abc', '4O';" in message
    assert 'non_numeric="missing"' in message and 'non_numeric="text"' in message
    assert "\n" not in message


def test_mostly_numeric_error_shows_five_values(tmp_path: Path) -> None:
    cells = [str(i) for i in range(100)] + ["a", "b", "c", "d", "e", "f", "g", "g"]
    path = write(tmp_path, "n\n" + "\n".join(cells) + "\n")
    with pytest.raises(SchemaError,
                       match=r"8 of its 108 values are not: 'g', 'a', 'b', 'c', 'd', and 2 more;"):
        read_table(path)


def test_non_numeric_missing_then_drop(tmp_path: Path) -> None:
    path = ages_with_typos(tmp_path)
    with pytest.raises(MissingValuesError, match=r"missing values in 1 column: age \(3\)"):
        read_table(path, non_numeric="missing")
    table = read_table(path, non_numeric="missing", missing="drop")
    assert len(table) == 197
    assert table.dropped_rows == 3
    assert table.schema["age"].kind == "int"
    assert int((table.values("age") < 100).sum()) == 197


def test_non_numeric_text_keeps_text(tmp_path: Path) -> None:
    table = read_table(ages_with_typos(tmp_path), non_numeric="text")
    assert len(table) == 200
    assert table.schema["age"].kind == "string"
    assert {"abc", "4O", "20"} <= set(table.schema["age"].domain)


def test_numeric_share_threshold(tmp_path: Path) -> None:
    # 9 numbers of 10 values is 90 %: an error; 8 of 9 is below: text.
    at = write(tmp_path, "n\n" + "".join(f"{i}\n" for i in range(9)) + "x\n", name="at.csv")
    with pytest.raises(SchemaError, match="1 of its 10 values are not: 'x'"):
        read_table(at)
    below = write(tmp_path, "n\n" + "".join(f"{i}\n" for i in range(8)) + "x\n",
                  name="below.csv")
    assert read_table(below).schema["n"].kind == "string"
    # Missing-value tokens do not count as values.
    with_na = write(tmp_path, "n\n" + "".join(f"{i}\n" for i in range(8)) + "x\n?\n?\n",
                    name="na.csv")
    assert read_table(with_na, missing="drop").schema["n"].kind == "string"


def test_number_forms(tmp_path: Path) -> None:
    path = write(tmp_path, "i,f,h\n+7,1e3,0x10\n007,.5,1_000\n-0,inf,12\n")
    table = read_table(path)
    assert table.schema["i"].domain == (0, 7)
    assert table.schema["f"].domain == (0.5, 1000.0, math.inf)
    assert table.schema["h"].kind == "string"


def test_negative_zero_is_zero(tmp_path: Path) -> None:
    path = write(tmp_path, "f\n0.0\n-0.0\n1.5\n")
    assert read_table(path).schema["f"].domain == (0.0, 1.5)


def test_icd9_codes_need_non_numeric_text(shared_datasets: Path) -> None:
    # ICD-9 codes: mostly digits ("008", "724"), about 6 % V-codes ("V22").
    path = shared_datasets / "more" / "meps2005_conditions.csv"
    with pytest.raises(SchemaError, match=r"column 'ICD9CODX' .* 1546 of its 26756 values"):
        read_table(path)
    table = read_table(path, non_numeric="text")
    assert {"008", "724", "V22"} <= set(table.schema["ICD9CODX"].domain)
    assert table.schema["DOBYY"].kind == "int"


def test_parquet_text_is_not_checked_for_numbers(tmp_path: Path) -> None:
    path = tmp_path / "codes.parquet"
    pq.write_table(pa.table({"code": [str(i) for i in range(20)] + ["V22"]}), path)
    assert read_table(path).schema["code"].kind == "string"


def test_invalid_non_numeric_value(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non_numeric must be 'error', 'missing' or 'text'"):
        read_table(write(tmp_path, "a\n1\n"), non_numeric="drop")


# --- duplicate column names ------------------------------------------------------------------

def test_duplicate_names_in_csv_header(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b,a ,c,c\n1,2,3,4,5\n")
    with pytest.raises(SchemaError, match=r"^the header of .*data\.csv has duplicate column "
                                          r"names: 'a', 'c'; pass names=\[\.\.\.\]"):
        read_table(path)
    assert read_table(path, names=["a", "b", "a2", "c", "c2"]).schema.names[2] == "a2"


def test_duplicate_names_given(tmp_path: Path) -> None:
    path = write(tmp_path, "1,2,3\n")
    with pytest.raises(SchemaError, match=r"^names=\[\.\.\.\] has duplicate column names: 'x'"):
        read_table(path, header=False, names=["x", "y", "x"])


def test_duplicate_names_in_dataframes_and_parquet(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([[1, 2, 3]], columns=["a", "b", "a"])
    with pytest.raises(SchemaError,
                       match=r"^the pandas DataFrame has duplicate column names: 'a'; rename"):
        read_table(frame)
    data = pa.table([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(SchemaError, match="the pyarrow Table has duplicate column names: 'a'"):
        read_table(data)
    pq.write_table(data, tmp_path / "dup.parquet")
    with pytest.raises(SchemaError, match=r"dup\.parquet has duplicate column names: 'a'"):
        read_table(tmp_path / "dup.parquet")


def test_repeated_or_empty_columns_argument(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b\n1,2\n")
    with pytest.raises(SchemaError, match=r"columns=\[\.\.\.\] has duplicate column names: 'a'"):
        read_table(path, columns=["a", "a"])
    with pytest.raises(ValueError, match="at least one column"):
        read_table(path, columns=[])


# --- awkward files (cases found by tests/test_io_fuzz.py) ------------------------------------

def test_line_ends_are_only_cr_lf_and_crlf(tmp_path: Path) -> None:
    old_mac = write(tmp_path, "a,b\r1,x\r2,y\r", name="cr.csv")
    assert read_table(old_mac).values("b").tolist() == ["x", "y"]
    # A form feed (which str.splitlines splits at) is part of a field, not a line end.
    form_feed = tmp_path / "ff.csv"
    form_feed.write_bytes(b"skip me\x0cstill skipped\na\n1\n")
    assert read_table(form_feed, skip_rows=1).values("a").tolist() == [1]


def test_header_only_and_nul_files(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="no rows"):
        read_table(write(tmp_path, "a,b", name="no_newline.csv"))
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"\x00\x00\x00")
    with pytest.raises(SchemaError, match="no rows"):
        read_table(nul)


def test_long_lines(tmp_path: Path) -> None:
    long_value = "x" * (3 << 20)
    table = read_table(write(tmp_path, f"a,b\n{long_value},1\nshort,2\n"))
    assert table.schema["a"].domain == ("short", long_value)
    prefix = write(tmp_path, "#" * (2 << 20) + "\na\n1\n", name="prefix.csv")
    assert read_table(prefix, skip_rows=1).values("a").tolist() == [1]


def test_quoted_line_breaks_across_blocks(tmp_path: Path) -> None:
    # Over 3 MB: Arrow reads in 1 MB blocks, and a block may end inside a quoted field.
    rows = "".join(f'{i},"line one\nline two {i % 7}"\n' for i in range(100_000))
    table = read_table(write(tmp_path, "n,text\n" + rows))
    assert len(table) == 100_000
    assert table.values("text")[-1] == "line one\nline two 4"


def test_invalid_utf8_message(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("name\ncaf\xe9\n".encode("latin-1"))
    message = (r"latin1\.csv is not utf-8 text; give its encoding with encoding=\"\.\.\.\" "
               r"\(CLI: --encoding ENCODING\), for example latin-1")
    with pytest.raises(SchemaError, match=message):
        read_table(path)
    with pytest.raises(SchemaError, match=message):
        scan_table(path)


LATIN_1 = "año;ciudad;enfermedad\n1990;Málaga;gripe\n1985;Cádiz;asma\n1990;Málaga;asma\n"


@pytest.mark.parametrize("encoding", ["latin-1", "ISO-8859-1", "cp1252"])
def test_a_latin_1_csv_with_its_encoding(tmp_path: Path, encoding: str) -> None:
    """The header and the cells are decoded (the separator sniffed on the decoded text), in
    memory and batch by batch alike."""
    path = tmp_path / "latin1.csv"
    path.write_bytes(LATIN_1.encode("latin-1"))
    table = read_table(path, encoding=encoding, sensitive="enfermedad")
    assert table.schema.names == ("año", "ciudad", "enfermedad")
    assert table.values("ciudad").tolist() == ["Málaga", "Cádiz", "Málaga"]
    assert table.count("ciudad = 'Málaga' AND año = 1990").value == 2
    scanned = scan_table(path, encoding=encoding, sensitive="enfermedad")
    assert scanned.schema == table.schema
    # The same text in UTF-8 (the default) gives the same table.
    utf8 = tmp_path / "utf8.csv"
    utf8.write_text(LATIN_1, encoding="utf-8")
    assert read_table(utf8, sensitive="enfermedad").schema == table.schema


def test_the_encoding_tried_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(LATIN_1.encode("latin-1"))
    with pytest.raises(SchemaError, match=r"not ascii text \(byte 0xf1\); .*--encoding"):
        read_table(path, encoding="ascii")
    undefined = tmp_path / "undefined.csv"
    undefined.write_bytes(b"a\n\x81\n")  # 0x81 has no character in cp1252
    with pytest.raises(SchemaError, match=r"not cp1252 text \(byte 0x81\)"):
        read_table(undefined, encoding="cp1252")
    with pytest.raises(ValueError, match="unknown text encoding 'klingon'"):
        read_table(path, encoding="klingon")
    with pytest.raises(ValueError, match="'base64' is not a text encoding"):
        scan_table(path, encoding="base64")


def test_bad_separator_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="other than a quote or a line end"):
        read_table(write(tmp_path, "a\n1\n"), sep='"')


def test_parquet_column_types(tmp_path: Path) -> None:
    import datetime
    import decimal

    path = tmp_path / "types.parquet"
    pq.write_table(pa.table({
        "day": pa.array([datetime.date(2024, 1, 31), datetime.date(2023, 12, 1)]),
        "price": pa.array([decimal.Decimal("1.25"), decimal.Decimal("2.50")],
                          pa.decimal128(5, 2)),
        "count": pa.array([decimal.Decimal("3"), decimal.Decimal("4")], pa.decimal128(10, 0)),
        "small": pa.array([1, 2], pa.uint8()),
        "half": pa.array([0.5, 1.5], pa.float32()),
        "label": pa.array([b"yes", b"no"], pa.binary()),
        "flag": [True, False],
    }), path)
    table = read_table(path)
    assert table.schema["day"].domain == ("2023-12-01", "2024-01-31")
    assert table.schema["price"].domain == (1.25, 2.5)
    assert table.schema["count"].kind == "int"
    assert table.schema["small"].kind == "int"
    assert table.schema["half"].domain == (0.5, 1.5)
    assert table.schema["label"].domain == ("no", "yes")
    assert table.schema["flag"].domain == (False, True)
    assert table.schema["flag"].kind == "bool"


@pytest.mark.parametrize(("column", "message"), [
    (pa.array([[1], [2, 3]]), r"column 'x' has the nested type list<\w+: int64>"),
    (pa.array([{"a": 1}, {"a": 2}]), r"column 'x' has the nested type struct<a: int64>"),
    (pa.array([1, 2], pa.timestamp("us")), r"column 'x' has type timestamp\[us\], which ppdp "
                                           r"does not read"),
    (pa.array([2**64 - 1, 1], pa.uint64()), r"column 'x' \(uint64\) holds integers beyond the "
                                            r"int64 range"),
    (pa.array([b"\xff", b"a"]), "column 'x' .* holds binary data that is not UTF-8 text"),
    (pa.array([1, 2], pa.decimal128(38, 10)), r"column 'x' has type decimal128\(38, 10\), "
                                              r"more digits than a float64 holds"),
    (pa.array([10**30, 1], pa.decimal128(38, 0)), r"column 'x' \(decimal128\(38, 0\)\) holds "
                                                  r"integers beyond the int64 range"),
])
def test_unsupported_parquet_columns(tmp_path: Path, column: pa.Array, message: str) -> None:
    path = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"x": column, "y": [1, 2]}), path)
    with pytest.raises(SchemaError, match=message):
        read_table(path)
    assert read_table(path, columns=["y"]).schema.names == ("y",)


def test_damaged_parquet_data(tmp_path: Path) -> None:
    # Strings that are not UTF-8 pass the Parquet reader; they must fail as a damaged file.
    offsets = pa.py_buffer(np.array([0, 1, 3], dtype=np.int32).tobytes())
    invalid = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"a\xff\xfe")])
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"s": invalid}), path)
    with pytest.raises(SchemaError, match=r"cannot read Parquet file .*damaged\.parquet .*UTF8"):
        read_table(path)
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(SchemaError, match=r"cannot read Parquet file .*truncated\.parquet"):
        read_table(truncated)


def test_errors_stay_on_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, '"two\nlines",b\n?,1\n')
    with pytest.raises(MissingValuesError,
                       match=r"^missing values in 1 column: 'two\\nlines' \(1\)"):
        read_table(path)


def _equal_tables(a, b) -> None:
    assert a.schema == b.schema
    assert a.dropped_rows == b.dropped_rows and a.name == b.name
    for name in a.schema.names:
        np.testing.assert_array_equal(a.codes[name], b.codes[name])
        assert a.codes[name].dtype == b.codes[name].dtype


@pytest.mark.parametrize("options", [
    {"sensitive": "occupation"},
    {"sensitive": "occupation", "observed_domains": True, "columns": ["age", "occupation"]},
    {"missing": "drop", "na_values": ["?", "Sales"]},
    {"domains": {"age": {"min": 0, "max": 120}}, "quasi_identifiers": ["age", "sex"]},
])
def test_parquet_read_in_batches_equals_the_whole_table(options, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """read_table reads Parquet one row group at a time, cleaning on dictionaries; the
    whole-table path (kept for what that cannot read) gives the same table."""
    import ppdp
    import ppdp.io.read

    adult = ppdp.datasets.adult().to_arrow()
    extra = pa.table({"flag": pa.array([i % 3 == 0 for i in range(adult.num_rows)]),
                      "when": pa.array([f"2020-01-{1 + i % 28:02d}" for i in
                                        range(adult.num_rows)]),
                      "padded": pa.array([" a", "b ", "c"] * (adult.num_rows // 3))})
    data = pa.table({**{n: adult.column(n) for n in adult.column_names},
                     **{n: extra.column(n) for n in extra.column_names}})
    path = tmp_path / "adult.parquet"
    pq.write_table(data, path, row_group_size=7000)
    read_in_batches = ppdp.io.read._read_parquet_in_batches
    read: list[object] = []
    monkeypatch.setattr(ppdp.io.read, "_read_parquet_in_batches",
                        lambda *a, **k: read.append(read_in_batches(*a, **k)) or read[-1])
    batched = read_table(path, **options)
    assert read and read[-1] is batched  # read in batches, not by the whole-table path
    monkeypatch.setattr(ppdp.io.read, "_read_parquet_in_batches", lambda *a, **k: None)
    _equal_tables(batched, read_table(path, **options))


def test_parquet_the_batches_cannot_read_falls_back_to_the_whole_table(
        tmp_path: Path) -> None:
    """An ordered categorical declares its domain in order; read_table keeps that order."""
    import pandas as pd

    frame = pd.DataFrame({"size": pd.Categorical(["M", "S", "L", "S"],
                                                 categories=["S", "M", "L"], ordered=True)})
    path = tmp_path / "ordered.parquet"
    frame.to_parquet(path)
    table = read_table(path)
    assert list(table.schema["size"].domain) == ["S", "M", "L"]
