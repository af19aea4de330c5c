"""MkDocs hook: the command-line reference page, generated from the typer application.

Why a hook and not mkdocs-typer2 or mkdocs-click: both render the help texts as Markdown
without escaping them, and ppdp's help names files such as ``hierarchy_<column>.csv`` and
patterns such as ``leaf;level1;...;*``, which become HTML tags and emphasis there (and break
the build). Here every help text is escaped, and the examples each command lists are kept as
they print.
"""

from __future__ import annotations

import html
import re
from typing import Any

import typer
import typer.main

from ppdp.cli import app

PAGE = "reference/cli.md"
MARKER = "<!-- ppdp-cli -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker of the CLI page with the reference of every command."""
    if page.file.src_uri != PAGE:
        return markdown
    return markdown.replace(MARKER, cli_reference())


def cli_reference() -> str:
    """The Markdown of ``ppdp``'s options and of each of its commands, in ``--help`` order."""
    group = typer.main.get_command(app)
    context = typer.Context(group, info_name="ppdp")
    parts = [_command(group, context, "ppdp", level=2)]
    parts += _commands(group, context, "ppdp")
    return "\n".join(parts)


def _commands(group: Any, context: typer.Context, prefix: str) -> list[str]:
    """The reference of each command of ``group``, and of the commands of its sub-groups
    (``ppdp keys create``)."""
    parts = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        child = typer.Context(command, info_name=name, parent=context)
        parts.append(_command(command, child, f"{prefix} {name}", level=2))
        if hasattr(command, "list_commands"):
            parts += _commands(command, child, f"{prefix} {name}")
    return parts


def _command(command: Any, context: typer.Context, title: str, level: int) -> str:
    lines = [f"{'#' * level} `{title}`", ""]
    usage = " ".join(command.collect_usage_pieces(context))
    usage = re.sub(r"\{(\w+)\}", lambda name: name[1].upper(), usage)  # typer's {source}
    lines += ["```text", f"{title} {usage}".rstrip(), "```", ""]
    lines += _help(command.help or "")
    # typer carries its own copy of click: parameters are told apart by their kind's name.
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    options = [p for p in command.params
               if p.param_type_name == "option" and not p.hidden]
    if arguments:
        lines += ["**Arguments**", "", "| name | type | required | description |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| `{p.human_readable_name}` | {_escape(p.type.name)} | "
                  f"{'yes' if p.required else 'no'} | {_escape(getattr(p, 'help', '') or '')} |"
                  for p in arguments]
        lines.append("")
    if options:
        lines += ["**Options**", "", "| option | type | default | description |",
                  "| --- | --- | --- | --- |"]
        lines += [_option(p) for p in options]
        lines.append("")
    return "\n".join(lines)


def _option(option: Any) -> str:
    names = ", ".join(f"`{name}`" for name in [*option.opts, *option.secondary_opts])
    kind = "flag" if option.is_flag else _escape(option.type.name)
    default = option.default
    shown = "" if default is None or option.is_flag or option.required else f"`{default}`"
    if option.required:
        shown = "required"
    if option.multiple:
        kind += ", repeatable"
    return f"| {names} | {kind} | {shown} | {_escape(option.help or '')} |"


def _help(text: str) -> list[str]:
    """Paragraphs escaped; runs of indented lines (the examples) kept in a text block."""
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        rows = paragraph.splitlines()
        if all(row.startswith("  ") for row in rows):
            lines += ["```text", *(row[2:] for row in rows), "```", ""]
        else:
            lines += [_escape(" ".join(row.strip() for row in rows)), ""]
    return lines


def _escape(text: str) -> str:
    """Plain text as Markdown that shows it unchanged (HTML, emphasis, tables, links)."""
    text = html.escape(text, quote=False)
    return re.sub(r"([\\`*_|\[\]])", r"\\\1", text)
