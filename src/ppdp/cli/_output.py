"""How the commands print: numbers, intervals, parameters, JSON and tables of quantities."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text


def printable(text: str) -> str:
    """Text with each character that is not printable escaped as ``repr`` escapes it: a
    column name or value from a file must not reach the terminal as an escape sequence."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def out() -> Console:
    """The console of a command's output (standard output)."""
    return Console(highlight=False, soft_wrap=False)


def echo_json(data: Any) -> None:
    """Print ``data`` as one line of strict JSON."""
    # Imported here, not at start-up: `ppdp --help` has no JSON to print.
    import json

    from ppdp.jsonable import json_ready

    typer.echo(json.dumps(json_ready(data), allow_nan=False))


def number(value: float | None) -> str:
    """A number as the commands show it: integers whole, others to six digits, None as -."""
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def interval(ci: tuple[float, float] | None) -> str:
    """An interval as ``[low, high]``, or - when there is none."""
    return "-" if ci is None else f"[{number(ci[0])}, {number(ci[1])}]"


def parameters_text(values: Mapping[str, Any]) -> str:
    """Parameters as ``name=value, ...``, or none."""
    return ", ".join(f"{k}={number(v) if isinstance(v, float) else v}"
                     for k, v in values.items()) or "none"


def print_guarantee(data: Mapping[str, Any], title: str = "guarantee") -> None:
    """A guarantee, or a measured risk, as a table of quantities (and of sub-tables)."""
    console = out()
    table = RichTable(title=f"{title} of {data.get('mechanism', '')}")
    table.add_column("quantity")
    table.add_column("value")
    for key, value in data.items():
        if key in ("mechanism", "statement", "subtable_details"):
            continue
        if isinstance(value, list) and all(isinstance(x, float) for x in value):
            shown = ", ".join(number(x) for x in value)  # one number per view, say
        else:
            shown = number(value) if isinstance(value, float | None) else str(value)
        table.add_row(key, Text(printable(shown)))
    console.print(table)
    if data.get("subtable_details"):
        parts = RichTable(title="sub-tables")
        names = list(data["subtable_details"][0])
        for name in names:
            parts.add_column(name, justify="right")
        for row in data["subtable_details"]:
            parts.add_row(*(number(row[n]) if isinstance(row[n], float) else str(row[n])
                            for n in names))
        console.print(parts)
    if data.get("statement"):
        console.print(Text(printable(str(data["statement"]))))
