"""Row-local mechanisms as plans: summary passes over the rows, then a kernel per batch.

A row-local mechanism (uniform, sdr, dbr, frapp) is a `RowPlan`: the published schema, zero or
more *passes* over the rows that build small summaries (`ppdp.plan.quotas.QuotaAssignment`
needs two), and a *kernel* that maps one batch of encoded rows, given the id of its first row,
to its published codes. Every random draw is keyed by row id (`ppdp.plan.keyed`), so an engine
may cut the rows into batches of any size and visit them in any order: the memory engine (one
batch, the reference) and the streaming one publish identical files."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ppdp.data.schema import Schema
from ppdp.table.source import DEFAULT_BATCH_ROWS, Source
from ppdp.workers import in_chunks

Kernel = Callable[[Mapping[str, np.ndarray], int], dict[str, np.ndarray]]


class Pass(Protocol):
    """One pass over the rows that builds a small summary (before the kernel runs)."""

    columns: tuple[str, ...]

    @property
    def needed(self) -> bool:
        """Whether this pass must still run (asked before it starts: a pass may find that
        an earlier one already built what it would)."""

    def update(self, start: int, codes: Mapping[str, np.ndarray]) -> None:
        """Take one batch into the summary (safe to call from several threads at once)."""

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
    (each batch cut into chunks taken on the workers, `ppdp.workers.in_chunks`)."""
    for step in passes:
        if not step.needed:
            continue
        for start, codes in source.batches(batch_rows, step.columns):
            in_chunks(step.update, start, codes)
        step.finish()


@dataclass(frozen=True)
class PublishedRows:
    """A row plan's output in release order: code arrays and the rows of each part."""

    codes: dict[str, np.ndarray]
    part_rows: tuple[int, ...]

    @property
    def n_rows(self) -> int:
        return int(sum(self.part_rows))
