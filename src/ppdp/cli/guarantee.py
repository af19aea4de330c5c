"""``ppdp guarantee``: the privacy (and utility) guarantee of a mechanism."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from collections.abc import Callable, Mapping
from typing import Annotated, Any, cast

import typer
from rich.table import Table as RichTable

from ppdp.cli._app import handle_errors
from ppdp.cli._options import Encoding, JsonOutput, parse_params, read_source, reading
from ppdp.cli._output import echo_json, number, out, print_guarantee


@handle_errors
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
    # Imported here, not at start-up: the mechanisms load numpy.
    from ppdp.mechanisms import get_mechanism
    from ppdp.progress import status

    mechanism_class = get_mechanism(mechanism)
    values = parse_params(param)
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
        # A mechanism whose guarantee uses the data takes the table first.
        guarantee_of = cast("Callable[..., Any]", instance.guarantee)
        with status(f"reading {source} and computing the guarantee"):
            table = read_source(source, **reading(sensitive=sensitive, encoding=encoding))
            result = guarantee_of(table, **options)
    else:
        if sensitive is not None:
            raise ValueError("--sensitive applies to a SOURCE table; none was given")
        result = instance.guarantee(**options)
    data = result.to_dict()
    if json_output:
        echo_json(data)
    elif mechanism_class.name == "splu":
        _print_splu_guarantee(data)
    else:
        print_guarantee(data)


def _print_splu_guarantee(data: Mapping[str, Any]) -> None:
    console = out()
    table = RichTable(title=f"SPLU-Gen guarantee, gamma = {data['gamma']}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("meaning")
    epsilon = data["epsilon"]
    table.add_row("epsilon", number(epsilon), "relative error of interest")
    if data["T_P"] is not None:
        table.add_row("T_P", f"{data['T_P']:.4f}",
                      f"every count 1..{data['a']} is estimated with relative error above "
                      f"{number(epsilon)} with at least this probability (Lemma 2, Thm 4)")
    if data["T_f"] is not None:
        table.add_row("T_f", f"{data['T_f']:.4g}",
                      f"counts >= T_f have relative error >= {number(epsilon)} with "
                      f"probability <= T_E = {number(data['T_E'])}: the threshold that holds "
                      f"(Chebyshev on the binomial count)")
        table.add_row("T_f_as_printed", f"{data['T_f_as_printed']:.4g}",
                      "Lemma 1 as printed in the paper; its proof divides by n twice, so it "
                      "does not hold")
    console.print(table)
    if data["T_f"] is None:
        console.print("T_f (large sum utility, Lemma 1) needs T_E: pass -p T_E=0.1, say")
    if data["privacy_by_count"]:
        counts = RichTable(title=f"Pr(relative error > {number(epsilon)}) per true count")
        counts.add_column("true count f", justify="right")
        counts.add_column("probability", justify="right")
        for item in data["privacy_by_count"]:
            counts.add_row(str(item["f"]), f"{item['probability']:.4f}")
        console.print(counts)

