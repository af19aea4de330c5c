"""The endpoints of releases: list them, describe one, answer count queries one at a time or
in a batch (`releases_router`)."""

# No `from __future__ import annotations`: FastAPI reads the request models from the
# endpoints' annotations, and those models are made in `releases_router`, with its limits.

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ppdp.errors import PpdpError
from ppdp.jsonable import json_ready
from ppdp.serve.catalog import Catalog
from ppdp.serve.config import Limits
from ppdp.serve.summary import release_summary

__all__ = ["releases_router"]


def releases_router(catalog: Catalog, limits: Limits) -> APIRouter:
    """The ``/releases`` endpoints over ``catalog``, with ``limits`` on queries."""
    router = APIRouter(prefix="/releases", tags=["releases"])
    QueryText = Annotated[str, Field(min_length=1, max_length=limits.max_query_chars,
                                     description="a condition (age >= 40 AND sex = 'Female') "
                                                 "or SELECT COUNT(*) ... [GROUP BY ...]")]

    class CountRequest(BaseModel):
        """One count query."""

        model_config = ConfigDict(extra="forbid")
        query: QueryText

    class CountsRequest(BaseModel):
        """Count queries answered together, in order."""

        model_config = ConfigDict(extra="forbid")
        queries: Annotated[list[QueryText], Field(min_length=1, max_length=limits.max_batch)]

    @router.get("", summary="The releases served, with their public parameters")
    def list_releases() -> dict[str, Any]:
        """Every release of the directory: its name, mechanism, public parameters, rows,
        columns and guarantee; a release that fails its checks is listed with ``error``."""
        listed: list[dict[str, Any]] = []
        for name in catalog.names():
            try:
                listed.append(release_summary(name, catalog.get(name).release))
            except PpdpError as exc:  # one damaged release does not hide the others
                listed.append({"name": name, "error": str(exc)})
        return {"releases": listed}

    @router.get("/{name}", summary="One release's public parameters and guarantee")
    def describe_release(name: str) -> dict[str, Any]:
        """The release's name, mechanism, public parameters, rows, columns and guarantee."""
        return release_summary(name, catalog.get(name).release)

    @router.post("/{name}/count", summary="Answer a count query from a release")
    def count(name: str, request: CountRequest) -> dict[str, Any]:
        """The estimate, standard error and 95 % interval of the query (or of each group),
        as ``ppdp count RELEASE QUERY --json`` prints them."""
        entry = catalog.get(name)
        with entry.lock:
            return json_ready(entry.release.count(request.query).to_dict())

    @router.post("/{name}/counts", summary="Answer several count queries from a release")
    def counts(name: str, request: CountsRequest) -> dict[str, Any]:
        """``answers``: each query's answer, in order, as ``/count`` gives it. A query that
        fails fails the batch, naming its position."""
        entry = catalog.get(name)
        answers = []
        with entry.lock:
            for position, query in enumerate(request.queries):
                try:
                    answers.append(json_ready(entry.release.count(query).to_dict()))
                except ValueError as exc:
                    raise ValueError(f"queries[{position}]: {exc}") from None
        return {"answers": answers}

    return router
