"""How many threads the engines work on, and the one way they share work among them.

The memory and streaming engines cut their work into independent pieces: the chunks of a batch
(every keyed draw is a function of the row id, `ppdp.plan.keyed`), the parts of a release
(each sorted and written alone), the blocks of a group mechanism (`ppdp.plan.blocks`), the
columns of a file being read. numpy, pyarrow, Polars and hashlib release the GIL in their
heavy calls, so threads work on the rows in parallel without copying them between processes
(docs/performance.md gives the CPU/wall measured); the pieces are cut the same way
whatever the number of workers, and put back in their order, so a release is byte-identical for
every worker count.

The number of workers is, first to last: `using_workers` (the CLI's ``--workers``), the
environment variable ``PPDP_WORKERS``, or the cores this process may run on
(``os.sched_getaffinity``). Work started from inside a worker runs on that worker alone: pools
never nest, so N workers never become N^2 threads.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, TypeVar

from ppdp.errors import SettingError

WORKERS_VARIABLE = "PPDP_WORKERS"
"""The environment variable that sets the number of workers (a positive integer)."""

POLARS_THREADS_VARIABLE = "POLARS_MAX_THREADS"
"""Polars' own setting of its threads, read once, when Polars is imported: the command line
sets it from the workers before it imports Polars."""

T = TypeVar("T")
U = TypeVar("U")

_chosen: ContextVar[int | None] = ContextVar("ppdp_workers", default=None)
_inside = threading.local()


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_workers(workers: object, source: str = "workers") -> int:
    """A number of workers, checked: a positive integer (one clear line otherwise)."""
    if isinstance(workers, str):
        text = workers.strip()
        if not text.isdigit():
            raise SettingError(f"{source} must be a positive integer, not {workers!r}")
        workers = int(text)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SettingError(f"{source} must be a positive integer, not {workers!r}")
    return workers


def worker_count() -> int:
    """The number of workers now: `using_workers`, else ``PPDP_WORKERS``, else the cores."""
    chosen = _chosen.get()
    if chosen is not None:
        return chosen
    variable = os.environ.get(WORKERS_VARIABLE)
    if variable is not None and variable.strip():
        return check_workers(variable, WORKERS_VARIABLE)
    return available_cores()


@contextlib.contextmanager
def using_workers(workers: int | None) -> Iterator[int]:
    """Work on ``workers`` threads inside the block (None: the default, `worker_count`)."""
    if workers is None:
        yield worker_count()
        return
    token = _chosen.set(check_workers(workers))
    try:
        yield _chosen.get() or 1
    finally:
        _chosen.reset(token)


def in_worker() -> bool:
    """Whether this thread is one of the workers (whose work then runs on it alone)."""
    return getattr(_inside, "active", False)


def _as_worker(work: Callable[[T], U]) -> Callable[[T], U]:
    """``work`` as a worker runs it: marked as a worker's, in the context of the thread that
    handed it out (so that `using_workers` holds on the workers too)."""
    context = contextvars.copy_context()

    def run(item: T) -> U:
        _inside.active = True
        try:
            # A copy a call: one context cannot be entered by two threads at once.
            return context.copy().run(work, item)
        finally:
            _inside.active = False
    return run


def threads_for(pieces: int) -> int:
    """Threads to run ``pieces`` independent pieces on: the workers, at most one a piece, one
    inside a worker."""
    return 1 if in_worker() else max(1, min(worker_count(), pieces))


def map_ordered(work: Callable[[T], U], items: Iterable[T], *, ahead: int | None = None
                ) -> Iterator[U]:
    """``work(item)`` of each item, in the items' order, on the workers: at most ``ahead``
    (default: the workers) results computed before the one the caller waits for, so memory is
    bounded by that many results. Errors are raised in order, where the result would have
    been."""
    threads = 1 if in_worker() else worker_count()
    if threads == 1:
        yield from map(work, items)
        return
    window = max(ahead if ahead is not None else threads, 1)
    pending: list[Future[U]] = []
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ppdp-worker") as pool:
        try:
            for item in items:
                pending.append(pool.submit(_as_worker(work), item))
                if len(pending) > window:
                    yield pending.pop(0).result()
            while pending:
                yield pending.pop(0).result()
        finally:
            for future in pending:
                future.cancel()


def run_all(work: Callable[[T], U], items: Sequence[T]) -> list[U]:
    """``work(item)`` of every item, on the workers; the results in the items' order."""
    threads = threads_for(len(items))
    if threads == 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ppdp-worker") as pool:
        return list(pool.map(_as_worker(work), items))


CHUNK_ROWS = 1 << 16
"""Fewest rows of a chunk of a batch: below it, threads cost more than they save."""

MAX_CHUNK_ROWS = 1 << 20
"""Most rows of a chunk of a batch. A chunk's temporaries (8 MB for a column of 64-bit words)
are then reused by the allocator from one chunk to the next; those of a whole 10^7-row table
(80 MB each) were new memory every time, and the kernel zeroing it took a quarter of the CPU
of publishing 10^7 rows in memory."""


def chunk_bounds(n_rows: int, pieces: int) -> list[tuple[int, int]]:
    """At least ``pieces`` consecutive ranges of ``n_rows`` rows (fewer where they would hold
    under `CHUNK_ROWS` rows each) and as many more as keep each under `MAX_CHUNK_ROWS`."""
    pieces = max(1, min(pieces, n_rows // CHUNK_ROWS), -(-n_rows // MAX_CHUNK_ROWS))
    return list(itertools.pairwise(n_rows * piece // pieces for piece in range(pieces + 1)))


def in_chunks(work: Callable[[int, Mapping[str, Any]], T], start: int,
              codes: Mapping[str, Any]) -> list[T]:
    """``work(first row id, codes)`` of a batch cut into chunks (`chunk_bounds`: at least one
    a worker), run on the workers; the results in row order. Keyed draws make the chunks draw
    what the whole batch would."""
    n_rows = len(next(iter(codes.values()))) if codes else 0
    bounds = chunk_bounds(n_rows, threads_for(n_rows))
    if len(bounds) == 1:
        return [work(start, codes)]
    return run_all(lambda rows: work(start + rows[0], {name: values[rows[0]:rows[1]]
                                                       for name, values in codes.items()}),
                   bounds)
