"""Reading microdata into a Table: CSV and Parquet files, pandas and polars DataFrames, Arrow.

Every source goes through the same steps: keep the requested columns, strip whitespace from
strings, turn the missing-value tokens (and NaN) into nulls, refuse or drop rows with missing
values (`ppdp.io.rules`), then dictionary-encode each column with
`ppdp.table.table_from_arrow`. A Parquet file is read as `ppdp.io.scan` reads it, one row group
at a time, where it can."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.domains import resolve_domains
from ppdp.data.schema import arrange_domain
from ppdp.errors import SchemaError
from ppdp.io.csv_layout import CsvLayout, check_encoding, csv_layout, decoding_error
from ppdp.io.parquet_codes import read_parquet_codes
from ppdp.io.rules import (
    _MISSING_CHOICES,
    _NON_NUMERIC_CHOICES,
    _PARQUET_SUFFIXES,
    DEFAULT_NA_VALUES,
    NUMERIC_PERCENT,
    _categories,
    _check_distinct,
    _clean_column,
    _handle_missing,
    _is_text,
    _is_text_domain,
    _keep,
    _reason,
    check_columns,
)
from ppdp.io.scan import scan_table
from ppdp.io.storage import write_atomic
from ppdp.table.table import Table, table_from_arrow
from ppdp.workers import run_all

__all__ = ["DEFAULT_NA_VALUES", "NUMERIC_PERCENT", "read_table", "write_table"]


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
    # As Sequences: an ordered categorical's categories may replace a declared domain below.
    declared: dict[str, Sequence[Any]] = dict(resolve_domains(domains))
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
                na_values=na, missing=missing, domains=declared,
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
            declared[name] = arrange_domain(name, order, declared.get(name))
    # Plain text columns (CSV's every column, DataFrames' str/object columns) are typed by their
    # values; categoricals are labels the user chose, and a declared text domain says the
    # column is text.
    data = pa.table(
        [_clean_column(name, data.column(name), na,
                       infer=not typed and _is_text(data.column(name).type)
                       and not _is_text_domain(declared.get(name)),
                       non_numeric=non_numeric, source=_describe(source))
         for name in data.column_names],
        names=data.column_names,
    )
    data, dropped = _handle_missing(data, missing)
    if data.num_rows == 0:
        what = "all rows held missing values" if dropped else "it has no rows"
        raise SchemaError(f"cannot build a table from {_describe(source)}: {what}")
    table = table_from_arrow(data, domains=declared)
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
    24 times the encoded table.

    A file without missing values, of text and integers, is read once instead, each column
    straight into its codes (`ppdp.io.parquet_codes`); the two passes of `ppdp.scan` read the
    others."""
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
    table = read_parquet_codes(
        path, columns=options["columns"], na_values=options["na_values"],
        domains=options["domains"], sensitive=options["sensitive"],
        quasi_identifiers=options["quasi_identifiers"],
        observed_domains=options["observed_domains"])
    if table is not None:
        return table
    try:
        source = scan_table(path, batch_rows=_BATCH_ROWS, **options)
        # What the domain pass freed goes back to the system before the codes are allocated.
        pa.default_memory_pool().release_unused()
        codes = {c.name: np.empty(source.n_rows, dtype=c.dtype) for c in source.schema.columns}
        # A column a worker (Parquet reads one column's pages alone): Arrow then holds one
        # column's batch a worker, not every column's (at 10^7 rows of Adult, 37 MB of Arrow
        # memory at the peak down to 8 on one worker). Rows dropped for a missing value in
        # any column need every column of a batch at once.
        def fill(names: list[str]) -> None:
            for start, batch in source.batches(_BATCH_ROWS, names):
                for name, values in batch.items():
                    codes[name][start:start + len(values)] = values

        # The columns read on the workers, each into its own array.
        run_all(fill, [[c] for c in codes] if source.dropped_rows == 0 else [list(codes)])
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


def is_data_frame(data: object) -> bool:
    """Whether ``data`` is a table held in memory that `read_table` reads: a pandas or polars
    DataFrame, or an Arrow Table or RecordBatch (without importing pandas or polars)."""
    if isinstance(data, pa.Table | pa.RecordBatch):
        return True
    return (type(data).__module__.split(".")[0] in ("pandas", "polars")
            and type(data).__name__ == "DataFrame")


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


def write_table(data: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write an Arrow table as Parquet (``.parquet``) or CSV (any other suffix), atomically."""
    import pyarrow.csv as pa_csv

    sink = pa.BufferOutputStream()
    if Path(path).suffix.lower() == ".parquet":
        pq.write_table(data, sink, compression="zstd")
    else:
        pa_csv.write_csv(data, sink)
    return write_atomic(path, sink.getvalue().to_pybytes())
