"""``ppdp attack``: the known attacks on a release, against the table it was published
from."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import (
    DropMissing,
    JsonOutput,
    Names,
    NoHeader,
    NonNumeric,
    Separator,
    read_source,
    reading,
    release_domains,
)
from ppdp.cli._output import echo_json, number, out, parameters_text, printable

if TYPE_CHECKING:
    from rich.console import JustifyMethod


@handle_errors
def attack(
    release_dir: Annotated[Path, typer.Argument(help="release directory")],
    source: Annotated[str, typer.Argument(
        help="the table the release was published from: a CSV/Parquet file or a bundled "
             "dataset name")],
    attacks: Annotated[list[str] | None, typer.Option(
        "--attack", "-a", help="an attack to run (repeatable; default: every one that "
                               "applies): @ATTACK_NAMES@")] = None,
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
    names: Names = None,
    no_header: NoHeader = False,
    non_numeric: NonNumeric = "error",
    json_output: JsonOutput = False,
) -> None:
    """Run the known attacks on a release against the table it was published from.

    Each attack's success is printed beside the baseline (what an adversary
    reaches without the release) and the bound the mechanism states. The
    attacks (--attack names one):

    @ATTACKS@

    With -o, the individuals most at risk go to individuals.csv: that file
    is for the custodian only, and -o may not be a release directory.

    Examples:

      ppdp attack adult-anatomy adult
      ppdp attack adult-uniform adult --attack posterior --json
      ppdp attack view1 adult --sensitive occupation -o attack-view1
    """
    # Imported here, not at start-up: the attacks load numpy and scikit-learn.
    from ppdp.attack import run_attacks
    from ppdp.attack.report import refuse_release_directory
    from ppdp.release.load import load_release

    if top < 0:
        raise ValueError(f"--top takes a number of individuals >= 0 (0: all), got {top}")
    if output is not None:
        refuse_release_directory(output)
    release = load_release(release_dir)
    table = read_source(source, **reading(sensitive=sensitive, drop_missing=drop_missing,
                                          sep=sep, non_numeric=non_numeric, source=source,
                                          names=names, no_header=no_header,
                                          domains=release_domains(release.schema)))
    report = run_attacks(release, table, attacks=attacks, sensitive=sensitive,
                         random_state=seed)
    files = report.write(output, top=top or None) if output is not None else []
    if json_output:
        echo_json({"release": str(release_dir), **report.to_dict(),
                    "files": [str(path) for path in files]})
        return
    console = out()
    table_view = RichTable(title=f"attacks on {release_dir} ({report.mechanism}, "
                                 f"{parameters_text(_scalars(report.parameters))})")
    headings: tuple[tuple[str, JustifyMethod], ...] = (
        ("attack", "left"), ("success", "right"), ("baseline", "right"), ("bound", "right"),
        ("seconds", "right"), ("measure", "left"))
    for name, justify in headings:
        table_view.add_column(name, justify=justify, no_wrap=name == "attack")
    for result in report.results:
        above = result.bound is not None and result.success > result.bound
        table_view.add_row(result.attack, Text(number(result.success),
                                               style="bold red" if above else ""),
                           number(result.baseline), number(result.bound),
                           f"{result.seconds:.2f}", Text(printable(result.measure)))
    console.print(table_view)
    for result in report.results:
        console.print(Text(printable(f"{result.attack}: adversary {result.adversary}; source "
                                     f"{result.source}"), style="dim"))
    for name, reason in report.not_applicable.items():
        console.print(Text(printable(f"{name}: not applicable: {reason}"), style="yellow"))
    if not report.results:
        console.print(Text("no attack applies to this release", style="yellow"))
    for path in files:
        console.print(Text(f"wrote {path}"))


def _scalars(values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that are single values (lists such as sdr's gamma_i left out)."""
    return {k: v for k, v in values.items() if not isinstance(v, list | dict)}



def help_lists() -> dict[str, str]:
    """The attacks of the registry, for ``ppdp attack --help``: their names, and one a line
    with what it is and the other results it reports."""
    # Imported here, not at start-up: the attacks load scikit-learn.
    from ppdp.attack.run import attack_list

    attacks = attack_list()
    lines = [f"  {name}: {what}" + (f" Also reports {', '.join(also)}." if also else "")
             for name, what, also in attacks]
    return {"@ATTACK_NAMES@": ", ".join(name for name, _, _ in attacks),
            "@ATTACKS@": "\n".join(lines)}
