"""Column roles and finite domains, and the codes of values (the schema of a Table).

Every column is stored as compact unsigned integer codes into its domain, a tuple of the values
the column may take, in the column's order: sorted (numbers by value, booleans False then True,
text alphabetically) unless the column is *ordered* text (an ordered categorical, or a domain
declared with `Ordered`), whose domain keeps the order given. Codes therefore always follow the
column's order, and everything that orders values (range queries, generalization ranges,
hierarchies) works on codes. All counting, publishing and estimation work on codes; values
appear only at the edges (reading, query literals, writing a release)."""

from __future__ import annotations

import bisect
import logging
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.errors import SchemaError

logger = logging.getLogger("ppdp")


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


class Ordered(tuple[Any, ...]):
    """Domain values in a meaningful order (an ordered categorical), kept as given, not sorted.

    Declare an ordered text domain with ``read_table(..., domains={"edu": Ordered([...])})``
    or ``{"edu": {"ordered": [...]}}`` in a schema file; ordered categoricals of pandas, polars
    (``pl.Enum``) and Arrow (``ordered=True``) are read as one. Comparisons (``<``, ``BETWEEN``)
    then follow this order.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Ordered({list(self)!r})"


KIND_NAMES = {"int": "numbers", "float": "numbers", "string": "text", "bool": "booleans"}
"""How messages name what a column of each kind holds."""


_ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _value_kind(values: Sequence[Any]) -> str:
    booleans = [isinstance(v, bool | np.bool_) for v in values]
    if all(booleans):
        return "bool"
    if any(booleans):
        raise SchemaError(f"a domain mixes booleans with other values: "
                          f"{sorted({type(v).__name__ for v in values})}")
    if all(isinstance(v, int | np.integer) for v in values):
        return "int"
    if all(isinstance(v, int | float | np.integer | np.floating) for v in values):
        return "float"
    if all(isinstance(v, str) for v in values):
        return "string"
    raise SchemaError(f"a domain mixes value types: {sorted({type(v).__name__ for v in values})}")


@dataclass(frozen=True)
class Column:
    """One column: its name, its role and its finite domain (distinct values, in order).

    ``declared`` says whether the domain is public knowledge (given by the user, a schema file
    or a hierarchy) rather than the values that happen to be present in the data; releases
    list domains, so mechanisms refuse undeclared ones where listing them would leak.

    ``kind`` is ``"int"``, ``"float"``, ``"string"`` or ``"bool"``. The domain is sorted,
    except for ordered text (``ordered``, or a domain given as `Ordered`), which keeps its
    order. Numbers and booleans always compare by value: an ordered domain of them must be in
    ascending order.
    """

    name: str
    role: Role
    domain: tuple[Any, ...]
    declared: bool = field(default=True, compare=False)
    ordered: bool = False
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        if not self.domain:
            raise SchemaError(f"column {self.name!r} has an empty domain")
        kind = _value_kind(self.domain)
        convert = {"int": int, "float": float, "bool": bool}.get(kind)
        python_values: tuple[Any, ...] = tuple(self.domain) if convert is None \
            else tuple(convert(v) for v in self.domain)
        if len(set(python_values)) != len(python_values):
            raise SchemaError(f"the domain of column {self.name!r} repeats a value")
        ordered = self.ordered or isinstance(self.domain, Ordered)
        in_order = tuple(sorted(python_values))
        if ordered and kind != "string" and python_values != in_order:
            shown = ", ".join(map(repr, python_values[:5]))
            raise SchemaError(f"column {self.name!r} is ordered ({shown}, ...) but holds "
                              f"{KIND_NAMES[kind]}, which ppdp always orders by value; give "
                              f"the values in ascending order, or make them text")
        keep = ordered and kind == "string"
        object.__setattr__(self, "domain", python_values if keep else in_order)
        object.__setattr__(self, "ordered", keep)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "role", Role(self.role))

    @property
    def size(self) -> int:
        return len(self.domain)

    @property
    def values(self) -> np.ndarray:
        """The domain as a numpy array (int64, float64, str or bool), indexable by code."""
        dtype = {"int": np.int64, "float": np.float64, "string": np.str_,
                 "bool": np.bool_}[self.kind]
        return np.asarray(self.domain, dtype=dtype)

    @property
    def dtype(self) -> np.dtype:
        return code_dtype(self.size)

    @cached_property
    def iso_dates(self) -> bool:
        """Whether this is text holding only ISO dates (``2024-01-31``): dates as ppdp reads
        them, compared as text, which for this form is chronological."""
        if self.kind != "string" or self.ordered:
            return False
        return bool(pc.all(pc.match_substring_regex(pa.array(self.domain, pa.string()),
                                                    _ISO_DATE)).as_py())

    def position(self, value: Any) -> int | None:
        """The code of a domain value, or None when it is not in the domain."""
        if self.ordered:
            return self._positions.get(value)
        # A sorted domain is searched in place: declared ranges may span millions of values,
        # too many for a dictionary per column.
        try:
            code = bisect.bisect_left(self.domain, value)
        except TypeError:  # a value of another type is not in the domain
            return None
        if code < self.size and self.domain[code] == value \
                and isinstance(self.domain[code], bool) == isinstance(value, bool | np.bool_):
            return code
        return None

    @cached_property
    def _positions(self) -> dict[Any, int]:
        return {value: code for code, value in enumerate(self.domain)}

    def dictionary(self) -> pa.Array:
        """The domain as an Arrow array (the dictionary of this column's encoded values)."""
        return pa.array(list(self.domain))

    def dictionary_array(self, codes: np.ndarray) -> pa.DictionaryArray:
        """Codes as an Arrow dictionary array over the domain (``ordered`` kept)."""
        indices = pa.array(np.asarray(codes).astype(np.int32, copy=False))
        return pa.DictionaryArray.from_arrays(indices, self.dictionary(),
                                              ordered=self.ordered)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "role": self.role.value,
                                "kind": self.kind, "domain": list(self.domain)}
        if self.ordered:
            # Only when set: releases written before ordered columns existed stay identical.
            data["ordered"] = True
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Column:
        ordered = data.get("ordered", False)
        if not isinstance(ordered, bool):
            raise SchemaError(f"column {data.get('name')!r}: \"ordered\" must be true or false")
        return cls(name=str(data["name"]), role=Role(data["role"]), domain=tuple(data["domain"]),
                   ordered=ordered)


@dataclass(frozen=True)
class Schema:
    """The ordered columns of a table, each with a role and a domain."""

    columns: tuple[Column, ...]

    def __post_init__(self) -> None:
        # One dictionary of positions: a check by counting each name took quadratic time
        # (minutes at 100,000 columns).
        if len(self._positions) != len(self.columns):
            duplicated = sorted(n for n, k in Counter(self.names).items() if k > 1)
            raise SchemaError(f"duplicate column names: {duplicated}")
        lookalike = lookalike_names(self.names)
        if lookalike:
            # ascii(): the two names look the same, their code points do not.
            raise SchemaError(f"columns {' and '.join(map(ascii, lookalike))} are the same name "
                              f"written with different Unicode characters (a letter and its "
                              f"accent apart, or in one character); rename one of them")

    @cached_property
    def _positions(self) -> dict[str, int]:
        """Each column's position by name (the first, where a name repeats)."""
        positions: dict[str, int] = {}
        for position, column in enumerate(self.columns):
            positions.setdefault(column.name, position)
        return positions

    @cached_property
    def names(self) -> tuple[str, ...]:
        # Cached (the columns never change): binding a query asks for them at every term.
        return tuple(c.name for c in self.columns)

    @cached_property
    def names_by_folded(self) -> dict[str, tuple[str, ...]]:
        """The names by their case-folded NFC form (`folded_name`), for lookups that ignore
        case: a query's ``SEX`` finds ``sex``, and is ambiguous when ``Sex`` exists too."""
        found: dict[str, list[str]] = {}
        for name in self.names:
            found.setdefault(folded_name(name), []).append(name)
        return {key: tuple(names) for key, names in found.items()}

    @cached_property
    def bound_terms(self) -> dict[Any, Any]:
        """Comparisons of a column with a literal already bound to this schema's domains, by
        (operator, column, literal): filled and read by `ppdp.query`."""
        return {}

    @cached_property
    def bound_conditions(self) -> dict[int, Any]:
        """Parsed conditions already bound to this schema, by identity: filled and read by
        `ppdp.query`."""
        return {}

    def names_with_role(self, role: Role) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.role == role)

    @property
    def sensitive(self) -> tuple[str, ...]:
        return self.names_with_role(Role.SENSITIVE)

    @property
    def quasi_identifiers(self) -> tuple[str, ...]:
        return self.names_with_role(Role.QUASI_IDENTIFIER)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._positions

    def __getitem__(self, name: str) -> Column:
        position = self._positions.get(name) if isinstance(name, str) else None
        if position is None:
            raise SchemaError(unknown_column_message(name, self.names))
        return self.columns[position]

    def index(self, name: str) -> int:
        """The position of a column among the columns."""
        position = self._positions.get(name) if isinstance(name, str) else None
        if position is None:
            raise SchemaError(unknown_column_message(name, self.names))
        return position

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
        sensitive = as_names(sensitive)
        for name in sensitive:
            self[name]
        # Sets for the test of each column: lists took quadratic time on wide tables.
        sensitive_set = set(sensitive)
        if quasi_identifiers is None:
            qi = [n for n in self.names if n not in sensitive_set]
        else:
            qi = as_names(quasi_identifiers)
            for name in qi:
                self[name]
            both = sorted(set(qi) & set(sensitive))
            if both:
                raise SchemaError(f"columns cannot be both sensitive and quasi-identifier: {both}")
        qi_set = set(qi)

        def role(name: str) -> Role:
            if name in sensitive_set:
                return Role.SENSITIVE
            return Role.QUASI_IDENTIFIER if name in qi_set else Role.IGNORED

        return Schema(tuple(replace(c, role=role(c.name)) for c in self.columns))

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.columns]

    @classmethod
    def from_json(cls, data: Sequence[Mapping[str, Any]]) -> Schema:
        return cls(tuple(Column.from_json(c) for c in data))


def as_names(names: Iterable[str] | str | None) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    return list(names)


def show_name(name: str) -> str:
    """A column name as messages and printouts show it: as is when printable, else quoted
    with its control characters escaped, as values are shown (``repr``): a file's header must
    not reach a terminal as escape sequences."""
    return name if name.isprintable() else repr(name)


def folded_name(name: str) -> str:
    """A name in NFC, case-folded: how names that look alike compare (``café`` spelled with
    a combining accent or in one character; ``Sex`` and ``sex`` in queries)."""
    return unicodedata.normalize("NFC", name).casefold()


def lookalike_names(names: Iterable[str]) -> tuple[str, str] | None:
    """Two distinct names that are the same text in Unicode's NFC form, if any: they look
    the same but would be two columns."""
    seen: dict[str, str] = {}
    for name in names:
        key = unicodedata.normalize("NFC", name)
        other = seen.setdefault(key, name)
        if other != name:
            return other, name
    return None


_SHOWN_COLUMNS = 50
"""Most column names a message lists: a table may have 100,000 columns."""


def list_names(names: Sequence[str]) -> str:
    """Column names for a message: comma-separated, shown by `show_name`, at most
    `_SHOWN_COLUMNS` of them and how many more."""
    listed = ", ".join(map(show_name, names[:_SHOWN_COLUMNS]))
    if len(names) > _SHOWN_COLUMNS:
        listed += f" and {len(names) - _SHOWN_COLUMNS} more"
    return listed


def unknown_column_message(name: str, known: Sequence[str]) -> str:
    import difflib

    if isinstance(name, str):
        nfc = unicodedata.normalize("NFC", name)
        same = [k for k in known if unicodedata.normalize("NFC", k) == nfc]
        if same:
            return (f"unknown column {name!a}: column {same[0]!a} looks the same but "
                    f"is written with other Unicode characters (a letter and its accent apart, "
                    f"or in one character); write the name as the data does")
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"unknown column {name!r}{hint} (columns: {list_names(known)})"


def dictionary_order(name: str, array: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """The categories of an ordered dictionary column (all of them, used or not), else None."""
    type_ = array.type
    if not (pa.types.is_dictionary(type_) and type_.ordered):
        return None
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    if not chunks:
        return pa.array([], type_.value_type)
    first = chunks[0].dictionary
    # Merging differing dictionaries would append values in no meaningful order.
    if any(not chunk.dictionary.equals(first) for chunk in chunks[1:]):
        raise SchemaError(f"column {name!r} is an ordered categorical whose chunks have "
                          f"different categories; give every chunk the same categories")
    return first


@overload
def arrange_domain(name: str, order: Sequence[Any] | None,
                   declared: Sequence[Any]) -> Sequence[Any]: ...


@overload
def arrange_domain(name: str, order: Sequence[Any],
                   declared: Sequence[Any] | None) -> Sequence[Any]: ...


@overload
def arrange_domain(name: str, order: Sequence[Any] | None,
                   declared: Sequence[Any] | None) -> Sequence[Any] | None: ...


def arrange_domain(name: str, order: Sequence[Any] | None,
                   declared: Sequence[Any] | None) -> Sequence[Any] | None:
    """The domain of a column with its own order (``order``: an ordered categorical's
    categories) and a declared domain; either may be None.

    A declared `Ordered` domain replaces the order. A plain declared domain of an ordered text
    column keeps the column's order: its values must be among the categories (to add values or
    change the order, declare an `Ordered` domain), so that a domain file listing values
    alphabetically never reorders a column silently. Numbers and booleans are ordered by value
    whatever the categories say, so their declared domain is taken as is.
    """
    if declared is None:
        return order
    if order is None or isinstance(declared, Ordered) \
            or not all(isinstance(v, str) for v in order):
        return declared
    position = {value: index for index, value in enumerate(order)}
    outside = [v for v in declared if not isinstance(v, str) or v not in position]
    if outside:
        raise SchemaError(f"column {name!r} is ordered ({', '.join(map(repr, order[:4]))}"
                          f"{', ...' if len(order) > 4 else ''}) and its declared domain lists "
                          f"values outside that order: {outside[:5]}; declare the whole order "
                          f"instead (Ordered([...]), or {{\"ordered\": [...]}} in a schema file)")
    return Ordered(sorted(declared, key=position.__getitem__))


def encode_column(name: str, array: pa.ChunkedArray | pa.Array, role: Role,
                  domain: Sequence[Any] | None = None) -> tuple[Column, np.ndarray]:
    """Dictionary-encode one Arrow column against its domain (the active domain by default).

    An ordered dictionary column's categories are its declared, ordered domain (see
    `arrange_domain` for a ``domain`` given as well); a boolean column's domain is
    ``(False, True)``, declared: it tells nothing about the data.
    """
    order = dictionary_order(name, array)
    if order is not None:
        domain = arrange_domain(name, Ordered(order.to_pylist()), domain)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if array.null_count:
        raise SchemaError(f"column {name!r} has {array.null_count} missing values")
    if domain is None and pa.types.is_boolean(array.type):
        domain = (False, True)
    declared = domain is not None
    if domain is None:
        domain = pc.unique(array).to_pylist()
    column = Column(name, role, domain if isinstance(domain, Ordered) else tuple(domain),
                    declared=declared)
    value_set = column.dictionary()
    if not value_set.type.equals(array.type):
        if pa.types.is_boolean(value_set.type) != pa.types.is_boolean(array.type):
            # Arrow casts booleans to and from numbers and text ("true"); a domain of another
            # kind is a mistake, not a spelling.
            raise SchemaError(f"column {name!r} holds {_arrow_kind(array.type)} but its domain "
                              f"holds {KIND_NAMES[column.kind]}")
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


def _arrow_kind(type_: pa.DataType) -> str:
    if pa.types.is_boolean(type_):
        return "booleans"
    if pa.types.is_integer(type_) or pa.types.is_floating(type_):
        return "numbers"
    return "text" if pa.types.is_string(type_) or pa.types.is_large_string(type_) \
        else str(type_)
