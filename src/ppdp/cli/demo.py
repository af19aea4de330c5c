"""``ppdp demo``: the SPLU-Gen paper's comparison on the bundled Adult table."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import SEED_HELP, JsonOutput
from ppdp.cli._output import echo_json, out


@handle_errors
def demo(
    output: Annotated[Path, typer.Option("--output", "-o",
                                         help="directory for results.csv, results.json and "
                                              "errors.png")] = Path("demo-output"),
    gamma: Annotated[int, typer.Option("--gamma", help="SPLU-Gen gamma and Anatomy l")] = 5,
    rho1: Annotated[str, typer.Option(
        "--rho1", help="prior bound rho1 of uniform and sdr: a decimal or a fraction")] = "1/13",
    rho2: Annotated[float | None, typer.Option(
        "--rho2", help="posterior bound rho2 of uniform and sdr (default 1/gamma)")] = None,
    size: Annotated[int, typer.Option("--size", help="queries per pool")] = 5000,
    seed: Annotated[int | None, typer.Option("--seed", help=SEED_HELP)] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace the output of an earlier demo (only a directory that "
                            "holds the demo's files and nothing else)")] = False,
    json_output: JsonOutput = False,
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
    # Imported here, not at start-up: the demo loads every mechanism it compares.
    from ppdp.evaluate.demo import run_demo

    result = run_demo(output, gamma=gamma, rho1=_rho1(rho1), rho2=rho2, size=size,
                      random_state=seed, overwrite=overwrite, progress=True)
    if json_output:
        echo_json({**result.to_dict(), "files": [str(path) for path in result.files]})
        return
    console = out()
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


def _rho1(text: str) -> float:
    """--rho1 as a number: a decimal or a fraction (the default, 1/13)."""
    # Imported here, not at start-up: the mechanisms' package loads numpy.
    from ppdp.mechanisms.parameters import real_number

    try:
        return real_number(text)
    except ValueError:
        raise ValueError(f"--rho1 takes a number or a fraction such as 1/13, got "
                         f"{text!r}") from None
