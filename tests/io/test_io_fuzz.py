"""Property tests of ppdp.io.read_table on arbitrary input: it returns a Table or a ppdp error.

The CSV properties also check the values against Python's csv module reading the same text.
"""

from __future__ import annotations

import csv
import io
import math
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppdp.errors import PpdpError
from ppdp.io.csv_layout import looks_wide
from ppdp.io.read import read_table
from ppdp.io.rules import DEFAULT_NA_VALUES, NUMERIC_PERCENT
from ppdp.table.table import Table

FUZZ = settings(max_examples=80, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# The documented typing rule, restated per value so that the vectorised one is checked.
INTEGER = re.compile(r"[+-]?[0-9]+")
NUMBER = re.compile(r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?|inf|infinity|nan)",
                    re.IGNORECASE)
INT64_MAX = 2**63 - 1


def read_in_tempdir(data: bytes, suffix: str, **kwargs: Any) -> Table | PpdpError:
    """Write ``data`` to a fresh file and read it: the Table, or the ppdp error raised."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"data{suffix}"
        path.write_bytes(data)
        try:
            return read_table(path, **kwargs)
        except PpdpError as error:
            return error


def assert_one_line(outcome: Table | PpdpError) -> None:
    if isinstance(outcome, PpdpError):
        assert "\n" not in str(outcome) and "\r" not in str(outcome), repr(str(outcome))


# --- (a) arbitrary bytes ---------------------------------------------------------------------

csv_like_bytes = st.lists(
    st.one_of(st.sampled_from([b",", b";", b"\t", b"|", b'"', b"\n", b"\r\n", b"\r", b"\x00",
                               b" ", b"NA", b"?", b"1", b"-2.5", b"abc", b"\xff", b"\xc3",
                               "é".encode(), b"\xef\xbb\xbf"]),
              st.binary(max_size=6)),
    max_size=60,
).map(b"".join)


@FUZZ
@given(data=st.one_of(st.binary(max_size=400), csv_like_bytes),
       suffix=st.sampled_from([".csv", ".parquet", ".txt"]), drop=st.booleans())
def test_random_bytes_give_a_table_or_a_ppdp_error(data: bytes, suffix: str,
                                                    drop: bool) -> None:
    outcome = read_in_tempdir(data, suffix, missing="drop" if drop else "error")
    assert_one_line(outcome)


def _parquet_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"age": pa.array([30, 41, None, 52], pa.int32()),
                             "sex": ["M", "F", "F", None],
                             "score": [1.5, 2.5, float("nan"), 0.0],
                             "tag": pa.array(["x", "y", "x", "y"]).dictionary_encode()}),
                   sink, row_group_size=2)
    return sink.getvalue().to_pybytes()


PARQUET = _parquet_bytes()


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(PARQUET) - 1), st.integers(1, 255)),
                      max_size=4),
       cut=st.one_of(st.none(), st.integers(0, len(PARQUET) - 1)))
def test_damaged_parquet_gives_a_table_or_a_ppdp_error(flips: list[tuple[int, int]],
                                                       cut: int | None) -> None:
    data = bytearray(PARQUET)
    for position, mask in flips:
        data[position] ^= mask
    outcome = read_in_tempdir(bytes(data[:cut]), ".parquet", missing="drop")
    assert_one_line(outcome)


# --- (b) CSV shapes checked against the csv module -------------------------------------------

SEPARATORS = [",", ";", "\t", "|"]
special = st.sampled_from([",", ";", "\t", "|", '"', "\n", "\r", " ", "'", "\x00", "é", "中",
                           "\u2028", "\x0c", "\ufeff"])
text_cell = st.text(st.one_of(special, st.characters(codec="utf-8")), max_size=6)
number_cell = st.one_of(st.integers(-10**6, 10**6).map(str),
                        st.floats(allow_nan=False, allow_infinity=False).map(repr),
                        st.sampled_from(["+1", "007", "-0", "1e3", ".5", "inf", "1_000",
                                         "0x10", "99999999999999999999"]))
missing_cell = st.sampled_from((*DEFAULT_NA_VALUES, " ", " NA "))
column_cells: dict[str, st.SearchStrategy[str]] = {
    "int": st.integers(-999, 999).map(str),
    "number": number_cell,
    "text": text_cell,
    "bool": st.sampled_from(["true", "false", "TRUE", "False"]),
    "any": st.one_of(number_cell, text_cell, missing_cell),
}


@st.composite
def csv_documents(draw: Callable[..., Any]) -> dict[str, Any]:
    """A CSV text drawn column by column, written well-formed or joined raw (maybe malformed)."""
    n_columns = draw(st.integers(1, 4))
    n_rows = draw(st.integers(0, 14))
    kinds = draw(st.lists(st.sampled_from(sorted(column_cells)), min_size=n_columns,
                          max_size=n_columns))
    columns = []
    for kind in kinds:
        cells = draw(st.lists(column_cells[kind], min_size=n_rows, max_size=n_rows))
        # A few odd cells in an otherwise clean column exercise the mostly-numeric rule.
        for _ in range(draw(st.integers(0, 2))):
            if cells:
                cells[draw(st.integers(0, len(cells) - 1))] = draw(
                    st.one_of(missing_cell, text_cell, st.sampled_from(["abc", "4O"])))
        columns.append(cells)
    rows = [list(row) for row in zip(*columns, strict=True)]
    header = draw(st.booleans())
    if header:
        names = draw(st.one_of(
            st.just([f"c{i}" for i in range(n_columns)]),
            st.lists(text_cell, min_size=n_columns, max_size=n_columns)))
        rows.insert(0, names)
    sep = draw(st.sampled_from(SEPARATORS))
    buffer = io.StringIO(newline="")
    if draw(st.booleans()):
        writer = csv.writer(buffer, delimiter=sep,
                            lineterminator=draw(st.sampled_from(["\n", "\r\n", "\r"])),
                            quoting=draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL])))
        writer.writerows(rows)
    else:
        buffer.write("".join(sep.join(row) + "\n" for row in rows))
    prefix = draw(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\r\n"),
                                   max_size=10), max_size=2))
    return {"text": "".join(line + "\n" for line in prefix) + buffer.getvalue(),
            "skip_rows": len(prefix), "sep": sep, "header": header}


def csv_module_records(text: str, sep: str, skip_rows: int) -> list[list[str]] | None:
    """The non-empty records Python's csv module reads, or None when it cannot read them."""
    lines = io.StringIO(text, newline="").readlines()[skip_rows:]
    try:
        return [r for r in csv.reader(io.StringIO("".join(lines), newline=""), delimiter=sep)
                if r]
    except csv.Error:
        return None


def typed(values: list[str | None], non_numeric: str) -> tuple[str, list[Any]] | None:
    """A column's kind and values under the documented rule; None when it must be refused."""
    present = [v for v in values if v is not None]
    if present and all(v.lower() in ("true", "false") for v in present):
        return "bool", [None if v is None else v.lower() == "true" for v in values]
    numbers = [v for v in present if NUMBER.fullmatch(v)]
    if present and len(numbers) < len(present):
        if len(numbers) * 100 < NUMERIC_PERCENT * len(present) or non_numeric == "text":
            return "string", values
        if non_numeric == "error":
            return None
        values = [v if v is None or NUMBER.fullmatch(v) else None for v in values]
        present = numbers
    if not present:
        return "string", values
    if all(INTEGER.fullmatch(v) and abs(int(v)) <= INT64_MAX for v in present):
        return "int", [None if v is None else int(v) for v in values]
    as_float = [None if v is None else float(v) for v in values]
    return "float", [None if v is None or math.isnan(v) else v for v in as_float]


def expected_table(records: list[list[str]], header: bool,
                   non_numeric: str) -> tuple[list[str], list[list[Any]]] | None:
    """Column names and rows read_table must return, or None when it must raise."""
    width = len(records[0])
    if any(len(r) != width for r in records):
        return None
    names = [n.strip() for n in records[0]] if header else [f"c{i}" for i in range(width)]
    if any(not n for n in names) or len(set(names)) < len(names):
        return None
    body = records[1:] if header else records
    columns = []
    for i in range(width):
        cells = [r[i].strip() for r in body]
        result = typed([None if c in DEFAULT_NA_VALUES else c for c in cells], non_numeric)
        if result is None:
            return None
        columns.append(result[1])
    rows = [list(row) for row in zip(*columns, strict=True) if None not in row]
    return (names, rows) if rows else None


def wide_text(data: bytes) -> bool:
    """Whether ppdp takes these bytes for UTF-16 or UTF-32 text (`looks_wide`)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        path.write_bytes(data)
        return looks_wide(path)


@settings(FUZZ, max_examples=150)
@given(document=csv_documents(),
       non_numeric=st.sampled_from(["error", "missing", "text"]))
def test_csv_matches_the_csv_module(document: dict[str, Any], non_numeric: str) -> None:
    text, sep, header = document["text"], document["sep"], document["header"]
    records = csv_module_records(text, sep, document["skip_rows"])
    names = None
    if not header:
        names = [f"c{i}" for i in range(len(records[0]))] if records else ["c0"]
    outcome = read_in_tempdir(text.encode("utf-8"), ".csv", sep=sep, header=header, names=names,
                              skip_rows=document["skip_rows"], missing="drop",
                              non_numeric=non_numeric)
    assert_one_line(outcome)
    if records is None:
        return
    if wide_text(text.encode("utf-8")):
        # UTF-16 text read as UTF-8 has a NUL at every other byte: refused as its encoding.
        assert isinstance(outcome, PpdpError) and "NUL" in str(outcome), (text, outcome)
        return
    expected = expected_table(records, header, non_numeric) if records else None
    if expected is None:
        assert isinstance(outcome, PpdpError), (text, outcome)
        return
    assert isinstance(outcome, Table), (text, outcome)
    expected_names, expected_rows = expected
    assert list(outcome.schema.names) == expected_names
    assert len(outcome) == len(expected_rows)
    for i, name in enumerate(expected_names):
        # Decoded through the domain: numpy's str arrays (Table.values) drop trailing NULs.
        domain = outcome.schema[name].domain
        values = [domain[code] for code in outcome.codes[name].tolist()]
        assert values == [row[i] for row in expected_rows], (text, name)


@FUZZ
@given(document=csv_documents())
def test_sniffed_csv_gives_a_table_or_a_ppdp_error(document: dict[str, Any]) -> None:
    outcome = read_in_tempdir(document["text"].encode("utf-8"), ".csv",
                              skip_rows=document["skip_rows"], missing="drop")
    assert_one_line(outcome)
