"""Published rows to and from Arrow: values as dictionary-encoded columns readable by any
tool, and back to codes with every value checked against the schema."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.query.encoding import encode_values


def rows_to_arrow(schema: Schema, codes: Mapping[str, np.ndarray],
                  extra: Mapping[str, np.ndarray] | None = None) -> pa.Table:
    """Published rows as values (dictionary-encoded Arrow columns), readable by any tool."""
    arrays, names = [], []
    for column in schema.columns:
        arrays.append(column.dictionary_array(codes[column.name]))
        names.append(column.name)
    for name, values in (extra or {}).items():
        arrays.append(pa.array(values))
        names.append(name)
    return pa.table(arrays, names=names)


def rows_from_arrow(schema: Schema, table: pa.Table, n_rows: int) -> dict[str, np.ndarray]:
    """Re-encode published rows against the schema's domains, checking every value."""
    if table.num_rows != n_rows:
        raise ValueError(f"expected {n_rows} rows, found {table.num_rows}")
    codes = {}
    for column in schema.columns:
        if column.name not in table.column_names:
            raise ValueError(f"column {column.name!r} is missing")
        codes[column.name] = encode_values(column.name, table.column(column.name),
                                           column.dictionary()).astype(column.dtype)
    return codes


def joined_parts(parts: list[pa.Table]) -> pa.Table:
    """A file's parts as one table: the same columns of the same types, each optional if it
    is so in any part (a part of an earlier version, or one with nulls; `write_parquet`
    stores a column without nulls as required)."""
    first = parts[0].schema
    if any(part.schema.names != first.names for part in parts):
        raise pa.ArrowInvalid("the parts have different column names")
    fields = []
    for index, field in enumerate(first):
        stored = [part.schema.field(index) for part in parts]
        if any(not other.type.equals(field.type) for other in stored):
            raise pa.ArrowInvalid(f"the parts differ in the type of column {field.name!r}")
        fields.append(field.with_nullable(any(other.nullable for other in stored)))
    schema = pa.schema(fields, first.metadata)
    return pa.concat_tables([pa.Table.from_arrays(part.columns, schema=schema)
                             for part in parts])
