"""Declared public domains: what a column may take, known without looking at the data.

A release lists the domain of every column it publishes, and randomizing mechanisms draw from
those domains; a domain taken from the values present in the data would reveal which values
occur (a rare value's presence, an absent value's absence). Domains are declared by

- a mapping ``{column: values}`` (``read_table(..., domains=...)``), where values are a list,
  a ``range``, integer bounds ``{"min": 17, "max": 90}``, or ordered text
  ``{"ordered": ["preschool", "hs_grad", "bachelors"]}`` (`ppdp.table.Ordered`: comparisons
  follow the order given, not the alphabet);
- a JSON schema file ``{"domains": {column: values, ...}}`` (CLI: ``--domains FILE``);
- ``COLUMN=SPEC`` strings on the command line (``--domain age=17..90``,
  ``--domain sex=Female,Male``);
- ARX generalization hierarchies: their leaves (CLI: ``--hierarchies DIR``);
- the dtype itself: an ordered categorical's categories (pandas ``ordered=True``, polars
  ``pl.Enum``, Arrow ``ordered=True``) and a boolean column's ``[False, True]``.

In files and on the command line, ``true`` and ``false`` (any case) are booleans.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ppdp.data.schema import Ordered
from ppdp.errors import SchemaError

__all__ = ["hierarchy_domains", "parse_domain", "parse_domain_options", "read_domains_file",
           "resolve_domains"]


MAX_BOUNDED_VALUES = 10_000_000
"""The most values a ``min..max`` declaration may span (each becomes a domain value)."""


def bounds(low: Any, high: Any, column: str) -> range:
    """The integers ``low..high`` (both included) as a domain."""
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (low, high)):
        raise SchemaError(f"the bounds of column {column!r} must be integers, got {low!r} and "
                          f"{high!r}; list the values of a non-integer domain")
    if high < low:
        raise SchemaError(f"the bounds of column {column!r} are reversed: {low}..{high}")
    if high - low + 1 > MAX_BOUNDED_VALUES:
        raise SchemaError(f"the bounds {low}..{high} of column {column!r} span more than "
                          f"{MAX_BOUNDED_VALUES:,} values; coarsen the column first")
    return range(low, high + 1)


def parse_domain(spec: str, column: str) -> range | list[Any]:
    """A command-line domain: ``MIN..MAX`` (integers) or comma-separated values."""
    text = spec.strip()
    low, dots, high = text.partition("..")
    if dots:
        try:
            return bounds(int(low), int(high), column)
        except ValueError:
            raise SchemaError(f"--domain {column}={spec}: MIN..MAX takes integers") from None
    values = [v.strip() for v in text.split(",")]
    if not text or any(not v for v in values):
        raise SchemaError(f"--domain {column}={spec}: give MIN..MAX or comma-separated values")
    return [_typed(v) for v in values]


def _typed(value: str) -> int | float | str | bool:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def read_domains_file(path: str | os.PathLike[str]) -> dict[str, range | list[Any] | Ordered]:
    """The domains of a JSON schema file ``{"domains": {column: values or bounds}}``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no such domains file: {path}") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise SchemaError(f"cannot read the domains file {path}: "
                          f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                          ) from None
    if not isinstance(data, dict) or not isinstance(data.get("domains"), dict):
        raise SchemaError(f"{path} must hold a JSON object with a \"domains\" object: "
                          f"{{\"domains\": {{\"age\": {{\"min\": 0, \"max\": 120}}, "
                          f"\"sex\": [\"F\", \"M\"]}}}}")
    return resolve_domains(data["domains"])


def resolve_domains(domains: Mapping[str, Any] | str | os.PathLike[str] | None
                    ) -> dict[str, range | list[Any] | Ordered]:
    """Declared domains from a mapping, or from a schema file given by its path."""
    if domains is None:
        return {}
    if isinstance(domains, str | os.PathLike):
        return read_domains_file(domains)
    if not isinstance(domains, Mapping):
        raise TypeError(f"domains must be a mapping or a schema file path, not "
                        f"{type(domains).__name__}")
    result: dict[str, range | list[Any] | Ordered] = {}
    for column, values in domains.items():
        if isinstance(values, Mapping) and set(values) == {"ordered"}:
            order = values["ordered"]
            if not (isinstance(order, Sequence) and not isinstance(order, str | bytes)
                    and order):
                raise SchemaError(f"the ordered domain of column {column!r} must be a "
                                  f"non-empty list of values, not {order!r}")
            result[str(column)] = Ordered(order)
        elif isinstance(values, Mapping):
            if set(values) != {"min", "max"}:
                raise SchemaError(f"the domain of column {column!r} is a list of values, "
                                  f"{{\"min\": ..., \"max\": ...}} or {{\"ordered\": [...]}}, "
                                  f"not {dict(values)!r}")
            result[str(column)] = bounds(values["min"], values["max"], str(column))
        elif isinstance(values, Ordered | range):
            result[str(column)] = values
        elif isinstance(values, Sequence) and not isinstance(values, str | bytes) and values:
            result[str(column)] = list(values)
        else:
            raise SchemaError(f"the domain of column {column!r} must be a non-empty list of "
                              f"values or integer bounds, not {values!r}")
    return result


def hierarchy_domains(hierarchies: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The leaves of ARX hierarchies as declared domains (numbers where a leaf is one)."""
    return {name: [_typed(leaf) for leaf in hierarchy.leaves]
            for name, hierarchy in hierarchies.items()}


def parse_domain_options(items: Sequence[str]) -> dict[str, range | list[Any]]:
    """``--domain COLUMN=SPEC`` options as declared domains."""
    result: dict[str, range | list[Any]] = {}
    for item in items:
        column, sep, spec = item.partition("=")
        if not sep or not column.strip():
            raise SchemaError(f"--domain takes COLUMN=MIN..MAX or COLUMN=a,b,c, got {item!r}")
        result[column.strip()] = parse_domain(spec, column.strip())
    return result
