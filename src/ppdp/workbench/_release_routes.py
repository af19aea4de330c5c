"""The second half of the journey, on a saved release: count queries with their error bars
beside the true counts (the custodian's view), the attacks against their baseline and bound,
and the downloads (the release as a zip, its certificate, what reproduces it)."""

from __future__ import annotations

import importlib.util
import io
import shlex
import zipfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from ppdp.attack.run import run_attacks
from ppdp.certify.build import certify as build_certificate
from ppdp.certify.build import write_certificate
from ppdp.certify.commitment import source_table
from ppdp.errors import MissingDependencyError, PpdpError
from ppdp.release.certificate import CERTIFICATE_DIRECTORY
from ppdp.release.keys import COMMITMENT_KEY_FILE, load_commitment_key, load_private_key
from ppdp.workbench._pages import PageError, first_line, page
from ppdp.workbench._state import Published, Workspace
from ppdp.workbench._views import answer_rows, attack_rows

__all__ = ["MAX_QUERY_CHARS", "certify_command", "certify_routes", "release_routes"]

MAX_QUERY_CHARS = 10_000
"""The longest query the workbench takes (a count query is a line or two)."""

_BAD_INPUT = (PpdpError, ValueError, LookupError, OSError, ImportError)


def release_routes(workspace: Workspace) -> APIRouter:
    """The routes of a saved release."""
    router = APIRouter()

    @router.get("/releases/{name}", response_class=HTMLResponse)
    def release_page(request: Request, name: str) -> Response:
        return _release_page(request, workspace, _published(workspace, name))

    @router.post("/releases/{name}/query", response_class=HTMLResponse)
    async def query(request: Request, name: str) -> Response:
        published = _published(workspace, name)
        form = await request.form(max_fields=5, max_part_size=MAX_QUERY_CHARS * 4)
        text = str(form.get("query", "")).strip()
        if not text:
            return _release_page(request, workspace, published, status=400, query=text,
                                 query_error="type a count query, for example age >= 40")
        if len(text) > MAX_QUERY_CHARS:
            return _release_page(request, workspace, published, status=400, query=text[:200],
                                 query_error=f"the query is {len(text):,} characters; the "
                                             f"limit is {MAX_QUERY_CHARS:,}")
        try:
            estimate, truth = await run_in_threadpool(_answers, workspace, published, text)
        except _BAD_INPUT as exc:
            return _release_page(request, workspace, published, status=400, query=text,
                                 query_error=first_line(exc))
        return _release_page(request, workspace, published, query=text,
                             answers=answer_rows(estimate, truth), known=truth is not None)

    @router.post("/releases/{name}/attack", response_class=HTMLResponse)
    def attack(request: Request, name: str) -> Response:
        published = _published(workspace, name)
        try:
            with published.lock:
                source = workspace.source_of(published)
                if source is None:
                    raise ValueError("the source of this release is not known to the "
                                     "workspace: run ppdp attack RELEASE SOURCE")
                report = run_attacks(workspace.loaded(published), source)
        except (*_BAD_INPUT, MissingDependencyError) as exc:
            return _release_page(request, workspace, published, status=400,
                                 attack_error=first_line(exc))
        return _release_page(request, workspace, published, attacks=attack_rows(report),
                             not_applicable=sorted(report.not_applicable.items()))

    @router.get("/releases/{name}/download.zip")
    def download(name: str) -> Response:
        published = _published(workspace, name)
        return _zip(published.directory, published.name, f"{published.name}.zip",
                    skip=CERTIFICATE_DIRECTORY)

    @router.get("/releases/{name}/certificate.zip")
    def certificate(name: str) -> Response:
        published = _published(workspace, name)
        folder = published.directory / CERTIFICATE_DIRECTORY
        if not folder.is_dir():
            raise PageError(404, f"release {name!r} has no certificate yet")
        return _zip(folder, f"{name}-certificate", f"{name}-certificate.zip")

    @router.get("/releases/{name}/reproduce.sh")
    def command(name: str) -> Response:
        return _text(_reproduction(workspace, name, "command"), f"{name}.sh")

    @router.get("/releases/{name}/reproduce.py")
    def python(name: str) -> Response:
        return _text(_reproduction(workspace, name, "python"), f"{name}.py")

    return router


def _answers(workspace: Workspace, published: Published, text: str) -> tuple[Any, Any]:
    """The release's answer to a query, and the source's (None where it is not known)."""
    with published.lock:
        estimate = workspace.loaded(published).count(text)
        source = workspace.source_of(published)
        return estimate, None if source is None else source.count(text)


def _certify(workspace: Workspace, published: Published, key: Path, passphrase: str) -> None:
    """Sign the release's certificate with the key file ``key`` and write it inside the
    release, where ``ppdp certify`` writes it."""
    if not key.is_file():
        raise FileNotFoundError(f"no key file {str(key)[:200]!r}: make one with "
                                f"ppdp keys create")
    private_key = load_private_key(key, passphrase=passphrase.encode() if passphrase else None)
    secret = load_commitment_key(key.parent / COMMITMENT_KEY_FILE)
    source, options = _certified_source(published)
    # Read as ppdp certify and ppdp verify read it: the same table, the same commitment.
    table = source_table(source, workspace.loaded(published).schema, **options)
    document = build_certificate(published.directory, table, private_key=private_key,
                                 commitment_key=secret, source=source)
    write_certificate(document, published.directory / CERTIFICATE_DIRECTORY, overwrite=True)


def certify_command(published: Published) -> str:
    """The ``ppdp certify`` line that signs the release's certificate as the workbench does:
    the release's directory, its source's path (or bundled name) and how it was read."""
    try:
        source, options = _certified_source(published)
    except ValueError:
        source, options = "SOURCE", {}
    words = ["ppdp", "certify", str(published.directory), "--source", source]
    if options.get("missing") == "drop":
        words.append("--drop-missing")
    return shlex.join([*words, "--key", "keys/signing.key"])


def _certified_source(published: Published) -> tuple[str, dict[str, Any]]:
    """The source a release was published from as ``ppdp certify --source`` names it (the
    stored upload's path, or the bundled dataset's name), and the options of
    `source_table` that read it as the recipe did."""
    recipe = published.meta.get("recipe")
    if not isinstance(recipe, dict):
        raise ValueError("the source of this release is not known to the workspace: certify "
                         "it with ppdp certify")
    path = published.meta.get("path")
    source = str(path) if path is not None else str(published.meta["source"])
    return source, {"missing": "drop"} if recipe.get("drop_missing") else {}


def _published(workspace: Workspace, name: str) -> Published:
    try:
        return workspace.release(name)
    except LookupError as exc:
        raise PageError(404, first_line(exc)) from None
    except PpdpError as exc:
        raise PageError(422, f"release {name[:40]!r} cannot be loaded: {first_line(exc)}"
                        ) from None


def _reproduction(workspace: Workspace, name: str, kind: str) -> str:
    published = _published(workspace, name)
    text = published.meta.get(kind)
    if not isinstance(text, str):
        raise PageError(404, f"the workspace does not know how release {name!r} was made")
    return text if text.endswith("\n") else text + "\n"


def _text(text: str, filename: str) -> Response:
    return PlainTextResponse(text, headers={
        "Content-Disposition": f'attachment; filename="{filename}"'})


def _zip(folder: Path, prefix: str, filename: str, *, skip: str | None = None) -> Response:
    """The files of ``folder`` (not following links out of it) as a zip under ``prefix``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_symlink() or not path.is_file() or (skip and relative.parts[0] == skip):
                continue
            archive.write(path, f"{prefix}/{relative.as_posix()}")
    return Response(buffer.getvalue(), media_type="application/zip", headers={
        "Content-Disposition": f'attachment; filename="{filename}"'})


def _release_page(request: Request, workspace: Workspace, published: Published, *,
                  status: int = 200, **context: Any) -> Response:
    release = workspace.loaded(published)
    meta = published.meta
    schema = release.schema
    example = _example_query(release)
    certificate = (published.directory / CERTIFICATE_DIRECTORY).is_dir()
    return page(request, "release.html", status, name=published.name, meta=meta,
                release=release, columns=list(schema.names), example=example,
                sensitive=list(schema.sensitive),
                certify_available=importlib.util.find_spec("cryptography") is not None,
                certificate=certificate, certify_command=certify_command(published),
                source_known="recipe" in meta, **context)


def _example_query(release: Any) -> str:
    """A query the page suggests: the sensitive column's first value by the first
    quasi-identifier's values."""
    schema = release.schema
    sensitive = schema.sensitive[0] if schema.sensitive else schema.names[-1]
    value = schema[sensitive].domain[0]
    shown = repr(value) if isinstance(value, str) else str(value)
    others = [n for n in schema.quasi_identifiers if n != sensitive]
    if others:
        return f"SELECT {others[0]}, COUNT(*) FROM t WHERE {sensitive} = {shown} GROUP BY " \
               f"{others[0]}"
    return f"{sensitive} = {shown}"


def certify_routes(workspace: Workspace) -> APIRouter:
    """Certifying a release: the signer's key file on this computer, the certificate written
    inside the release as ``ppdp certify`` writes it."""
    router = APIRouter()

    @router.post("/releases/{name}/certify", response_class=HTMLResponse)
    async def certify(request: Request, name: str) -> Response:
        published = _published(workspace, name)
        form = await request.form(max_fields=5)
        try:
            key = Path(str(form.get("key", "")).strip()).expanduser()
            await run_in_threadpool(_certify, workspace, published, key,
                                    str(form.get("passphrase", "")))
        except (*_BAD_INPUT, TypeError) as exc:
            return _release_page(request, workspace, published, status=400,
                                 certify_error=first_line(exc))
        return _release_page(request, workspace, published, certified=True)

    return router
