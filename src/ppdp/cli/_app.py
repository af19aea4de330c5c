"""The typer application of the ``ppdp`` command, and how a command's expected errors end: one
red ``error: ...`` line on standard error, without a traceback, and an exit code that says
which kind of error it was (`exit_code`; docs/reference/exit-codes.md)."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

import functools
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.text import Text

from ppdp.cli._memory import (
    memory_message,
    ran_out_of_memory,
    reuse_freed_memory,
    within_limit,
)
from ppdp.cli._output import printable
from ppdp.errors import (
    InfeasibleError,
    OutputExistsError,
    PpdpError,
    QueryError,
    ReleaseError,
    SchemaError,
)

EXIT_USAGE = 2
"""The command line is wrong: an unknown command or option, a missing argument, a value that
an option does not take (a mechanism, parameter, query, privacy target or engine), an output
that exists without --overwrite. click's own usage errors exit with 2 too."""
EXIT_INPUT = 3
"""The data cannot be read or do not fit what was asked: a missing or unreadable file, text
that does not parse, missing values, a column the data do not have, an undeclared domain,
parameters the data cannot meet, not enough memory."""
EXIT_RELEASE = 4
"""A release directory is missing its files, damaged, edited, or of a newer format."""
EXIT_ERROR = EXIT_USAGE
"""The exit code of `fail` when none is given."""
HANDLED = (PpdpError, ValueError, OSError)
"""The errors a command expects: each ends in its one ``error:`` line. Any other exception is
a bug in ppdp: Python's traceback and exit code 1."""

P = ParamSpec("P")
R = TypeVar("R")


class _Group(typer.core.TyperGroup):
    """The ppdp commands, with their flags shown as flags (no ``<bool>`` value type) and a
    flag given a value (``--drop-missing true``) answered with how to write it."""

    # click's types (Context, Parameter): typer vendors click in some versions and depends on
    # it in others, so they are left as Any.
    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _refuse_flag_values(_plain_flags(command.get_params(ctx)), rest)
        return name, command, rest


def filled_help(fill: Callable[[], Mapping[str, str]]) -> type[typer.core.TyperCommand]:
    """A command class whose help, and its parameters' help, have each key of ``fill()``
    replaced by its text when the help is shown: lists made from registries that the command
    line must not import at start-up (they load numpy, the mechanisms, scikit-learn)."""

    class _Filled(typer.core.TyperCommand):
        def format_help(self, ctx: Any, formatter: Any) -> None:
            for key, text in fill().items():
                self.help = (self.help or "").replace(key, text)
                # click's Parameter (typed Any, as above): options and arguments have help.
                params: list[Any] = self.params
                for param in params:
                    if getattr(param, "help", None):
                        param.help = param.help.replace(key, text)
            super().format_help(ctx, formatter)

    return _Filled


def _plain_flags(params: list[Any]) -> list[Any]:
    """The parameters, flags given an empty metavar: typer's help would show ``<bool>``, as
    if a flag took a value."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


def _refuse_flag_values(params: list[Any], args: Sequence[str]) -> None:
    """One error line for ``--flag true`` or ``--flag false``, which the parser would reject
    as an unexpected argument (an argument that names an existing file is left to it)."""
    flags = {name for param in params if getattr(param, "is_flag", False)
             for name in param.opts}
    for option, value in itertools.pairwise(args):
        if option == "--":
            return
        if option in flags and value.lower() in ("true", "false") \
                and not os.path.lexists(value):
            fail(f"{option} is a flag and takes no value: write {option} to turn it on, or "
                 f"leave it out for off (got '{option} {value}')")


app = typer.Typer(
    cls=_Group,
    name="ppdp",
    help="Privacy-preserving publishing of microdata (SPLU-Gen, small domain randomization, "
         "alpha-beta, FRAPP, ambiguity, Mondrian, Anatomy, DBR, Laplace counts), estimation of "
         "count queries from the published data, and measured disclosure risk.",
    no_args_is_help=True,
    add_completion=False,
)


def main() -> None:
    """Entry point of the ``ppdp`` command."""
    app(prog_name="ppdp")


def _print_version(value: bool) -> None:
    if value:
        # Imported here, not at start-up: only --version needs it.
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("ppdp")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from ppdp import __version__ as number
        typer.echo(f"ppdp {number}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="print the version of ppdp and exit")] = False,
) -> None:
    """Options that come before the command."""


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """End the command with one red ``error:`` line on standard error and exit ``code``."""
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    line = printable(" ".join(str(message).split()))
    console.print(Text("error: ", style="bold red") + Text(line, style="red"))
    raise typer.Exit(code)


def exit_code(error: BaseException) -> int:
    """The exit code of an expected error, by its class: a damaged release (`ReleaseError`)
    4; the data (`SchemaError`, `InfeasibleError`, a file that cannot be read, any other ppdp
    error, such as Spark missing) 3; the command line (a `QueryError`, any other
    ValueError, an output that exists) 2."""
    if isinstance(error, ReleaseError):
        return EXIT_RELEASE
    if isinstance(error, SchemaError | InfeasibleError | MemoryError):
        return EXIT_INPUT
    if isinstance(error, QueryError | ValueError | FileExistsError):
        return EXIT_USAGE
    return EXIT_INPUT


def handle_errors(function: Callable[P, R]) -> Callable[P, R]:
    """Turn the expected errors of a command, and memory running out (`_memory`), into one
    ``error:`` line and their exit code (`exit_code`; memory: `EXIT_INPUT`)."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            within_limit()
            reuse_freed_memory()
            return function(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            # Memory running out first: under a limit it also comes as OSError or ImportError.
            if ran_out_of_memory(exc):
                fail(memory_message(), EXIT_INPUT)
            if isinstance(exc, OutputExistsError):
                fail(exc.on_command_line(), exit_code(exc))
            if isinstance(exc, HANDLED):
                fail(str(exc) or type(exc).__name__, exit_code(exc))
            raise

    return wrapper
