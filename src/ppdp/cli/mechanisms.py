"""``ppdp mechanisms``: the registered mechanisms and their parameters."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from rich.table import Table as RichTable
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import JsonOutput
from ppdp.cli._output import echo_json, out


@handle_errors
def mechanisms(json_output: JsonOutput = False) -> None:
    """List the registered mechanisms with their parameters.

    Examples:

      ppdp mechanisms
      ppdp mechanisms --json
    """
    # Imported here, not at start-up: listing them imports every mechanism.
    from ppdp.mechanisms.base import all_mechanisms
    from ppdp.mechanisms.parameters import REQUIRED, number_text

    if json_output:
        echo_json({"mechanisms": [
            {"name": name, "summary": cls.summary, "parameters": [
                {"name": p.name, "type": p.kind.__name__, "required": p.required,
                 "default": None if p.required else p.default, "help": p.help}
                for p in cls.parameters]}
            for name, cls in all_mechanisms().items()]})
        return
    table = RichTable(title="mechanisms")
    table.add_column("name", style="bold")
    table.add_column("summary")
    table.add_column("parameters")
    for name, cls in all_mechanisms().items():
        lines = []
        for p in cls.parameters:
            default = "required" if p.default is REQUIRED else f"default {number_text(p.default)}"
            lines.append(f"{p.name} ({p.kind.__name__}, {default}): {p.help}")
        table.add_row(name, Text(cls.summary), Text("\n".join(lines) or "none"))
    out().print(table)

