"""``ppdp evaluate``: the papers' experiments, reproduced into a report."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import SEED_HELP, JsonOutput, Workers
from ppdp.cli._output import echo_json, out


@handle_errors
def evaluate(
    names: Annotated[list[str] | None, typer.Argument(
        help="experiments to run (listed above); none with --all runs every one")] = None,
    all_experiments: Annotated[bool, typer.Option("--all", help="run every experiment")] = False,
    output: Annotated[Path, typer.Option("--output", "-o", help="report directory")] = Path(
        "evaluation"),
    quick: Annotated[bool, typer.Option(
        "--quick", help="small pools and few publications: every experiment in seconds")] = False,
    data: Annotated[Path | None, typer.Option(
        "--data", help="folder with the fars dataset and its hierarchies and more/ with "
                       "MEPS, which sdr, sdr_axes, size and ambiguity need (default: "
                       "../shared/datasets where it exists, as beside a checkout of the "
                       "repository); Adult and its hierarchies are bundled")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=SEED_HELP)] = None,
    json_output: JsonOutput = False,
    workers: Workers = None,
) -> None:
    """Reproduce the papers' experiments and write a report.

    Writes report.html (self-contained, figures embedded), claims.csv (paper
    says / we measured / verdict) and one CSV of raw results per
    experiment. The experiments:

    @EXPERIMENTS@

    Examples:

      ppdp evaluate --all -o evaluation
      ppdp evaluate sdr ambiguity --quick -o quick-look
      ppdp evaluate splu_gamma --quick --json -o quick-look
    """
    # Imported here, not at start-up: the experiments load the mechanisms.
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
    if json_output:
        echo_json({"experiments": [
            {"name": result.name, "title": result.title, "seconds": result.seconds,
             "claims": [{"paper": claim.paper, "measured": claim.measured,
                         "verdict": claim.verdict, "holds": claim.holds}
                        for claim in result.claims],
             "notes": result.notes} for result in results],
            "files": [str(path) for path in files]})
        return
    console = out()
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



def help_lists() -> dict[str, str]:
    """The experiments of the registry, one a line, for ``ppdp evaluate --help``."""
    # Imported here, not at start-up: the registry loads every experiment.
    from ppdp.evaluate.experiments import EXPERIMENTS

    return {"@EXPERIMENTS@": "\n".join(f"  {name}: {what}"
                                        for name, (what, _) in EXPERIMENTS.items())}
