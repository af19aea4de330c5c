"""Reading microdata into a Table: CSV and Parquet files, pandas and polars DataFrames, Arrow.

Every source goes through the same steps: keep the requested columns, strip whitespace from
strings, turn the missing-value tokens (and NaN) into nulls, refuse or drop rows with missing
values, then dictionary-encode each column with `ppdp.table.table_from_arrow`.

CSV files are UTF-8 text unless ``encoding`` names another (``"latin-1"``, ``"cp1252"``, any
Python codec); their fields are read as text. Text columns, meaning every CSV
column and the plain text (``str``, ``object``, Arrow ``string``) columns of DataFrames and
Arrow tables, are typed by their non-missing cells (after stripping and the missing-value
tokens):

- every cell ``true`` or ``false`` (any case): boolean;
- every cell an integer (``-12``, ``+7``, ``007``) and all within int64: int64;
- every cell a decimal number (``1.5``, ``.5``, ``1e3``, ``inf``, ``nan``): float64;
- at least `NUMERIC_PERCENT` % of the cells numbers, the others not (``abc``, ``4O``): an error
  naming the column and the offending values, unless ``non_numeric`` is ``"missing"`` (those
  cells become missing values, and the missing-value rule applies to them) or ``"text"`` (the
  column is read as text);
- otherwise: text. Hexadecimal (``0x10``), digit separators (``1_000``) and non-ASCII digits
  are text.

A declared text domain (``domains={"zip": [...strings...]}``) keeps a text column text, and so
does a categorical dtype: categories are labels the user chose. Parquet files are typed by
their own schema, so their text columns stay text (queries then refuse to compare them with
numbers).

Columns that have another type keep it: integers become int64, floating-point numbers float64,
decimals int64 (no fraction) or float64 (at most 15 digits), booleans booleans (domain
``[False, True]``, declared: it says nothing about the data), dates ISO text (``2024-01-31``,
which sorts and compares chronologically), UTF-8 binary text. Categoricals (dictionary
columns) are read as their values; an *ordered* one (pandas ``ordered=True``, polars
``pl.Enum``, Arrow ``ordered=True``) becomes an ordered column whose declared domain is all its
categories in their order (`ppdp.table.arrange_domain` says how a domain declared as well
combines with it). Date-times (timestamps) are refused with an error that says to convert them
to dates or text, and so are nested, time, duration and other types, naming the column. Column
names must be distinct whatever the source.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.data.domains import resolve_domains
from ppdp.data.schema import Ordered, arrange_domain, dictionary_order, unknown_column_message
from ppdp.errors import MissingValuesError, SchemaError
from ppdp.io.storage import write_atomic
from ppdp.table.table import Table, table_from_arrow

__all__ = ["DEFAULT_NA_VALUES", "NUMERIC_PERCENT", "read_table"]

logger = logging.getLogger("ppdp")

DEFAULT_NA_VALUES: tuple[str, ...] = ("?", "", "NA", "N/A", "NaN", "nan", "NULL")
"""Strings read as a missing value unless ``na_values`` says otherwise."""

NUMERIC_PERCENT = 90
"""A CSV column whose non-missing cells are at least this percentage numbers, but not all of
them, is an error unless ``non_numeric`` says what to do with the other cells."""

_SNIFF_BYTES = 64 * 1024
# The text given to csv.Sniffer, whose quote detection takes time quadratic in its length.
_SNIFF_CHARS = 8 * 1024
# The lines read to find the header: more means a file whose first lines are this long is
# read whole into memory before the CSV reader sees it.
_MAX_SAMPLE_BYTES = 16 * 1024 * 1024
_SEPARATORS = ",;\t|"
_PARQUET_SUFFIXES = (".parquet", ".pq")
_MISSING_CHOICES = ("error", "drop")
_NON_NUMERIC_CHOICES = ("error", "missing", "text")
# What Arrow's string-to-number casts accept, minus the forms a person rarely means as a
# number (hexadecimal, which the int64 cast takes): RE2 syntax, matched on distinct values.
_INTEGER = r"^[+-]?[0-9]+$"
_NUMBER = r"(?i)^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?|inf|infinity|nan)$"
_BOOLEANS = ("true", "false")
_SHOWN_VALUES = 5
_MAX_REASON = 200


def read_table(
    source: str | os.PathLike[str] | Any,
    *,
    sensitive: Iterable[str] | str | None = None,
    quasi_identifiers: Iterable[str] | str | None = None,
    columns: Sequence[str] | None = None,
    sep: str | None = None,
    header: bool = True,
    names: Sequence[str] | None = None,
    skip_rows: int = 0,
    na_values: Iterable[str] | None = DEFAULT_NA_VALUES,
    missing: str = "error",
    domains: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    observed_domains: bool = False,
    non_numeric: str = "error",
    encoding: str = "utf-8",
) -> Table:
    """Read a CSV or Parquet file, a pandas or polars DataFrame, or an Arrow table into a Table.

    ``encoding`` is a CSV file's text encoding (a Python codec name); a file that does not
    decode is an error that names it.

    ``domains`` declares public domains (`ppdp.declared_domains`): a mapping of column to
    values, ``{"min": a, "max": b}`` or an ordered text domain (`ppdp.table.Ordered`,
    ``{"ordered": [...]}``), or the path of a JSON schema file. Ordered categoricals and booleans
    declare their own domains. Other columns get the values present, which mechanisms refuse to
    publish where that would leak, unless ``observed_domains`` declares them public (the release
    then reveals which values occur). How each type is read: the module docstring.
    """
    if missing not in _MISSING_CHOICES:
        raise ValueError(f"missing must be 'error' or 'drop', not {missing!r}")
    if non_numeric not in _NON_NUMERIC_CHOICES:
        raise ValueError(f"non_numeric must be 'error', 'missing' or 'text', not {non_numeric!r}")
    if isinstance(skip_rows, bool) or not isinstance(skip_rows, int) or skip_rows < 0:
        raise ValueError(f"skip_rows must be zero or more, not {skip_rows!r}")
    check_encoding(encoding)
    na = sorted({str(v) for v in (na_values or ())})
    domains = resolve_domains(domains)
    keep = _keep(columns)

    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        if path.is_dir():
            raise SchemaError(f"cannot read {path}: it is a directory, not a CSV or Parquet file")
        if path.suffix.lower() in _PARQUET_SUFFIXES:
            scanned = _read_parquet_in_batches(
                path, sensitive=sensitive, quasi_identifiers=quasi_identifiers, columns=keep,
                na_values=na, missing=missing, domains=domains,
                observed_domains=observed_domains, non_numeric=non_numeric)
            if scanned is not None:
                return scanned
            data = _read_parquet(path, keep)
            # A Parquet file's schema is a typed file format's choice: its text stays text.
            typed = True
        else:
            data = _read_csv(path, keep, sep=sep, header=header, names=names,
                             skip_rows=skip_rows, encoding=encoding)
            typed = False
    else:
        data = _arrow_from_object(source)
        _check_distinct(data.column_names, f"{_describe(source)} has", "rename them")
        if keep is not None:
            check_columns(keep, data.column_names)
            data = data.select(keep)
        # In memory, a column of number strings is an accident of how the frame was built
        # (read as object or str): typed by its values as CSV text is.
        typed = False

    # An ordered categorical's categories are a declaration by the user: its domain, in order.
    for name in data.column_names:
        order = _categories(name, data.column(name), na)
        if order is not None:
            domains[name] = arrange_domain(name, order, domains.get(name))  # type: ignore[assignment]
    # Plain text columns (CSV's every column, DataFrames' str/object columns) are typed by their
    # values; categoricals are labels the user chose, and a declared text domain says the
    # column is text.
    data = pa.table(
        [_clean_column(name, data.column(name), na,
                       infer=not typed and _is_text(data.column(name).type)
                       and not _is_text_domain(domains.get(name)),
                       non_numeric=non_numeric, source=_describe(source))
         for name in data.column_names],
        names=data.column_names,
    )
    data, dropped = _handle_missing(data, missing)
    if data.num_rows == 0:
        what = "all rows held missing values" if dropped else "it has no rows"
        raise SchemaError(f"cannot build a table from {_describe(source)}: {what}")
    table = table_from_arrow(data, domains=domains)
    schema = table.schema.with_roles(sensitive=sensitive, quasi_identifiers=quasi_identifiers)
    name = Path(source).stem if isinstance(source, str | os.PathLike) else None
    table = Table(schema, table.codes, dropped_rows=dropped, name=name)
    return table.declare_observed_domains() if observed_domains else table


_BATCH_ROWS = 1 << 18
"""Rows of a batch when read_table reads Parquet in batches: each is copied into the codes and
dropped, so smaller batches hold less (Arrow decodes a batch into 4-byte dictionary indices)."""


def _read_parquet_in_batches(path: Path, **options: Any) -> Table | None:
    """A Parquet file read as `ppdp.scan` reads it, one row group at a time, cleaned and
    encoded on each row group's dictionaries rather than row by row; None for a file this
    cannot read as read_table would (an ordered categorical column, whose categories declare
    its domain; repeated names; nested columns; any error): the whole-table path reads those.

    The rules are read_table's (`tests/test_io.py` checks that both paths give the same
    table); the codes are written into arrays of the final size, a column at a time. At 10^7
    rows of Adult (90 MB encoded) it took 1.0-1.4 s, and the process's resident memory grew by
    132 MB at its peak (1.47 times the codes) after a first Parquet read in the process, whose
    loading of Arrow's Parquet code costs 56 MB once (194 MB in a fresh process); it grew by
    225 MB with every column's batch read at once and Arrow's threads. Read whole: 8.8 s and
    24 times the encoded table."""
    from ppdp.io.scan import scan_table

    try:
        schema = pq.read_schema(path)
    except MemoryError:
        raise
    except Exception:
        return None
    types = [field.type.value_type if pa.types.is_dictionary(field.type) else field.type
             for field in schema]
    if (len(set(schema.names)) < len(schema.names) or any(pa.types.is_nested(t) for t in types)
            or any(pa.types.is_dictionary(f.type) and f.type.ordered for f in schema)):
        return None
    try:
        source = scan_table(path, batch_rows=_BATCH_ROWS, **options)
        # What the domain pass freed goes back to the system before the codes are allocated.
        pa.default_memory_pool().release_unused()
        codes = {c.name: np.empty(source.n_rows, dtype=c.dtype) for c in source.schema.columns}
        # A column at a time (Parquet reads one column's pages alone): Arrow then holds one
        # column's batch, not every column's (at 10^7 rows of Adult, 37 MB of Arrow memory
        # at the peak down to 8). Rows dropped for a missing value in any column need every
        # column of a batch at once.
        for names in ([[c] for c in codes] if source.dropped_rows == 0 else [list(codes)]):
            for start, batch in source.batches(_BATCH_ROWS, names):
                for name, values in batch.items():
                    codes[name][start:start + len(values)] = values
        pa.default_memory_pool().release_unused()
    except MemoryError:
        raise
    except Exception:
        # Whatever is wrong (missing values, a damaged file, a value outside its domain), the
        # whole-table path reads the file again and says so in its own words.
        return None
    return Table(source.schema, codes, dropped_rows=source.dropped_rows, name=path.stem)


def _describe(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return str(source)
    return f"the {type(source).__module__.split('.')[0]} {type(source).__name__}"


def _keep(columns: Sequence[str] | None) -> list[str] | None:
    if columns is None:
        return None
    if isinstance(columns, str):
        raise ValueError(f"columns must be a list of column names, not the string {columns!r}")
    keep = [str(name) for name in columns]
    if not keep:
        raise ValueError("columns must name at least one column (or be None for all)")
    _check_distinct(keep, "columns=[...] has", "list each column once")
    return keep


def check_columns(keep: Sequence[str], available: Sequence[str]) -> None:
    for name in keep:
        if name not in available:
            raise SchemaError(unknown_column_message(name, list(available)))


def _check_distinct(names: Sequence[str], where: str, fix: str) -> None:
    """Refuse repeated column names: every later step looks columns up by name."""
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise SchemaError(f"{where} duplicate column names: {', '.join(map(repr, repeated))}; "
                          f"{fix}")


def _reason(exc: BaseException) -> str:
    """An exception's message on one line, shortened."""
    parts = exc.args if exc.args and all(isinstance(a, str) for a in exc.args) else (str(exc),)
    text = " ".join("; ".join(parts).split()) or type(exc).__name__
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def _read_parquet(path: Path, keep: list[str] | None) -> pa.Table:
    try:
        with pq.ParquetFile(path) as file:
            names = file.schema_arrow.names
            _check_distinct(names, f"Parquet file {path} has",
                            "rewrite it with distinct names")
            if keep is not None:
                check_columns(keep, names)
            data = file.read(columns=keep)
            # A damaged file can decode into invalid Arrow data (strings that are not UTF-8,
            # dictionary indices out of range) that would fail later, far from the cause.
            data.validate(full=True)
            return data
    except SchemaError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        # ValueError: a damaged file's column names may not decode as UTF-8.
        if isinstance(exc, FileNotFoundError):
            raise
        raise SchemaError(f"cannot read Parquet file {path} (is it a complete Parquet file?): "
                          f"{_reason(exc)}") from exc


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


def _read_csv(path: Path, keep: list[str] | None, *, sep: str | None, header: bool,
              names: Sequence[str] | None, skip_rows: int, encoding: str) -> pa.Table:
    layout = csv_layout(path, keep, sep=sep, header=header, names=names, skip_rows=skip_rows,
                        encoding=encoding)
    data = _parse_csv(path, layout, keep)
    # The header is read as a row and dropped here rather than skipped by Arrow, which cannot
    # skip a last line without a line end (a file holding only a header).
    return data.slice(1) if header else data


def _parse_csv(path: Path, layout: CsvLayout, keep: list[str] | None) -> pa.Table:
    """Every field of the CSV file as a string, with Arrow."""
    import pyarrow.csv as pacsv

    block_size = None
    while True:
        read_options = layout.read_options(**({"block_size": block_size} if block_size else {}))
        try:
            return pacsv.read_csv(path, read_options=read_options,
                                  parse_options=layout.parse_options,
                                  convert_options=layout.convert_options(keep))
        except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
            reason = _reason(exc)
            # A row longer than Arrow's block (1 MB by default): read the file as one block.
            if block_size is None and ("block" in reason or "straddl" in reason):
                block_size = min(max(path.stat().st_size + 1, 1 << 20), 2**31 - 1)
                continue
            undecodable = decoding_error(path, layout.encoding, exc)
            if undecodable is not None:
                raise undecodable from exc
            raise SchemaError(f"cannot read CSV file {path} (separator {layout.sep!r}): "
                              f"{reason}") from exc


def _arrow_from_object(source: Any) -> pa.Table:
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    module = type(source).__module__.split(".")[0]
    try:
        if module == "pandas" and hasattr(source, "columns"):
            # Arrow refuses repeated names too, but with a message about its own conversion.
            _check_distinct([str(c) for c in source.columns], f"the pandas "
                            f"{type(source).__name__} has", "rename them")
            return pa.Table.from_pandas(source, preserve_index=False)
        if module == "polars" and hasattr(source, "to_arrow"):
            return source.to_arrow()
    except (pa.ArrowException, TypeError, ValueError) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise SchemaError(f"cannot convert the {module} {type(source).__name__} to a table: "
                          f"{_reason(exc)}") from exc
    raise TypeError("read_table reads a path to a CSV or Parquet file, a pandas or polars "
                    f"DataFrame or a pyarrow Table, not {type(source).__name__}")


def _is_text_domain(domain: Sequence[Any] | None) -> bool:
    return domain is not None and len(domain) > 0 and all(isinstance(v, str) for v in domain)


def _categories(name: str, column: pa.ChunkedArray, na: list[str]) -> Ordered | None:
    """An ordered categorical's categories, cleaned as its values are, else None."""
    order = dictionary_order(name, column)
    if order is None:
        return None
    # The same stripping, missing-value tokens and types as the values: a category that reads
    # as missing ("?", NaN) is no category.
    cleaned = _clean_column(name, pa.chunked_array([order]), na, infer=False)
    return Ordered(v for v in cleaned.to_pylist() if v is not None)


def _clean_column(name: str, column: pa.ChunkedArray, na: list[str], *, infer: bool,
                  non_numeric: str = "error", source: str = "the input") -> pa.ChunkedArray:
    """Strip strings, null the missing-value tokens and NaN, and (for CSV) infer the type."""
    column = _supported(name, column)
    if _is_text(column.type):
        if not pa.types.is_string(column.type):
            column = pc.cast(column, pa.string())
        column = pc.utf8_trim_whitespace(column)
        if na:
            # From a numpy array: pyarrow looks for pandas (0.2 s to import) behind a list.
            tokens = pa.array(np.array(na, dtype=object), pa.string())
            column = pc.if_else(pc.is_in(column, value_set=tokens),
                                pa.scalar(None, pa.string()), column)
        if infer:
            column = _infer_type(name, column, non_numeric=non_numeric, source=source)
    if pa.types.is_floating(column.type):
        column = pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
        # Adding 0.0 turns -0.0 into 0.0, which Python holds equal: one domain value, not two.
        column = pc.add(column, pa.scalar(0.0, column.type))
    return column


def _supported(name: str, column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The column as text, int64, float64, boolean or null, or a SchemaError naming its type."""
    dictionary = pa.types.is_dictionary(column.type)
    type_ = column.type.value_type if dictionary else column.type
    _check_type(name, type_)
    if dictionary:
        column = pc.cast(column, type_)
    if _is_text(type_) or pa.types.is_int64(type_) or pa.types.is_float64(type_) \
            or pa.types.is_boolean(type_) or pa.types.is_null(type_):
        return column
    if pa.types.is_integer(type_):
        return _cast(name, column, pa.int64(), "integers beyond the int64 range")
    if pa.types.is_floating(type_):
        return pc.cast(column, pa.float64())
    if pa.types.is_date(type_):
        return pc.cast(column, pa.string())
    if _is_binary(type_):
        if pa.types.is_fixed_size_binary(type_):
            column = pc.cast(column, pa.binary())
        return _cast(name, column, pa.string(), "binary data that is not UTF-8 text")
    # Decimals (the only type left): integers without a fraction, else float64, which keeps
    # distinct values of up to 15 digits distinct (`_check_type` refuses longer ones).
    if type_.scale <= 0:
        return _cast(name, column, pa.int64(), "integers beyond the int64 range")
    return pc.cast(column, pa.float64())


def _check_type(name: str, type_: pa.DataType) -> None:
    if (_is_text(type_) or _is_binary(type_) or pa.types.is_integer(type_)
            or pa.types.is_floating(type_) or pa.types.is_boolean(type_)
            or pa.types.is_null(type_) or pa.types.is_date(type_)):
        return
    shown = str(type_) if len(str(type_)) <= 60 else str(type_)[:57] + "..."
    if pa.types.is_decimal(type_):
        if type_.scale <= 0 or type_.precision <= 15:
            return
        raise SchemaError(f"column {name!r} has type {shown}, more digits than a float64 holds; "
                          "round it or cast it to float or text first")
    if pa.types.is_nested(type_):
        raise SchemaError(f"column {name!r} has the nested type {shown}; ppdp reads flat "
                          "columns only: flatten it, or leave it out with columns=[...]")
    if pa.types.is_timestamp(type_):
        raise SchemaError(f"column {name!r} has type {shown}, which ppdp does not read "
                          "(date-times): convert it to dates (pandas: .dt.date, polars: "
                          ".dt.date()) or to text, or leave it out with columns=[...]")
    raise SchemaError(f"column {name!r} has type {shown}, which ppdp does not read (it reads "
                      "numbers, text, booleans and dates): convert it, for example to text, "
                      "or leave it out with columns=[...]")


def _cast(name: str, column: pa.ChunkedArray, target: pa.DataType,
          what: str) -> pa.ChunkedArray:
    try:
        return pc.cast(column, target)
    except pa.ArrowInvalid as exc:
        raise SchemaError(f"column {name!r} ({column.type}) holds {what}; convert it, or "
                          "leave it out with columns=[...]") from exc


# View types exist from pyarrow 16 on; the supported floor is older.
_is_string_view = getattr(pa.types, "is_string_view", lambda type_: False)
_is_binary_view = getattr(pa.types, "is_binary_view", lambda type_: False)


def _is_binary(type_: pa.DataType) -> bool:
    return (pa.types.is_binary(type_) or pa.types.is_large_binary(type_)
            or pa.types.is_fixed_size_binary(type_) or _is_binary_view(type_))


def _is_text(type_: pa.DataType) -> bool:
    return (pa.types.is_string(type_) or pa.types.is_large_string(type_)
            or _is_string_view(type_))


def _infer_type(name: str, column: pa.ChunkedArray, *, non_numeric: str,
                source: str) -> pa.ChunkedArray:
    """Type a text column as boolean, int64, float64 or text by its values (the rule in the
    module doc)."""
    if column.null_count == len(column):
        return column
    # Classify the distinct values once, then weigh them by how many cells hold each.
    counted = pc.value_counts(column)
    rule = text_rule(name, counted.field("values"), counted.field("counts"),
                     non_numeric=non_numeric, source=source)
    return apply_text_rule(column, rule)


@dataclass(frozen=True)
class TextRule:
    """How a text column is read: as ``kind`` (bool, int, float or text), with the values in
    ``missing`` read as missing (``non_numeric="missing"``)."""

    kind: str
    missing: pa.Array | None = None
    plus_signs: bool = False


def text_rule(name: str, values: pa.Array, counts: pa.Array, *, non_numeric: str,
              source: str) -> TextRule:
    """The typing rule of a text column from its distinct values and how many cells hold each."""
    if values.null_count == len(values):
        return TextRule("text")
    spelled = pc.utf8_lower(pc.drop_null(values))
    if pc.all(pc.is_in(spelled, value_set=pa.array(_BOOLEANS, pa.string()))).as_py():
        return TextRule("bool")
    present = pc.is_valid(values)
    number = pc.fill_null(pc.match_substring_regex(values, _NUMBER), False)
    other = pc.and_(present, pc.invert(number))
    n_present = pc.sum(pc.filter(counts, present)).as_py() or 0
    n_numbers = pc.sum(pc.filter(counts, number)).as_py() or 0
    missing = None
    if n_numbers < n_present:
        if n_numbers * 100 < NUMERIC_PERCENT * n_present or non_numeric == "text":
            return TextRule("text")
        if non_numeric == "error":
            raise SchemaError(_non_numeric_message(name, source, pc.filter(values, other),
                                                   pc.filter(counts, other), n_present))
        missing = pc.filter(values, other)
    numbers = pc.filter(values, number)
    if pc.all(pc.match_substring_regex(numbers, _INTEGER)).as_py():
        # Arrow's int64 cast refuses a leading plus sign, which its float cast accepts; the
        # distinct values say whether any cell has one, sparing a regex over every row.
        plus = bool(pc.any(pc.starts_with(numbers, "+")).as_py())
        try:
            pc.cast(pc.replace_substring_regex(numbers, r"^\+", "") if plus else numbers,
                    pa.int64())
            return TextRule("int", missing, plus)
        except pa.ArrowInvalid:
            pass  # beyond int64: float64, as a number too large for an integer column
    try:
        pc.cast(numbers, pa.float64())
    except pa.ArrowInvalid as exc:
        raise SchemaError(f"column {name!r} of {source} looks numeric but cannot be read as "
                          f"numbers ({_reason(exc)}); pass non_numeric=\"text\"") from exc
    return TextRule("float", missing)


def apply_text_rule(column: Any, rule: TextRule) -> Any:
    """Read the (stripped) text cells of a column by a `TextRule`."""
    if rule.kind == "text":
        return column
    if rule.kind == "bool":
        return pc.equal(pc.utf8_lower(column), "true")
    if rule.missing is not None:
        column = pc.if_else(pc.is_in(column, value_set=rule.missing),
                            pa.scalar(None, column.type), column)
    if rule.plus_signs:
        column = pc.replace_substring_regex(column, r"^\+", "")
    return pc.cast(column, pa.int64() if rule.kind == "int" else pa.float64())


def _non_numeric_message(name: str, source: str, values: pa.Array, counts: pa.Array,
                         n_present: int) -> str:
    """The error for a mostly numeric column: how many cells are not numbers, and some of them."""
    order = pc.array_sort_indices(counts, order="descending")
    shown = [_show(v) for v in pc.take(values, order[:_SHOWN_VALUES]).to_pylist()]
    if len(values) > _SHOWN_VALUES:
        shown.append(f"and {len(values) - _SHOWN_VALUES} more")
    n_other = pc.sum(counts).as_py()
    return (f"column {name!r} of {source} is mostly numbers but {n_other} of its {n_present} "
            f"values are not: {', '.join(shown)}; correct them, or pass "
            "non_numeric=\"missing\" (CLI: --non-numeric missing) to read them as missing "
            "values or non_numeric=\"text\" (--non-numeric text) to read the column as text")


def _show(value: str) -> str:
    return repr(value if len(value) <= 30 else value[:27] + "...")


def _handle_missing(data: pa.Table, missing: str) -> tuple[pa.Table, int]:
    counts = {name: data.column(name).null_count for name in data.column_names}
    counts = {name: n for name, n in counts.items() if n}
    if not counts:
        return data, 0
    if missing == "error":
        raise MissingValuesError(_missing_message(counts))
    mask = pc.is_valid(data.column(next(iter(counts))))
    for name in list(counts)[1:]:
        mask = pc.and_(mask, pc.is_valid(data.column(name)))
    kept = data.filter(mask)
    dropped = data.num_rows - kept.num_rows
    logger.info("dropped %d of %d rows with missing values (in %s)", dropped, data.num_rows,
                ", ".join(counts))
    return kept, dropped


def _missing_message(counts: Mapping[str, int]) -> str:
    """The error for missing values: how many in each column, and how to drop their rows."""
    # repr only for names with line breaks or other control characters: one line always.
    listed = ", ".join(f"{name if name.isprintable() else repr(name)} ({n})"
                       for name, n in counts.items())
    plural = "column" if len(counts) == 1 else "columns"
    return (f"missing values in {len(counts)} {plural}: {listed}; pass missing=\"drop\" "
            "(CLI: --drop-missing) to drop those rows")


def write_table(data: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write an Arrow table as Parquet (``.parquet``) or CSV (any other suffix), atomically."""
    import pyarrow.csv as pa_csv

    sink = pa.BufferOutputStream()
    if Path(path).suffix.lower() == ".parquet":
        pq.write_table(data, sink, compression="zstd")
    else:
        pa_csv.write_csv(data, sink)
    return write_atomic(path, sink.getvalue().to_pybytes())
