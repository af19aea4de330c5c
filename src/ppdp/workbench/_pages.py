"""The pages' templates (Jinja2, package data) and the one-line error page every bad request
ends in."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, select_autoescape

__all__ = ["PageError", "base", "first_line", "page", "templates"]

templates = Jinja2Templates(env=Environment(
    loader=PackageLoader("ppdp.workbench", "templates"), autoescape=select_autoescape(["html"]),
    trim_blocks=True, lstrip_blocks=True))


class PageError(Exception):
    """A bad request: its HTTP status and the one line that says what is wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def base(request: Request) -> str:
    """The path the workbench is mounted at ('' at the root): its pages' links start with
    it, so that another app may mount the workbench under a path of its own."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def page(request: Request, template: str, status: int = 200, /, **context: Any
         ) -> HTMLResponse:
    """A page rendered from its template."""
    return templates.TemplateResponse(request, template, {"base": base(request), **context},
                                      status_code=status)


def first_line(error: BaseException) -> str:
    """An error's message as one line."""
    text = str(error).strip()
    if isinstance(error, KeyError) and text.startswith(("'", '"')):
        text = text[1:-1]
    return text.splitlines()[0] if text else type(error).__name__
