"""Row-local mechanisms as plans: summary passes over the rows, then a kernel per batch.

A row-local mechanism (uniform, sdr, dbr, frapp) is a `RowPlan`: the published schema, zero or
more *passes* over the rows that build small summaries (`ppdp.plan.quotas.QuotaAssignment`
needs two), and a *kernel* that maps one batch of encoded rows, given the id of its first row,
to its published codes. Every random draw is keyed by row id (`ppdp.plan.keyed`), so an engine
may cut the rows into batches of any size and visit them in any order: the memory engine (one
batch, the reference) and the streaming one publish identical files."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ppdp.data.schema import Schema
from ppdp.table.source import DEFAULT_BATCH_ROWS, Source

Kernel = Callable[[Mapping[str, np.ndarray], int], dict[str, np.ndarray]]


class Pass(Protocol):
    """One pass over the rows that builds a small summary (before the kernel runs)."""

    columns: tuple[str, ...]

    @property
    def needed(self) -> bool:
        """Whether this pass must still run (asked before it starts: a pass may find that
        an earlier one already built what it would)."""

    def update(self, start: int, codes: Mapping[str, np.ndarray]) -> None:
        """Take one batch into the summary (safe to call from two threads at once)."""

    def finish(self) -> None:
        """Turn what was taken in into the summary the kernel uses."""

    def taken(self) -> Taken:
        """What the batches taken in so far added up, for `merge` into another copy of the
        pass (an executor whose batches are taken by copies in other processes)."""

    def merge(self, taken: Taken) -> None:
        """Add what a copy of this pass took in (as if its batches had been taken here)."""


@dataclass(frozen=True)
class Taken:
    """What copies of a pass took in, in a form that adds up: a histogram, as the counts of
    its non-empty ``cells`` (summed over copies), and ``rows`` collected (concatenated; 64-bit
    integer columns; each copy's rows distinct from the others')."""

    cells: np.ndarray
    counts: np.ndarray
    rows: dict[str, np.ndarray]


@dataclass
class RowPlan:
    """A row-local mechanism: what it publishes and how each batch of rows is turned into it.

    ``kernel(codes, start)`` returns the published columns of the batch (the codes of
    ``schema``'s columns, and ``extra`` columns such as each row's sub-table). ``passes`` run in
    order, each over every row, before the kernel. ``tables`` are the release's other files
    (small, public), ``parameters`` its public parameters.
    """

    mechanism: str
    schema: Schema
    kernel: Kernel
    parameters: dict[str, Any]
    passes: list[Pass] = field(default_factory=list)
    extra: tuple[str, ...] = ()
    tables: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """What the mechanism needs to build its in-memory release (never written as such)."""

    @property
    def input_columns(self) -> tuple[str, ...]:
        """The columns the kernel and passes read (every published column)."""
        return self.schema.names


def run_passes(passes: Iterable[Pass], source: Source,
               batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
    """Feed every batch of the source to each pass in turn, finishing each before the next
    (a batch of `PARALLEL_ROWS` rows or more in two halves, on two threads)."""
    for step in passes:
        if not step.needed:
            continue
        for start, codes in source.batches(batch_rows, step.columns):
            in_halves(step.update, start, codes)
        step.finish()


PARALLEL_ROWS = 1 << 20
"""Rows of a batch from which passes and the in-memory kernel take it in two halves."""


T = TypeVar("T")


def in_halves(work: Callable[[int, Mapping[str, np.ndarray]], T], start: int,
              codes: Mapping[str, np.ndarray]) -> list[T]:
    """``work(start, codes)`` of a batch, or of its two halves on two threads when it holds
    `PARALLEL_ROWS` rows or more (numpy releases the GIL; draws keyed by row id make two
    halves draw what the whole batch would)."""
    n_rows = len(next(iter(codes.values()))) if codes else 0
    if n_rows < PARALLEL_ROWS:
        return [work(start, codes)]
    half = n_rows // 2
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppdp-half") as pool:
        first = pool.submit(work, start, {name: values[:half] for name, values in codes.items()})
        second = work(start + half, {name: values[half:] for name, values in codes.items()})
        return [first.result(), second]


@dataclass(frozen=True)
class PublishedRows:
    """A row plan's output in release order: code arrays and the rows of each part."""

    codes: dict[str, np.ndarray]
    part_rows: tuple[int, ...]

    @property
    def n_rows(self) -> int:
        return int(sum(self.part_rows))
