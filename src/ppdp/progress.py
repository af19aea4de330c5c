"""Progress shown on standard error while long work runs.

Drawn only when standard error is an interactive terminal and erased when the work ends, so
that standard output (``--json`` included), pipes and log files get nothing from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn
    from rich.status import Status

__all__ = ["progress_bar", "status"]


def progress_bar(*columns: ProgressColumn | str) -> Progress:
    """A transient rich progress bar on standard error, disabled off a terminal (rich would
    otherwise end it with an empty line there). Default columns: the task's description, the
    bar, steps done of all, time elapsed."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    return Progress(*(columns or (TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn())),
                    console=console, transient=True, disable=not console.is_interactive)


def status(message: str, **options: Any) -> Status:
    """A transient spinner with ``message`` on standard error (drawn on a terminal only)."""
    return Console(stderr=True).status(message, **options)
