"""``ppdp ui``: the custodian's workbench in the browser, on this computer only."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._output import out
from ppdp.cli.serve import require_serve_extra

HOST = "127.0.0.1"
"""The workbench shows true counts and attack results: it listens on this computer only."""


@handle_errors
def ui(
    port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                      help="port on 127.0.0.1 (0: any free port)")] = 8765,
    no_browser: Annotated[bool, typer.Option(
        "--no-browser", help="do not open the browser; open the address printed")] = False,
    workspace: Annotated[Path, typer.Option(
        "--workspace", help="folder of the files opened, the releases and what made them "
                            "(made if need be)")] = Path("ppdp-workspace"),
) -> None:
    """Open the workbench in your browser.

    In the workbench you open a table, set its roles and domains, state the
    privacy goal, compare the mechanisms, publish, then query the release
    beside the true counts, attack it and download it with the command line
    and Python code that make it again.

    It listens on 127.0.0.1 only (this computer): the pages show true
    counts and attack results, for the custodian's eyes. Stop it with
    Ctrl+C.

    Examples:

      ppdp ui
      ppdp ui --port 8800 --no-browser --workspace my-releases
    """
    require_serve_extra("ppdp ui")
    # Imported here, not at start-up: the workbench loads FastAPI, numpy and the mechanisms.
    import socket
    import threading
    import webbrowser

    import uvicorn

    from ppdp.workbench import create_workbench_app

    # The socket is bound here so that the address printed (and opened) is the one listened
    # on, port 0 included.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
    except OSError as exc:
        listener.close()
        raise OSError(f"cannot listen on {HOST}:{port}: {exc.strerror}; choose another "
                      f"--port") from None
    bound = listener.getsockname()[1]
    app = create_workbench_app(workspace, port=bound)
    address = f"http://{HOST}:{bound}/"
    out().print(Text(f"ppdp workbench on {address} (workspace {workspace}); its releases' "
                     f"count queries at {address}api/releases; Ctrl+C stops it"),
                soft_wrap=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False,
                                           proxy_headers=False))
    if not no_browser:
        threading.Timer(0.5, webbrowser.open, args=(address,)).start()
    server.run(sockets=[listener])
