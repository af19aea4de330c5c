"""Run the query server on uvicorn (`run`)."""

from __future__ import annotations

import uvicorn

from ppdp.serve.app import create_app
from ppdp.serve.config import ServeConfig

__all__ = ["run"]


def run(config: ServeConfig) -> None:
    """Serve ``config``'s releases until interrupted, on one process (its threads answer
    the requests; the releases loaded are kept in its memory)."""
    uvicorn.run(create_app(config), host=config.host, port=config.port, log_level="info",
                # No Server header; no X-Forwarded-* trusted: there is no proxy in front.
                server_header=False, proxy_headers=False)
