"""Engines: what runs a mechanism's plan and counts a saved release, chosen in one place.

A mechanism declares the shape of its plan (``plan_shape``, DESIGN "Plans and engines"):

* ``"rows"``: row-local (uniform, sdr, dbr, frapp): a `ppdp.plan.rows.RowPlan`, summary passes
  then a kernel per batch of rows, every draw keyed by row id;
* ``"blocks"``: group mechanisms (splu, anatomy, ambiguity): the rows cut into blocks of
  exact proportional quotas (`ppdp.plan.blocks`), each published in memory by the
  mechanism's ``publish_block``;
* ``"steps"``: steps of its own (Mondrian's partitioning, alpha-beta's views), which each
  engine runs with the mechanism's public steps;
* ``"session"``: a query session over the data (laplace): counts through the engine's source.

An engine runs every shape on the data it takes (`Engine`): the memory engine a `Table` (the
reference), the streaming engine a `Source` read in batches (or a polars LazyFrame), the Spark
engine a Spark DataFrame. `publish` picks the engine (`engine_for`), and `choose_engine` the
engine that reads a file or folder given by name (``auto``: by its size): the only places
where that is decided. Engines register here by name (`ENGINE_MODULES`, `register_engine`) and
are imported when first asked for: nothing below `ppdp.engines` imports one.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, Protocol

from ppdp.errors import ReleaseError
from ppdp.plan.resources import available_memory
from ppdp.query.cache import file_identity
from ppdp.randomness import RandomState

PLAN_SHAPES = ("rows", "blocks", "steps", "session")
"""The shapes of plan a mechanism may declare (its ``plan_shape``)."""

ENGINE_MODULES: dict[str, str] = {
    "memory": "ppdp.engines.memory",
    "streaming": "ppdp.engines.streaming",
    "spark": "ppdp.engines.spark",
}
"""The module of each engine by name, in the order `engine_for` asks them whether they take
some data; each module's ``ENGINE`` is the engine."""

STREAMING_FILE_BYTES = 512 << 20
"""Files at least this large are read by the streaming engine under ``auto`` (`choose_engine`)."""


class Planned(Protocol):
    """A mechanism as engines see it: its name and the shape of its plan."""

    name: ClassVar[str]
    plan_shape: ClassVar[str]


class Published(Protocol):
    """What an engine's publish gives when it does not hold the release in memory: ``save``
    runs the rest of the work and writes the release directory, ``release.json`` last,
    atomically; the directory."""

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        ...


class Engine(Protocol):
    """Runs plans of every shape and counts saved releases.

    ``open`` turns data, or a path with reading options, into what the engine publishes from
    (a Table, a Source); the ``publish_*`` methods take that, a ``random_state`` (the release
    key is made from it: `ppdp.plan.keyed.make_key`) and the engine's options (batch sizes,
    progress). The same key gives the same release files on every engine (Spark: the same
    answers where its files differ by design).
    """

    name: str

    batched: bool
    """Whether the engine reads its input batch by batch: ``open`` and the ``publish_*``
    methods then take ``batch_rows``, and the ``publish_*`` methods and its views'
    ``publish_to`` a ``progress(stage, done, total)`` callback told how far each pass has
    got."""

    reads_snapshots: bool
    """Whether the releases it loads read their files only through the descriptors that
    `ppdp.release.load` opened (`ppdp.io.snapshot`), so that a writer replacing the directory
    changes nothing they count; Spark's tasks read by path."""

    def takes(self, data: object) -> bool:
        """Whether this engine publishes ``data`` as it is (`engine_for` asks)."""
        ...

    def read_options(self, source: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
        """Of ``options`` for reading ``source``, an input given by name (a file, a folder or
        a bundled dataset, `ppdp.datasets`) with `ppdp.io.read_table`'s options and
        ``batch_rows``, those that ``open`` takes; an input or an option this engine cannot
        honour is refused in one line, before any work."""
        ...

    def command(self) -> AbstractContextManager[str | None]:
        """What the engine holds for the length of one command (Spark: its session, started
        when none is active and stopped after, a failure inside Spark turned into one line);
        it gives where the work runs when that is not this process, to tell the user
        (``"on Spark, master local[*]"``), else None."""
        ...

    def open(self, data: Any, **options: Any) -> Any:
        """``data`` (or the file or folder it names, read with ``options``: roles, domains,
        reading rules) as this engine's input."""
        ...

    def publish_rows(self, mechanism: Any, data: Any, *, random_state: RandomState = None,
                     **options: Any) -> Any:
        """Run a row-local mechanism's plan (``mechanism.row_plan``)."""
        ...

    def publish_blocks(self, mechanism: Any, data: Any, *, random_state: RandomState = None,
                       **options: Any) -> Any:
        """Publish a group mechanism block by block (``mechanism.publish_block``)."""
        ...

    def publish_steps(self, mechanism: Any, data: Any, *, random_state: RandomState = None,
                      **options: Any) -> Any:
        """Run a mechanism's own steps (Mondrian, alpha-beta's first view)."""
        ...

    def views(self, mechanism: Any, data: Any) -> Any:
        """A sequence of alpha-beta views of ``data`` (Algorithm 4), whose ``publish_to``
        writes the next view."""
        ...

    def prepare_load(self, release_class: Any, stems: Iterable[str]) -> frozenset[str]:
        """Get ready to load a release of ``release_class`` whose files have these stems (Spark:
        find or start its session); the stems this engine counts from without reading them
        into memory (`load_release` passes their paths)."""
        ...

    def rebuild(self, release_class: Any, schema: Any, parameters: Mapping[str, Any],
                n_rows: int, tables: Mapping[str, Any], scans: ScannedFiles) -> Any:
        """A saved release, from its tables read into memory and the files of its scanned
        stems, counting with this engine."""
        ...

    def cube(self, paths: Sequence[Path], domains: Mapping[str, Any], n_rows: int, *,
             constants: Sequence[str] = (), digests: Mapping[Any, str] | None = None,
             row_counts: Any = None, opened: Sequence[os.PathLike[str]] | None = None) -> Any:
        """A cube (`ppdp.query.cube.Cube`) counting over published rows left in their files
        (read through ``opened``, the files opened on loading, when given)."""
        ...


class ScannedFiles(dict[str, list[Path]]):
    """The files of a loaded release's scanned stems (stem: its parts, in order), with what
    counting over them needs: the engine, the files' verified digests by identity, the
    counts of the distinct rows that the publisher wrote (`ppdp.query.row_counts`), and,
    for an engine that `reads_snapshots`, the files as they were opened and verified
    (`ppdp.io.snapshot.SnapshotFile`, by stem), to read them through."""

    def __init__(self, paths: Mapping[str, Sequence[Path]], engine: Engine, *,
                 digests: Mapping[Any, str] | None = None, row_counts: Any = None,
                 opened: Mapping[str, Sequence[os.PathLike[str]]] | None = None) -> None:
        super().__init__({stem: list(files) for stem, files in paths.items()})
        self.engine = engine
        self.digests = digests
        self.row_counts = row_counts
        self.opened = opened

    def readable(self, stem: str) -> list[os.PathLike[str]]:
        """Where to read the files of ``stem``: as opened on loading, or by path while each
        is still the file verified then (a `ReleaseError` once replaced or changed)."""
        if self.opened:
            return list(self.opened[stem])
        for path in self[stem]:
            try:
                verified = self.digests is not None and file_identity(path) in self.digests
            except OSError:
                verified = False
            if not verified:
                raise ReleaseError(f"{path} was changed, replaced or removed since the release "
                                   f"was loaded; load the release again")
        return list(self[stem])

    def cube(self, stem: str, domains: Mapping[str, Any], n_rows: int, *,
             constants: Sequence[str] = ()) -> Any:
        """The engine's cube over the rows of ``stem`` (domains: each column's values in code
        order)."""
        return self.engine.cube(self[stem], domains, n_rows, constants=constants,
                                digests=self.digests, row_counts=self.row_counts,
                                opened=self.opened[stem] if self.opened else None)


def register_engine(name: str, module: str) -> None:
    """Make the engine ``module.ENGINE`` known as ``name`` (imported when first asked for);
    it joins the engines `engine_for` asks, after those registered before it."""
    if not name.isidentifier():
        raise ValueError(f"an engine name is an identifier, not {name!r}")
    ENGINE_MODULES[name] = module


def get_engine(name: str) -> Engine:
    """The engine registered as ``name``."""
    try:
        module = ENGINE_MODULES[name]
    except KeyError:
        raise ValueError(f"engine must be one of {', '.join(ENGINE_MODULES)}, not "
                         f"{name!r}") from None
    engine: Engine = importlib.import_module(module).ENGINE
    return engine


def engine_choices() -> tuple[str, ...]:
    """The names `choose_engine` takes: ``auto`` and every registered engine."""
    return ("auto", *ENGINE_MODULES)


def choose_engine(name: str, source: str | os.PathLike[str]) -> str:
    """The engine that reads ``source``, a file or folder, or a bundled dataset's name: the
    one ``name`` names, or for ``auto`` the streaming engine for a file of
    `STREAMING_FILE_BYTES` or more or more than an eighth of the memory available, else the
    memory engine."""
    if name not in engine_choices():
        raise ValueError(f"engine must be one of {', '.join(engine_choices())}, not {name!r}")
    if name != "auto":
        return name
    path = Path(source)
    if not path.is_file():
        return "memory"
    size = path.stat().st_size
    available = available_memory()
    # A table in memory takes several times its compressed file while it is read and copied.
    if size >= STREAMING_FILE_BYTES or (available is not None and 8 * size > available):
        return "streaming"
    return "memory"


def engine_for(data: object, name: str | None = None) -> Engine:
    """The engine that publishes ``data``: the one named, else the first registered that takes
    it (a Table or a pandas, polars or Arrow table in memory: memory; a Source or a polars
    LazyFrame: streaming; a Spark DataFrame: spark)."""
    if name is not None:
        engine = get_engine(name)
        return engine
    for registered in ENGINE_MODULES:
        engine = get_engine(registered)
        if engine.takes(data):
            return engine
    kind = type(data).__name__ if type(data).__module__ == "builtins" else \
        f"{type(data).__module__}.{type(data).__name__}"
    raise TypeError(f"no engine publishes a {kind}: "
                    f"publish a ppdp Table (ppdp.read_table), a pandas or polars DataFrame or "
                    f"an Arrow table, a source read in batches (ppdp.io.scan_table: a CSV or "
                    f"Parquet file or a polars LazyFrame) or a Spark DataFrame")


def publish(mechanism: Planned, data: Any, *, engine: str | None = None,
            random_state: RandomState = None, **options: Any) -> Any:
    """Publish ``data`` with ``mechanism`` on the engine named, or the one that takes the data
    (`engine_for`): the plan of the mechanism's shape, run by the engine, with the engine's
    ``options`` (for the data: roles and domains of a Spark DataFrame or a LazyFrame; for the
    work: ``batch_rows``, ``progress``)."""
    runner = engine_for(data, engine)
    shape = mechanism.plan_shape
    if shape == "rows":
        return runner.publish_rows(mechanism, data, random_state=random_state, **options)
    if shape == "blocks":
        return runner.publish_blocks(mechanism, data, random_state=random_state, **options)
    if shape == "steps":
        return runner.publish_steps(mechanism, data, random_state=random_state, **options)
    if shape == "session":
        # A session counts when it is asked, so there is no progress to report.
        options.pop("progress", None)
        batch_rows = options.pop("batch_rows", None)
        return mechanism.session(runner.open(data, **options),  # type: ignore[attr-defined]
                                 random_state=random_state, batch_rows=batch_rows)
    raise ValueError(f"{mechanism.name} declares an unknown plan shape {shape!r}; one of "
                     f"{', '.join(PLAN_SHAPES)}")
