"""Datasets bundled with ppdp, and their ARX generalization hierarchies (see ADULT.md in this
folder for attribution and licences)."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING

from ppdp.data.domains import read_domains_file
from ppdp.table.table import Table

if TYPE_CHECKING:
    from ppdp.data.hierarchy import Hierarchy

__all__ = ["NAMES", "adult", "hierarchies", "load"]

NAMES: tuple[str, ...] = ("adult",)
"""The names `load` accepts."""


def adult(*, sensitive: Iterable[str] | str | None = None,
          quasi_identifiers: Iterable[str] | str | None = None,
          observed_domains: bool = False) -> Table:
    """The 9-attribute UCI Adult table, 30,162 rows (CC BY 4.0; attribution in ADULT.md).

    Domains are the codebook's (``adult.domains.json``); ``observed_domains`` takes the values
    present instead, as the alpha-beta paper's experiment does (Section 5, m = 648,023,040).
    """
    from ppdp.io.read import read_table

    folder = resources.files(__name__)
    with resources.as_file(folder / "adult.domains.json") as path:
        domains = None if observed_domains else read_domains_file(path)
    with resources.as_file(folder / "adult.parquet") as path:
        table = read_table(path, sensitive=sensitive, quasi_identifiers=quasi_identifiers,
                           domains=domains)
    # The codebook lists every value present, so the values present are public here.
    return table.declare_observed_domains(warn=False) if observed_domains else table


def load(name: str, *, sensitive: Iterable[str] | str | None = None,
         quasi_identifiers: Iterable[str] | str | None = None,
         observed_domains: bool = False) -> Table:
    """A bundled dataset by name (one of `NAMES`; attribution in this folder's .md files)."""
    loaders = {"adult": adult}
    key = name.strip().lower()
    if key not in loaders:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(NAMES)}")
    return loaders[key](sensitive=sensitive, quasi_identifiers=quasi_identifiers,
                        observed_domains=observed_domains)


def hierarchies(name: str) -> dict[str, Hierarchy]:
    """The ARX generalization hierarchies bundled for a dataset (one of `NAMES`), keyed by
    column: for ``adult``, the ARX project's nine (Apache-2.0; attribution in ADULT.md)."""
    from ppdp.data.hierarchy import hierarchies_of_files

    key = name.strip().lower()
    if key not in NAMES:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(NAMES)}")
    files = [entry for entry in resources.files(__name__).iterdir()
             if entry.name.startswith(f"{key}_hierarchy_") and entry.name.endswith(".csv")]
    return hierarchies_of_files(sorted(files, key=lambda entry: entry.name),
                                f"the bundled {key} hierarchies")
