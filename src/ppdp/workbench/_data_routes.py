"""The first half of the journey: open a table (a file or the bundled Adult), set each
column's role and domain, state the privacy goal, run the comparison and follow its progress,
then publish."""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ppdp.data.bundled import NAMES
from ppdp.datasets import load
from ppdp.errors import PpdpError
from ppdp.evaluate.advice import parse_privacy
from ppdp.io.read import read_table
from ppdp.io.storage import write_atomic
from ppdp.workbench._pages import PageError, base, first_line, page
from ppdp.workbench._recipe import Recipe, domain_text
from ppdp.workbench._state import Dataset, Job, Workspace
from ppdp.workbench._views import (
    FORMS_LINE,
    GOALS,
    OBSERVED_WARNING,
    column_rows,
    mechanism_rows,
    parameters_text,
    risk_utility_svg,
)

__all__ = ["SUFFIXES", "data_routes"]

SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
"""The files the workbench opens: CSV (and its tab-separated and .txt kin) and Parquet."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_BAD_INPUT = (PpdpError, ValueError, LookupError, OSError)


def data_routes(workspace: Workspace, *, max_upload_bytes: int) -> APIRouter:
    """The routes of opening, configuring, comparing and publishing."""
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse)
    def home(request: Request) -> Response:
        return page(request, "home.html", releases=workspace.saved_releases(),
                    bundled=NAMES, limit_mb=max_upload_bytes / 1e6,
                    suffixes=", ".join(SUFFIXES))

    @router.post("/open/upload")
    async def upload(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_upload_bytes:
            raise PageError(413, f"the file is larger than the limit of "
                                 f"{max_upload_bytes / 1e6:g} MB")
        form = await request.form(max_files=1, max_fields=10)
        item = form.get("file")
        if not isinstance(item, UploadFile) or not item.filename:
            raise PageError(400, "choose a CSV or Parquet file to open")
        name = _UNSAFE.sub("_", Path(item.filename).name).lstrip(".") or "data.csv"
        if not name.lower().endswith(SUFFIXES):
            raise PageError(415, f"{name[:80]!r} is not a CSV or Parquet file (the workbench "
                                 f"opens {', '.join(SUFFIXES)})")
        data = await item.read(max_upload_bytes + 1)
        if len(data) > max_upload_bytes:
            raise PageError(413, f"the file is larger than the limit of "
                                 f"{max_upload_bytes / 1e6:g} MB")
        if not data:
            raise PageError(400, f"{name[:80]!r} is empty")
        drop = form.get("drop_missing") == "on"
        path = workspace.uploads / secrets.token_hex(6) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        try:
            table = await run_in_threadpool(read_table, path,
                                            missing="drop" if drop else "error")
        except _BAD_INPUT as exc:
            raise PageError(422, f"{name}: {first_line(exc)}") from None
        dataset = workspace.add_dataset(name, path, table, drop_missing=drop)
        return RedirectResponse(f"{base(request)}/tables/{dataset.id}", status_code=303)

    @router.post("/open/bundled")
    async def bundled(request: Request) -> Response:
        form = await request.form(max_fields=5)
        name = str(form.get("name", ""))
        if name not in NAMES:
            raise PageError(400, f"no bundled dataset {name[:40]!r}; bundled: "
                                 f"{', '.join(NAMES)}")
        table = await run_in_threadpool(load, name)
        dataset = workspace.add_dataset(name, None, table, drop_missing=False)
        return RedirectResponse(f"{base(request)}/tables/{dataset.id}", status_code=303)

    @router.get("/tables/{key}", response_class=HTMLResponse)
    def table_page(request: Request, key: str) -> Response:
        return _table_page(request, workspace, _dataset(workspace, key))

    @router.post("/tables/{key}/compare")
    async def start(request: Request, key: str) -> Response:
        dataset = _dataset(workspace, key)
        form = await request.form(max_fields=4 * len(dataset.table.schema.columns) + 10)
        fields = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        try:
            recipe = _recipe(dataset, fields)
            privacy = fields.get("privacy", "").strip()
            target = parse_privacy(privacy)
            dataset.recipe, dataset.privacy = recipe, target.text()
            job = await run_in_threadpool(workspace.start_comparison, dataset, recipe,
                                          target.text(), sample=fields.get("sample") == "on")
        except _BAD_INPUT as exc:
            return _table_page(request, workspace, dataset, error=first_line(exc),
                               fields=fields, status=400)
        return RedirectResponse(f"{base(request)}/comparisons/{job.id}", status_code=303)

    @router.get("/comparisons/{key}", response_class=HTMLResponse)
    def comparison(request: Request, key: str) -> Response:
        return _comparison_page(request, workspace, key)

    @router.get("/comparisons/{key}/progress")
    def progress(key: str) -> Response:
        return JSONResponse(_job(workspace, key).progress())

    @router.get("/comparisons/{key}/figures/{index}.png")
    def figure(key: str, index: int) -> Response:
        result = _job(workspace, key).result
        if result is None or not 0 <= index < len(result.figures):
            raise PageError(404, f"no figure {index} of this comparison")
        return Response(result.figures[index][1], media_type="image/png")

    @router.post("/comparisons/{key}/publish")
    async def publish(request: Request, key: str) -> Response:
        job = _job(workspace, key)
        form = await request.form(max_fields=5)
        try:
            published = await run_in_threadpool(workspace.publish, job,
                                                str(form.get("mechanism", "")),
                                                str(form.get("name", "")))
        except _BAD_INPUT as exc:
            status = 409 if isinstance(exc, FileExistsError) else 400
            return _comparison_page(request, workspace, key, error=first_line(exc),
                                    status=status)
        return RedirectResponse(f"{base(request)}/releases/{published.name}", status_code=303)

    return router


def _dataset(workspace: Workspace, key: str) -> Dataset:
    try:
        return workspace.dataset(key)
    except LookupError as exc:
        raise PageError(404, first_line(exc)) from None


def _job(workspace: Workspace, key: str) -> Job:
    try:
        return workspace.job(key)
    except LookupError as exc:
        raise PageError(404, first_line(exc)) from None


def _recipe(dataset: Dataset, fields: dict[str, str]) -> Recipe:
    """The roles and domains chosen on the table's page, as the recipe that reads the table
    (one line on a wrong choice)."""
    columns = dataset.table.schema.columns
    roles = {c.name: fields.get(f"role-{i}", "quasi-identifier") for i, c in enumerate(columns)}
    unknown = sorted({r for r in roles.values()} - {"quasi-identifier", "sensitive", "ignored"})
    if unknown:
        raise ValueError(f"a column's role is quasi-identifier, sensitive or ignored, not "
                         f"{unknown[0][:40]!r}")
    sensitive = [name for name, role in roles.items() if role == "sensitive"]
    if len(sensitive) != 1:
        raise ValueError(f"choose exactly one sensitive column (chosen: "
                         f"{', '.join(sensitive) or 'none'})")
    qi = tuple(name for name, role in roles.items() if role == "quasi-identifier")
    if not qi:
        raise ValueError("choose at least one quasi-identifier: the columns an adversary may "
                         "know about a person")
    domains: dict[str, str] = {}
    observed = False
    for i, column in enumerate(columns):
        if roles[column.name] == "ignored":
            continue
        text = " ".join(fields.get(f"domain-{i}", "").split())
        if column.declared and text == domain_text(column):
            continue
        if text:
            domains[column.name] = text
        else:
            observed = True
    recipe = Recipe(dataset.source, dataset.path, sensitive[0], qi, domains, observed,
                    dataset.drop_missing, all_quasi_identifiers=len(qi) == len(columns) - 1)
    recipe.declared()
    return recipe


def _table_page(request: Request, workspace: Workspace, dataset: Dataset, *,
                error: str | None = None, fields: dict[str, str] | None = None,
                status: int = 200) -> Response:
    table = dataset.table
    sensitive = table.schema.sensitive[0] if table.schema.sensitive else (
        "occupation" if "occupation" in table.schema.names else table.schema.names[-1])
    rows = column_rows(table, sensitive=sensitive)
    for row in rows:
        if fields is not None:
            row["role"] = fields.get(f"role-{row['index']}", row["role"])
            row["domain"] = fields.get(f"domain-{row['index']}", row["domain"])
        if dataset.recipe is not None and fields is None:
            recipe = dataset.recipe
            row["role"] = ("sensitive" if row["name"] == recipe.sensitive else
                           "quasi-identifier" if row["name"] in recipe.quasi_identifiers
                           else "ignored")
            row["domain"] = recipe.domains.get(row["name"], row["domain"])
    privacy = (fields or {}).get("privacy", dataset.privacy)
    return page(request, "table.html", status, dataset=dataset, rows=rows, error=error,
                privacy=privacy, goals=GOALS, forms=FORMS_LINE, warning=OBSERVED_WARNING,
                sample_rows=workspace.sample_rows, n_rows=table.n_rows,
                sample=(fields or {}).get("sample", "on" if table.n_rows > workspace.sample_rows
                                          else "") == "on",
                roles=[("quasi-identifier", "quasi-identifier"), ("sensitive", "sensitive"),
                       ("ignored", "not published")])


def _comparison_page(request: Request, workspace: Workspace, key: str, *,
                     error: str | None = None, status: int = 200) -> Response:
    job = _job(workspace, key)
    result = job.result
    context: dict[str, Any] = {"job": job, "error": error, "result": result}
    if result is not None:
        compared = [m.name for m in result.mechanisms if m.status == "compared"]
        chosen = result.recommendation.mechanism if result.recommendation else (
            compared[0] if compared else "")
        context.update(
            rows=mechanism_rows(result), recommended_parameters=parameters_text(
                result.recommendation.parameters if result.recommendation else None),
            svg=risk_utility_svg(result), compared=compared,
            chosen=chosen, statement=result.target.describe(), warning=OBSERVED_WARNING,
            figures=[(i, name.replace("_", " ")) for i, (name, _) in
                     enumerate(result.figures)],
            default_name=_UNSAFE.sub("-", f"{Path(job.recipe.source).stem}-{chosen}"),
            full_rows=job.dataset.table.n_rows)
    return page(request, "comparison.html", status, **context)
