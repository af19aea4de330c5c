"""``ppdp risk``: what a release discloses, measured."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import (
    DropMissing,
    Encoding,
    JsonOutput,
    Names,
    NoHeader,
    NonNumeric,
    Separator,
    read_source,
    reading,
    release_domains,
)
from ppdp.cli._output import echo_json, out, print_guarantee


@handle_errors
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
    names: Names = None,
    no_header: NoHeader = False,
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
    # Imported here, not at start-up: releases and measures load numpy and pyarrow.
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
            table = read_source(source, **reading(
                drop_missing=drop_missing, sep=sep, non_numeric=non_numeric, encoding=encoding,
                source=source, names=names, no_header=no_header,
                domains=release_domains(release.schema)))
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
        echo_json(data)
        return
    print_guarantee(data, title="measured risk")
    if per_tuple is not None:
        out().print(Text(f"wrote {per_tuple}"))

