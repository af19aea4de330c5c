"""Reading microdata into a Table: CSV and Parquet files, pandas and polars DataFrames, Arrow.

Every source goes through the same steps: keep the requested columns, strip whitespace from
strings, turn the missing-value tokens (and NaN) into nulls, refuse or drop rows with missing
values, then dictionary-encode each column with `ppdp.table.table_from_arrow`. CSV fields are
read as strings and each column is typed as int64, float64 or string, whichever fits every value.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.errors import MissingValuesError, SchemaError
from ppdp.table import Table, table_from_arrow, unknown_column_message

__all__ = ["DEFAULT_NA_VALUES", "read_table"]

logger = logging.getLogger("ppdp")

DEFAULT_NA_VALUES: tuple[str, ...] = ("?", "", "NA", "N/A", "NaN", "nan", "NULL")
"""Strings read as a missing value unless ``na_values`` says otherwise."""

_SNIFF_BYTES = 64 * 1024
_SEPARATORS = ",;\t|"
_PARQUET_SUFFIXES = (".parquet", ".pq")
_MISSING_CHOICES = ("error", "drop")


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
    domains: Mapping[str, Sequence[Any]] | None = None,
) -> Table:
    """Read a CSV or Parquet file, a pandas or polars DataFrame, or an Arrow table into a Table."""
    if missing not in _MISSING_CHOICES:
        raise ValueError(f"missing must be 'error' or 'drop', not {missing!r}")
    if skip_rows < 0:
        raise ValueError(f"skip_rows must be zero or more, not {skip_rows}")
    na = sorted({str(v) for v in (na_values or ())})
    domains = dict(domains or {})
    keep = list(columns) if columns is not None else None

    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        if path.is_dir():
            raise SchemaError(f"cannot read {path}: it is a directory, not a CSV or Parquet file")
        if path.suffix.lower() in _PARQUET_SUFFIXES:
            data = _read_parquet(path, keep)
            text_columns: frozenset[str] = frozenset()
        else:
            data = _read_csv(path, keep, sep=sep, header=header, names=names,
                             skip_rows=skip_rows)
            text_columns = frozenset(data.column_names)
    else:
        data = _arrow_from_object(source)
        if keep is not None:
            _check_columns(keep, data.column_names)
            data = data.select(keep)
        text_columns = frozenset()

    data = pa.table(
        [_clean_column(name, data.column(name), na, infer=name in text_columns
                       and not _is_text_domain(domains.get(name)))
         for name in data.column_names],
        names=data.column_names,
    )
    data, dropped = _handle_missing(data, missing)
    if data.num_rows == 0:
        what = "all rows held missing values" if dropped else "it has no rows"
        raise SchemaError(f"cannot build a table from {_describe(source)}: {what}")
    table = table_from_arrow(data, domains=domains)
    schema = table.schema.with_roles(sensitive=sensitive, quasi_identifiers=quasi_identifiers)
    return Table(schema, table.codes, dropped_rows=dropped)


def _describe(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return str(source)
    return f"the {type(source).__module__.split('.')[0]} {type(source).__name__}"


def _check_columns(keep: Sequence[str], available: Sequence[str]) -> None:
    for name in keep:
        if name not in available:
            raise SchemaError(unknown_column_message(name, list(available)))


def _read_parquet(path: Path, keep: list[str] | None) -> pa.Table:

    try:
        names = pq.read_schema(path).names
        if keep is not None:
            _check_columns(keep, names)
        return pq.read_table(path, columns=keep)
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise SchemaError(f"cannot read Parquet file {path}: {exc}") from exc


def _read_sample(path: Path) -> str:
    with pa.input_stream(str(path)) as stream:
        raw = stream.read(_SNIFF_BYTES)
    text = raw.decode("utf-8-sig", errors="replace")
    if len(raw) == _SNIFF_BYTES and "\n" in text:
        text = text[: text.rindex("\n") + 1]
    return text


def _sniff_separator(lines: list[str]) -> str:
    sample = "".join(lines)
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SEPARATORS).delimiter
    except csv.Error:
        pass
    # Fallback: the candidate found the same (non-zero) number of times on the most lines.
    best, best_score = ",", 0
    for candidate in _SEPARATORS:
        counts = [line.count(candidate) for line in lines if line.strip()]
        if counts and min(counts) > 0:
            score = sum(c == counts[0] for c in counts)
            if score > best_score:
                best, best_score = candidate, score
    return best


def _first_record(lines: list[str], sep: str) -> list[str] | None:
    for record in csv.reader(io.StringIO("".join(lines)), delimiter=sep):
        if record:
            return record
    return None


def _read_csv(path: Path, keep: list[str] | None, *, sep: str | None, header: bool,
              names: Sequence[str] | None, skip_rows: int) -> pa.Table:
    import pyarrow.csv as pacsv

    if not header and names is None:
        raise SchemaError(f"{path}: header=False needs the column names (names=[...]; "
                          "CLI: --names a,b,c)")
    if sep is not None and len(sep) != 1:
        raise ValueError(f"sep must be a single character, not {sep!r}")
    try:
        sample = _read_sample(path)
    except (pa.ArrowException, OSError) as exc:
        raise SchemaError(f"cannot read CSV file {path}: {exc}") from exc
    lines = sample.splitlines(keepends=True)[skip_rows:]
    if sep is None:
        sep = _sniff_separator(lines)
    first = _first_record(lines, sep)
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
    if keep is not None:
        _check_columns(keep, field_names)
    read_options = pacsv.ReadOptions(skip_rows=skip_rows + (1 if header else 0),
                                     column_names=field_names)
    parse_options = pacsv.ParseOptions(delimiter=sep, ignore_empty_lines=True)
    convert_options = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in field_names},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        include_columns=keep,
    )
    try:
        return pacsv.read_csv(path, read_options=read_options, parse_options=parse_options,
                              convert_options=convert_options)
    except (pa.ArrowException, OSError) as exc:
        raise SchemaError(f"cannot read CSV file {path} (separator {sep!r}): {exc}") from exc


def _arrow_from_object(source: Any) -> pa.Table:
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    module = type(source).__module__.split(".")[0]
    try:
        if module == "pandas":
            return pa.Table.from_pandas(source, preserve_index=False)
        if module == "polars" and hasattr(source, "to_arrow"):
            return source.to_arrow()
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise SchemaError(f"cannot convert the {module} {type(source).__name__} to a table: "
                          f"{exc}") from exc
    raise TypeError("read_table reads a path to a CSV or Parquet file, a pandas or polars "
                    f"DataFrame or a pyarrow Table, not {type(source).__name__}")


def _is_text_domain(domain: Sequence[Any] | None) -> bool:
    return domain is not None and len(domain) > 0 and all(isinstance(v, str) for v in domain)


def _clean_column(name: str, column: pa.ChunkedArray, na: list[str], *,
                  infer: bool) -> pa.ChunkedArray:
    """Strip strings, null the missing-value tokens and NaN, and (for CSV) infer the type."""
    if pa.types.is_dictionary(column.type):
        column = pc.cast(column, column.type.value_type)
    if _is_text(column.type):
        if not pa.types.is_string(column.type):
            column = pc.cast(column, pa.string())
        column = pc.utf8_trim_whitespace(column)
        if na:
            column = pc.if_else(pc.is_in(column, value_set=pa.array(na, pa.string())),
                                pa.scalar(None, pa.string()), column)
        if infer:
            column = _infer_type(column)
    if pa.types.is_floating(column.type):
        column = pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
    return column


def _is_text(type_: pa.DataType) -> bool:
    return (pa.types.is_string(type_) or pa.types.is_large_string(type_)
            or pa.types.is_string_view(type_))


def _infer_type(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """int64 if every value is an integer, else float64 if every value is a number, else string."""
    if column.null_count == len(column):
        return column
    for target in (pa.int64(), pa.float64()):
        try:
            return pc.cast(column, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return column


def _handle_missing(data: pa.Table, missing: str) -> tuple[pa.Table, int]:
    counts = {name: data.column(name).null_count for name in data.column_names}
    counts = {name: n for name, n in counts.items() if n}
    if not counts:
        return data, 0
    if missing == "error":
        listed = ", ".join(f"{name} ({n})" for name, n in counts.items())
        plural = "column" if len(counts) == 1 else "columns"
        raise MissingValuesError(
            f"missing values in {len(counts)} {plural}: {listed}; pass missing=\"drop\" "
            "(CLI: --drop-missing) to drop those rows")
    mask = pc.is_valid(data.column(next(iter(counts))))
    for name in list(counts)[1:]:
        mask = pc.and_(mask, pc.is_valid(data.column(name)))
    kept = data.filter(mask)
    dropped = data.num_rows - kept.num_rows
    logger.info("dropped %d of %d rows with missing values (in %s)", dropped, data.num_rows,
                ", ".join(counts))
    return kept, dropped


def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write bytes to a temporary file beside ``path``, then rename it into place: a failed
    write leaves the previous file (or none) behind, never a partial one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(temporary, "xb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def write_table(data: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write an Arrow table as Parquet (``.parquet``) or CSV (any other suffix), atomically."""
    import pyarrow.csv as pa_csv

    sink = pa.BufferOutputStream()
    if Path(path).suffix.lower() == ".parquet":
        pq.write_table(data, sink, compression="zstd")
    else:
        pa_csv.write_csv(data, sink)
    return write_atomic(path, sink.getvalue().to_pybytes())
