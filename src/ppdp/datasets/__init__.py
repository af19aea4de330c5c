"""Datasets bundled with ppdp, and their ARX generalization hierarchies (see ADULT.md in this
folder for attribution and licences)."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from ppdp.data.bundled import NAMES, bundled_name
from ppdp.data.domains import read_domains_file
from ppdp.data.hierarchy import Hierarchy, bundled_hierarchies
from ppdp.io.read import read_table
from ppdp.table.table import Table

__all__ = ["NAMES", "adult", "hierarchies", "load"]


def adult(*, sensitive: Iterable[str] | str | None = None,
          quasi_identifiers: Iterable[str] | str | None = None,
          observed_domains: bool = False) -> Table:
    """The 9-attribute UCI Adult table, 30,162 rows (CC BY 4.0; attribution in ADULT.md).

    Domains are the codebook's (``adult.domains.json``); ``observed_domains`` takes the values
    present instead, as the alpha-beta paper's experiment does (Section 5, m = 648,023,040).
    """
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
    return loaders[bundled_name(name)](sensitive=sensitive, quasi_identifiers=quasi_identifiers,
                        observed_domains=observed_domains)


def hierarchies(name: str) -> dict[str, Hierarchy]:
    """The ARX generalization hierarchies bundled for a dataset (one of `NAMES`), keyed by
    column: for ``adult``, the ARX project's nine (Apache-2.0; attribution in ADULT.md)."""
    return bundled_hierarchies(name)
