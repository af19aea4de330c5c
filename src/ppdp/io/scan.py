"""A CSV or Parquet file, or a polars LazyFrame, read in batches: a Source that needs no memory
for its rows.

`scan_table` follows `ppdp.read_table`'s rules (the same stripping, missing-value tokens,
typing of text columns, declared and observed domains) in two kinds of pass over the file:

1. a *domain pass* counts, batch by batch, the distinct cleaned values of every column; the
   typing rule of each text column and each column's domain follow from them;
2. every later pass (the plan's summaries, the kernel) reads batches and encodes them against
   those domains.

Both work on dictionaries: a batch's column is dictionary-encoded (Parquet text is read as a
dictionary to begin with), only the dictionary is cleaned, typed and looked up in the domain,
and the rows take their codes through their dictionary indices. Rows with missing values are
refused, or dropped with ``missing="drop"``; a row's id is its position among the kept rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.data.domains import resolve_domains
from ppdp.data.schema import Column, Role, Schema, encode_column
from ppdp.errors import MissingValuesError, SchemaError
from ppdp.io.csv_layout import check_encoding, csv_layout, decoding_error
from ppdp.io.rules import (
    _MISSING_CHOICES,
    _NON_NUMERIC_CHOICES,
    _PARQUET_SUFFIXES,
    DEFAULT_NA_VALUES,
    TextRule,
    _clean_column,
    _is_text,
    _is_text_domain,
    _keep,
    _missing_message,
    _reason,
    apply_text_rule,
    check_columns,
    text_rule,
)
from ppdp.table.source import DEFAULT_BATCH_ROWS, Batch, MarginalSource, read_ahead
from ppdp.table.table import Table
from ppdp.workers import map_ordered

__all__ = ["ScanSource", "scan_table"]


def scan_table(
    source: str | os.PathLike[str] | Any,
    *,
    sensitive: Sequence[str] | str | None = None,
    quasi_identifiers: Sequence[str] | str | None = None,
    columns: Sequence[str] | None = None,
    sep: str | None = None,
    header: bool = True,
    names: Sequence[str] | None = None,
    skip_rows: int = 0,
    na_values: Sequence[str] | None = DEFAULT_NA_VALUES,
    missing: str = "error",
    domains: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    observed_domains: bool = False,
    non_numeric: str = "error",
    batch_rows: int = DEFAULT_BATCH_ROWS,
    encoding: str = "utf-8",
) -> ScanSource:
    """Open a CSV or Parquet file (or a polars LazyFrame) as a Source read in batches.

    The options are `ppdp.read_table`'s; the domain pass runs here, so errors about the
    data (missing values, values outside a declared domain) are raised before any publishing.
    """
    if missing not in _MISSING_CHOICES:
        raise ValueError(f"missing must be 'error' or 'drop', not {missing!r}")
    if non_numeric not in _NON_NUMERIC_CHOICES:
        raise ValueError(f"non_numeric must be 'error', 'missing' or 'text', not {non_numeric!r}")
    check_encoding(encoding)
    reader = _reader(source, _keep(columns), sep=sep, header=header, names=names,
                     skip_rows=skip_rows, encoding=encoding)
    return ScanSource(reader, na=sorted({str(v) for v in (na_values or ())}), missing=missing,
                      domains=resolve_domains(domains), non_numeric=non_numeric,
                      sensitive=sensitive, quasi_identifiers=quasi_identifiers,
                      observed_domains=observed_domains, batch_rows=batch_rows)


class _Reader:
    """Batches of raw Arrow columns from one input, always in the same order."""

    def __init__(self, label: str, names: list[str], typed: bool, stem: str | None) -> None:
        self.label, self.names, self.typed, self.stem = label, names, typed, stem

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError


class _ParquetReader(_Reader):
    def __init__(self, path: Path, keep: list[str] | None) -> None:
        try:
            with pq.ParquetFile(path) as file:
                names = file.schema_arrow.names
                text = [field.name for field in file.schema_arrow if _is_text(field.type)]
                # Kept for each pass: decoding it again took seconds at 100,000 row groups.
                metadata = file.metadata
            identity = _file_identity(path)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise SchemaError(f"cannot read Parquet file {path} (is it a complete Parquet "
                              f"file?): {_reason(exc)}") from exc
        if keep is not None:
            check_columns(keep, names)
        super().__init__(str(path), keep or names, True, path.stem)
        self.path, self.text, self.metadata, self.identity = path, text, metadata, identity

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        # Each pass reads the file with the footer decoded at the first: a file replaced
        # meanwhile would not match it (nor the domains counted from it).
        if _file_identity(self.path) != self.identity:
            raise SchemaError(f"{self.path} changed since it was first read; read it again")
        # Text read as dictionaries: each batch's values are decoded and cleaned once each.
        # One reader per row group: a reader over the whole file keeps memory for every row
        # group it has read (measured: 67 MB after 1.8 * 10^7 rows, 7 MB this way). No Arrow
        # threads: memory they allocated stayed with the process (after read_table of 10^7
        # rows, whose codes take 90 MB, the process held 124 MB more than before with them,
        # 111 MB without), for no gain in time (the domain pass: 1.5-2.0 s either way).
        with pq.ParquetFile(self.path, metadata=self.metadata,
                            read_dictionary=[c for c in columns if c in self.text]) as file:
            for run in _row_group_runs(file.metadata, batch_rows):
                if len(run) == 1:
                    yield from file.iter_batches(batch_size=batch_rows, row_groups=run,
                                                 columns=list(columns), use_threads=False)
                    continue
                # Small row groups read together, as one batch: one at a time, 100,000
                # row groups of one row took minutes of per-batch work.
                table = file.read_row_groups(run, columns=list(columns), use_threads=False)
                if table.num_rows:
                    yield from table.unify_dictionaries().combine_chunks().to_batches()


def _read_batches(reader: _Reader, batch_rows: int, columns: Sequence[str]
                  ) -> Iterator[pa.RecordBatch]:
    """A reader's batches, read on a thread of their own one ahead of the caller."""
    return read_ahead(reader.batches(batch_rows, columns))


def _file_identity(path: Path) -> tuple[int, int, int, int]:
    """What changes when a file is replaced or written: device, inode, size, modification
    time."""
    status = os.stat(path)
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _row_group_runs(metadata: pq.FileMetaData, batch_rows: int) -> Iterator[list[int]]:
    """The row groups of a file in runs of consecutive ones holding at most ``batch_rows``
    rows together (a larger row group alone)."""
    run: list[int] = []
    rows = 0
    for group in range(metadata.num_row_groups):
        size = metadata.row_group(group).num_rows
        if run and rows + size > batch_rows:
            yield run
            run, rows = [], 0
        run.append(group)
        rows += size
    if run:
        yield run


class _CsvReader(_Reader):
    def __init__(self, path: Path, keep: list[str] | None, **options: Any) -> None:
        self.layout = csv_layout(path, keep, **options)
        super().__init__(str(path), keep or self.layout.field_names, False, path.stem)
        self.path = path

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        import pyarrow.csv as pacsv

        layout = self.layout
        try:
            reader = pacsv.open_csv(
                self.path, read_options=layout.read_options(block_size=max(1 << 20,
                                                                            batch_rows * 16)),
                parse_options=layout.parse_options,
                convert_options=layout.convert_options(list(columns)))
            skip_header = layout.header
            for block in reader:
                if skip_header:
                    block, skip_header = block.slice(1), False
                yield from _sliced(block, batch_rows)
        except (pa.ArrowException, UnicodeDecodeError) as exc:
            undecodable = decoding_error(self.path, layout.encoding, exc)
            if undecodable is None:
                raise
            raise undecodable from exc


class _LazyFrameReader(_Reader):
    def __init__(self, frame: Any, keep: list[str] | None) -> None:
        names = list(frame.collect_schema().names())
        if keep is not None:
            check_columns(keep, names)
        super().__init__(f"the polars {type(frame).__name__}", keep or names, False, None)
        self.frame = frame

    def batches(self, batch_rows: int, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        for frame in self.frame.select(list(columns)).collect_batches(chunk_size=batch_rows):
            for batch in frame.to_arrow().to_batches():
                yield from _sliced(batch, batch_rows)


_MERGE_EVERY = 64
"""Batches whose value counts are summed together, so that memory stays O(domain)."""


def _summed(tables: list[pa.Table]) -> pa.Table:
    """Value counts of several batches as one table: cells summed by value."""
    if not tables:
        return pa.table({"value": pa.array([], pa.string()), "cells": pa.array([], pa.int64())})
    grouped = pa.concat_tables(tables).group_by("value", use_threads=False) \
        .aggregate([("cells", "sum")])
    return pa.table({"value": grouped.column("value"), "cells": grouped.column("cells_sum")})


def _as_dictionary(array: pa.Array) -> pa.DictionaryArray:
    """A column of a batch as a dictionary array (Parquet text already is one)."""
    return array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array)


def _small_integer_counts(array: pa.Array) -> tuple[pa.Array, np.ndarray] | None:
    """The distinct values of an integer column without nulls and how many rows hold each,
    by counting over its range when that is small (None otherwise): a quarter of the cost of
    dictionary-encoding it, which hashes every value (measured on 2^20 ages: 1.8 ms against
    7.3)."""
    if not pa.types.is_integer(array.type) or array.null_count or not len(array):
        return None
    values = array.to_numpy()
    low, high = values.min(), values.max()
    if int(high) - int(low) >= max(len(values), 1 << 16):
        return None
    # In 64 bits: a narrow type would wrap around (int8: 127 - (-128)).
    wide = np.uint64 if values.dtype.kind == "u" else np.int64
    counts = np.bincount((values.astype(wide, copy=False) - wide(low)).astype(np.intp,
                                                                             copy=False))
    present = np.flatnonzero(counts)
    return pa.array(present.astype(wide) + wide(low)).cast(array.type), counts[present]


def _valid_indices(dictionary: pa.Array, indices: pa.Array) -> np.ndarray:
    """Each row's index into a cleaned dictionary, -1 where its value is missing."""
    valid = dictionary.is_valid().to_numpy(zero_copy_only=False)
    return _through(np.where(valid, np.arange(len(dictionary)), -1), indices)


def _through(lookup: np.ndarray, indices: pa.Array) -> np.ndarray:
    """``lookup[i]`` for each dictionary index i (-1 where the index is null)."""
    if indices.null_count:
        valid = indices.is_valid().to_numpy(zero_copy_only=False)
        if not lookup.size:
            return np.full(len(indices), -1, dtype=np.int64)
        # Null indices would come out of Arrow as floats (NaN): index 0 stands in for them.
        positions = pc.fill_null(indices, 0).to_numpy(zero_copy_only=False)
        return np.where(valid, lookup[_checked(positions)], -1)
    return lookup[_checked(indices.to_numpy(zero_copy_only=False))]


def _checked(positions: np.ndarray) -> np.ndarray:
    """Dictionary indices, refused if negative (numpy would count those from the end; one
    past the end is refused by numpy itself): a damaged file can decode into such."""
    if positions.size and positions.min() < 0:
        raise ValueError("a dictionary index is negative: the file is damaged")
    return positions


def _sliced(batch: pa.RecordBatch, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """A record batch in slices of at most ``batch_rows`` rows."""
    for start in range(0, batch.num_rows, batch_rows):
        yield batch.slice(start, batch_rows)


def _reader(source: Any, keep: list[str] | None, **options: Any) -> _Reader:
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        if path.is_dir():
            raise SchemaError(f"cannot read {path}: it is a directory, not a CSV or Parquet file")
        if path.suffix.lower() in _PARQUET_SUFFIXES:
            return _ParquetReader(path, keep)
        return _CsvReader(path, keep, **options)
    if type(source).__module__.split(".")[0] == "polars" and hasattr(source, "collect_batches"):
        return _LazyFrameReader(source, keep)
    raise TypeError(f"a source read in batches is a CSV or Parquet file or a polars LazyFrame, "
                    f"not {type(source).__name__}")


def source_schema(columns: Sequence[Column], *, sensitive: Any, quasi_identifiers: Any,
                  observed_domains: bool) -> Schema:
    """The schema of a source read in batches: its columns with their roles, their domains
    declared as observed when asked (`Table.declare_observed_domains`, which warns)."""
    schema = Schema(tuple(columns)).with_roles(sensitive=sensitive,
                                               quasi_identifiers=quasi_identifiers)
    if observed_domains:
        schema = Table(schema, {c.name: np.zeros(0, c.dtype) for c in schema.columns}) \
            .declare_observed_domains().schema
    return schema


class ScanSource(MarginalSource):
    """A table read in batches, encoded against domains found by a first pass (see module)."""

    def __init__(self, reader: _Reader, *, na: list[str], missing: str,
                 domains: dict[str, Any], non_numeric: str, sensitive: Any,
                 quasi_identifiers: Any, observed_domains: bool, batch_rows: int) -> None:
        self._reader, self._na, self._missing = reader, na, missing
        self._non_numeric = non_numeric
        self.name = reader.stem
        self._rules: dict[str, TextRule] = {}
        self._last_lookup: dict[str, tuple[pa.Array, np.ndarray]] = {}
        unknown = sorted(set(domains) - set(reader.names))
        if unknown:
            check_columns(unknown, reader.names)
        counts = self._count_values(batch_rows)
        # Text columns of a CSV file or LazyFrame are typed by their values, unless a text
        # domain is declared (read_table's rule).
        if not reader.typed:
            for name, (values, cells) in counts.items():
                if _is_text(values.type) and not _is_text_domain(domains.get(name)):
                    self._rules[name] = text_rule(name, values, cells,
                                                  non_numeric=non_numeric, source=reader.label)
            if any(rule.missing is not None for rule in self._rules.values()) \
                    and missing == "drop":
                # Cells read as missing drop their rows, which may hold other values.
                counts = self._count_values(batch_rows)
        columns, self._columns, self._marginals = [], {}, {}
        for name in reader.names:
            values, cells = counts[name]
            values = self._typed(name, values)
            present = pc.is_valid(values)
            missing_cells = pc.sum(pc.filter(cells, pc.invert(present))).as_py() or 0
            self._check_missing(name, missing_cells)
            values, cells = pc.filter(values, present), pc.filter(cells, present)
            column, _ = encode_column(name, pc.unique(values), Role.QUASI_IDENTIFIER,
                                          domains.get(name))
            columns.append(column)
            self._columns[name] = column
            counted = pc.index_in(values, value_set=column.dictionary()).to_numpy(
                zero_copy_only=False)
            self._marginals[name] = np.bincount(counted, weights=cells.to_numpy(),
                                                minlength=column.size).astype(np.int64)
        self.n_rows = int(self._marginals[reader.names[0]].sum()) if reader.names else 0
        if self.n_rows == 0:
            raise SchemaError(f"cannot build a table from {reader.label}: it has no rows"
                              if not self._dropped else f"cannot build a table from "
                              f"{reader.label}: all rows held missing values")
        self.schema = source_schema(columns, sensitive=sensitive,
                                    quasi_identifiers=quasi_identifiers,
                                    observed_domains=observed_domains)
        self._histograms: dict[tuple[str, ...], np.ndarray] = {}

    @property
    def dropped_rows(self) -> int:
        """Rows left out because they held missing values (``missing="drop"``)."""
        return self._dropped

    # -- the domain pass -------------------------------------------------------------------

    def _count_values(self, batch_rows: int) -> dict[str, tuple[pa.Array, pa.Array]]:
        """Every column's distinct cleaned values and their cell counts (of kept rows), the
        batches counted on the workers."""
        names = self._reader.names
        parts: dict[str, list[pa.Table]] = {name: [] for name in names}
        self._dropped = 0
        self._missing_cells = dict.fromkeys(names, 0)
        # Batches are read in order on this thread (a Parquet reader is one stream) and
        # counted on the workers; what each batch counted is added up here, in order.
        for counted, missing, dropped in map_ordered(self._count_batch, _read_batches(
                self._reader, batch_rows, names)):
            for name, table in counted.items():
                parts[name].append(table)
            for name, cells in missing.items():
                self._missing_cells[name] += cells
            self._dropped += dropped
            if len(parts[names[0]]) >= _MERGE_EVERY:
                parts = {name: [_summed(tables)] for name, tables in parts.items()}
        result = {}
        for name in names:
            grouped = _summed(parts[name])
            grouped = grouped.filter(pc.greater(grouped.column("cells"), 0))
            missing_cells = self._missing_cells[name]
            values = grouped.column("value").combine_chunks()
            cells = grouped.column("cells").combine_chunks()
            if missing_cells:
                values = pa.concat_arrays([values, pa.nulls(1, values.type)])
                cells = pa.concat_arrays([cells, pa.array([missing_cells], pa.int64())])
            result[name] = (values, cells)
        return result

    def _count_batch(self, batch: pa.RecordBatch
                     ) -> tuple[dict[str, pa.Table], dict[str, int], int]:
        """One batch's distinct cleaned values and cell counts by column, its missing cells
        by column and the rows it drops."""
        names = self._reader.names
        counted = {name: _small_integer_counts(batch.column(name)) for name in names}
        arrays = {name: _as_dictionary(batch.column(name)) for name in names
                  if counted[name] is None}
        cleaned = {name: self._cleaned(name, array.dictionary)
                   for name, array in arrays.items()}
        tables = {}
        if not any(array.indices.null_count or cleaned[name].null_count
                   for name, array in arrays.items()):
            # No value of the batch is missing: count the dictionary indices as they are.
            for name in names:
                if name in arrays:
                    counts = np.bincount(arrays[name].indices.to_numpy(zero_copy_only=False),
                                         minlength=len(cleaned[name]))
                    values = cleaned[name]
                else:
                    small = counted[name]
                    assert small is not None  # the names without small counts are in arrays
                    values, counts = small
                    values = self._cleaned(name, values)
                tables[name] = pa.table({"value": values, "cells": counts})
            return tables, {}, 0
        arrays = {name: _as_dictionary(batch.column(name)) for name in names}
        cleaned = {name: self._cleaned(name, array.dictionary)
                   for name, array in arrays.items()}
        indices = {name: _valid_indices(cleaned[name], array.indices)
                   for name, array in arrays.items()}
        keep, missing, dropped = self._kept_rows(indices)
        for name, rows in indices.items():
            if keep is not None:
                rows = rows[keep]
            counts = np.bincount(rows[rows >= 0], minlength=len(cleaned[name]))
            tables[name] = pa.table({"value": cleaned[name], "cells": counts})
        return tables, missing, dropped

    def _kept_rows(self, indices: Mapping[str, np.ndarray]
                   ) -> tuple[np.ndarray | None, dict[str, int], int]:
        """Rows with no missing value (None: all), the missing cells of each column, and the
        rows dropped."""
        missing = {name: rows < 0 for name, rows in indices.items()}
        if not any(m.any() for m in missing.values()):
            return None, {}, 0
        cells = {name: int(m.sum()) for name, m in missing.items()}
        if self._missing == "error":
            return None, cells, 0
        keep = ~np.logical_or.reduce(list(missing.values()))
        return keep, cells, int((~keep).sum())

    def _check_missing(self, name: str, cells: int) -> None:
        if self._missing == "error" and any(self._missing_cells.values()):
            counts = {n: c for n, c in self._missing_cells.items() if c}
            raise MissingValuesError(_missing_message(counts))

    # -- cleaning and encoding on dictionaries ---------------------------------------------

    def _typed(self, name: str, values: pa.Array) -> pa.Array:
        rule = self._rules.get(name)
        return values if rule is None else apply_text_rule(values, rule)

    def _cleaned(self, name: str, dictionary: pa.Array) -> pa.Array:
        """A dictionary's values cleaned and typed as read_table does (missing ones null)."""
        cleaned = _clean_column(name, pa.chunked_array([dictionary]), self._na,
                                infer=False).combine_chunks()
        return self._typed(name, cleaned)

    def _lookup(self, name: str, dictionary: pa.Array) -> np.ndarray:
        """The code in the column's domain of each value of a batch's dictionary: -1 for a
        missing value, -2 for one outside the domain.

        Batches of one Parquet row group share their dictionary, so the last lookup of each
        column is kept and reused while the dictionary is equal to it."""
        kept = self._last_lookup.get(name)
        if kept is not None and kept[0].equals(dictionary):
            return kept[1]
        value_set = self._columns[name].dictionary()
        # Text that is not UTF-8 (a damaged file) is refused here, once per dictionary.
        dictionary.validate(full=True)
        cleaned = self._cleaned(name, dictionary)
        if not cleaned.type.equals(value_set.type):
            cleaned = pc.cast(cleaned, value_set.type)
        codes = pc.fill_null(pc.index_in(cleaned, value_set=value_set), -2) \
            .to_numpy(zero_copy_only=False).astype(np.int64)
        codes[~cleaned.is_valid().to_numpy(zero_copy_only=False)] = -1
        self._last_lookup[name] = (dictionary, codes)
        return codes

    def _encode(self, name: str, array: pa.Array) -> np.ndarray:
        """A batch column's codes in the column's domain (-1 for a missing value, -2 for a
        value outside the domain)."""
        array = _as_dictionary(array)
        return _through(self._lookup(name, array.dictionary), array.indices)

    def _encode_valid(self, name: str, array: pa.Array) -> np.ndarray | None:
        """A batch column's codes in the column's dtype when every row holds a value of the
        domain (the common case, one gather of small integers); None otherwise."""
        array = _as_dictionary(array)
        lookup = self._lookup(name, array.dictionary)
        if array.indices.null_count or (lookup.size and lookup.min() < 0):
            return None
        typed = lookup.astype(self.schema[name].dtype)
        indices = array.indices.to_numpy(zero_copy_only=False)
        if indices.size and (indices.min() < 0 or indices.max() >= len(typed)):
            return typed[_checked(indices)]  # refused, as numpy or _checked refuse them
        # One gather into the codes' dtype, its indices checked: half the CPU of numpy's
        # fancy indexing, which also checks them.
        codes = np.empty(len(indices), dtype=typed.dtype)
        np.take(typed, indices, out=codes, mode="clip")
        return codes

    def _outside_error(self, name: str, codes: np.ndarray, array: pa.Array) -> SchemaError:
        outside = pc.unique(pc.filter(array, pa.array(codes == -2))).to_pylist()[:5]
        return SchemaError(f"column {name!r} holds values outside its domain: {outside} (did "
                           f"the input change since it was opened?)")

    # -- the Source interface --------------------------------------------------------------

    def batches(self, batch_rows: int = DEFAULT_BATCH_ROWS,
                columns: Sequence[str] | None = None) -> Iterator[Batch]:
        """Encoded batches in order; rows with a missing value (in any column) dropped."""
        # Read on one thread, encoded on the workers, handed out a batch ahead.
        return read_ahead(self._encoded_batches(batch_rows, columns))

    def _encoded_batches(self, batch_rows: int, columns: Sequence[str] | None
                         ) -> Iterator[Batch]:
        names = self.schema.names if columns is None else tuple(columns)
        # Missing values must be looked for in every column to drop the same rows each time.
        read = self._reader.names if self._dropped else names

        def encode(batch: pa.RecordBatch) -> tuple[dict[str, np.ndarray], int]:
            out = None if self._dropped else self._encoded_valid(names, batch)
            if out is None:
                out = self._encoded(names, read, batch)
            return out, batch.num_rows

        start = 0
        for out, read_rows in map_ordered(encode, _read_batches(self._reader, batch_rows,
                                                                read)):
            count = len(next(iter(out.values()))) if out else read_rows
            if count:
                yield start, out
            start += count

    def _encoded_valid(self, names: Sequence[str], batch: pa.RecordBatch
                       ) -> dict[str, np.ndarray] | None:
        """The batch's codes when no row of it is missing a value or holds one outside the
        domain (None otherwise)."""
        out = {}
        for name in names:
            codes = self._encode_valid(name, batch.column(name))
            if codes is None:
                return None
            out[name] = codes
        return out

    def _encoded(self, names: Sequence[str], read: Sequence[str], batch: pa.RecordBatch
                 ) -> dict[str, np.ndarray]:
        """The batch's codes, rows with a missing value dropped (when dropping), or an error
        naming values outside the domain."""
        codes = {name: self._encode(name, batch.column(name)) for name in read}
        if self._dropped:
            keep = ~np.logical_or.reduce([c == -1 for c in codes.values()])
            batch = batch.filter(pa.array(keep))
            codes = {name: c[keep] for name, c in codes.items()}
        for name in names:
            if codes[name].size and codes[name].min() < 0:
                raise self._outside_error(name, codes[name], batch.column(name))
        return {name: codes[name].astype(self.schema[name].dtype) for name in names}

    def _count(self, columns: tuple[str, ...], sizes: list[int]) -> np.ndarray:
        """One pass over the columns' batches."""
        counts = np.zeros(int(np.prod(sizes)), dtype=np.int64)
        for _, codes in self.batches(DEFAULT_BATCH_ROWS, columns):
            key = np.ravel_multi_index(tuple(codes[c] for c in columns), sizes)
            counts += np.bincount(key, minlength=len(counts))
        return counts

