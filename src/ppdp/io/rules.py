"""How read values are cleaned and typed, the same for a table read whole (`ppdp.io.read`)
and in batches (`ppdp.io.scan`).

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

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.data.schema import (
    Ordered,
    dictionary_order,
    list_names,
    show_name,
    unknown_column_message,
)
from ppdp.errors import MissingValuesError, SchemaError

logger = logging.getLogger("ppdp")


DEFAULT_NA_VALUES: tuple[str, ...] = ("?", "", "NA", "N/A", "NaN", "nan", "NULL")
"""Strings read as a missing value unless ``na_values`` says otherwise."""


NUMERIC_PERCENT = 90
"""A CSV column whose non-missing cells are at least this percentage numbers, but not all of
them, is an error unless ``non_numeric`` says what to do with the other cells."""


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
            # As float64 they would lose digits (9223372036854775809 would count as ...808),
            # silently; Parquet's path refuses such integers too.
            raise SchemaError(_beyond_int64_message(name, source, numbers)) from None
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


def _beyond_int64_message(name: str, source: str, numbers: pa.Array) -> str:
    """The error for a text column of integers some of which int64 does not hold."""
    outside = []
    for digits in numbers.to_pylist():
        # Python refuses int() of more than 4,300 digits; any past 19 are out of range.
        if len(digits.lstrip("+-").lstrip("0")) > 19 \
                or not -(2 ** 63) <= int(digits) < 2 ** 63:
            outside.append(_show(digits))
            if len(outside) == _SHOWN_VALUES:
                break
    return (f"column {name!r} of {source} holds integers beyond the int64 range "
            f"(-9223372036854775808 to 9223372036854775807), such as {', '.join(outside)}, "
            f"which ppdp cannot hold exactly; convert them (to read them as text, declare a "
            f"text domain), or leave the column out with columns=[...]")


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
                list_names(list(counts)))
    return kept, dropped


def _missing_message(counts: Mapping[str, int]) -> str:
    """The error for missing values: how many in each column, and how to drop their rows."""
    # show_name: names with line breaks or other control characters escaped, one line always.
    listed = ", ".join(f"{show_name(name)} ({n})" for name, n in counts.items())
    plural = "column" if len(counts) == 1 else "columns"
    return (f"missing values in {len(counts)} {plural}: {listed}; pass missing=\"drop\" "
            "(CLI: --drop-missing) to drop those rows")
