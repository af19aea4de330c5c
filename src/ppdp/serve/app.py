"""The query server's application (`create_app`): the release endpoints behind the guard,
their errors answered in one line of JSON, and the OpenAPI document at ``/openapi.json``.

The interactive documentation pages (``/docs``, ``/redoc``) are turned off: FastAPI's load
their scripts and styles from a CDN, which a server for confidential data must not make its
users' browsers fetch. The OpenAPI document is there for any viewer or client generator."""

from __future__ import annotations

from fastapi import FastAPI

from ppdp import __version__
from ppdp.serve.catalog import Catalog, release_loader
from ppdp.serve.config import ServeConfig
from ppdp.serve.errors import install_error_handlers
from ppdp.serve.guard import Guard
from ppdp.serve.releases import releases_router

__all__ = ["OPENAPI_URL", "create_app"]

OPENAPI_URL = "/openapi.json"


def create_app(config: ServeConfig) -> FastAPI:
    """The server of the releases in ``config.directory`` (another app may mount it under a
    path of its own, as ``ppdp ui`` does at ``/api``)."""
    app = FastAPI(title="ppdp query server", version=__version__,
                  summary="Count queries answered from published releases, with their "
                          "standard errors and intervals",
                  docs_url=None, redoc_url=None, openapi_url=OPENAPI_URL)
    catalog = Catalog(config.directory, loader=release_loader(config.public_key),
                      certified=config.public_key is not None)
    app.include_router(releases_router(catalog, config.limits))
    install_error_handlers(app)
    app.add_middleware(Guard, config=config)
    return app
