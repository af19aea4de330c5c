"""``ppdp publish``: a table published with a mechanism, on the engine chosen for it, into a
release directory."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

import contextlib
import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import (
    SEED_HELP,
    STREAMING_MB,
    Domain,
    DomainsFile,
    DropMissing,
    Encoding,
    Hierarchies,
    JsonOutput,
    Names,
    NoHeader,
    NonNumeric,
    ObservedDomains,
    QuasiIdentifiers,
    QuasiIdentifiersLong,
    Separator,
    Workers,
    check_engine,
    declared_domains,
    parse_params,
    quasi_identifiers,
    reading,
)
from ppdp.cli._output import echo_json, out, parameters_text, printable

if TYPE_CHECKING:
    from ppdp.data.schema import Schema
    from ppdp.mechanisms.base import Mechanism, Progress


@handle_errors
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
    qi: QuasiIdentifiers = None,
    quasi_identifiers_long: QuasiIdentifiersLong = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="mechanism parameter key=value (repeatable)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=SEED_HELP)] = None,
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
    hierarchies: Hierarchies = None,
    domains_file: DomainsFile = None,
    domain: Domain = None,
    observed_domains: ObservedDomains = False,
    names: Names = None,
    no_header: NoHeader = False,
    engine: Annotated[str, typer.Option(
        "--engine", help="memory (read the whole table), streaming (read the file in batches: "
                         "memory bounded whatever its size), auto (streaming for files of "
                         f"{STREAMING_MB} MB or more, or too large for the "
                         "memory available) or spark (a Parquet file or folder on Spark: the "
                         "master of the Spark configuration, else local[*])")] = "auto",
    batch_rows: Annotated[int, typer.Option(
        "--batch-rows", min=1, help="rows per batch of the streaming engine")] = 1 << 20,
    json_output: JsonOutput = False,
    workers: Workers = None,
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
      ppdp publish visits.data --no-header --names age,sex,disease -m dbr -s disease -o rel

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
    # Imported here, not at start-up: the mechanisms and engines load numpy and pyarrow.
    from ppdp.data.hierarchy import read_hierarchies
    from ppdp.errors import ReleaseError
    from ppdp.mechanisms import get_mechanism
    from ppdp.plan.engine import choose_engine, get_engine
    from ppdp.release.target import require_replaceable_release

    mechanism_class = get_mechanism(mechanism)
    instance = mechanism_class.from_params(parse_params(param))
    hierarchy_files = read_hierarchies(hierarchies) if hierarchies is not None else None
    if hierarchy_files is not None and "hierarchies" in inspect.signature(
            type(instance)).parameters:
        # A mechanism that generalizes by hierarchies (Mondrian) takes them as a parameter.
        rebuild = cast("Callable[..., Mechanism]", type(instance))
        instance = rebuild(**instance.parameter_values, hierarchies=hierarchy_files)
    if instance.plan_shape == "session":
        # A mechanism that answers over the private data (laplace) has no release to write:
        # the command line asks for what cannot be (exit code 2), refused before any work.
        raise ValueError(f"{instance.name} answers queries over the private data; there is no "
                         f"data release to write (ppdp count SOURCE QUERY --mechanism "
                         f"{instance.name} -p ...)")
    declared = declared_domains(domains_file, domain, hierarchy_files)
    if os.path.lexists(output):
        if not overwrite:
            raise FileExistsError(f"{output} already exists; choose another directory or pass "
                                  f"--overwrite")
        try:
            require_replaceable_release(output)
        except ReleaseError as exc:
            # The output named is not a release to replace: the command line is wrong.
            raise FileExistsError(str(exc)) from None
    check_engine(engine)
    runner = get_engine(choose_engine(engine, source))
    read = runner.read_options(source, **reading(
        sensitive=sensitive, qi=quasi_identifiers(qi, quasi_identifiers_long),
        drop_missing=drop_missing, sep=sep, domains=declared, observed_domains=observed_domains,
        non_numeric=non_numeric, encoding=encoding, source=source, names=names,
        no_header=no_header), batch_rows=batch_rows)
    root = _state_root(state_dir) if instance.name == "alphabeta" else None
    views: Any = None
    with runner.command() as where, _shown(source, where=where, batched=runner.batched) as shown:
        data = runner.open(source, **read)
        shown.update(f"publishing {data.n_rows:,} rows with {instance.name}")
        run = {"batch_rows": batch_rows, "progress": shown.progress} if runner.batched else {}
        if root is not None:
            views = runner.views(instance, data)
            if runner.batched:
                # The pass over the table's distinct tuples, shown before the view's own.
                views.distinct(shown.progress)
            state, target = _under_view_state(views, root, lambda commit: views.publish_to(
                output, random_state=seed, overwrite=overwrite, before_commit=commit, **run))
        else:
            published = instance.publish(data, engine=runner.name, random_state=seed, **run)
            shown.update(f"writing {output}")
            target = published.save(output, overwrite=overwrite)
    summary = _saved_summary(instance, data, target, seeded=seed is not None)
    if views is not None:
        summary["view"] = {"published": views.published, "at_most": views.mechanism.v,
                           "state": str(state)}
    if json_output:
        echo_json(summary)
        return
    _print_saved_summary(summary)
    if views is not None:
        out().print(f"view {views.published} of at most v = {views.mechanism.v} of this "
                    f"table (Algorithm 4 after the first); private state kept in {state}")


class _Shown:
    """What a publish shows while it runs: ``update`` says which step it is at, ``progress``
    hears how far each pass of an engine that reads in batches has got."""

    def __init__(self, update: Callable[[str], object] = lambda step: None,
                 progress: "Progress | None" = None) -> None:
        self.update = update
        self.progress = progress


@contextlib.contextmanager
def _shown(source: str, *, where: str | None, batched: bool) -> Iterator[_Shown]:
    """What a publish shows on standard error while it runs: where it runs, when that is
    not this process (Spark shows its own progress); a bar per pass of an engine that reads
    in batches; else a status line at each step (reading, publishing, writing)."""
    # Imported here, not at start-up: rich's live display.
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    from ppdp.progress import progress_bar, status

    if where is not None:
        Console(stderr=True, highlight=False).print(f"publishing {where}")
        yield _Shown()
    elif batched:
        with progress_bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeRemainingColumn()) as bar:
            task = bar.add_task(f"reading the domains of {source}", total=None)
            tasks: dict[str, Any] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    bar.update(task, visible=False)
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done)

            yield _Shown(progress=progress)
    else:
        # A transient status line: reading, publishing and writing 10^7 rows take seconds.
        with status(f"reading {source}") as line:
            yield _Shown(update=line.update)


def _state_root(state_dir: Path | None) -> Path:
    """The folder of the private state of alpha-beta views (--state-dir, else one place per
    user), checked writable before any work; made only when a view is published
    (`_under_view_state`), so that a view refused before leaves nothing."""
    # Imported here, not at start-up: the views load numpy.
    from ppdp.mechanisms.alphabeta.views import default_state_root

    root = state_dir if state_dir is not None else default_state_root()
    # The folder, or the nearest folder above it that exists, must be writable.
    existing = root
    while not os.path.lexists(existing) and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"cannot use {root} for the private state of alpha-beta views: "
                         f"{existing} is not a folder; pass --state-dir DIR")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write the private state of alpha-beta views to {root}; pass "
                         f"--state-dir DIR (a folder you can write and keep private)")
    return root


def _under_view_state(views: Any, root: Path,
                      publish: Callable[[Callable[[], object]], Path]) -> tuple[Path, Path]:
    """Publish the next view of ``views`` (of any engine) under its table's state: the state
    folder, keyed by the table's fingerprint, is locked for the whole publish so that
    concurrent views are counted, resumed when it exists, and written before the release
    appears (``publish(before_commit)``); refused while another state holds views of the same
    rows under other columns or domains (`ppdp.mechanisms.alphabeta.same_rows`). The state
    folder and the release."""
    # Imported here, not at start-up: storage and views load numpy.
    from ppdp.io.storage import locked
    from ppdp.mechanisms.alphabeta.same_rows import require_no_other_views
    from ppdp.mechanisms.alphabeta.views import state_directory

    state = state_directory(root, views.fingerprint)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot use {root} for the private state of alpha-beta views: "
                         f"{exc.strerror or exc}; pass --state-dir DIR") from None
    # A lock file of its own: the state's commit locks the root directory itself.
    lock = root / "alphabeta.lock"
    lock.touch(exist_ok=True)
    with locked(lock):
        require_no_other_views(root, state, views.rows)
        if (state / "state.json").is_file():
            views.resume(state)
        target = publish(lambda: views.save_state(state))
    return state, target


class _Read(Protocol):
    """What the summary of a publish shows of the data read: its columns and the rows
    dropped."""

    @property
    def schema(self) -> "Schema": ...

    @property
    def dropped_rows(self) -> int: ...


_LISTED_COLUMNS = 100
"""Most columns the summary of a publish lists, one row each."""


def _saved_summary(mechanism: "Mechanism", data: _Read, target: Path, *,
                   seeded: bool) -> dict[str, Any]:
    """What a publish wrote (``--json`` prints it), from the release's release.json: loading
    the release would read every part again."""
    # Imported here, not at start-up: the release format loads pyarrow.
    import json

    from ppdp.release.format import METADATA_FILE

    metadata = json.loads((target / METADATA_FILE).read_text())
    published = {column["name"] for column in metadata["schema"]}
    return {"release": str(target), "mechanism": mechanism.name,
            "summary": mechanism.summary, "parameters": metadata["parameters"],
            "n_rows": metadata["n_rows"], "dropped_rows": data.dropped_rows, "seeded": seeded,
            "columns": [{"name": column.name, "role": column.role.value,
                         "values": column.size, "published": column.name in published}
                        for column in data.schema.columns]}


def _print_saved_summary(summary: dict[str, Any]) -> None:
    """The summary of a release just written, as text."""
    console = out()
    console.print(Text.assemble(("published ", "bold green"), (summary["mechanism"], "bold"),
                                f" release of {summary['n_rows']} rows to {summary['release']}"))
    console.print(f"mechanism:  {escape(summary['summary'])}")
    console.print(f"parameters: {escape(parameters_text(summary['parameters']))}")
    if summary["dropped_rows"]:
        console.print(f"dropped {summary['dropped_rows']} rows with missing values")
    if summary["seeded"]:
        console.print("[yellow]seeded: reproducible, for experiments only[/yellow]")
    columns = RichTable(title="columns")
    columns.add_column("column")
    columns.add_column("role")
    columns.add_column("values", justify="right")
    columns.add_column("published")
    for column in summary["columns"][:_LISTED_COLUMNS]:
        columns.add_row(Text(printable(column["name"])), column["role"], str(column["values"]),
                        "yes" if column["published"] else "no (left out)")
    console.print(columns)
    rest = summary["columns"][_LISTED_COLUMNS:]
    if rest:
        # A table row costs rich about a millisecond: 100,000 of them took minutes.
        kept = sum(column["published"] for column in rest)
        console.print(f"and {len(rest)} more columns ({kept} published; release.json lists "
                      f"them all)")
