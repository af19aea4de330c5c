"""What the workbench holds: the tables opened, the comparisons running or done, and the
releases saved in the workspace (with what reproduces each, beside them)."""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.errors import PpdpError
from ppdp.evaluate.compare import compare
from ppdp.evaluate.compare_report import Comparison
from ppdp.io.storage import write_atomic
from ppdp.release.base import Release
from ppdp.release.load import load_release
from ppdp.table.table import Table
from ppdp.workbench._pages import first_line
from ppdp.workbench._recipe import Recipe, release_name

__all__ = ["Dataset", "Job", "Published", "Workspace"]

RELEASES = "releases"
UPLOADS = "uploads"
RECIPES = "recipes"
"""Folders of the workspace: the releases, the files opened, and beside each release (never
inside it, which its digests cover) what made it."""


@dataclass
class Dataset:
    """A table opened in the workbench: where it came from and the table as read (every column
    a quasi-identifier, no sensitive one yet)."""

    id: str
    source: str
    path: Path | None
    table: Table
    drop_missing: bool = False
    recipe: Recipe | None = None
    privacy: str = "beta=0.25"


@dataclass
class Job:
    """A comparison running in a thread, its progress, and what it gave or why it failed."""

    id: str
    dataset: Dataset
    recipe: Recipe
    privacy: str
    rows: int
    what: str = "starting"
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    result: Comparison | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.result is not None or self.error is not None

    def progress(self) -> dict[str, Any]:
        return {"what": self.what, "done": self.done, "total": self.total,
                "finished": self.finished, "error": self.error,
                "seconds": round(time.monotonic() - self.started, 1)}


@dataclass
class Published:
    """A saved release of the workspace, with its recipe (to reread the source for the true
    counts and the attacks) and what reproduces it.

    ``lock`` makes its counts and attacks one at a time, as ``ppdp serve`` does: the release
    and its source fill caches as they answer, and the routes run on worker threads."""

    name: str
    directory: Path
    meta: dict[str, Any]
    release: Release | None = None
    source: Table | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


class Workspace:
    """The workbench's state over one workspace folder (one custodian, on this computer)."""

    def __init__(self, root: Path, *, sample_rows: int = 2000) -> None:
        self.root = Path(root)
        self.sample_rows = sample_rows
        self.datasets: dict[str, Dataset] = {}
        self.jobs: dict[str, Job] = {}
        self.published: dict[str, Published] = {}
        self._lock = threading.Lock()

    @property
    def releases(self) -> Path:
        return self.root / RELEASES

    @property
    def uploads(self) -> Path:
        return self.root / UPLOADS

    def add_dataset(self, source: str, path: Path | None, table: Table, *,
                    drop_missing: bool) -> Dataset:
        dataset = Dataset(secrets.token_hex(6), source, path, table, drop_missing=drop_missing)
        with self._lock:
            self.datasets[dataset.id] = dataset
        return dataset

    def dataset(self, key: str) -> Dataset:
        try:
            return self.datasets[key]
        except KeyError:
            raise LookupError(f"no open table {key[:40]!r}: open it again") from None

    def job(self, key: str) -> Job:
        try:
            return self.jobs[key]
        except KeyError:
            raise LookupError(f"no comparison {key[:40]!r}: run it again") from None

    def start_comparison(self, dataset: Dataset, recipe: Recipe, privacy: str, *,
                         sample: bool) -> Job:
        """Read the table by ``recipe`` and compare every mechanism on it (on a random sample
        of `sample_rows` rows when ``sample``) in a thread; errors end in the job's one line."""
        table = recipe.read()
        if sample and table.n_rows > self.sample_rows:
            rng = np.random.default_rng()
            table = table.take(np.sort(rng.choice(table.n_rows, self.sample_rows,
                                                  replace=False)))
        job = Job(secrets.token_hex(6), dataset, recipe, privacy, table.n_rows)
        with self._lock:
            self.jobs[job.id] = job

        def tell(what: str, done: int, total: int) -> None:
            job.what, job.done, job.total = what, done, total

        def run() -> None:
            try:
                result = compare(table, privacy=privacy, quick=True, progress=tell)
            except (PpdpError, ValueError, LookupError, ArithmeticError, OSError) as exc:
                job.error = first_line(exc)
                return
            except Exception as exc:  # any other: a bug, but the page must not wait for ever
                job.error = f"an error in ppdp, please report it: {type(exc).__name__}: " \
                            f"{first_line(exc)}"
                return
            result.source = recipe.source
            job.result = result

        threading.Thread(target=run, name=f"compare-{job.id}", daemon=True).start()
        return job

    def publish(self, job: Job, mechanism: str, name: str) -> Published:
        """Publish the whole table (not a sample) with ``mechanism`` as the comparison
        configured it, from OS entropy, and save it as the workspace's release ``name``."""
        name = release_name(name)
        result = job.result
        if result is None:
            raise ValueError("the comparison has not finished")
        compared = {m.name: m for m in result.mechanisms if m.status == "compared"}
        chosen = compared.get(mechanism)
        if chosen is None:
            raise ValueError(f"{mechanism[:40]!r} was not compared at this privacy; choose "
                             f"one of {', '.join(compared) or 'none'}")
        directory = self.releases / name
        if directory.exists():
            raise FileExistsError(f"a release named {name!r} exists; choose another name")
        table = job.recipe.read()
        release = chosen.advice.build().publish(table)
        self.releases.mkdir(parents=True, exist_ok=True)
        release.save(directory)
        parameters = dict(chosen.advice.parameters or {})
        meta = {"name": name, "mechanism": mechanism, "parameters": parameters,
                "privacy": result.target.text(), "statement": result.target.describe(),
                "source": job.recipe.source,
                "path": None if job.recipe.path is None else str(job.recipe.path),
                "recipe": _recipe_json(job.recipe),
                "command": job.recipe.command(mechanism, parameters, name),
                "python": job.recipe.python(mechanism, parameters, name)}
        recipes = self.root / RECIPES
        recipes.mkdir(parents=True, exist_ok=True)
        write_atomic(recipes / f"{name}.json", json.dumps(meta, indent=1).encode())
        published = Published(name, directory, meta, release, table)
        with self._lock:
            self.published[name] = published
        return published

    def release(self, name: str) -> Published:
        """A saved release by name, loaded (and its digests verified) on first use."""
        with self._lock:
            known = self.published.get(name)
        if known is not None:
            return known
        try:
            name = release_name(name)
        except ValueError:
            raise LookupError(f"no release {name[:40]!r} in the workspace") from None
        directory = self.releases / name
        if not directory.is_dir():
            raise LookupError(f"no release {name!r} in the workspace")
        meta_file = self.root / RECIPES / f"{name}.json"
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {"name": name}
        published = Published(name, directory, meta, load_release(directory))
        with self._lock:
            self.published[name] = published
        return published

    def loaded(self, published: Published) -> Release:
        """The release itself, loaded (and verified) on first use."""
        if published.release is None:
            published.release = load_release(published.directory)
        return published.release

    def source_of(self, published: Published) -> Table | None:
        """The table a release was published from, reread by its recipe (None where the
        workspace does not know it, or its file is gone)."""
        if published.source is None and "recipe" in published.meta:
            recipe = _recipe_from_json(published.meta["recipe"])
            if recipe.path is None or recipe.path.is_file():
                published.source = recipe.read()
        return published.source

    def saved_releases(self) -> list[str]:
        """The names of the releases saved in the workspace."""
        if not self.releases.is_dir():
            return []
        return sorted(p.name for p in self.releases.iterdir()
                      if p.is_dir() and (p / "release.json").is_file())


def _recipe_json(recipe: Recipe) -> dict[str, Any]:
    return {"source": recipe.source, "path": None if recipe.path is None else str(recipe.path),
            "sensitive": recipe.sensitive, "quasi_identifiers": list(recipe.quasi_identifiers),
            "domains": dict(recipe.domains), "observed": recipe.observed,
            "drop_missing": recipe.drop_missing,
            "all_quasi_identifiers": recipe.all_quasi_identifiers}


def _recipe_from_json(data: dict[str, Any]) -> Recipe:
    return Recipe(source=data["source"], path=None if data["path"] is None else Path(data["path"]),
                  sensitive=data["sensitive"], quasi_identifiers=tuple(data["quasi_identifiers"]),
                  domains=dict(data["domains"]), observed=bool(data["observed"]),
                  drop_missing=bool(data["drop_missing"]),
                  all_quasi_identifiers=bool(data["all_quasi_identifiers"]))
