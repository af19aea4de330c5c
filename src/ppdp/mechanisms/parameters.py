"""A mechanism's parameters as the command line and the docs show them (named by the
paper's symbols), and the checks of their values: a clear error naming the parameter and its
allowed range."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeGuard

import numpy as np


def is_int(value: object) -> TypeGuard[numbers.Integral]:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_real(value: object) -> TypeGuard[numbers.Real]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_int(name: str, value: object, minimum: int) -> int:
    if not is_int(value) or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def real_number(text: str) -> float:
    """A number written as a decimal (``0.2``, ``1e-3``, ``inf``) or as a fraction (``1/13``),
    which writes a parameter such as rho1 = 1/13 exactly and briefly; ValueError otherwise."""
    if "/" in text:
        try:
            return float(Fraction(text.strip()))
        except ZeroDivisionError:
            raise ValueError(f"{text!r} divides by zero") from None
    return float(text)


def number_text(value: object) -> str:
    """A parameter value as the command line takes it back exactly: a float as the fraction
    of small denominator it equals when its decimal is long (1/13), else its shortest decimal
    that reads back as the same float (0.2, 1e-05); other values as ``str``."""
    if not isinstance(value, float) or isinstance(value, bool) or not math.isfinite(value):
        return str(value)
    text = repr(value)
    fraction = Fraction(value).limit_denominator(10_000)
    if len(text) > 8 and fraction.denominator > 1 and float(fraction) == value:
        return f"{fraction.numerator}/{fraction.denominator}"
    return text


REQUIRED = object()


@dataclass(frozen=True)
class Parameter:
    """A mechanism parameter as the CLI and docs show it, named by the paper's symbol."""

    name: str
    kind: type
    help: str
    default: Any = REQUIRED
    resource: bool = False
    """A limit on memory or size (such as ``max_rows``), not a privacy parameter: it never
    changes what is published, so ``parameter_values`` (what releases record and later views
    must repeat) leaves it out."""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def convert(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                if self.kind is int:
                    number = float(value)
                    if not number.is_integer():
                        raise ValueError
                    return int(number)
                if self.kind is float:
                    return real_number(value)
                return self.kind(value)
            except ValueError:
                raise ValueError(f"parameter {self.name!r} must be {self.kind.__name__}, got "
                                 f"{value!r}") from None
        return value


def require_integer(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def require_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def require_open_unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return float(value)


def require_unit_interval(name: str, value: Any) -> float:
    """A probability bound: 0 < value <= 1 (1 means no constraint)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"{name} must be in the interval (0, 1], got {value!r}")
    return float(value)
