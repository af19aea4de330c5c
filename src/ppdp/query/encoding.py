"""Values read from files turned into codes of a column's domain, checked (every value
must be in the domain), and whether Polars is there to count over files."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

POLARS_FLOOR = (1, 31)
"""The first Polars release with its streaming engine (``collect(engine="streaming")``)."""


def scan_engine_available() -> bool:
    """Whether Polars, at `POLARS_FLOOR` or later, is installed for `ScanCube` to count with
    (asked of the package metadata: importing Polars takes a noticeable fraction of a
    second)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = re.match(r"(\d+)\.(\d+)", version("polars"))
    except PackageNotFoundError:
        return False
    return found is not None and tuple(map(int, found.groups())) >= POLARS_FLOOR


def encode_values(name: str, array: pa.Array | pa.ChunkedArray, domain: pa.Array
                  ) -> np.ndarray:
    """The codes of values (their positions in ``domain``), refusing any value outside it.

    A dictionary-encoded chunk is encoded through the dictionary entries its rows use: only
    those are looked up, and the rows take their codes through their indices.
    """
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    codes = [_encode_chunk(name, chunk, domain) for chunk in chunks]
    return np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)


def _encode_chunk(name: str, array: pa.Array, domain: pa.Array) -> np.ndarray:
    outside = ValueError(f"column {name!r} holds values outside its domain")
    if array.null_count:
        raise outside
    if pa.types.is_dictionary(array.type):
        indices = array.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        used = np.flatnonzero(np.bincount(indices, minlength=len(array.dictionary)))
        lookup = np.full(len(array.dictionary), -1, dtype=np.int64)
        lookup[used] = _positions(name, array.dictionary.take(pa.array(used)), domain)
        codes = lookup[indices]
    else:
        codes = _positions(name, array, domain)
    if codes.size and codes.min() < 0:
        raise outside
    return codes


def _check_stored_type(name: str, stored: pa.DataType, domain: pa.DataType) -> None:
    """Refuse a column whose stored values (a file's footer says their type) cannot be its
    domain's: of another type, integers of any width aside."""
    values = stored.value_type if pa.types.is_dictionary(stored) else stored
    if not (values.equals(domain) or (pa.types.is_integer(values)
                                      and pa.types.is_integer(domain))):
        raise ValueError(f"column {name!r} has type {values}, not {domain}")


def _positions(name: str, values: pa.Array, domain: pa.Array) -> np.ndarray:
    """Position of each value in ``domain``, -1 where it is absent (or null)."""
    try:
        cast = values if values.type.equals(domain.type) else pc.cast(values, domain.type)
        positions = pc.index_in(cast, value_set=domain)
    except pa.ArrowException as exc:
        raise ValueError(f"column {name!r} has type {values.type}, not {domain.type}") from exc
    return positions.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
