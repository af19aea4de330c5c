"""The release order and its parts: published rows shuffled by keyed ranks.

Row r gets a keyed 64-bit rank (stream ``"rank"``), rows are published in the order of
(rank, r), and a release of more than `ROWS_PER_PART` rows is cut into parts by rank, part
``floor(u * parts)`` for ``u = rank / 2^64``, so that each part can be sorted on its own and the
parts, in order, are the whole sorted table."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppdp.plan.keyed import KeyedStream

ROWS_PER_PART = 1 << 22
"""Rows per Parquet part of a release (on average): a part is sorted in memory on its own."""


def part_count(n_rows: int) -> int:
    """How many parts a release of ``n_rows`` rows is written in."""
    return max(1, math.ceil(n_rows / ROWS_PER_PART))


def row_ranks(key: int, start: int, count: int) -> np.ndarray:
    """The keyed 64-bit ranks that order rows ``start .. start + count - 1`` in the release."""
    return KeyedStream(key, "rank").raw(start, count)


def part_of(ranks: np.ndarray, parts: int) -> np.ndarray:
    """The part of each rank: ``floor(rank / 2^64 * parts)``, non-decreasing in the rank."""
    if parts == 1:
        return np.zeros(len(ranks), dtype=np.int64)
    return (ranks >> np.uint64(11)).astype(np.float64).__mul__(parts * 2.0 ** -53) \
        .astype(np.int64)


def in_release_order(columns: Mapping[str, np.ndarray], ranks: np.ndarray,
                     row_ids: np.ndarray | None = None,
                     order: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The rows (code arrays by column) sorted by rank, equal ranks by row id (``row_ids``, or
    the positions themselves when the rows are in row-id order); ``order``, if given, is
    their `rank_order`, found beforehand."""
    if order is None:
        order = rank_order(ranks, row_ids)
    if len(order) < POLARS_ROWS:
        return {name: np.asarray(values)[order] for name, values in columns.items()}
    import polars as pl

    # Polars gathers every column on all cores: four times numpy's fancy indexing.
    ordered = pl.DataFrame({name: np.asarray(values) for name, values in columns.items()})[
        pl.Series(order)]
    return {name: ordered.get_column(name).to_numpy() for name in columns}


POLARS_ROWS = 1 << 18
"""Rows from which the release order is sorted and gathered by Polars (on all cores); fewer
are sorted by numpy, as fast at that size, without importing Polars (0.1-0.2 s of a small
command's start). Both give the same order: the words sorted are distinct."""


def rank_order(ranks: np.ndarray, row_ids: np.ndarray | None = None) -> np.ndarray:
    """Positions of the rows in release order: by rank, equal ranks by row id (see
    `in_release_order`)."""
    ranks = np.asarray(ranks, dtype=np.uint64)
    if len(ranks) < 2:
        return np.arange(len(ranks), dtype=np.int64)
    # One 64-bit word a row: the rank's leading bits (above the smallest rank: a part's ranks
    # share their top bits), then the row's position; the words are distinct, so their order
    # is the release order, and it falls out of the low bits. One array of words, worked on in
    # place and sorted in place by numpy, which becomes the order itself: each array of 8
    # bytes a row is new memory the kernel must clear, which cost more than the sort (measured
    # on 10^7 rows, one core: 1.0 CPU-s with Polars' sort of a copy and four such arrays, 0.4
    # this way).
    position_bits = (len(ranks) - 1).bit_length()
    low = ranks.min()
    span_bits = int(ranks.max() - low).bit_length()
    shift = np.uint64(max(span_bits - (64 - position_bits), 0))
    words = np.subtract(ranks, low)
    words >>= shift
    words <<= np.uint64(position_bits)
    for start in range(0, len(words), _CHUNK):
        part = words[start:start + _CHUNK]
        part |= np.arange(start, start + len(part), dtype=np.uint64)
    words.sort()
    positions = np.uint64((1 << position_bits) - 1)
    # Equal leading bits (about n^2 / 2^(65 - position bits) pairs of rows), where two
    # neighbours differ only in their positions.
    previous, following = words[:-1], words[1:]
    equal = np.concatenate([
        start + np.flatnonzero((following[start:start + _CHUNK]
                                ^ previous[start:start + _CHUNK]) <= positions)
        for start in range(0, len(following), _CHUNK)])
    words &= positions
    order = words.view(np.int64)
    if equal.size and (shift or row_ids is not None):
        # Those runs of rows are put in order again by their whole rank, then by row id.
        at = np.union1d(equal, equal + 1)
        run = np.cumsum(np.concatenate([[1], np.diff(at) > 1]))
        rows = order[at]
        ids = rows if row_ids is None else np.asarray(row_ids)[rows]
        order[at] = rows[np.lexsort((ids, ranks[rows], run))]
    return order


_CHUNK = 1 << 20
"""Rows of the temporaries of `rank_order` (8 MB): small enough for malloc to reuse them."""


def split_parts(table: Any, part_rows: Sequence[int] | None) -> Any:
    """A published Arrow table as its parts (a list), or itself when it has one part."""
    if part_rows is None or len(part_rows) <= 1:
        return table
    bounds = np.concatenate([[0], np.cumsum(part_rows)])
    return [table.slice(int(a), int(b - a)) for a, b in itertools.pairwise(bounds)]
