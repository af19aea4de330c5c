"""``ppdp compare``: every mechanism at one privacy level on the user's table and queries."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import (
    SEED_HELP,
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
    declared_domains,
    quasi_identifiers,
    read_source,
    reading,
)
from ppdp.cli._output import echo_json, out, parameters_text, printable


@handle_errors
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
    seed: Annotated[int | None, typer.Option("--seed", help=SEED_HELP)] = None,
    qi: QuasiIdentifiers = None,
    quasi_identifiers_long: QuasiIdentifiersLong = None,
    hierarchies: Hierarchies = None,
    domains_file: DomainsFile = None,
    domain: Domain = None,
    observed_domains: ObservedDomains = False,
    names: Names = None,
    no_header: NoHeader = False,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="write into a directory that holds files (report.html and "
                            "results.json are replaced, nothing else is touched)")] = False,
    json_output: JsonOutput = False,
    workers: Workers = None,
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
      ppdp compare visits.csv -s disease --qi age,sex --quick --json -o cmp
    """
    # Imported here, not at start-up: the comparison loads every mechanism.
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    from ppdp.data.hierarchy import read_hierarchies
    from ppdp.data.schema import Role
    from ppdp.evaluate.advice import advise, parse_privacy
    from ppdp.evaluate.compare import compare as run_compare
    from ppdp.evaluate.compare import read_queries
    from ppdp.evaluate.compare_report import publish_command
    from ppdp.progress import progress_bar

    target = parse_privacy(privacy)
    report = None if advice_only else _report_directory(output, overwrite=overwrite)
    asked = read_queries(queries) if queries is not None else None
    qi = quasi_identifiers(qi, quasi_identifiers_long)
    hierarchy_files = read_hierarchies(hierarchies) if hierarchies is not None else None
    declared = declared_domains(domains_file, domain, hierarchy_files)
    table = read_source(source, **reading(
        sensitive=sensitive, qi=qi, drop_missing=drop_missing, sep=sep, domains=declared,
        non_numeric=non_numeric, encoding=encoding, source=source, names=names,
        no_header=no_header))
    generalizations = None
    if hierarchy_files is not None:
        generalizations = {name: tree for name, tree in hierarchy_files.items()
                           if name in table.schema.quasi_identifiers}
    # What `ppdp publish` needs to read the table as it was read here, and the same domains.
    undeclared = [c.name for c in table.schema.columns
                  if c.role != Role.IGNORED and not c.declared]
    options = _publish_options(
        qi=qi, sep=sep, encoding=encoding, non_numeric=non_numeric, drop_missing=drop_missing,
        names=names, no_header=no_header, hierarchies=hierarchies, domains_file=domains_file,
        domain=domain, observed=observed_domains or bool(undeclared))
    console = out()
    if report is None and json_output:
        echo_json({"privacy": target.text(), "advice": [
            advice.to_dict() for advice in advise(table.declare_observed_domains(warn=False),
                                                  target)]})
        return
    if report is None:
        listing = RichTable(title=f"parameters for {target.text()}")
        for heading in ("mechanism", "parameters", "how chosen, or why not", "predicted error"):
            listing.add_column(heading)
        for advice in advise(table.declare_observed_domains(warn=False), target):
            bound = advice.predicted
            listing.add_row(advice.mechanism, parameters_text(advice.parameters or {}),
                            Text(advice.reason), Text("-" if bound is None else
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
    result.publish_options = tuple(options)
    result.source = source
    files = result.write(report)
    if json_output:
        echo_json({**result.to_dict(),
                   "observed_domains": undeclared, "files": [str(path) for path in files]})
        return
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
        summary.add_row(item.name, parameters_text(item.advice.parameters or {}),
                        f"{item.error:.3g}{interval}", "yes" if item.meets else "no",
                        f"{item.publish_seconds:.3f}", f"{(item.release_bytes or 0) / 1e6:.2f}")
    console.print(summary)
    for item in result.mechanisms:
        if item.status == "infeasible":
            console.print(Text(printable(f"{item.name} (infeasible): {item.note}"),
                               style="yellow"))
    ineligible = [item.name for item in result.mechanisms if item.status == "not eligible"]
    if ineligible:
        console.print(Text(f"no parameter meets {target.text()}: {', '.join(ineligible)} "
                           f"(why: report.html, or --advice-only)", style="yellow"))
    if result.recommendation is None:
        console.print(Text(printable(result.recommendation_reason), style="bold red"))
    else:
        console.print(Text.assemble(("recommended: ", "bold green"),
                                    (result.recommendation.mechanism, "bold"),
                                    f" ({result.recommendation.reason})"))
        # Unwrapped, whatever the terminal's width: a copied command must run as it is.
        console.print(Text(printable(f"  {publish_command(result)}")), soft_wrap=True)
        if undeclared and not observed_domains:
            console.print(Text(f"--observed-domains: the values present in "
                               f"{', '.join(undeclared)} become public domains, which the "
                               f"release lists; declare them (--domain, --domains) where that "
                               f"must not be revealed", style="yellow"), soft_wrap=True)
    if seed is not None:
        console.print("[yellow]seeded: reproducible, for experiments only[/yellow]")
    for path in files:
        console.print(Text(f"wrote {path}"))



def _publish_options(*, qi: str | None, sep: str | None, encoding: str, non_numeric: str,
                     drop_missing: bool, names: str | None, no_header: bool,
                     hierarchies: str | None, domains_file: Path | None,
                     domain: list[str] | None, observed: bool) -> list[str]:
    """The options of ``ppdp publish`` that read the table as compare read it and declare the
    same domains (the values present where none was declared: compare measured with them)."""
    options: list[str] = []
    for option, value in (("--qi", qi), ("--sep", sep), ("--names", names),
                          ("--hierarchies", hierarchies),
                          ("--domains", None if domains_file is None else str(domains_file))):
        if value is not None:
            options += [option, value]
    if encoding != "utf-8":
        options += ["--encoding", encoding]
    if non_numeric != "error":
        options += ["--non-numeric", non_numeric]
    for item in domain or ():
        options += ["--domain", item]
    flags = (("--no-header", no_header), ("--drop-missing", drop_missing),
             ("--observed-domains", observed))
    return options + [flag for flag, given in flags if given]


def _report_directory(output: Path | None, *, overwrite: bool) -> Path:
    """The report directory -o names, refused when not given, or when it holds files unless
    --overwrite."""
    if output is None:
        raise ValueError("-o DIR is needed for the report (or pass --advice-only)")
    if output.exists() and (not output.is_dir() or (any(output.iterdir()) and not overwrite)):
        raise FileExistsError(f"{output} already exists and is not an empty directory; "
                              f"choose another or pass --overwrite")
    return output
