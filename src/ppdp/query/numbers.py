"""How a number written in a query (``age = 40``, ``age > 39.5``, ``iinjury = '3'``) is read:
exactly, or refused in one line.

Integers (digits only) are read as Python integers, exactly, within the range of 64-bit
integers, which is what an integer column holds (`ppdp.io.rules` refuses larger integers in
CSV files, as Parquet's path does): ``id = 9007199254740993`` is that integer, not the
float64 next to it. Other numbers are float64. One that float64 rounds onto a whole number it
is not (``age = 40.0000000000000001`` would count the ages of 40; ``39.99999999999999999``
too) is refused: its rounding changes which integers it separates, silently. Other roundings
(``x > 0.1``) separate integers as the number written does, and float columns hold values
read through the same float64 rounding."""

from __future__ import annotations

import decimal
import math
import re

from ppdp.errors import QueryError

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _shown(digits: str) -> str:
    return digits if len(digits) <= 40 else digits[:37] + "..."


def check_int64(value: int) -> int:
    """``value`` if a 64-bit integer holds it, else a QueryError."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise _beyond_int64(str(value))
    return value


def _beyond_int64(digits: str) -> QueryError:
    return QueryError(f"the integer {_shown(digits)} is too large for a 64-bit integer "
                      f"({INT64_MIN} to {INT64_MAX}), which is what integer columns hold; "
                      f"compare with a number in that range")


def exact_number(digits: str) -> int | float:
    """The number ``digits`` spells (Python's float syntax), exactly: an int for digits only,
    else a float64 that is not a whole number the text is not; a QueryError otherwise (the
    module doc), a ValueError for text that is not a number. Integers up to 2**63 in size
    pass: SQL reads -9223372036854775808 as the negation of 9223372036854775808 (binding
    checks the range with `check_int64`)."""
    text = digits.strip()
    if _INTEGER.fullmatch(text):
        # Python refuses int() of more than 4,300 digits; any past 19 are out of range.
        if len(text.lstrip("+-").lstrip("0")) > 19 or abs(int(text)) > 2 ** 63:
            raise _beyond_int64(text)
        return int(text)
    number = float(text)  # a ValueError for text that is no number: the caller says so
    if not math.isfinite(number):
        if text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
            return number
        raise QueryError(f"the number {_shown(digits)} is too large; numbers must be below "
                         f"1.8e308 in size")
    if number.is_integer() and abs(number) <= 2 ** 63:
        try:
            exact = decimal.Decimal(text)
        except decimal.InvalidOperation:
            return number
        if exact != decimal.Decimal(number):
            raise QueryError(f"the number {_shown(digits)} is not exactly a 64-bit float: it "
                             f"would be read as {int(number)}, which it is not; write it with "
                             f"at most 15 significant digits")
    return number
