"""Datasets bundled with ppdp (see ADULT.md in this folder for attribution and licence)."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from ppdp.table import Table

__all__ = ["NAMES", "adult", "load"]

NAMES: tuple[str, ...] = ("adult",)
"""The names `load` accepts."""


def adult(*, sensitive: Iterable[str] | str | None = None,
          quasi_identifiers: Iterable[str] | str | None = None) -> Table:
    """The 9-attribute UCI Adult table, 30,162 rows (CC BY 4.0; attribution in ADULT.md)."""
    from ppdp.io import read_table

    with resources.as_file(resources.files(__name__) / "adult.parquet") as path:
        return read_table(path, sensitive=sensitive, quasi_identifiers=quasi_identifiers)


def load(name: str, *, sensitive: Iterable[str] | str | None = None,
         quasi_identifiers: Iterable[str] | str | None = None) -> Table:
    """A bundled dataset by name (one of `NAMES`; attribution in this folder's .md files)."""
    loaders = {"adult": adult}
    key = name.strip().lower()
    if key not in loaders:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(NAMES)}")
    return loaders[key](sensitive=sensitive, quasi_identifiers=quasi_identifiers)
