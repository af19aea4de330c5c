"""The layout of a CSV file, found from a sample of it: its encoding, separator (sniffed
unless given), header and the first record, with a clear error for text that is not in the
encoding given."""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ppdp.errors import SchemaError
from ppdp.io.rules import _check_distinct, _reason, check_columns

_SNIFF_BYTES = 64 * 1024


# The text given to csv.Sniffer, whose quote detection takes time quadratic in its length.
_SNIFF_CHARS = 8 * 1024


# The lines read to find the header: more means a file whose first lines are this long is
# read whole into memory before the CSV reader sees it.
_MAX_SAMPLE_BYTES = 16 * 1024 * 1024


_SEPARATORS = ",;\t|"


def _read_sample(path: Path, skip_rows: int, encoding: str) -> str:
    """The first whole lines of a file as text: at least the skipped lines and the first row."""
    chunks: list[bytes] = []
    size = breaks = 0
    with pa.input_stream(str(path)) as stream:
        while True:
            chunk = stream.read(_SNIFF_BYTES)
            chunks.append(chunk)
            size += len(chunk)
            breaks += max(chunk.count(b"\n"), chunk.count(b"\r"))
            at_end = len(chunk) < _SNIFF_BYTES
            if at_end or breaks > skip_rows + 1:
                break
            if size >= _MAX_SAMPLE_BYTES:
                raise SchemaError(f"cannot read CSV file {path}: its first {skip_rows + 1} "
                                  f"line(s) run past {_MAX_SAMPLE_BYTES // 2**20} MB; is it "
                                  "a CSV file?")
    # Undecodable bytes are left to the reader, whose error names the encoding.
    text = b"".join(chunks).decode("utf-8-sig" if _is_utf8(encoding) else encoding,
                                   errors="replace")
    if not at_end:
        # Drop the last, possibly partial, line (and any character cut in half with it).
        text = text[: max(text.rfind("\n"), text.rfind("\r")) + 1]
    return text


def _sniff_separator(lines: list[str]) -> str:
    sample = "".join(lines)
    if len(sample) > _SNIFF_CHARS:
        # Whole lines only: a line cut short may miss the separator and rule it out below.
        cut = max(sample.rfind("\n", 0, _SNIFF_CHARS), sample.rfind("\r", 0, _SNIFF_CHARS))
        sample = sample[: cut + 1] if cut > 0 else sample[:_SNIFF_CHARS]
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SEPARATORS).delimiter
    except csv.Error:
        pass
    # Fallback: the candidate found the same (non-zero) number of times on the most lines.
    best, best_score = ",", 0
    sample_lines = io.StringIO(sample, newline="").readlines()
    for candidate in _SEPARATORS:
        counts = [line.count(candidate) for line in sample_lines if line.strip()]
        if counts and min(counts) > 0:
            score = sum(c == counts[0] for c in counts)
            if score > best_score:
                best, best_score = candidate, score
    return best


def _first_record(path: Path, lines: list[str], sep: str) -> list[str] | None:
    # newline="" lets the csv module see \r and \r\n line ends as Arrow does.
    try:
        for record in csv.reader(io.StringIO("".join(lines), newline=""), delimiter=sep):
            if record:
                return record
    except csv.Error as exc:
        raise SchemaError(f"cannot read the first row of CSV file {path} (separator {sep!r}): "
                          f"{_reason(exc)}") from exc
    return None


def _is_utf8(encoding: str) -> bool:
    return codecs.lookup(encoding).name == "utf-8"


def check_encoding(encoding: str) -> str:
    """``encoding`` if Python knows it as a text encoding, else a ValueError."""
    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise ValueError(f"unknown text encoding {encoding!r}; give a Python codec name such "
                         f"as utf-8, latin-1 or cp1252") from None
    if not getattr(info, "_is_text_encoding", True):
        raise ValueError(f"{encoding!r} is not a text encoding; give one such as utf-8, latin-1 "
                         f"or cp1252")
    return encoding


def decoding_error(path: Path, encoding: str, exc: BaseException) -> SchemaError | None:
    """The error for a CSV file that does not decode as ``encoding``, naming the option that
    sets it; None if ``exc`` is another failure."""
    if isinstance(exc, UnicodeDecodeError):
        where = f" (byte 0x{exc.object[exc.start]:02x})"
    elif "invalid UTF8" in str(exc) or "Invalid UTF8" in str(exc):
        where = ""
    else:
        return None
    return SchemaError(f"CSV file {path} is not {encoding} text{where}; give its encoding with "
                       f"encoding=\"...\" (CLI: --encoding ENCODING), for example latin-1 or "
                       f"cp1252, or convert it to UTF-8")


_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
)


def looks_wide(path: Path) -> bool:
    """Whether a file's first bytes are UTF-16 or UTF-32 text: a byte-order mark, or a NUL at
    every other byte of its first 64 (ASCII text in UTF-16; UTF-32 has three in four).

    A NUL in UTF-8 text is a character like any other (the CSV module reads it as one), so a
    NUL alone does not make the file UTF-16."""
    with open(path, "rb") as file:
        start = file.read(64)
    if any(start.startswith(mark) for mark, _ in _BYTE_ORDER_MARKS):
        return True
    return len(start) >= 8 and (not any(start[0::2]) or not any(start[1::2]))


def _wide_encoding_error(path: Path, encoding: str) -> SchemaError:
    """The error for a CSV file whose text holds NUL characters in ``encoding``: UTF-16 or
    UTF-32 text read as UTF-8 (or as another encoding of one byte per character), whose NUL
    bytes would otherwise reach the CSV parser and fail there, blaming the rows."""
    with open(path, "rb") as file:
        start = file.read(4)
    # UTF-32's little-endian mark begins with UTF-16's: the longer marks are tried first.
    found = next((name for mark, name in _BYTE_ORDER_MARKS if start.startswith(mark)), None)
    what = (f"it starts with a {found} byte-order mark" if found
            else "it holds NUL bytes, as UTF-16 or UTF-32 text does")
    return SchemaError(f"CSV file {path} is not {encoding} text ({what}); give its encoding "
                       f"with encoding=\"...\" (CLI: --encoding ENCODING), for example "
                       f"{(found or 'UTF-16').lower()}, or convert it to UTF-8")


@dataclass(frozen=True)
class CsvLayout:
    """How a CSV file is laid out: separator, lines skipped, header, field names, encoding."""

    sep: str
    skip_rows: int
    header: bool
    field_names: list[str]
    encoding: str = "utf-8"

    def read_options(self, **options: Any) -> Any:
        """Arrow's read options for the file: lines skipped, field names, encoding."""
        import pyarrow.csv as pacsv

        # Arrow decodes UTF-8 itself (and skips its byte-order mark); any other encoding is
        # transcoded through Python's codec.
        return pacsv.ReadOptions(skip_rows=self.skip_rows, column_names=self.field_names,
                                 encoding="utf8" if _is_utf8(self.encoding) else self.encoding,
                                 **options)

    @property
    def parse_options(self) -> Any:
        import pyarrow.csv as pacsv

        return pacsv.ParseOptions(delimiter=self.sep, ignore_empty_lines=True,
                                  newlines_in_values=True)

    def convert_options(self, keep: list[str] | None) -> Any:
        """Every field read as a string (typing comes later, by the values)."""
        import pyarrow.csv as pacsv

        return pacsv.ConvertOptions(column_types={n: pa.string() for n in self.field_names},
                                    strings_can_be_null=False, quoted_strings_can_be_null=False,
                                    include_columns=keep)


def csv_layout(path: Path, keep: list[str] | None, *, sep: str | None, header: bool,
               names: Sequence[str] | None, skip_rows: int, encoding: str = "utf-8"
               ) -> CsvLayout:
    """Sniff and check a CSV file's layout from its first lines."""
    check_encoding(encoding)
    if not header and names is None:
        raise SchemaError(f"{path}: header=False needs the column names (names=[...])")
    if sep is not None and (len(sep) != 1 or sep in '"\r\n'):
        raise ValueError(f"sep must be a single character other than a quote or a line end, "
                         f"not {sep!r}")
    if isinstance(skip_rows, bool) or not isinstance(skip_rows, int) or skip_rows < 0:
        raise ValueError(f"skip_rows must be zero or more, not {skip_rows!r}")
    try:
        sample = _read_sample(path, skip_rows, encoding)
    except (pa.ArrowException, OSError) as exc:
        raise SchemaError(f"cannot read CSV file {path}: {_reason(exc)}") from exc
    if "\x00" in sample and looks_wide(path):
        raise _wide_encoding_error(path, encoding)
    # Lines end at \n, \r or \r\n only, as for Arrow's skip_rows (str.splitlines also splits
    # at form feeds and other characters that may sit inside a field).
    lines = io.StringIO(sample, newline="").readlines()[skip_rows:]
    if sep is None:
        sep = _sniff_separator(lines)
    first = _first_record(path, lines, sep)
    if first is None:
        raise SchemaError(f"CSV file {path} is empty" + (f" after skipping {skip_rows} lines"
                                                         if skip_rows else ""))
    field_names = [n.strip() for n in first]
    if names is not None:
        names = [str(n).strip() for n in names]
        if len(names) != len(first):
            raise SchemaError(f"{len(names)} column names given but the rows of {path} have "
                              f"{len(first)} fields (separator {sep!r})")
        field_names = names
    empty = [i + 1 for i, n in enumerate(field_names) if not n]
    if empty:
        raise SchemaError(f"{path}: column(s) {empty} have no name; pass names=[...]")
    if names is None:
        _check_distinct(field_names, f"the header of {path} has",
                        "pass names=[...] to name the columns")
    else:
        _check_distinct(field_names, "names=[...] has", "give each column its own name")
    if keep is not None:
        check_columns(keep, field_names)
    return CsvLayout(sep, skip_rows, header, field_names, encoding)
