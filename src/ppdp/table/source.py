"""Where a mechanism's rows come from: a Table in memory, or a file or LazyFrame scanned in batches.

Both kinds of source answer the same three questions, which is all a mechanism's plan asks:
the schema (roles and domains), the number of rows, and contingency tables (``histogram``),
and both hand out the encoded rows as batches ``(first row id, codes by column)``. A row's id
is its position among the rows read (after any rows with missing values are dropped), so the
keyed draws of `ppdp.keyed` give the same release from either source.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import Enum, auto
from typing import Protocol, TypeVar

import numpy as np

from ppdp.data.schema import Schema
from ppdp.table.table import Table

Batch = tuple[int, Mapping[str, np.ndarray]]
"""A batch of rows: the id of its first row, and its code arrays by column."""

DEFAULT_BATCH_ROWS = 1 << 20

T = TypeVar("T")


class _End(Enum):
    """The end of an iterator (a one-member enum, so that ``is _END`` narrows the item)."""

    END = auto()


_END = _End.END


def read_ahead(items: Iterable[T]) -> Iterator[T]:
    """The items of an iterable, each next one produced on a thread while this one is used.

    Reading and decoding a batch (Arrow, Parquet) releases the GIL, so the next batch is read
    on the other core while the caller works on this one. Errors are raised where the item
    would have been."""
    iterator = iter(items)
    # The items are produced in this thread's context (the number of workers chosen for it,
    # `ppdp.workers.using_workers`); one item at a time, so the context is never entered twice.
    context = contextvars.copy_context()

    def produce() -> T | _End:
        return context.run(next, iterator, _END)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppdp-read") as pool:
        pending = pool.submit(produce)
        while True:
            item = pending.result()
            if item is _END:
                return
            pending = pool.submit(produce)
            yield item


class SummarySource(Protocol):
    """Rows as summary passes see them: a schema, a row count and contingency tables (a Spark
    DataFrame is no more: its rows stay in Spark)."""

    schema: Schema
    n_rows: int

    def histogram(self, columns: Sequence[str]) -> np.ndarray:
        """Counts over the product of the columns' domains (a 0-d array for no columns)."""


class Source(SummarySource, Protocol):
    """Rows to publish: a schema, a row count, contingency tables and batches of codes."""

    name: str | None

    def batches(self, batch_rows: int = DEFAULT_BATCH_ROWS,
                columns: Sequence[str] | None = None) -> Iterator[Batch]:
        """The rows in order, at most ``batch_rows`` at a time (a file's batches end where
        its row groups or blocks do)."""


class MarginalSource:
    """A source that counted every column's values on opening (``_marginals``) and keeps each
    table over several columns once counted: subclasses give `_count`, and set ``schema``,
    ``n_rows``, ``_marginals`` and ``_histograms`` (an empty dict)."""

    schema: Schema
    n_rows: int
    _marginals: dict[str, np.ndarray]
    _histograms: dict[tuple[str, ...], np.ndarray]

    def histogram(self, columns: Sequence[str]) -> np.ndarray:
        """Counts over the product of the columns' domains (each table counted once)."""
        columns = tuple(columns)
        if not columns:
            return np.asarray(self.n_rows)
        if len(columns) == 1:
            return self._marginals[columns[0]]
        if columns not in self._histograms:
            sizes = [self.schema[c].size for c in columns]
            self._histograms[columns] = self._count(columns, sizes).reshape(sizes)
        return self._histograms[columns]

    def _count(self, columns: tuple[str, ...], sizes: list[int]) -> np.ndarray:
        """The flat counts of every combination of the columns' codes (row-major)."""
        raise NotImplementedError


class TableSource:
    """A Table in memory as a Source (the reference every other source is checked against)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.schema = table.schema
        self.n_rows = table.n_rows
        self.name = table.name

    def histogram(self, columns: Sequence[str]) -> np.ndarray:
        return self.table.cube.histogram(tuple(columns))

    def batches(self, batch_rows: int = DEFAULT_BATCH_ROWS,
                columns: Sequence[str] | None = None) -> Iterator[Batch]:
        names = self.schema.names if columns is None else tuple(columns)
        for start in range(0, self.n_rows, batch_rows):
            yield start, {n: self.table.codes[n][start:start + batch_rows] for n in names}
