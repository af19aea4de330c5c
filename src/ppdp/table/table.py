"""The dictionary-encoded Table: rows held in memory as the codes of their values
(`ppdp.data.schema`), counted exactly by count queries (`ppdp.query`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import (
    KIND_NAMES,
    Column,
    Ordered,
    Role,
    Schema,
    arrange_domain,
    as_names,
    encode_column,
    list_names,
    logger,
    show_name,
    unknown_column_message,
)
from ppdp.errors import SchemaError
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.query.binding import bind
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.grouped import grouped, require_ungrouped
from ppdp.query.syntax import Query
from ppdp.randomness import make_rng


class Table:
    """A dictionary-encoded microdata table: one code array per column, all of equal length."""

    def __init__(self, schema: Schema, codes: Mapping[str, np.ndarray], *,
                 dropped_rows: int = 0, name: str | None = None) -> None:
        if set(codes) != set(schema.names):
            raise SchemaError("code arrays do not match the schema's columns")
        lengths = {len(codes[name]) for name in schema.names}
        if len(lengths) > 1:
            raise SchemaError(f"columns differ in length: {sorted(lengths)}")
        self.schema = schema
        self._codes = {name: np.asarray(codes[name], dtype=schema[name].dtype)
                       for name in schema.names}
        for array in self._codes.values():
            array.flags.writeable = False
        self.n_rows = lengths.pop() if lengths else 0
        self.dropped_rows = dropped_rows
        """Rows removed while reading because they held missing values."""
        self.name = name
        """The table's name in queries' FROM (a file's stem), besides the generic ``t``."""

    def __len__(self) -> int:
        return self.n_rows

    def __repr__(self) -> str:
        roles = ", ".join(f"{show_name(c.name)}:{c.role.value}" for c in self.schema.columns)
        return f"Table({self.n_rows} rows; {roles})"

    @property
    def codes(self) -> Mapping[str, np.ndarray]:
        """Read-only code arrays by column name."""
        return self._codes

    @cached_property
    def cube(self) -> Cube:
        """Contingency tables of this table, built on demand and kept: the truth for a query
        pool is then a few bincounts, whatever the number of queries."""
        return Cube(self._codes, self.schema.sizes(), self.n_rows)

    def values(self, name: str) -> np.ndarray:
        """Decoded values of one column."""
        return self.schema[name].values[self._codes[name]]

    @property
    def nbytes(self) -> int:
        """Size of the encoded table in bytes."""
        return sum(a.nbytes for a in self._codes.values())

    def with_roles(self, *, sensitive: Iterable[str] | str | None = None,
                   quasi_identifiers: Iterable[str] | str | None = None) -> Table:
        """The same data with new column roles (see `Schema.with_roles`)."""
        return Table(self.schema.with_roles(sensitive=sensitive,
                                            quasi_identifiers=quasi_identifiers),
                     self._codes, dropped_rows=self.dropped_rows, name=self.name)

    def select(self, names: Iterable[str]) -> Table:
        names = list(names)
        return Table(self.schema.select(names), {n: self._codes[n] for n in names},
                     name=self.name)

    def take(self, rows: np.ndarray) -> Table:
        """The rows at the given positions (with repetition allowed: used for resampling)."""
        return Table(self.schema, {n: a[rows] for n, a in self._codes.items()},
                     name=self.name)

    def resample(self, n_rows: int, *, random_state: Any = None) -> Table:
        """``n_rows`` rows drawn with replacement (for scaling experiments on real data)."""
        rng = make_rng(random_state)
        return self.take(rng.integers(0, self.n_rows, size=n_rows))

    def with_domains(self, domains: Mapping[str, Sequence[Any]]) -> Table:
        """The same rows with declared (public) domains for the given columns.

        Each domain must hold every value present; codes are remapped to the new domains. An
        ordered column keeps its order (see `arrange_domain`); an `Ordered` domain sets one.
        """
        columns, codes = list(self.schema.columns), dict(self._codes)
        for name, domain in domains.items():
            old = self.schema[name]
            arranged = arrange_domain(name, Ordered(old.domain) if old.ordered else None,
                                      domain)
            new = Column(name, old.role, arranged if isinstance(arranged, Ordered)
                         else tuple(arranged))
            # True == 1 in Python: without this check booleans would pass for the numbers 0, 1.
            if (new.kind == "bool") != (old.kind == "bool"):
                raise SchemaError(f"the declared domain of column {name!r} holds "
                                  f"{KIND_NAMES[new.kind]}, but the column holds "
                                  f"{KIND_NAMES[old.kind]}")
            # Only the values present must be in the new domain: an old declared domain may
            # list values that no row holds (an ordered categorical's unused categories).
            present = np.bincount(self._codes[name], minlength=old.size) > 0
            remap = [new.position(v) for v in old.domain]
            outside = [v for v, code, used in zip(old.domain, remap, present, strict=True)
                       if code is None and used]
            if outside:
                raise SchemaError(f"the declared domain of column {name!r} lacks values present "
                                  f"in the data: {outside[:5]}")
            lookup = np.asarray([0 if code is None else code for code in remap], dtype=np.int64)
            codes[name] = lookup[self._codes[name]].astype(new.dtype)
            columns[self.schema.index(name)] = new
        return Table(Schema(tuple(columns)), codes, dropped_rows=self.dropped_rows,
                     name=self.name)

    def declare_observed_domains(self, columns: Iterable[str] | None = None, *,
                                 warn: bool = True) -> Table:
        """Declare the values present as the public domains of ``columns`` (default: all).

        A release lists its domains, so this reveals which values occur in the data (that a
        rare value is present, that another is absent). Use it only where that is public;
        ``warn`` logs that risk (off only where the values present are known to be public).
        """
        names = set(self.schema.names if columns is None else as_names(columns))
        for name in names:
            self.schema[name]
        undeclared = sorted(c.name for c in self.schema.columns
                            if c.name in names and not c.declared)
        if undeclared and warn:
            logger.warning("the values present in %s are declared their public domains: a "
                           "release lists them, revealing which values occur in the data",
                           list_names(undeclared))
        schema = Schema(tuple(replace(c, declared=True) if c.name in names else c
                              for c in self.schema.columns))
        return Table(schema, self._codes, dropped_rows=self.dropped_rows, name=self.name)

    def to_arrow(self) -> pa.Table:
        """Decoded values as an Arrow table (dictionary-encoded columns)."""
        arrays = [column.dictionary_array(self._codes[column.name])
                  for column in self.schema.columns]
        return pa.table(arrays, names=list(self.schema.names))

    def count(self, query: str | Query) -> Estimate | GroupedEstimate:
        """The exact answer of a count query (SQL text or a parsed Query)."""
        return exact_count(self, query)


def table_from_arrow(data: pa.Table, *, roles: Mapping[str, Role] | None = None,
                     domains: Mapping[str, Sequence[Any]] | None = None) -> Table:
    """Encode an Arrow table (no missing values) into a Table; roles default to quasi-identifier."""
    roles = roles or {}
    domains = domains or {}
    unknown = sorted((set(roles) | set(domains)) - set(data.column_names))
    if unknown:
        raise SchemaError(unknown_column_message(unknown[0], data.column_names))
    columns, codes = [], {}
    for name in data.column_names:
        column, column_codes = encode_column(name, data.column(name),
                                             roles.get(name, Role.QUASI_IDENTIFIER),
                                             domains.get(name))
        columns.append(column)
        codes[name] = column_codes
    return Table(Schema(tuple(columns)), codes)


def exact_count(table: Table, query: str | Query) -> Estimate | GroupedEstimate:
    """The true answer of a count query on a table."""
    bound = bind(query, table.schema, table_name=table.name)
    counts = count_histogram(table.cube, bound.predicate, bound.group_by)
    if bound.group_by:
        return grouped(table.schema, bound.group_by, counts, None, exact=True)
    return Estimate.exact(float(counts))


def exact_counts(table: Table, queries: Iterable[str | Query]) -> np.ndarray:
    """True answers of many ungrouped count queries, sharing contingency tables."""
    cube = table.cube
    result = []
    for query in queries:
        bound = bind(query, table.schema, table_name=table.name)
        require_ungrouped(bound)
        result.append(float(count_histogram(cube, bound.predicate, ())))
    return np.asarray(result, dtype=np.float64)
