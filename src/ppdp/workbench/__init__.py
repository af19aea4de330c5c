"""The custodian's workbench in the browser (``ppdp ui``): open a table, set its roles and
domains, state the privacy goal, compare the mechanisms, publish, query the release beside the
true counts, run the attacks, and download the release with what reproduces it.

Server-rendered pages (Jinja2 templates and a little plain JavaScript, all package data, no
asset from elsewhere) on FastAPI: `create_workbench_app` runs it alone, and another app may mount
that app under a path of its own (``app.mount("/workbench", ...)``: the pages' links follow
the mount's path); `workbench_router` gives the bare routes.

The state lives in one workspace folder: the files opened (``uploads/``), the releases
(``releases/``) and, beside each release, what made it (``recipes/``). It is meant for one
custodian on their own computer: ``ppdp ui`` binds to 127.0.0.1 only.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ppdp.serve import ServeConfig, create_app
from ppdp.workbench._data_routes import data_routes
from ppdp.workbench._pages import PageError, page
from ppdp.workbench._release_routes import certify_routes, release_routes
from ppdp.workbench._state import RELEASES, Workspace

__all__ = ["API_PATH", "LOCAL_HOSTS", "MAX_UPLOAD_BYTES", "add_error_pages",
           "create_workbench_app", "same_origin", "workbench_router"]

API_PATH = "/api"
"""Where the standalone workbench also answers count queries of its releases over HTTP, with
``ppdp serve``'s endpoints (``/api/releases``, ``/api/releases/{name}/count``, ...)."""

LOCAL_HOSTS = ("127.0.0.1", "localhost")
"""The host names the standalone workbench answers to."""

MAX_UPLOAD_BYTES = 200_000_000
"""The largest file the workbench opens (200 MB): a larger table belongs on the command line,
which streams it."""


def workbench_router(workspace: Path | Workspace, *, max_upload_bytes: int = MAX_UPLOAD_BYTES,
                     sample_rows: int = 2000) -> APIRouter:
    """The workbench's pages over ``workspace`` (a folder, made if need be), as a router.

    The app that mounts it must also mount the static files (`create_workbench_app` does) and
    turn `PageError` into its page (`add_error_pages`)."""
    state = workspace if isinstance(workspace, Workspace) else Workspace(
        Path(workspace), sample_rows=sample_rows)
    state.root.mkdir(parents=True, exist_ok=True)
    router = APIRouter(dependencies=[Depends(same_origin)])
    router.include_router(data_routes(state, max_upload_bytes=max_upload_bytes))
    router.include_router(release_routes(state))
    router.include_router(certify_routes(state))
    return router


def same_origin(request: Request) -> None:
    """Refuse a form sent from another site's page (a browser names the page's origin): a
    page elsewhere must not publish, upload or certify through the custodian's workbench."""
    origin = request.headers.get("origin")
    if request.method != "GET" and origin is not None and \
            urlsplit(origin).netloc != request.headers.get("host"):
        raise PageError(403, "a request from another site's page is refused")


def add_error_pages(app: FastAPI) -> None:
    """Every bad request ends in a page with its one line and its 4xx status."""

    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return page(request, "error.html", exc.status, message=exc.message)

    async def handle_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return page(request, "error.html", exc.status_code, message=str(exc.detail))

    async def handle_invalid(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 422, message="the address or form is not one the "
                                                        "workbench takes")

    app.add_exception_handler(PageError, handle)
    app.add_exception_handler(StarletteHTTPException, handle_http)
    app.add_exception_handler(RequestValidationError, handle_invalid)


def create_workbench_app(workspace: Path, *, max_upload_bytes: int = MAX_UPLOAD_BYTES,
                         sample_rows: int = 2000, port: int | None = None) -> FastAPI:
    """The workbench as an app of its own over the folder ``workspace``.

    With ``port`` (the one it listens on, on 127.0.0.1), the same server answers count
    queries of the workspace's releases at `API_PATH` (`ppdp.serve.create_app`), as ``ppdp
    serve`` would over them: what an analyst's client will get can be tried at once."""
    app = FastAPI(title="ppdp workbench", docs_url=None, redoc_url=None, openapi_url=None)
    if port is not None:
        releases = Path(workspace) / RELEASES
        releases.mkdir(parents=True, exist_ok=True)
        app.mount(API_PATH, create_app(ServeConfig(releases, host=LOCAL_HOSTS[0], port=port)))
    app.state.workspace_root = Path(workspace)
    # Only the names of this computer: a page elsewhere whose name is made to point here (DNS
    # rebinding) is refused.
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS))
    app.mount("/static", StaticFiles(packages=[("ppdp.workbench", "static")]), name="static")
    app.include_router(workbench_router(workspace, max_upload_bytes=max_upload_bytes,
                                        sample_rows=sample_rows))
    add_error_pages(app)
    return app
