"""Options shared by the commands, and the reading of the data they name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from ppdp.table.table import Table

NonNumeric = Annotated[str, typer.Option(
    "--non-numeric", help="a CSV column of numbers with a few other cells: 'error' (default), "
                          "'missing' (those cells become missing values) or 'text' (read the "
                          "column as text)")]

Encoding = Annotated[str, typer.Option(
    "--encoding", help="text encoding of a CSV file (a Python codec name such as utf-8, "
                       "latin-1 or cp1252)")]

DropMissing = Annotated[bool, typer.Option(
    "--drop-missing", help="drop rows with missing values instead of failing")]

Separator = Annotated[str | None, typer.Option(
    "--sep", help="CSV field separator (default: detected)")]

JsonOutput = Annotated[bool, typer.Option("--json", help="print JSON")]

SEED_HELP = ("random seed, for reproducible experiments and tests only: a release meant for the "
             "public must be made without one (the default draws from OS entropy)")

STREAMING_MB = 512
"""``ppdp.plan.engine.STREAMING_FILE_BYTES`` in MB, for the help of --engine: that module
loads numpy, which `ppdp --help` must not wait for (a test keeps the two equal)."""


def parse_params(items: Sequence[str] | None) -> dict[str, str]:
    """``-p key=value`` options as a dict (the last one wins for a repeated key)."""
    values: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"-p takes key=value (for example -p gamma=5), got {item!r}")
        values[key.strip()] = value.strip()
    return values


def reading(*, sensitive: str | None = None, qi: str | None = None,
            drop_missing: bool = False, sep: str | None = None,
            domains: Mapping[str, Any] | None = None, observed_domains: bool = False,
            non_numeric: str = "error", encoding: str = "utf-8") -> dict[str, Any]:
    """The options of `ppdp.io.read_table` that the command line's reading options give."""
    return {"sensitive": sensitive, "quasi_identifiers": qi, "sep": sep,
            "missing": "drop" if drop_missing else "error", "domains": domains,
            "observed_domains": observed_domains, "non_numeric": non_numeric,
            "encoding": encoding}


def read_source(source: str, **options: Any) -> Table:
    """A CSV/Parquet file, or a bundled dataset by name when no such file exists, read into
    memory with `reading`'s ``options`` (and, with ``observed_domains``, the values present
    declared public where no domain is declared)."""
    # Imported here, not at start-up: the engines load numpy and pyarrow.
    from ppdp.plan.engine import get_engine

    engine = get_engine("memory")
    table: Table = engine.open(source, **engine.read_options(source, **options))
    return table


def check_engine(engine: str) -> None:
    """Refuse an --engine that names no engine (nor ``auto``)."""
    # Imported here, not at start-up: the engines' registry loads numpy.
    from ppdp.plan.engine import engine_choices

    if engine not in engine_choices():
        raise ValueError(f"--engine must be one of {', '.join(engine_choices())}, not "
                         f"{engine!r}")


def declared_domains(domains_file: Path | None, domain: Sequence[str] | None,
                     hierarchies: Mapping[str, Any] | None) -> dict[str, Any]:
    """The domains declared by --domains, --domain and --hierarchies (later ones win)."""
    # Imported here, not at start-up: domains load numpy.
    from ppdp.data.domains import hierarchy_domains, parse_domain_options, read_domains_file

    declared: dict[str, Any] = {}
    if domains_file is not None:
        declared.update(read_domains_file(domains_file))
    if hierarchies:
        declared.update(hierarchy_domains(hierarchies))
    declared.update(parse_domain_options(domain or ()))
    return declared
