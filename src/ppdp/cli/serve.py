"""``ppdp serve``: answer count queries over HTTP from the releases of a directory."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from ppdp.cli._app import handle_errors
from ppdp.cli._options import Workers
from ppdp.errors import MissingDependencyError

SERVE_PACKAGES = ("fastapi", "uvicorn", "jinja2", "multipart")
"""What the serve extra installs (python-multipart is `multipart`): ``ppdp serve`` and ``ppdp
ui`` need it."""


def require_serve_extra(command: str) -> None:
    """Refuse, in one line naming the extra, a command whose packages are not installed."""
    missing = [name for name in SERVE_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingDependencyError(f"{command} needs the serve extra ({', '.join(missing)} "
                                     f"missing): pip install 'ppdp[serve]'")


@handle_errors
def serve(
    directory: Annotated[Path, typer.Argument(
        help="directory whose subdirectories are the releases to serve")],
    host: Annotated[str, typer.Option(
        "--host", help="address to listen on; beyond the loopback interface (127.0.0.1) "
                       "a token is required")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="port to listen on")] = 8000,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="file whose first line is the token every request must send "
                             "as 'Authorization: Bearer TOKEN' (else PPDP_SERVE_TOKEN)")] = None,
    public_key: Annotated[Path | None, typer.Option(
        "--public-key", help="key file: serve only releases whose certificate it verifies")
    ] = None,
    max_batch: Annotated[int, typer.Option(
        "--max-batch", min=1, help="most queries one /counts request may ask")] = 1_000,
    workers: Workers = None,
) -> None:
    """Answer count queries over HTTP from the releases in DIRECTORY (read only).

    POST /releases/NAME/count with {"query": "..."} answers as ppdp count
    RELEASE QUERY --json; GET /releases lists the releases; /openapi.json
    describes the API. Listens on 127.0.0.1 unless --host says otherwise.

    Examples:

      ppdp serve releases/
      PPDP_SERVE_TOKEN=... ppdp serve releases/ --host 0.0.0.0 --port 8080
    """
    require_serve_extra("ppdp serve")
    # Imported here, not at start-up: the server loads FastAPI, numpy and pyarrow.
    from ppdp.serve import Limits, ServeConfig, run
    from ppdp.serve.config import read_token

    config = ServeConfig(directory, host=host, port=port, token=read_token(token_file),
                         public_key=public_key, limits=Limits(max_batch=max_batch))
    # The app is made before the server starts: a key this ppdp cannot check ends there.
    run(config)
