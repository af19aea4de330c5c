"""The ``ppdp`` command line: publish releases, answer count queries, show guarantees, run the demo.

Every expected failure (a ppdp error, a bad value, a missing or existing file) ends in one red
``error: ...`` line on standard error and exit code 2, without a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.errors import PpdpError
from ppdp.jsonable import json_ready

# The command line starts without numpy, pyarrow or the mechanisms: each command imports what
# it needs, so that `ppdp --help` and argument errors answer at once.
if TYPE_CHECKING:
    from ppdp.estimate import Estimate, GroupedEstimate
    from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
    from ppdp.mechanisms.alphabeta.views import ViewSequence
    from ppdp.mechanisms.base import Mechanism, Progress
    from ppdp.release.base import Release
    from ppdp.table.source import Source
    from ppdp.table.table import Table

__all__ = ["app", "main"]

EXIT_ERROR = 2
STREAMING_FILE_BYTES = 512 << 20
"""Files at least this large are published by the streaming engine under --engine auto."""
_HANDLED = (PpdpError, ValueError, OSError)

class _Group(typer.core.TyperGroup):
    """The ppdp commands, with their flags shown as flags (no ``<bool>`` value type) and a
    flag given a value (``--drop-missing true``) answered with how to write it."""

    # click's types: typer vendors click in some versions and depends on it in others.
    def get_params(self, ctx: typer.Context) -> list[Any]:
        return _plain_flags(super().get_params(ctx))

    def resolve_command(self, ctx: typer.Context, args: list[str]
                        ) -> tuple[str | None, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _refuse_flag_values(_plain_flags(command.get_params(ctx)), rest)
        return name, command, rest


def _plain_flags(params: list[Any]) -> list[Any]:
    """The parameters, flags given an empty metavar: typer's help would show ``<bool>``, as
    if a flag took a value."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


def _refuse_flag_values(params: list[Any], args: Sequence[str]) -> None:
    """One error line for ``--flag true`` or ``--flag false``, which the parser would reject
    as an unexpected argument (an argument that names an existing file is left to it)."""
    flags = {name for param in params if getattr(param, "is_flag", False)
             for name in param.opts}
    for option, value in itertools.pairwise(args):
        if option == "--":
            return
        if option in flags and value.lower() in ("true", "false") \
                and not os.path.lexists(value):
            _fail(f"{option} is a flag and takes no value: write {option} to turn it on, or "
                  f"leave it out for off (got '{option} {value}')")


app = typer.Typer(
    cls=_Group,
    name="ppdp",
    help="Privacy-preserving publishing of microdata (SPLU-Gen, small domain randomization, "
         "alpha-beta, FRAPP, ambiguity, Mondrian, Anatomy, DBR, Laplace counts), estimation of "
         "count queries from the published data, and measured disclosure risk.",
    no_args_is_help=True,
    add_completion=False,
)

F = TypeVar("F", bound=Callable[..., Any])

def main() -> None:
    """Entry point of the ``ppdp`` command."""
    app(prog_name="ppdp")


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("ppdp")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from ppdp import __version__ as number
        typer.echo(f"ppdp {number}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="print the version of ppdp and exit")] = False,
) -> None:
    """Options that come before the command."""


# -- helpers -----------------------------------------------------------------------------------


def _out() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _fail(message: str) -> None:
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    line = " ".join(str(message).split())
    console.print(Text("error: ", style="bold red") + Text(line, style="red"))
    raise typer.Exit(EXIT_ERROR)


def _handle_errors(function: F) -> F:
    """Turn the expected errors of a command into one ``error:`` line and exit code 2."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except MemoryError:
            _fail("not enough memory for this work; use a smaller table or a machine with "
                  "more memory")
        except _HANDLED as exc:
            _fail(str(exc) or type(exc).__name__)

    return wrapper  # type: ignore[return-value]


def _parse_params(items: Sequence[str] | None) -> dict[str, str]:
    """``-p key=value`` options as a dict (the last one wins for a repeated key)."""
    values: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"-p takes key=value (for example -p gamma=5), got {item!r}")
        values[key.strip()] = value.strip()
    return values


def _load_source(source: str, *, sensitive: str | None = None, qi: str | None = None,
                 drop_missing: bool = False, sep: str | None = None,
                 domains: Mapping[str, Any] | None = None,
                 observed_domains: bool = False, non_numeric: str = "error",
                 encoding: str = "utf-8") -> Table:
    """A CSV/Parquet file, or a bundled dataset by name when no such file exists, with
    ``domains`` declared (and, with ``observed_domains``, the other values present)."""
    from ppdp import datasets
    from ppdp.io.read import read_table

    path = Path(source)
    if path.exists():
        table = read_table(path, sensitive=sensitive, quasi_identifiers=qi, sep=sep,
                           missing="drop" if drop_missing else "error", domains=domains,
                           non_numeric=non_numeric, encoding=encoding)
    elif source.strip().lower() in datasets.NAMES:
        table = datasets.load(source, sensitive=sensitive, quasi_identifiers=qi)
        if domains:
            table = table.with_domains(domains)
    else:
        raise FileNotFoundError(f"{source!r} is neither a file nor a bundled dataset; bundled "
                                f"datasets: {', '.join(datasets.NAMES)}")
    return table.declare_observed_domains() if observed_domains else table


def _declared_domains(domains_file: Path | None, domain: Sequence[str] | None,
                      hierarchies: Mapping[str, Any] | None) -> dict[str, Any]:
    """The domains declared by --domains, --domain and --hierarchies (later ones win)."""
    from ppdp.data.domains import hierarchy_domains, parse_domain_options, read_domains_file

    declared: dict[str, Any] = {}
    if domains_file is not None:
        declared.update(read_domains_file(domains_file))
    if hierarchies:
        declared.update(hierarchy_domains(hierarchies))
    declared.update(parse_domain_options(domain or ()))
    return declared


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(json_ready(data), allow_nan=False))


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def _interval(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{_number(ci[0])}, {_number(ci[1])}]"


def _parameters_text(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_number(v) if isinstance(v, float) else v}"
                     for k, v in values.items()) or "none"


# -- publish -----------------------------------------------------------------------------------

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

_SEED_HELP = ("random seed, for reproducible experiments and tests only: a release meant for the "
              "public must be made without one (the default draws from OS entropy)")


@app.command()
@_handle_errors
def publish(
    source: Annotated[str, typer.Argument(help="CSV or Parquet file, or a bundled dataset name "
                                               "(adult)")],
    mechanism: Annotated[str, typer.Option("--mechanism", "-m",
                                           help="mechanism name (see ppdp mechanisms)")],
    output: Annotated[Path, typer.Option("--output", "-o",
                                         help="release directory to create")],
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", "-s", help="sensitive column(s), comma-separated (alphabeta and frapp "
                                  "treat every column as an attribute of the tuple)")] = None,
    qi: Annotated[str | None, typer.Option(
        "--qi", help="quasi-identifier columns, comma-separated (default: every "
                     "non-sensitive column; others are left out)")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="mechanism parameter key=value (repeatable)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=_SEED_HELP)] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing release directory (only a directory that "
                            "holds a ppdp release and nothing else)")] = False,
    state_dir: Annotated[Path | None, typer.Option(
        "--state-dir", help="alphabeta: where the private state of the views of a table is "
                            "kept (default: $PPDP_STATE_DIR, else ~/.local/state/ppdp); the "
                            "views of a table are counted there, whatever the output")] = None,
    hierarchies: Annotated[str | None, typer.Option(
        "--hierarchies", help="folder of ARX hierarchy files (*hierarchy_<column>.csv, lines "
                              "leaf;level1;...;*), or 'adult' for the bundled Adult "
                              "hierarchies: their leaves are the declared domains; mondrian "
                              "also generalizes by them")] = None,
    domains_file: Annotated[Path | None, typer.Option(
        "--domains", help="JSON file declaring public domains: {\"domains\": {\"age\": "
                          "{\"min\": 0, \"max\": 120}, \"sex\": [\"F\", \"M\"]}}")] = None,
    domain: Annotated[list[str] | None, typer.Option(
        "--domain", help="declare one column's public domain: COL=MIN..MAX (integers) or "
                         "COL=a,b,c (repeatable)")] = None,
    observed_domains: Annotated[bool, typer.Option(
        "--observed-domains", help="take the values present as the public domains of the "
                                   "columns not declared otherwise: the release then reveals "
                                   "which values occur in the data")] = False,
    engine: Annotated[str, typer.Option(
        "--engine", help="memory (read the whole table), streaming (read the file in batches: "
                         "memory bounded whatever its size), auto (streaming for files of "
                         f"{STREAMING_FILE_BYTES >> 20} MB or more, or too large for the "
                         "memory available) or spark (a Parquet file or folder on Spark: the "
                         "master of the Spark configuration, else local[*])")] = "auto",
    batch_rows: Annotated[int, typer.Option(
        "--batch-rows", min=1, help="rows per batch of the streaming engine")] = 1 << 20,
) -> None:
    """Publish a table with a mechanism and save the release to a directory.

    The release directory is written atomically: if anything fails, no
    directory is left. Without --seed the randomness comes from OS entropy,
    as a real release needs; --seed is for reproducible experiments only.

    Examples:

      ppdp publish adult -m splu -s occupation -p gamma=5 -o adult-splu
      ppdp publish visits.csv -m anatomy -s disease --qi age,sex -p l=4 -o rel
      ppdp publish data.parquet -m dbr -s diagnosis --drop-missing -o rel
      ppdp publish adult -m alphabeta -p k=10 -p gamma=0.2 -o view1
      ppdp publish adult -m ambiguity -s occupation -p alpha=0.1 -p beta=0.2 -o amb
      ppdp publish adult -m mondrian -s occupation -p k=10 -p l=5 --hierarchies adult -o gen
      ppdp publish adult -m mondrian -s occupation -p k=5 -p l=5 -p diversity=frequency -o gen
      ppdp publish visits.csv -m splu -s disease --domains visits-domains.json -o rel
      ppdp publish visits.csv -m dbr -s disease --domain disease=flu,cold,hiv -o rel

    A release lists the domain of each column it publishes, so the domains
    must be public: declared with --domains, --domain or --hierarchies (the
    bundled adult declares its codebook's). Where the values present are
    public anyway, --observed-domains takes them (the release then reveals
    which values occur).

    alphabeta keeps the private state that later views of the same table
    need in one place per user (--state-dir, default ~/.local/state/ppdp),
    keyed by the table, whatever the output folder; it is written before the
    release appears. Publishing the same table again continues with
    Algorithm 4 (view 2, 3, ... up to v) and must use the same parameters.
    Keep that state private and do not delete it.
    """
    from ppdp.data.hierarchy import read_hierarchies
    from ppdp.mechanisms import get_mechanism
    from ppdp.progress import status
    from ppdp.release.target import require_replaceable_release

    mechanism_class = get_mechanism(mechanism)
    instance = mechanism_class.from_params(_parse_params(param))
    hierarchy_files = read_hierarchies(hierarchies) if hierarchies is not None else None
    if hierarchy_files is not None and "hierarchies" in inspect.signature(
            type(instance)).parameters:
        instance = type(instance)(**instance.parameter_values,  # type: ignore[call-arg]
                                  hierarchies=hierarchy_files)
    declared = _declared_domains(domains_file, domain, hierarchy_files)
    if os.path.lexists(output):
        if not overwrite:
            raise FileExistsError(f"{output} already exists; choose another directory or pass "
                                  f"--overwrite")
        require_replaceable_release(output)
    _check_engine(engine, _SPARK_ENGINES)
    if engine == "spark":
        if drop_missing:
            raise ValueError("--engine spark does not drop rows with missing values; drop or "
                             "fill them in Spark first")
        _publish_spark(instance, source, output, sensitive=sensitive, qi=qi,
                       domains=declared, observed_domains=observed_domains, seed=seed,
                       overwrite=overwrite, state_dir=state_dir)
        return
    if _streaming(engine, source):
        _publish_streaming(instance, source, output, sensitive=sensitive, qi=qi,
                           drop_missing=drop_missing, sep=sep, domains=declared,
                           observed_domains=observed_domains, non_numeric=non_numeric,
                           encoding=encoding, seed=seed, overwrite=overwrite,
                           batch_rows=batch_rows, state_dir=state_dir)
        return
    # A transient status line on stderr: reading, publishing and writing 10^7 rows take seconds.
    with status(f"reading {source}") as shown:
        table = _load_source(source, sensitive=sensitive, qi=qi, drop_missing=drop_missing,
                             sep=sep, domains=declared, observed_domains=observed_domains,
                             non_numeric=non_numeric, encoding=encoding)
        shown.update(f"publishing {table.n_rows:,} rows with {mechanism_class.name}")
        views = None
        if instance.name == "alphabeta":
            views, state, target = _publish_view(instance, table, output, state_dir,
                                                  overwrite=overwrite, seed=seed)
        else:
            release = instance.publish(table, random_state=seed)
            shown.update(f"writing {output}")
            target = release.save(output, overwrite=overwrite)
    _print_saved_summary(instance, table, target, seeded=seed is not None)
    if views is not None:
        _print_view(views, state)


_ENGINES = ("auto", "memory", "streaming")
_SPARK_ENGINES = (*_ENGINES, "spark")
"""Publishing a Parquet input, and counting on a release, also run on Spark."""


def _check_engine(engine: str, engines: Sequence[str] = _ENGINES) -> None:
    if engine not in engines:
        raise ValueError(f"--engine must be one of {', '.join(engines)}, not {engine!r}")


def _streaming(engine: str, source: str) -> bool:
    """Whether --engine (and, for auto, the input's size) asks for the streaming engine."""
    from ppdp.plan.resources import available_memory

    _check_engine(engine)
    path = Path(source)
    if engine == "streaming":
        if not path.is_file():
            raise ValueError(f"--engine streaming reads a CSV or Parquet file; {source!r} is "
                             f"not one")
        return True
    if engine == "memory" or not path.is_file():
        return False
    size = path.stat().st_size
    available = available_memory()
    # A table in memory takes several times its compressed file while it is read and copied.
    return size >= STREAMING_FILE_BYTES or (available is not None and 8 * size > available)


def _publish_streaming(mechanism: Mechanism, source: str, output: Path, *, seed: int | None,
                       overwrite: bool, batch_rows: int, sensitive: str | None,
                       qi: str | None, drop_missing: bool, sep: str | None,
                       domains: Mapping[str, Any], observed_domains: bool,
                       non_numeric: str, encoding: str, state_dir: Path | None) -> None:
    """Publish a file batch by batch, with a progress bar on stderr, and summarise it."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    from ppdp.io.scan import scan_table
    from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
    from ppdp.progress import progress_bar

    with progress_bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn()) as bar:
        task = bar.add_task(f"reading the domains of {source}", total=None)
        table = scan_table(source, sensitive=sensitive, quasi_identifiers=qi, sep=sep,
                           missing="drop" if drop_missing else "error", domains=domains,
                           observed_domains=observed_domains, non_numeric=non_numeric,
                           encoding=encoding, batch_rows=batch_rows)
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                bar.update(task, visible=False)
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)

        views = None
        if isinstance(mechanism, AlphaBeta):
            views, state, target = _publish_view(mechanism, table, output, state_dir,
                                                  overwrite=overwrite, seed=seed,
                                                  batch_rows=batch_rows, progress=progress)
        else:
            target = mechanism.publish_source(table, output, random_state=seed,
                                              batch_rows=batch_rows, overwrite=overwrite,
                                              progress=progress)
    _print_saved_summary(mechanism, table, target, seeded=seed is not None)
    if views is not None:
        _print_view(views, state)


def _publish_spark(mechanism: Mechanism, source: str, output: Path, *, seed: int | None,
                   overwrite: bool, sensitive: str | None, qi: str | None,
                   domains: Mapping[str, Any], observed_domains: bool,
                   state_dir: Path | None) -> None:
    """Publish a Parquet file or folder on Spark, saying on which master, and summarise it
    (alpha-beta: the next view, its state kept as in memory)."""
    from ppdp.engines.spark import SparkSource, publish, read_parquet

    root = _state_root(state_dir) if mechanism.name == "alphabeta" else None
    with _on_spark(source) as session:
        Console(stderr=True, highlight=False).print(
            f"publishing on Spark, master {session.sparkContext.master}")
        frame = read_parquet(session, source)
        if root is not None:
            from ppdp.engines.spark.alphabeta import SparkViews

            views = SparkViews(mechanism, SparkSource(  # type: ignore[arg-type]
                frame, sensitive=sensitive, quasi_identifiers=qi, domains=domains,
                observed_domains=observed_domains))
            state, target = _under_view_state(
                views, root, lambda commit: views.publish_to(
                    output, random_state=seed, overwrite=overwrite, before_commit=commit))
            data = views.source
        else:
            release = publish(mechanism, frame, sensitive=sensitive, quasi_identifiers=qi,
                              domains=domains, observed_domains=observed_domains,
                              random_state=seed)
            target = release.save(output, overwrite=overwrite)
            data = release.source
    _print_saved_summary(mechanism, data, target, seeded=seed is not None)
    if root is not None:
        _print_view(views, state)


@contextlib.contextmanager
def _on_spark(parquet: str | None = None) -> Iterator[Any]:
    """The active Spark session, or one started for the work and stopped after; a failure
    inside Spark (a task's Python error, a lost executor) becomes its one line. ``parquet``,
    the input to read, must be a Parquet file or folder."""
    from ppdp.engines.spark import (
        SparkFailedError,
        failure_message,
        require_pyspark,
        spark_session,
    )

    if parquet is not None:
        path = Path(parquet)
        if not (path.is_dir() or path.suffix.lower() == ".parquet"):
            raise ValueError(f"--engine spark reads a Parquet file or a folder of Parquet "
                             f"files; {parquet!r} is not one")
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {parquet}")
    require_pyspark()
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    started = SparkSession.getActiveSession() is None
    try:
        yield spark_session()
    except PySparkException as exc:
        raise SparkFailedError(f"Spark failed: {failure_message(exc)}") from None
    finally:
        active = SparkSession.getActiveSession()
        if started and active is not None:
            active.stop()


def _print_view(views: ViewSequence, state: Path) -> None:
    _out().print(f"view {views.published} of at most v = {views.mechanism.v} of this table "
                 f"(Algorithm 4 after the first); private state kept in {state}")


def _publish_view(mechanism: AlphaBeta, table: Table | Source, output: Path,
                  state_dir: Path | None, *, overwrite: bool, seed: int | None,
                  batch_rows: int | None = None, progress: Progress | None = None
                  ) -> tuple[ViewSequence, Path, Path]:
    """The next view of this table, saved, with its views' state recorded before it appears
    (`_under_view_state`). A table in memory is published whole, a source batch by batch."""
    from ppdp.mechanisms.alphabeta.views import ViewSequence
    from ppdp.table.table import Table

    root = _state_root(state_dir)
    views = ViewSequence(mechanism, table)
    views.distinct(progress)

    def publish(before_commit: Callable[[], object]) -> Path:
        if isinstance(table, Table):
            return views.publish(random_state=seed).save(output, overwrite=overwrite,
                                                          before_commit=before_commit)
        return views.publish_to(output, random_state=seed, batch_rows=batch_rows,
                                overwrite=overwrite, progress=progress,
                                before_commit=before_commit)

    state, target = _under_view_state(views, root, publish)
    return views, state, target


def _state_root(state_dir: Path | None) -> Path:
    """The folder of the private state of alpha-beta views (--state-dir, else one place per
    user), made and checked writable before any work."""
    from ppdp.mechanisms.alphabeta.views import default_state_root

    root = state_dir if state_dir is not None else default_state_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
        writable = os.access(root, os.W_OK | os.X_OK)
    except OSError as exc:
        raise ValueError(f"cannot use {root} for the private state of alpha-beta views: "
                         f"{exc.strerror or exc}; pass --state-dir DIR") from None
    if not writable:
        raise ValueError(f"cannot write the private state of alpha-beta views to {root}; pass "
                         f"--state-dir DIR (a folder you can write and keep private)")
    return root


def _under_view_state(views: Any, root: Path,
                      publish: Callable[[Callable[[], object]], Path]) -> tuple[Path, Path]:
    """Publish the next view of ``views`` (in memory or on Spark) under its table's state:
    the state folder, keyed by the table's fingerprint, is locked for the whole publish so
    that concurrent views are counted, resumed when it exists, and written before the
    release appears (``publish(before_commit)``). The state folder and the release."""
    from ppdp.io.storage import locked
    from ppdp.mechanisms.alphabeta.views import state_directory

    state = state_directory(root, views.fingerprint)
    # A lock file of its own: the state's commit locks the root directory itself.
    lock = root / "alphabeta.lock"
    lock.touch(exist_ok=True)
    with locked(lock):
        if (state / "state.json").is_file():
            views.resume(state)
        target = publish(lambda: views.save_state(state))
    return state, target


def _print_saved_summary(mechanism: Mechanism, table: Table | Source, target: Path, *,
                         seeded: bool) -> None:
    """The summary of a release just written, from its release.json (loading the release
    would read every part again)."""
    from ppdp.release.format import METADATA_FILE

    metadata = json.loads((target / METADATA_FILE).read_text())
    _print_publish_summary(metadata["n_rows"], metadata["parameters"],
                           {column["name"] for column in metadata["schema"]}, mechanism, table,
                           target, seeded=seeded)


def _print_publish_summary(n_rows: int, parameters: Mapping[str, Any], published: set[str],
                           mechanism: Mechanism, table: Table | Source, target: Path, *,
                           seeded: bool) -> None:
    console = _out()
    console.print(Text.assemble(("published ", "bold green"), (mechanism.name, "bold"),
                                f" release of {n_rows} rows to {target}"))
    console.print(f"mechanism:  {escape(mechanism.summary)}")
    console.print(f"parameters: {escape(_parameters_text(parameters))}")
    if table.dropped_rows:
        console.print(f"dropped {table.dropped_rows} rows with missing values")
    if seeded:
        console.print("[yellow]seeded: reproducible, for experiments only[/yellow]")
    columns = RichTable(title="columns")
    columns.add_column("column")
    columns.add_column("role")
    columns.add_column("values", justify="right")
    columns.add_column("published")
    for column in table.schema.columns:
        shown = column.name in published
        columns.add_row(Text(column.name), column.role.value, str(column.size),
                        "yes" if shown else "no (left out)")
    console.print(columns)


# -- count -------------------------------------------------------------------------------------


@app.command()
@_handle_errors
def count(
    source: Annotated[str, typer.Argument(
        help="release directory, CSV or Parquet file, or bundled dataset name")],
    query: Annotated[str, typer.Argument(
        help="condition or SELECT COUNT(*) ... [GROUP BY ...] query")],
    json_output: JsonOutput = False,
    mechanism: Annotated[str | None, typer.Option(
        "--mechanism", "-m", help="on a data file: answer with noise (laplace only)")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="mechanism parameter key=value (repeatable)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=_SEED_HELP)] = None,
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", "-s", help="sensitive column(s) of a data file")] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    estimator: Annotated[str | None, typer.Option(
        "--estimator", help="on a SPLU-Gen release: 'layout' (default, the value-level model) "
                            "or 'paper' (Section 5's two-state reconstruction)")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="with --mechanism laplace on a file: memory (read the whole table), "
                         "streaming (count in passes over batches, never holding the rows) "
                         "or auto (streaming for large files, as publish), or spark (a Parquet "
                         "file or folder, counted by Spark); on a release: spark (count its "
                         "rows with Spark aggregations) or auto")] = "auto",
    batch_rows: Annotated[int, typer.Option(
        "--batch-rows", min=1, help="rows per batch of the streaming engine")] = 1 << 20,
) -> None:
    """Answer a count query: estimated from a release, or exact (or noisy) on data.

    On a release directory the answer is the mechanism's estimate, with its
    standard error and 95 % interval where it has them. On a data file or a
    bundled dataset the answer is the exact count, unless --mechanism laplace
    answers it once with discrete Laplace noise.

    Examples:

      ppdp count adult-splu "age >= 40 AND occupation = 'Sales'"
      ppdp count adult "sex = 'Female'" --json
      ppdp count adult "SELECT COUNT(*) FROM t WHERE age < 30 GROUP BY sex"
      ppdp count adult "occupation = 'Sales'" -m laplace -p epsilon=0.7
    """
    from ppdp.progress import status

    _check_engine(engine, _SPARK_ENGINES)
    with status(f"counting on {source}"):
        answer = _count(source, query, mechanism=mechanism, param=param, seed=seed,
                        sensitive=sensitive, drop_missing=drop_missing, sep=sep,
                        non_numeric=non_numeric, encoding=encoding, estimator=estimator,
                        engine=engine, batch_rows=batch_rows)
    if json_output:
        _echo_json(answer.to_dict())
    else:
        _print_answer(answer)


def _count(source: str, query: str, *, mechanism: str | None, param: Sequence[str] | None,
           seed: int | None, sensitive: str | None, drop_missing: bool, sep: str | None,
           non_numeric: str, encoding: str, estimator: str | None, engine: str,
           batch_rows: int) -> Estimate | GroupedEstimate:
    """The answer of `count`: estimated from a release, or exact (or noisy) on data."""
    path = Path(source)
    if path.is_dir():
        if mechanism is not None or param or seed is not None:
            raise ValueError(f"{source} is a release directory: its mechanism is fixed, so "
                             f"--mechanism, -p and --seed do not apply")
        if engine == "spark":
            return _count_spark(path, query, estimator)
        from ppdp.release.load import load_release

        answer = _count_release(load_release(path), source, query, estimator)
    else:
        if engine == "spark" and mechanism is None:
            raise ValueError("--engine spark counts on a release directory, or on a Parquet "
                             "input with --mechanism laplace; publish a release first "
                             "(ppdp publish ... --engine spark -o DIR)")
        if estimator is not None:
            raise ValueError("--estimator applies to SPLU-Gen releases; on a data file the "
                             "count is exact")
        if mechanism is None and (param or seed is not None):
            raise ValueError("-p and --seed need --mechanism laplace; without it the count "
                             "on a data file is exact")
        if mechanism is not None:
            from ppdp.mechanisms import get_mechanism

            mechanism_class = get_mechanism(mechanism)
            if mechanism_class.name != "laplace":
                raise ValueError(f"on a data file, count answers exactly or with --mechanism "
                                 f"laplace; to estimate with {mechanism!r}, publish a release "
                                 f"first (ppdp publish ... -o DIR) and count on DIR")
            instance = mechanism_class.from_params(_parse_params(param))
        elif engine == "streaming":
            raise ValueError("--engine streaming counts with --mechanism laplace; exact counts "
                             "read the table into memory")
        if mechanism is not None and engine == "spark":
            from ppdp.engines.spark import publish, read_parquet

            with _on_spark(source) as session:
                answer = publish(instance, read_parquet(session, source), sensitive=sensitive,
                                 random_state=seed).count(query)  # type: ignore[attr-defined]
        elif mechanism is not None and _streaming(engine, source):
            from ppdp.io.scan import scan_table

            data = scan_table(source, sensitive=sensitive, sep=sep, non_numeric=non_numeric,
                              missing="drop" if drop_missing else "error",
                              encoding=encoding, batch_rows=batch_rows)
            answer = instance.publish(data, random_state=seed, batch_rows=batch_rows
                                      ).count(query)
        else:
            table = _load_source(source, sensitive=sensitive, drop_missing=drop_missing,
                                 sep=sep, non_numeric=non_numeric, encoding=encoding)
            answer = table.count(query) if mechanism is None else \
                instance.publish(table, random_state=seed).count(query)
    return answer


def _count_release(release: Release, source: str, query: str, estimator: str | None
                   ) -> Estimate | GroupedEstimate:
    """A release's answer to a count query, with the SPLU-Gen estimator asked for, if any."""
    if estimator is not None:
        from ppdp.mechanisms.splu.release import ESTIMATORS, SpluRelease

        if not isinstance(release, SpluRelease):
            raise ValueError(f"--estimator applies to SPLU-Gen releases; {source} is a "
                             f"{release.mechanism} release")
        if estimator not in ESTIMATORS:
            raise ValueError(f"--estimator must be one of {', '.join(ESTIMATORS)}, got "
                             f"{estimator!r}")
        release.estimator = estimator
    return release.count(query)


def _count_spark(path: Path, query: str, estimator: str | None) -> Estimate | GroupedEstimate:
    """A release's answer to a count query, its rows counted by Spark aggregations (on the
    active session, or on one started for it and stopped after)."""
    from ppdp.release.load import load_release

    with _on_spark():
        return _count_release(load_release(path, engine="spark"), str(path), query, estimator)


def _print_answer(answer: Estimate | GroupedEstimate) -> None:
    from ppdp.estimate import Estimate

    console = _out()
    if isinstance(answer, Estimate):
        stderr = "not available" if answer.stderr is None else _number(answer.stderr)
        interval = "not available" if answer.ci95 is None else _interval(answer.ci95)
        console.print(f"estimate      {_number(answer.value)}")
        console.print(f"stderr        {stderr}")
        console.print(f"95% interval  {interval}")
        return
    table = RichTable()
    for column in answer.columns:
        table.add_column(column)
    table.add_column("estimate", justify="right")
    table.add_column("stderr", justify="right")
    table.add_column("95% interval", justify="right")
    for key, estimate in answer.groups:
        table.add_row(*(Text(str(key[c])) for c in answer.columns), _number(estimate.value),
                      _number(estimate.stderr), _interval(estimate.ci95))
    console.print(table)
    console.print(f"{len(answer)} groups (groups with a zero estimate are not shown)")


# -- guarantee ---------------------------------------------------------------------------------


@app.command()
@_handle_errors
def guarantee(
    mechanism: Annotated[str, typer.Argument(help="mechanism name (see ppdp mechanisms)")],
    source: Annotated[str | None, typer.Argument(
        help="data file or bundled dataset, for mechanisms whose guarantee depends on the "
             "data (uniform, sdr)")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="parameter key=value (repeatable)")] = None,
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", "-s", help="sensitive column(s) of SOURCE")] = None,
    encoding: Encoding = "utf-8",
    json_output: JsonOutput = False,
) -> None:
    """Show the privacy (and utility) guarantee of a mechanism.

    splu takes gamma, epsilon (default 0.3), a (default 3) and T_E (for the
    utility threshold T_f); anatomy takes l; laplace takes epsilon and
    sensitivity (default 1); dbr takes none. uniform and sdr take rho1, rho2
    and delta (default 0.05), and either a table (SOURCE with --sensitive) or
    the domain size m and row count n; on a table, sdr shows its partition.

    Examples:

      ppdp guarantee splu -p gamma=10 -p epsilon=0.3 -p a=3
      ppdp guarantee splu -p gamma=5 -p epsilon=0.2 -p T_E=0.1 --json
      ppdp guarantee anatomy -p l=5
      ppdp guarantee laplace -p epsilon=0.69
      ppdp guarantee uniform -p rho1=0.077 -p rho2=0.2 -p m=14 -p n=30162
      ppdp guarantee sdr adult -s occupation -p rho1=0.077 -p rho2=0.2
    """
    from ppdp.mechanisms import get_mechanism

    mechanism_class = get_mechanism(mechanism)
    values = _parse_params(param)
    extra = {p.name: p for p in mechanism_class.guarantee_parameters}
    known = [p.name for p in mechanism_class.parameters] + list(extra)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"guarantee {mechanism_class.name} has no parameter {unknown[0]!r}; "
                         f"its parameters: {', '.join(known) or 'none'}")
    options = {name: p.convert(values.pop(name)) for name, p in extra.items() if name in values}
    instance = mechanism_class.from_params(values)
    if source is not None:
        if not mechanism_class.guarantee_uses_table:
            raise ValueError(f"the guarantee of {mechanism_class.name} does not depend on the "
                             f"data; leave out {source!r}")
        clash = sorted({"m", "n"} & set(options))
        if clash:
            raise ValueError(f"-p {clash[0]} comes from the table when SOURCE is given; leave "
                             f"it out")
        from ppdp.progress import status

        with status(f"reading {source} and computing the guarantee"):
            table = _load_source(source, sensitive=sensitive, encoding=encoding)
            result = instance.guarantee(table, **options)  # type: ignore[call-arg]
    else:
        if sensitive is not None:
            raise ValueError("--sensitive applies to a SOURCE table; none was given")
        result = instance.guarantee(**options)
    data = result.to_dict()
    if json_output:
        _echo_json(data)
    elif mechanism_class.name == "splu":
        _print_splu_guarantee(data)
    else:
        _print_guarantee(data)


def _print_guarantee(data: Mapping[str, Any], title: str = "guarantee") -> None:
    console = _out()
    table = RichTable(title=f"{title} of {data.get('mechanism', '')}")
    table.add_column("quantity")
    table.add_column("value")
    for key, value in data.items():
        if key in ("mechanism", "statement", "subtable_details"):
            continue
        shown = _number(value) if isinstance(value, float | None) else str(value)
        table.add_row(key, Text(shown))
    console.print(table)
    if data.get("subtable_details"):
        parts = RichTable(title="sub-tables")
        names = list(data["subtable_details"][0])
        for name in names:
            parts.add_column(name, justify="right")
        for row in data["subtable_details"]:
            parts.add_row(*(_number(row[n]) if isinstance(row[n], float) else str(row[n])
                            for n in names))
        console.print(parts)
    if data.get("statement"):
        console.print(Text(str(data["statement"])))


def _print_splu_guarantee(data: Mapping[str, Any]) -> None:
    console = _out()
    table = RichTable(title=f"SPLU-Gen guarantee, gamma = {data['gamma']}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("meaning")
    epsilon = data["epsilon"]
    table.add_row("epsilon", _number(epsilon), "relative error of interest")
    if data["T_P"] is not None:
        table.add_row("T_P", f"{data['T_P']:.4f}",
                      f"every count 1..{data['a']} is estimated with relative error above "
                      f"{_number(epsilon)} with at least this probability (Lemma 2, Thm 4)")
    if data["T_f"] is not None:
        table.add_row("T_f", f"{data['T_f']:.4g}",
                      f"counts >= T_f have relative error >= {_number(epsilon)} with "
                      f"probability <= T_E = {_number(data['T_E'])}: the threshold that holds "
                      f"(Chebyshev on the binomial count)")
        table.add_row("T_f_as_printed", f"{data['T_f_as_printed']:.4g}",
                      "Lemma 1 as printed in the paper; its proof divides by n twice, so it "
                      "does not hold")
    console.print(table)
    if data["T_f"] is None:
        console.print("T_f (large sum utility, Lemma 1) needs T_E: pass -p T_E=0.1, say")
    if data["privacy_by_count"]:
        counts = RichTable(title=f"Pr(relative error > {_number(epsilon)}) per true count")
        counts.add_column("true count f", justify="right")
        counts.add_column("probability", justify="right")
        for item in data["privacy_by_count"]:
            counts.add_row(str(item["f"]), f"{item['probability']:.4f}")
        console.print(counts)


# -- risk --------------------------------------------------------------------------------------


@app.command()
@_handle_errors
def risk(
    release_dir: Annotated[Path, typer.Argument(help="release directory (ambiguity or "
                                                     "mondrian)")],
    source: Annotated[str | None, typer.Argument(
        help="ambiguity: the source table, for the risk of every source tuple")] = None,
    per_tuple: Annotated[Path | None, typer.Option(
        "--per-tuple", help="write every source row's measures to this CSV or Parquet "
                            "file")] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    json_output: JsonOutput = False,
) -> None:
    """Measure what a release discloses.

    Ambiguity: the presence probability of the tuples each group covers
    (Theorem 5.1) and every association probability (Theorem 5.2), against
    the release's alpha and beta. With SOURCE, also every source tuple's
    measures through all the groups that cover it (--per-tuple writes them).
    Mondrian: k, distinct l, the normalized certainty penalty (NCP), and
    each class's presence |G| / prod |cover| (Theorem 5.1) and largest
    association c / |G| (Theorem 5.2), their maxima and the share of
    classes whose presence is 1.

    Examples:

      ppdp risk amb
      ppdp risk amb adult --per-tuple amb-risk.csv
      ppdp risk gen --json
    """
    from ppdp.io.read import write_table
    from ppdp.progress import status
    from ppdp.release.load import load_release
    from ppdp.risk import release_risk, tuple_risk

    with status(f"measuring the risk of {release_dir}"):
        release = load_release(release_dir)
        data = release_risk(release)
        if source is not None or per_tuple is not None:
            if data["mechanism"] != "ambiguity" or source is None:
                raise ValueError("SOURCE (and --per-tuple) apply to ambiguity releases, and "
                                 "--per-tuple needs SOURCE")
            table = _load_source(source, drop_missing=drop_missing, sep=sep,
                                 non_numeric=non_numeric, encoding=encoding)
            rows = tuple_risk(release, table)  # type: ignore[arg-type]
            presence = rows.column("presence").to_numpy()
            presence_any = rows.column("presence_any").to_numpy()
            covering = rows.column("covering_groups").to_numpy()
            data.update({
                "source_rows": table.n_rows,
                "uncovered_rows": int((covering == 0).sum()),
                "covering_groups_mean": float(covering.mean()),
                "tuple_presence_max": float(presence.max()),
                "tuple_presence_any_mean": float(presence_any.mean()),
                "tuple_presence_any_max": float(presence_any.max()),
                "tuple_association_max": float(rows.column("association").to_numpy().max()),
            })
            if per_tuple is not None:
                write_table(rows, per_tuple)
    if json_output:
        _echo_json(data)
        return
    _print_guarantee(data, title="measured risk")
    if per_tuple is not None:
        _out().print(Text(f"wrote {per_tuple}"))


# -- attack ------------------------------------------------------------------------------------


@app.command()
@_handle_errors
def attack(
    release_dir: Annotated[Path, typer.Argument(help="release directory")],
    source: Annotated[str, typer.Argument(
        help="the table the release was published from: a CSV/Parquet file or a bundled "
             "dataset name")],
    attacks: Annotated[list[str] | None, typer.Option(
        "--attack", "-a", help="an attack to run (repeatable; default: every one that "
                               "applies): inference, definetti, small_counts, posterior, "
                               "presence, linkage")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="directory for attacks.csv, attack-risk.png and "
                               "individuals.csv (the individuals most at risk: for the "
                               "custodian only; never a release directory)")] = None,
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", "-s", help="the attribute to infer (default: the release's sensitive "
                                  "column; alphabeta and frapp views need it)")] = None,
    top: Annotated[int, typer.Option(
        "--top", help="individuals written to individuals.csv, most at risk first (0: "
                      "all)")] = 1000,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="seed of the split into targets and population and of the rows drawn "
                       "from group releases (default: OS entropy)")] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    non_numeric: NonNumeric = "error",
    json_output: JsonOutput = False,
) -> None:
    """Run the known attacks on a release against the table it was published from.

    Each attack's success is printed beside the baseline (what an adversary
    reaches without the release) and the bound the mechanism states:
    inference (a classifier learnt from the release), definetti (Kifer
    2009; Anatomy, ambiguity), small_counts (SPLU-Gen, against T_P),
    posterior (uniform, sdr: against rho2), presence and repeated
    (alphabeta, frapp: against gamma), linkage and singling_out (Mondrian,
    ambiguity). With -o, the individuals most at risk go to
    individuals.csv: that file is for the custodian only, and -o may not be
    a release directory.

    Examples:

      ppdp attack adult-anatomy adult
      ppdp attack adult-uniform adult --attack posterior --json
      ppdp attack view1 adult --sensitive occupation -o attack-view1
    """
    from ppdp.attack import run_attacks
    from ppdp.attack.report import refuse_release_directory
    from ppdp.release.load import load_release

    if top < 0:
        raise ValueError(f"--top takes a number of individuals >= 0 (0: all), got {top}")
    if output is not None:
        refuse_release_directory(output)
    release = load_release(release_dir)
    table = _load_source(source, sensitive=sensitive, drop_missing=drop_missing, sep=sep,
                         non_numeric=non_numeric)
    report = run_attacks(release, table, attacks=attacks, sensitive=sensitive,
                         random_state=seed)
    files = report.write(output, top=top or None) if output is not None else []
    if json_output:
        _echo_json({"release": str(release_dir), **report.to_dict(),
                    "files": [str(path) for path in files]})
        return
    console = _out()
    table_view = RichTable(title=f"attacks on {release_dir} ({report.mechanism}, "
                                 f"{_parameters_text(_scalars(report.parameters))})")
    for name, justify in (("attack", "left"), ("success", "right"), ("baseline", "right"),
                          ("bound", "right"), ("seconds", "right"), ("measure", "left")):
        table_view.add_column(name, justify=justify, no_wrap=name == "attack")
    for result in report.results:
        above = result.bound is not None and result.success > result.bound
        table_view.add_row(result.attack, Text(_number(result.success),
                                               style="bold red" if above else ""),
                           _number(result.baseline), _number(result.bound),
                           f"{result.seconds:.2f}", Text(result.measure))
    console.print(table_view)
    for result in report.results:
        console.print(Text(f"{result.attack}: adversary {result.adversary}; source "
                           f"{result.source}", style="dim"))
    for name, reason in report.not_applicable.items():
        console.print(Text(f"{name}: not applicable: {reason}", style="yellow"))
    if not report.results:
        console.print(Text("no attack applies to this release", style="yellow"))
    for path in files:
        console.print(Text(f"wrote {path}"))


def _scalars(values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that are single values (lists such as sdr's gamma_i left out)."""
    return {k: v for k, v in values.items() if not isinstance(v, list | dict)}


# -- evaluate ----------------------------------------------------------------------------------


@app.command()
@_handle_errors
def evaluate(
    names: Annotated[list[str] | None, typer.Argument(
        help="experiments to run (see below); none with --all runs every one")] = None,
    all_experiments: Annotated[bool, typer.Option("--all", help="run every experiment")] = False,
    output: Annotated[Path, typer.Option("--output", "-o", help="report directory")] = Path(
        "evaluation"),
    quick: Annotated[bool, typer.Option(
        "--quick", help="small pools and few publications: every experiment in seconds")] = False,
    data: Annotated[Path | None, typer.Option(
        "--data", help="folder with the fars dataset and its hierarchies and more/ with "
                       "MEPS (default: shared/datasets beside the repository); Adult and its "
                       "hierarchies are bundled")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=_SEED_HELP)] = None,
) -> None:
    """Reproduce the papers' experiments and write a report.

    Writes report.html (self-contained, figures embedded), claims.csv (paper
    says / we measured / verdict) and one CSV of raw results per
    experiment. Experiments: splu (SPLU-Gen Section 6), sdr (small domain
    randomization Section 6), alphabeta (alpha-beta Section 5), ambiguity
    (ambiguity Section 8.3), attack (attack success against each
    mechanism's privacy parameter on Adult, see ppdp attack).

    Examples:

      ppdp evaluate --all -o evaluation
      ppdp evaluate sdr ambiguity --quick -o quick-look
    """
    from ppdp.evaluate.experiments import EXPERIMENTS, run_experiment
    from ppdp.evaluate.report import write_report
    from ppdp.progress import progress_bar

    chosen = list(EXPERIMENTS) if all_experiments else list(names or [])
    if not chosen:
        raise ValueError(f"name experiments to run or pass --all; experiments: "
                         f"{', '.join(EXPERIMENTS)}")
    unknown = [n for n in chosen if n not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment {unknown[0]!r}; experiments: "
                         f"{', '.join(EXPERIMENTS)}")
    results = []
    # One step per experiment, each experiment's own steps as the description.
    with progress_bar() as progress:
        overall = progress.add_task("experiments", total=len(chosen))
        for name in chosen:
            progress.update(overall, description=f"{name}: starting")
            results.append(run_experiment(
                name, quick=quick, random_state=seed, data=data,
                progress=lambda message: progress.update(overall, description=message)))
            progress.advance(overall)
        progress.update(overall, description=f"writing the report to {output}")
        files = write_report(results, output)
    console = _out()
    table = RichTable(title="paper says / we measured")
    table.add_column("experiment", no_wrap=True)
    table.add_column("paper says")
    table.add_column("we measured")
    table.add_column("verdict")
    for result in results:
        for claim in result.claims:
            table.add_row(result.name, Text(claim.paper), Text(claim.measured),
                          Text(claim.verdict, style="bold" if claim.holds is False else ""))
    console.print(table)
    for result in results:
        for note in result.notes:
            console.print(Text(f"{result.name}: {note}", style="yellow"))
    for path in files:
        console.print(Text(f"wrote {path}"))


# -- compare -----------------------------------------------------------------------------------


@app.command()
@_handle_errors
def compare(
    source: Annotated[str, typer.Argument(help="CSV or Parquet file, or a bundled dataset name "
                                               "(adult)")],
    sensitive: Annotated[str, typer.Option("--sensitive", "-s", help="the sensitive column")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="report directory (report.html, results.json); refused when "
                               "it holds files, unless --overwrite")] = None,
    privacy: Annotated[str, typer.Option(
        "--privacy", help="the privacy to meet, stated once: small-count:a=3,eps=0.3[,tp=0.5] "
                          "(no count 1..a recovered within eps with probability above 1 - tp), "
                          "beta=0.2[,alpha=0.1] (association, presence), rho1=1/13,rho2=0.2 "
                          "or k=10,gamma=0.2 (d = k n/m; or d=...,gamma=...)")] = "beta=0.2",
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="file of SQL count queries, one per line or separated by ';' "
                          "(default: generated pools of small and large counts)")] = None,
    quick: Annotated[bool, typer.Option(
        "--quick", help="3 publications per mechanism and pools of 200 queries (default 5 "
                        "and 1,000)")] = False,
    runs: Annotated[int | None, typer.Option(
        "--runs", min=1, help="publications per mechanism")] = None,
    advice_only: Annotated[bool, typer.Option(
        "--advice-only", help="only print each mechanism's parameters for the target (or why "
                              "none), with the predicted error; publish nothing")] = False,
    seed: Annotated[int | None, typer.Option("--seed", help=_SEED_HELP)] = None,
    qi: Annotated[str | None, typer.Option(
        "--qi", help="quasi-identifier columns, comma-separated (default: every "
                     "non-sensitive column)")] = None,
    hierarchies: Annotated[str | None, typer.Option(
        "--hierarchies", help="folder of ARX hierarchy files for Mondrian, or 'adult' for the "
                              "bundled Adult hierarchies")] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="write into a directory that holds files (report.html and "
                            "results.json are replaced, nothing else is touched)")] = False,
) -> None:
    """Compare every mechanism at one privacy level on your table and queries.

    Each mechanism is configured to meet the privacy stated by --privacy
    (or the reason it cannot is given), published a few times, and asked
    the queries of --queries (or generated pools of small and large counts
    on the table's columns). The report gives each one's error by true
    count with 95 % intervals across publications, its measured privacy,
    publishing time and release size, the papers' predicted error next to
    the measured one, and a recommendation: the lowest error among the
    mechanisms whose measured privacy meets the target.

    Examples:

      ppdp compare adult -s occupation --privacy rho1=1/13,rho2=0.2 --quick -o cmp
      ppdp compare visits.csv -s disease --queries my-queries.sql --privacy beta=0.25 -o cmp
      ppdp compare adult -s occupation --privacy small-count:a=3,eps=0.3,tp=0.6 --advice-only
    """
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    from ppdp.evaluate.advice import advise, parse_privacy
    from ppdp.evaluate.compare import compare as run_compare
    from ppdp.evaluate.compare import read_queries
    from ppdp.evaluate.compare_report import publish_command
    from ppdp.progress import progress_bar

    target = parse_privacy(privacy)
    if not advice_only:
        if output is None:
            raise ValueError("-o DIR is needed for the report (or pass --advice-only)")
        if output.exists() and (not output.is_dir() or (any(output.iterdir())
                                                        and not overwrite)):
            raise FileExistsError(f"{output} already exists and is not an empty directory; "
                                  f"choose another or pass --overwrite")
    asked = read_queries(queries) if queries is not None else None
    table = _load_source(source, sensitive=sensitive, qi=qi, drop_missing=drop_missing,
                         sep=sep, non_numeric=non_numeric, encoding=encoding)
    generalizations = None
    if hierarchies is not None:
        from ppdp.data.hierarchy import read_hierarchies

        generalizations = {name: tree for name, tree in read_hierarchies(hierarchies).items()
                           if name in table.schema.quasi_identifiers}
    console = _out()
    if advice_only:
        listing = RichTable(title=f"parameters for {target.text()}")
        for heading in ("mechanism", "parameters", "how chosen, or why not", "predicted error"):
            listing.add_column(heading)
        for item in advise(table.declare_observed_domains(warn=False), target):
            bound = item.predicted
            listing.add_row(item.mechanism, _parameters_text(item.parameters or {}),
                            Text(item.reason), Text("-" if bound is None else
                                                    f"{bound.source}: {bound.note}"))
        console.print(listing)
        return
    with progress_bar(TextColumn("{task.description}"), BarColumn(),
                      MofNCompleteColumn()) as bar:
        task = bar.add_task("compare", total=None)
        result = run_compare(table, privacy=target, queries=asked, runs=runs, quick=quick,
                             random_state=seed, hierarchies=generalizations,
                             progress=lambda what, done, total: bar.update(
                                 task, description=what, completed=done, total=total))
    files = result.write(output)  # type: ignore[arg-type]
    summary = RichTable(title=f"{table.n_rows:,} rows, {target.text()}: error on "
                              f"{result.error_scope}")
    for heading in ("mechanism", "parameters", "error [95 % interval]", "meets target",
                    "publish s", "release MB"):
        summary.add_column(heading)
    for item in result.mechanisms:
        if item.status != "compared":
            continue
        low, high = item.error_interval
        interval = "" if not math.isfinite(low) else f" [{low:.3g}, {high:.3g}]"
        summary.add_row(item.name, _parameters_text(item.advice.parameters or {}),
                        f"{item.error:.3g}{interval}", "yes" if item.meets else "no",
                        f"{item.publish_seconds:.3f}", f"{(item.release_bytes or 0) / 1e6:.2f}")
    console.print(summary)
    for item in result.mechanisms:
        if item.status == "infeasible":
            console.print(Text(f"{item.name} (infeasible): {item.note}", style="yellow"))
    ineligible = [item.name for item in result.mechanisms if item.status == "not eligible"]
    if ineligible:
        console.print(Text(f"no parameter meets {target.text()}: {', '.join(ineligible)} "
                           f"(why: report.html, or --advice-only)", style="yellow"))
    if result.recommendation is None:
        console.print(Text(result.recommendation_reason, style="bold red"))
    else:
        console.print(Text.assemble(("recommended: ", "bold green"),
                                    (result.recommendation.mechanism, "bold"),
                                    f" ({result.recommendation.reason})"))
        console.print(Text(f"  {publish_command(result, source)}"))
    if seed is not None:
        console.print("[yellow]seeded: reproducible, for experiments only[/yellow]")
    for path in files:
        console.print(Text(f"wrote {path}"))


# -- mechanisms --------------------------------------------------------------------------------


@app.command()
@_handle_errors
def mechanisms() -> None:
    """List the registered mechanisms with their parameters.

    Example:

      ppdp mechanisms
    """
    from ppdp.mechanisms.base import all_mechanisms
    from ppdp.mechanisms.parameters import REQUIRED

    table = RichTable(title="mechanisms")
    table.add_column("name", style="bold")
    table.add_column("summary")
    table.add_column("parameters")
    for name, cls in all_mechanisms().items():
        lines = []
        for p in cls.parameters:
            default = "required" if p.default is REQUIRED else f"default {p.default}"
            lines.append(f"{p.name} ({p.kind.__name__}, {default}): {p.help}")
        table.add_row(name, Text(cls.summary), Text("\n".join(lines) or "none"))
    _out().print(table)


# -- demo --------------------------------------------------------------------------------------


@app.command()
@_handle_errors
def demo(
    output: Annotated[Path, typer.Option("--output", "-o",
                                         help="directory for results.csv, results.json and "
                                              "errors.png")] = Path("demo-output"),
    gamma: Annotated[int, typer.Option("--gamma", help="SPLU-Gen gamma and Anatomy l")] = 5,
    rho1: Annotated[float, typer.Option(
        "--rho1", help="prior bound rho1 of uniform and sdr (default 1/13)")] = 1 / 13,
    rho2: Annotated[float | None, typer.Option(
        "--rho2", help="posterior bound rho2 of uniform and sdr (default 1/gamma)")] = None,
    size: Annotated[int, typer.Option("--size", help="queries per pool")] = 5000,
    seed: Annotated[int | None, typer.Option("--seed", help=_SEED_HELP)] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace the output of an earlier demo (only a directory that "
                            "holds the demo's files and nothing else)")] = False,
) -> None:
    """Run the SPLU-Gen paper's comparison (Section 6) on the bundled Adult table.

    Builds a small-count pool (true counts 1..10) and a large-count pool
    (selectivity 0.5-5 %), publishes Adult (sensitive: occupation) with
    SPLU-Gen, Anatomy, DBR, Laplace counts (epsilon = ln 2, ln 3), uniform
    perturbation and small domain randomization (sdr) at (rho1, rho2), and
    reports average relative errors, timings and how often the 95 %
    intervals cover the true counts. The output directory also gets the
    evaluation report of this run (report.html, claims.csv, splu.csv). All
    files appear at once; a directory that exists and is not empty is
    refused before the run, unless --overwrite replaces an earlier demo's.

    Examples:

      ppdp demo
      ppdp demo -o demo-output --gamma 5 --size 5000 --seed 1 --overwrite
      ppdp demo --rho1 0.14 --rho2 0.33
    """
    from ppdp.evaluate.demo import run_demo

    result = run_demo(output, gamma=gamma, rho1=rho1, rho2=rho2, size=size, random_state=seed,
                      overwrite=overwrite, progress=True)
    console = _out()
    table = RichTable(
        title=f"Adult (N = {result.n_rows}, sensitive occupation), gamma = l = {result.gamma}, "
              f"(rho1, rho2) = ({result.rho1:.3g}, {result.rho2:.3g})")
    table.add_column("mechanism", no_wrap=True)
    table.add_column("ARE\nsmall", justify="right")
    table.add_column("ARE\nlarge", justify="right")
    table.add_column("publish\ns", justify="right")
    table.add_column("estimate\ns", justify="right")
    table.add_column("95% CI\ncoverage", justify="right")
    for row in result.rows:
        table.add_row(Text(row.mechanism), f"{row.small_error:.3f}", f"{row.large_error:.4f}",
                      f"{row.publish_seconds:.3f}", f"{row.estimate_seconds:.2f}",
                      "-" if row.coverage is None else f"{row.coverage:.3f}")
    console.print(table)
    console.print(f"ARE: average relative error |true - estimate| / true over a pool; small: "
                  f"true counts 1..10 ({result.n_small} queries); large: selectivity 0.5-5 % "
                  f"({result.n_large} queries). Laplace: sensitivity 1. Coverage: share of "
                  f"queries whose 95 % interval holds the true count (-: no intervals).")
    for note in result.notes:
        console.print(Text(f"note: {note}", style="yellow"))
    for path in result.files:
        console.print(Text(f"wrote {path}"))


if __name__ == "__main__":
    main()
