"""Schema (column roles and finite domains) and the dictionary-encoded Table.

Every column of a Table is stored as compact unsigned integer codes into its domain, a sorted
tuple of the values the column may take. All counting, publishing and estimation work on codes;
values appear only at the edges (reading, query literals, writing a release).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.errors import SchemaError

logger = logging.getLogger("ppdp")

if TYPE_CHECKING:
    from ppdp.query import Cube, Query
    from ppdp.release import Estimate, GroupedEstimate


class Role(StrEnum):
    """What a column is for: published as is, protected, or left out of every release."""

    QUASI_IDENTIFIER = "quasi-identifier"
    SENSITIVE = "sensitive"
    IGNORED = "ignored"


def code_dtype(domain_size: int) -> np.dtype:
    """The smallest unsigned integer type that holds codes ``0 .. domain_size - 1``."""
    if domain_size <= 1 << 8:
        return np.dtype(np.uint8)
    if domain_size <= 1 << 16:
        return np.dtype(np.uint16)
    return np.dtype(np.uint32)


def _value_kind(values: Sequence[Any]) -> str:
    if all(isinstance(v, bool | np.bool_) for v in values):
        raise SchemaError("boolean columns are not supported; encode them as strings or integers")
    if all(isinstance(v, int | np.integer) for v in values):
        return "int"
    if all(isinstance(v, int | float | np.integer | np.floating) for v in values):
        return "float"
    if all(isinstance(v, str) for v in values):
        return "string"
    raise SchemaError(f"a domain mixes value types: {sorted({type(v).__name__ for v in values})}")


@dataclass(frozen=True)
class Column:
    """One column: its name, its role and its finite domain (sorted, distinct values).

    ``declared`` says whether the domain is public knowledge (given by the user, a schema file
    or a hierarchy) rather than the values that happen to be present in the data; releases
    list domains, so mechanisms refuse undeclared ones where listing them would leak.
    """

    name: str
    role: Role
    domain: tuple[Any, ...]
    declared: bool = field(default=True, compare=False)
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        if not self.domain:
            raise SchemaError(f"column {self.name!r} has an empty domain")
        kind = _value_kind(self.domain)
        python_values: tuple[Any, ...] = tuple(
            int(v) if kind == "int" else float(v) if kind == "float" else v for v in self.domain
        )
        if len(set(python_values)) != len(python_values):
            raise SchemaError(f"the domain of column {self.name!r} repeats a value")
        object.__setattr__(self, "domain", tuple(sorted(python_values)))
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "role", Role(self.role))

    @property
    def size(self) -> int:
        return len(self.domain)

    @property
    def values(self) -> np.ndarray:
        """The domain as a numpy array (int64, float64 or str), indexable by code."""
        dtype = {"int": np.int64, "float": np.float64, "string": np.str_}[self.kind]
        return np.asarray(self.domain, dtype=dtype)

    @property
    def dtype(self) -> np.dtype:
        return code_dtype(self.size)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role.value, "kind": self.kind,
                "domain": list(self.domain)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Column:
        return cls(name=str(data["name"]), role=Role(data["role"]), domain=tuple(data["domain"]))


@dataclass(frozen=True)
class Schema:
    """The ordered columns of a table, each with a role and a domain."""

    columns: tuple[Column, ...]

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise SchemaError(f"duplicate column names: {duplicated}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def names_with_role(self, role: Role) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.role == role)

    @property
    def sensitive(self) -> tuple[str, ...]:
        return self.names_with_role(Role.SENSITIVE)

    @property
    def quasi_identifiers(self) -> tuple[str, ...]:
        return self.names_with_role(Role.QUASI_IDENTIFIER)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise SchemaError(unknown_column_message(name, self.names))

    def sizes(self) -> dict[str, int]:
        return {c.name: c.size for c in self.columns}

    def select(self, names: Iterable[str]) -> Schema:
        return Schema(tuple(self[n] for n in names))

    def with_roles(
        self,
        *,
        sensitive: Iterable[str] | str | None = None,
        quasi_identifiers: Iterable[str] | str | None = None,
    ) -> Schema:
        """Assign roles: the given sensitive columns, the given quasi-identifiers (default: every
        other column), and ignored for the rest."""
        sensitive = _as_names(sensitive)
        for name in sensitive:
            self[name]
        if quasi_identifiers is None:
            qi = [n for n in self.names if n not in sensitive]
        else:
            qi = _as_names(quasi_identifiers)
            for name in qi:
                self[name]
            both = sorted(set(qi) & set(sensitive))
            if both:
                raise SchemaError(f"columns cannot be both sensitive and quasi-identifier: {both}")

        def role(name: str) -> Role:
            if name in sensitive:
                return Role.SENSITIVE
            return Role.QUASI_IDENTIFIER if name in qi else Role.IGNORED

        return Schema(tuple(replace(c, role=role(c.name)) for c in self.columns))

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.columns]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]]) -> Schema:
        return cls(tuple(Column.from_json(c) for c in data))


def _as_names(names: Iterable[str] | str | None) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    return list(names)


def unknown_column_message(name: str, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"unknown column {name!r}{hint} (columns: {', '.join(known)})"


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
        roles = ", ".join(f"{c.name}:{c.role.value}" for c in self.schema.columns)
        return f"Table({self.n_rows} rows; {roles})"

    @property
    def codes(self) -> Mapping[str, np.ndarray]:
        """Read-only code arrays by column name."""
        return self._codes

    @cached_property
    def cube(self) -> Cube:
        """Contingency tables of this table, built on demand and kept: the truth for a query
        pool is then a few bincounts, whatever the number of queries."""
        from ppdp.query import Cube

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
        from ppdp.randomness import make_rng

        rng = make_rng(random_state)
        return self.take(rng.integers(0, self.n_rows, size=n_rows))

    def with_domains(self, domains: Mapping[str, Sequence[Any]]) -> Table:
        """The same rows with declared (public) domains for the given columns.

        Each domain must hold every value present; codes are remapped to the new domains.
        """
        columns, codes = list(self.schema.columns), dict(self._codes)
        for name, domain in domains.items():
            old = self.schema[name]
            new = Column(name, old.role, tuple(domain))
            try:
                positions = {v: i for i, v in enumerate(new.domain)}
                remap = np.asarray([positions[v] for v in old.domain], dtype=np.int64)
            except KeyError:
                outside = [v for v in old.domain if v not in positions][:5]
                raise SchemaError(f"the declared domain of column {name!r} lacks values present "
                                  f"in the data: {outside}") from None
            codes[name] = remap[self._codes[name]].astype(new.dtype)
            columns[self.schema.names.index(name)] = new
        return Table(Schema(tuple(columns)), codes, dropped_rows=self.dropped_rows,
                     name=self.name)

    def declare_observed_domains(self, columns: Iterable[str] | None = None, *,
                                 warn: bool = True) -> Table:
        """Declare the values present as the public domains of ``columns`` (default: all).

        A release lists its domains, so this reveals which values occur in the data (that a
        rare value is present, that another is absent). Use it only where that is public;
        ``warn`` logs that risk (off only where the values present are known to be public).
        """
        names = set(self.schema.names if columns is None else _as_names(columns))
        for name in names:
            self.schema[name]
        undeclared = sorted(c.name for c in self.schema.columns
                            if c.name in names and not c.declared)
        if undeclared and warn:
            logger.warning("the values present in %s are declared their public domains: a "
                           "release lists them, revealing which values occur in the data",
                           ", ".join(undeclared))
        schema = Schema(tuple(replace(c, declared=True) if c.name in names else c
                              for c in self.schema.columns))
        return Table(schema, self._codes, dropped_rows=self.dropped_rows, name=self.name)

    def to_arrow(self) -> pa.Table:
        """Decoded values as an Arrow table (dictionary-encoded columns)."""
        arrays = []
        for column in self.schema.columns:
            dictionary = pa.array(list(column.domain))
            indices = pa.array(self._codes[column.name].astype(np.int32))
            arrays.append(pa.DictionaryArray.from_arrays(indices, dictionary))
        return pa.table(arrays, names=list(self.schema.names))

    def count(self, query: str | Query) -> Estimate | GroupedEstimate:
        """The exact answer of a count query (SQL text or a parsed Query)."""
        from ppdp.release import exact_count

        return exact_count(self, query)


def encode_column(name: str, array: pa.ChunkedArray | pa.Array, role: Role,
                  domain: Sequence[Any] | None = None) -> tuple[Column, np.ndarray]:
    """Dictionary-encode one Arrow column against its domain (the active domain by default)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if array.null_count:
        raise SchemaError(f"column {name!r} has {array.null_count} missing values")
    if pa.types.is_boolean(array.type):
        array = pc.cast(array, pa.string())
    declared = domain is not None
    if domain is None:
        domain = pc.unique(array).to_pylist()
    column = Column(name, role, tuple(domain), declared=declared)
    value_set = pa.array(list(column.domain))
    if not value_set.type.equals(array.type):
        try:
            array = pc.cast(array, value_set.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"column {name!r} ({array.type}) does not match its domain "
                              f"({value_set.type})") from exc
    indices = pc.index_in(array, value_set=value_set)
    if indices.null_count:
        outside = pc.unique(pc.filter(array, pc.is_null(indices))).to_pylist()[:5]
        raise SchemaError(f"column {name!r} holds values outside its domain: {outside}")
    codes = indices.to_numpy(zero_copy_only=False).astype(column.dtype)
    return column, codes


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
