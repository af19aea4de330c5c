"""``ppdp count``: a count query answered from a release (estimated) or on data (exact, or
with Laplace noise)."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import (
    SEED_HELP,
    DropMissing,
    Encoding,
    JsonOutput,
    Names,
    NoHeader,
    NonNumeric,
    Separator,
    Workers,
    check_engine,
    parse_params,
    reading,
)
from ppdp.cli._output import echo_json, interval, number, out, printable

if TYPE_CHECKING:
    from ppdp.estimate import Estimate, GroupedEstimate
    from ppdp.mechanisms.base import Mechanism
    from ppdp.release.base import Release


@handle_errors
def count(
    source: Annotated[str, typer.Argument(
        help="release directory, CSV or Parquet file, or bundled dataset name")],
    query: Annotated[str, typer.Argument(
        help="condition or SELECT COUNT(*) ... [GROUP BY ...] query")],
    json_output: JsonOutput = False,
    workers: Workers = None,
    mechanism: Annotated[str | None, typer.Option(
        "--mechanism", "-m", help="on a data file: answer with noise (laplace only)")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="mechanism parameter key=value (repeatable)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=SEED_HELP)] = None,
    sensitive: Annotated[str | None, typer.Option(
        "--sensitive", "-s", help="sensitive column(s) of a data file")] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    names: Names = None,
    no_header: NoHeader = False,
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
    # Imported here, not at start-up: only a running command needs it.
    from ppdp.progress import status

    check_engine(engine)
    with status(f"counting on {source}"):
        answer = _count(source, query, mechanism=mechanism, param=param, seed=seed,
                        estimator=estimator, engine=engine, batch_rows=batch_rows,
                        options=reading(sensitive=sensitive, drop_missing=drop_missing,
                                        sep=sep, non_numeric=non_numeric, encoding=encoding,
                                        source=source, names=names, no_header=no_header))
    if json_output:
        echo_json(answer.to_dict())
    else:
        _print_answer(answer)


_EXACT_REFUSALS = {
    "spark": "--engine spark counts on a release directory, or on a Parquet input with "
             "--mechanism laplace; publish a release first (ppdp publish ... --engine spark "
             "-o DIR)",
}
"""Refusals of an exact count on a data file that say more than that the engine needs
--mechanism laplace (`_count`): Spark counts on a release too."""


def _count(source: str, query: str, *, mechanism: str | None, param: Sequence[str] | None,
           seed: int | None, estimator: str | None, engine: str, batch_rows: int,
           options: dict[str, Any]) -> "Estimate | GroupedEstimate":
    """The answer of `count`: estimated from a release, or exact (or noisy) on data read with
    ``options`` (`reading`'s)."""
    path = Path(source)
    if path.is_dir():
        if mechanism is not None or param or seed is not None:
            raise ValueError(f"{source} is a release directory: its mechanism is fixed, so "
                             f"--mechanism, -p and --seed do not apply")
        return _count_release(path, source, query, estimator, engine)
    if mechanism is None and engine in _EXACT_REFUSALS:
        raise ValueError(_EXACT_REFUSALS[engine])
    if estimator is not None:
        raise ValueError("--estimator applies to SPLU-Gen releases; on a data file the "
                         "count is exact")
    if mechanism is None and (param or seed is not None):
        raise ValueError("-p and --seed need --mechanism laplace; without it the count "
                         "on a data file is exact")
    if mechanism is None and engine not in ("auto", "memory"):
        raise ValueError(f"--engine {engine} counts with --mechanism laplace; exact counts "
                         f"read the table into memory")
    instance = None if mechanism is None else _laplace(mechanism, param)
    return _count_data(source, query, instance, seed=seed, engine=engine,
                       batch_rows=batch_rows, options=options)


def _laplace(mechanism: str, param: Sequence[str] | None) -> "Mechanism":
    """The mechanism of --mechanism with its -p parameters: laplace, the one that answers on
    data (the others publish a release to count on)."""
    # Imported here, not at start-up: the mechanisms load numpy.
    from ppdp.mechanisms import get_mechanism

    mechanism_class = get_mechanism(mechanism)
    if mechanism_class.name != "laplace":
        raise ValueError(f"on a data file, count answers exactly or with --mechanism "
                         f"laplace; to estimate with {mechanism!r}, publish a release "
                         f"first (ppdp publish ... -o DIR) and count on DIR")
    return mechanism_class.from_params(parse_params(param))


def _count_data(source: str, query: str, instance: "Mechanism | None", *, seed: int | None,
                engine: str, batch_rows: int, options: dict[str, Any]
                ) -> "Estimate | GroupedEstimate":
    """The exact answer on a data file or bundled dataset, or the answer of ``instance``'s
    session over it, on the engine chosen for it."""
    # Imported here, not at start-up: the engines load numpy and pyarrow.
    from ppdp.plan.engine import choose_engine, get_engine

    # Exact counts are the table's own, so the table is read into memory.
    runner = get_engine("memory" if instance is None else choose_engine(engine, source))
    read = runner.read_options(source, **options, batch_rows=batch_rows)
    with runner.command():
        data = runner.open(source, **read)
        if instance is None:
            answer: Estimate | GroupedEstimate = data.count(query)
            return answer
        run = {"batch_rows": batch_rows} if runner.batched else {}
        answer = instance.publish(data, engine=runner.name, random_state=seed,
                                  **run).count(query)
        return answer


def _count_release(path: Path, source: str, query: str, estimator: str | None, engine: str
                   ) -> "Estimate | GroupedEstimate":
    """A release's answer to a count query: counted where --engine says when the engine works
    elsewhere (Spark: in its session, started for the count and stopped after); in this
    process as `load_release` chooses, since --engine memory and streaming say how a data
    file is read."""
    # Imported here, not at start-up: releases load numpy and pyarrow.
    from ppdp.plan.engine import get_engine
    from ppdp.release.load import load_release

    held = contextlib.nullcontext() if engine == "auto" else get_engine(engine).command()
    with held as where:
        release = load_release(path, engine="auto" if where is None else engine)
        return _estimate(release, source, query, estimator)


def _estimate(release: "Release", source: str, query: str, estimator: str | None
              ) -> "Estimate | GroupedEstimate":
    """A release's answer to a count query, with the SPLU-Gen estimator asked for, if any."""
    if estimator is not None:
        # Imported here, not at start-up: a release's estimators load numpy.
        from ppdp.mechanisms.splu.release import ESTIMATORS, SpluRelease

        if not isinstance(release, SpluRelease):
            raise ValueError(f"--estimator applies to SPLU-Gen releases; {source} is a "
                             f"{release.mechanism} release")
        if estimator not in ESTIMATORS:
            raise ValueError(f"--estimator must be one of {', '.join(ESTIMATORS)}, got "
                             f"{estimator!r}")
        release.estimator = estimator
    return release.count(query)


def _print_answer(answer: "Estimate | GroupedEstimate") -> None:
    # Imported here, not at start-up: estimates load numpy.
    from ppdp.estimate import Estimate

    console = out()
    if isinstance(answer, Estimate):
        stderr = "not available" if answer.stderr is None else number(answer.stderr)
        ci95 = "not available" if answer.ci95 is None else interval(answer.ci95)
        console.print(f"estimate      {number(answer.value)}")
        console.print(f"stderr        {stderr}")
        console.print(f"95% interval  {ci95}")
        if not answer.converged:
            console.print("converged     no: the reconstruction stopped at its iteration limit")
        return
    table = RichTable()
    for column in answer.columns:
        table.add_column(Text(printable(column)))
    table.add_column("estimate", justify="right")
    table.add_column("stderr", justify="right")
    table.add_column("95% interval", justify="right")
    for key, estimate in answer.groups:
        table.add_row(*(Text(printable(str(key[c]))) for c in answer.columns),
                      number(estimate.value),
                      number(estimate.stderr), interval(estimate.ci95))
    console.print(table)
    console.print(f"{len(answer)} groups (groups with a zero estimate are not shown)")
    if not answer.converged:
        console.print("some groups' reconstruction stopped at its iteration limit before "
                      "converging (converged: false in --json)")
