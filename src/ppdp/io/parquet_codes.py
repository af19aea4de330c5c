"""A Parquet file's columns read once, each straight into the codes of its domain.

`ppdp.read_table` reads a Parquet file here first. Each column is read alone, on a worker, one
row group's batch at a time: its text as Parquet's dictionaries, so that only a dictionary's
entries are cleaned (`ppdp.io.rules`) and looked up in the column's domain, and the rows take
their codes through their dictionary indices; its integers through a lookup over their range.

- A column whose domain is declared has its `Column` before the first row is read (the
  declared domain decides it, whatever values occur): its codes are written in its own dtype.
- Any other column's domain is the values that occur: its rows get the order in which their
  values were first met, in two bytes a row, and take the codes of the domain at the end, once
  every value has been met.

The table is the one that the two passes of `ppdp.io.scan` would give (a domain pass, then an
encoding pass: `tests/io/test_parquet_codes.py` checks that both give the same table), but the
file is decoded once. Whatever this does not take on (a missing value, a value outside a
declared domain, a type other than text and integers, more than 65,535 distinct values, a
damaged file) gives None, and `ppdp.read_table` reads the file its other ways, which apply the
rules or say what is wrong. Measured on the 10^7 rows of an Adult resample, one worker:
1.8-2.3 CPU-s with both passes, 0.6-0.7 this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.data.schema import Column, Role, encode_column
from ppdp.io.rules import _clean_column, _is_text
from ppdp.io.scan import _ParquetReader, source_schema
from ppdp.table.table import Table
from ppdp.workers import run_all

__all__ = ["read_parquet_codes"]

BATCH_ROWS = 1 << 18
"""Rows of a batch of one column (a worker holds one at a time, with its Arrow buffers)."""

_FIRST_MET = np.uint16
"""The dtype of a column's codes in the order its values were first met (65,535 values)."""


class _Unsupported(Exception):
    """What the one reading does not take on: the file is read the other ways."""


def read_parquet_codes(path: Path, *, columns: list[str] | None, na_values: list[str],
                       domains: Mapping[str, Any], sensitive: Any, quasi_identifiers: Any,
                       observed_domains: bool) -> Table | None:
    """The table of a Parquet file, each column decoded once (see the module), or None where
    the file needs `ppdp.read_table`'s other ways."""
    try:
        reader = _ParquetReader(path, columns)
        unknown = set(domains) - set(reader.names)
        n_rows = reader.metadata.num_rows
        if unknown or not reader.names or n_rows == 0:
            raise _Unsupported
        read = run_all(lambda name: _ColumnReader(name, domains.get(name), na_values)
                       .read(reader, n_rows), list(reader.names))
    except MemoryError:
        raise
    except Exception:
        # Whatever it is (a missing value, a damaged file), the other ways say it in their
        # own words, or read what this does not.
        return None
    schema = source_schema([column for column, _ in read], sensitive=sensitive,
                           quasi_identifiers=quasi_identifiers,
                           observed_domains=observed_domains)
    return Table(schema, {column.name: codes for column, codes in read}, name=path.stem)


class _ColumnReader:
    """One column's codes, batch by batch (see the module)."""

    def __init__(self, name: str, domain: Any, na_values: list[str]) -> None:
        self.name, self.domain, self.na = name, domain, na_values
        self.column: Column | None = None
        # The values met, by the order they were first met, and which occur in a row.
        self.met: dict[Any, int] = {}
        self.occur = np.zeros(0, dtype=bool)
        self.kept: tuple[pa.Array, np.ndarray] | None = None

    def read(self, reader: _ParquetReader, n_rows: int) -> tuple[Column, np.ndarray]:
        codes: np.ndarray | None = None
        start = 0
        for batch in reader.batches(BATCH_ROWS, [self.name]):
            array = batch.column(0)
            if array.null_count:
                raise _Unsupported
            if codes is None:
                codes = self._codes_array(array.type, n_rows)
            stop = start + len(array)
            if pa.types.is_dictionary(array.type):
                self._dictionary_codes(array, codes[start:stop])
            else:
                self._integer_codes(array, codes[start:stop])
            start = stop
        if codes is None or start != n_rows:
            raise _Unsupported
        if self.column is not None:
            return self.column, codes
        return self._domain_codes(codes)

    def _codes_array(self, stored: pa.DataType, n_rows: int) -> np.ndarray:
        """The array the codes are written in: the column's dtype where its domain is
        declared (the column is then known now), else the order of first meeting."""
        if pa.types.is_dictionary(stored):
            if not _is_text(stored.value_type):
                raise _Unsupported
            kind: pa.DataType = pa.string()
        elif pa.types.is_integer(stored) and not pa.types.is_uint64(stored):
            kind = pa.int64()
        else:
            raise _Unsupported
        if self.domain is None:
            return np.empty(n_rows, dtype=_FIRST_MET)
        # encode_column's checks of the domain against the values' type, on no values.
        self.column, _ = encode_column(self.name, pa.array([], kind), Role.QUASI_IDENTIFIER,
                                       self.domain)
        return np.empty(n_rows, dtype=self.column.dtype)

    def _lookup(self, values: pa.Array) -> np.ndarray:
        """The code of each of some distinct values, cleaned (a value outside the declared
        domain, or one read as missing, is not taken on)."""
        cleaned = _clean_column(self.name, pa.chunked_array([values]), self.na,
                                infer=False).combine_chunks()
        if cleaned.null_count:
            raise _Unsupported
        if self.column is not None:
            value_set = self.column.dictionary()
            if not cleaned.type.equals(value_set.type):
                cleaned = pc.cast(cleaned, value_set.type)
            positions = pc.index_in(cleaned, value_set=value_set)
            if positions.null_count:
                raise _Unsupported
            return positions.to_numpy(zero_copy_only=False).astype(self.column.dtype)
        lookup = np.array([self.met.setdefault(value, len(self.met))
                           for value in cleaned.to_pylist()], dtype=np.int64)
        if len(self.met) > np.iinfo(_FIRST_MET).max:
            raise _Unsupported
        return lookup.astype(_FIRST_MET)

    def _dictionary_codes(self, array: pa.DictionaryArray, out: np.ndarray) -> None:
        dictionary = array.dictionary
        # Batches of a row group share their dictionary: it is cleaned and looked up once.
        if self.kept is None or not self.kept[0].equals(dictionary):
            # Text that is not UTF-8 (a damaged file) is refused here, once a dictionary.
            dictionary.validate(full=True)
            self.kept = dictionary, self._lookup(dictionary)
        lookup = self.kept[1]
        indices = array.indices.to_numpy(zero_copy_only=False)
        if indices.size and (indices.min() < 0 or indices.max() >= len(lookup)):
            raise _Unsupported  # a damaged file
        # "clip": the indices are checked, and numpy's "raise" writes through a copy.
        np.take(lookup, indices, out=out, mode="clip")
        if self.column is None:
            self._occurring(lookup, np.bincount(indices, minlength=len(lookup)))

    def _integer_codes(self, array: pa.Array, out: np.ndarray) -> None:
        values = array.to_numpy().astype(np.int64, copy=False)
        low, high = int(values.min()), int(values.max())
        if high - low >= max(len(values), 1 << 16):
            raise _Unsupported
        offsets = values - low
        counts = np.bincount(offsets)
        present = np.flatnonzero(counts)
        # Codes for the values present only: one outside a declared domain that no row
        # holds is no error.
        lookup = np.zeros(len(counts), dtype=out.dtype)
        lookup[present] = self._lookup(pa.array(present + low, pa.int64()))
        np.take(lookup, offsets, out=out, mode="clip")
        if self.column is None:
            self._occurring(lookup[present], counts[present])

    def _occurring(self, lookup: np.ndarray, counts: np.ndarray) -> None:
        """Mark the values of ``lookup`` that some row holds (``counts`` above zero)."""
        if len(self.occur) < len(self.met):
            self.occur = np.concatenate([self.occur,
                                         np.zeros(len(self.met) - len(self.occur), bool)])
        self.occur[lookup[counts > 0]] = True

    def _domain_codes(self, first_met: np.ndarray) -> tuple[Column, np.ndarray]:
        """The column of the values that occur, and the rows' codes in its domain."""
        values = list(self.met)
        occurring = np.flatnonzero(self.occur)
        kind = pa.string() if isinstance(values[0], str) else pa.int64()
        column, positions = encode_column(self.name, pa.array([values[i] for i in occurring],
                                                              kind),
                                          Role.QUASI_IDENTIFIER, None)
        remap = np.zeros(len(values), dtype=column.dtype)
        remap[occurring] = positions
        return column, _taken(remap, first_met)


def _taken(lookup: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``lookup[indices]`` for indices within it, in ``lookup``'s dtype."""
    out = np.empty(len(indices), dtype=lookup.dtype)
    np.take(lookup, indices, out=out, mode="clip")
    return out
