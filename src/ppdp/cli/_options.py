"""Options shared by the commands, and the reading of the data they name."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ppdp.errors import SettingError
from ppdp.workers import POLARS_THREADS_VARIABLE, WORKERS_VARIABLE, check_workers

if TYPE_CHECKING:
    from ppdp.data.schema import Schema
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


def use_workers(workers: int | None) -> int | None:
    """Work on ``workers`` threads (``PPDP_WORKERS`` for this process), and let Polars, not
    yet imported, start as many threads as the workers (where ``POLARS_MAX_THREADS`` is
    unset)."""
    if workers is not None:
        os.environ[WORKERS_VARIABLE] = str(workers)
    chosen = os.environ.get(WORKERS_VARIABLE, "").strip()
    if chosen:
        try:
            count = check_workers(chosen, WORKERS_VARIABLE)
        except SettingError as exc:
            raise typer.BadParameter(str(exc)) from exc
        os.environ.setdefault(POLARS_THREADS_VARIABLE, str(count))
    return workers


Workers = Annotated[int | None, typer.Option(
    "--workers", min=1, callback=use_workers,
    help=f"threads to work on (default: {WORKERS_VARIABLE}, else every core this process may "
         f"use); the result is the same for any number")]

Names = Annotated[str | None, typer.Option(
    "--names", help="the CSV's column names in order, comma-separated: they replace its "
                    "header line, or name the columns of a file that has none (--no-header)")]

NoHeader = Annotated[bool, typer.Option(
    "--no-header", help="the CSV file has no header line (its first line is a row, as in "
                        "UCI's adult.data): name its columns with --names")]

QuasiIdentifiers = Annotated[str | None, typer.Option(
    "--qi", help="quasi-identifier columns, comma-separated (default: every non-sensitive "
                 "column; others are left out); also written --quasi-identifiers")]

QuasiIdentifiersLong = Annotated[str | None, typer.Option(
    "--quasi-identifiers", hidden=True,
    help="--qi by the name Python gives it (quasi_identifiers=)")]

Hierarchies = Annotated[str | None, typer.Option(
    "--hierarchies", help="folder of ARX hierarchy files (*hierarchy_<column>.csv, lines "
                          "leaf;level1;...;*), or 'adult' for the bundled Adult hierarchies: "
                          "their leaves are the declared domains; mondrian also generalizes "
                          "by them")]

DomainsFile = Annotated[Path | None, typer.Option(
    "--domains", help="JSON file declaring public domains: {\"domains\": {\"age\": "
                      "{\"min\": 0, \"max\": 120}, \"sex\": [\"F\", \"M\"]}}")]

Domain = Annotated[list[str] | None, typer.Option(
    "--domain", help="declare one column's public domain: COL=MIN..MAX (integers) or "
                     "COL=a,b,c (repeatable)")]

ObservedDomains = Annotated[bool, typer.Option(
    "--observed-domains", help="take the values present as the public domains of the columns "
                               "not declared otherwise: the release then reveals which values "
                               "occur in the data")]

PARQUET_SUFFIXES = (".parquet", ".pq")
"""The suffixes of the files read as Parquet (`ppdp.io.rules`), which have no header line."""

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


def quasi_identifiers(qi: str | None, long: str | None) -> str | None:
    """The quasi-identifiers of --qi or of its other spelling --quasi-identifiers."""
    if qi is not None and long is not None and qi != long:
        raise ValueError(f"--qi and --quasi-identifiers are one option, given twice: "
                         f"{qi!r} and {long!r}")
    return qi if qi is not None else long


def reading(*, sensitive: str | None = None, qi: str | None = None,
            drop_missing: bool = False, sep: str | None = None,
            domains: Mapping[str, Any] | None = None, observed_domains: bool = False,
            non_numeric: str = "error", encoding: str = "utf-8", source: str | None = None,
            names: str | None = None, no_header: bool = False) -> dict[str, Any]:
    """The options of `ppdp.io.read_table` that the command line's reading options give.

    --names and --no-header describe a CSV file (``source``): --no-header without --names is
    refused rather than naming the columns col1, col2, ...: roles, domains and queries name
    columns, and a name the file does not give would be a guess."""
    options = {"sensitive": sensitive, "quasi_identifiers": qi, "sep": sep,
               "missing": "drop" if drop_missing else "error", "domains": domains,
               "observed_domains": observed_domains, "non_numeric": non_numeric,
               "encoding": encoding}
    if names is None and not no_header:
        return options
    if no_header and names is None:
        raise ValueError("--no-header needs --names a,b,c: the names of the file's columns, "
                         "in order")
    if source is not None and (not Path(source).is_file()
                               or Path(source).suffix.lower() in PARQUET_SUFFIXES):
        raise ValueError(f"--names and --no-header describe a CSV file; {source!r} is not one")
    listed = [name.strip() for name in (names or "").split(",")]
    if not all(listed):
        raise ValueError(f"--names takes the column names, comma-separated, got {names!r}")
    return {**options, "header": not no_header, "names": listed}


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
    from ppdp.errors import SchemaError

    declared: dict[str, Any] = {}
    if domains_file is not None:
        declared.update(read_domains_file(domains_file))
    if hierarchies:
        declared.update(hierarchy_domains(hierarchies))
    try:
        declared.update(parse_domain_options(domain or ()))
    except SchemaError as exc:
        # The text of a --domain option, not the data: a usage error (exit code 2).
        raise ValueError(str(exc)) from None
    return declared


def release_domains(schema: Schema) -> dict[str, Any]:
    """The domains of a release's columns, declared as --domains declares them: the source of
    an attack or a risk measure is read with them, so each column is typed as the release
    types it (zip codes as text where the release's are text, not numbers)."""
    return {column.name: {"ordered": list(column.domain)} if column.ordered
            else list(column.domain) for column in schema.columns}


def read_passphrase(path: Path) -> bytes:
    """The passphrase in a file: its first line, without the line ending."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist: no passphrase there") from None
    if not lines or not lines[0]:
        raise ValueError(f"{path} holds no passphrase (its first line is empty)")
    return lines[0]
