"""How a failed request is answered: a status and one line of JSON, ``{"error": "..."}``,
never a traceback (`install_error_handlers`).

Bad input is the client's: a query that does not parse or fit the release, a body that is not
the JSON asked for (400; 422 for JSON of the wrong shape), an unknown release (404). A release
that fails its checks (digests, certificate) is the server's (500, with the reason). Anything
else is a bug: a 500 that says only that, its traceback in the server's log."""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from ppdp.errors import ReleaseError
from ppdp.serve.catalog import UnknownReleaseError

__all__ = ["MAX_ERROR_CHARS", "error_response", "install_error_handlers"]

logger = logging.getLogger("ppdp.serve")

MAX_ERROR_CHARS = 1_000
"""An error echoes at most this much (a query of 10^6 characters names itself in its error)."""


def error_response(status: int, message: str) -> Response:
    """An error answer: ``status`` and ``{"error": message}`` on one line, cut to
    `MAX_ERROR_CHARS` characters."""
    line = " ".join(message.split()) or "error"
    if len(line) > MAX_ERROR_CHARS:
        line = line[:MAX_ERROR_CHARS - 3] + "..."
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return Response(json.dumps({"error": line}).encode(), status_code=status,
                    media_type="application/json", headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every exception of ``app``'s endpoints as the module docstring says."""

    @app.exception_handler(UnknownReleaseError)
    async def unknown_release(request: Request, exc: UnknownReleaseError) -> Response:
        return error_response(404, str(exc))

    @app.exception_handler(ReleaseError)
    async def damaged_release(request: Request, exc: ReleaseError) -> Response:
        logger.warning("%s", exc)
        return error_response(500, str(exc))

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> Response:
        # ppdp's QueryError, SchemaError... are ValueErrors: what was asked does not fit.
        return error_response(400, str(exc) or type(exc).__name__)

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        first = errors[0] if errors else {}
        if first.get("type") == "json_invalid":
            return error_response(400, "the request body is not valid JSON")
        where = ".".join(str(part) for part in first.get("loc", ()))
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return error_response(422, f"{where}: {first.get('msg', 'invalid')}{more}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        # Starlette's own details ("Not Found") say less than the request does.
        where = f"{request.method} {request.url.path}"
        message = {404: f"no such endpoint: {where}",
                   405: f"method not allowed: {where}"}.get(exc.status_code, str(exc.detail))
        return error_response(exc.status_code, message)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> Response:
        return error_response(500, "internal error; the server's log has the details")
