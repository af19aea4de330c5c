"""Anatomy's pair counts: the summary of a release from which every count is answered.

Anatomy's estimate of a query with condition P on the quasi-identifiers and sensitive value x
is ``sum_g c(g, P) * c(g, x) / |g|`` (Small Domain Randomization, Appendix 10.10). Over the
distinct quasi-identifier rows k it is ``sum_k [P(k)] * E(k, x)``, where
``E(k, x) = sum_g n(k, g) * c(g, x) / |g|`` and ``n(k, g)`` counts the QIT rows of group g
that hold k. Grouping the groups by their size s::

    E(k, x) = sum_s T(k, x, s) / s,    T(k, x, s) = sum_{g : |g| = s} n(k, g) * c(g, x)

``T`` counts pairs (a QIT row, one of the ST's units of its group): whole numbers, which add
up exactly block by block and in any order, so every engine writes the same file from the
same release. As the values of each group's ST units add up to its size,
``n(k) = sum_s sum_x T(k, x, s) / s`` exactly: the quasi-identifier counts are ``T``'s too.

The publisher writes ``T`` as ``pair_counts.parquet`` (`PAIR_COUNTS`): each distinct
(k, x, s), the quasi-identifiers and the sensitive value dictionary-encoded as the QIT and the
ST store them, the group size in `SIZE_COLUMN` and ``T`` in ``__count``
(`ppdp.query.row_counts.COUNT_COLUMN`), sorted by codes. On Adult's shape it is small
(10^7 rows of Anatomy with l = 3: 165,227 lines against 3 * 10^7 pairs), so a loaded release
counts from it without reading its QIT or ST (they are read when asked for). It holds only
what anyone holding the QIT and the ST can compute from them. A release whose pairs hold more
than `ppdp.query.row_counts.MAX_COUNTED_ROWS` distinct lines is written without it, and
loading reads the QIT and the ST as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.query.codes import pack_codes, sorted_distinct, unpack_codes
from ppdp.query.cube import Cube
from ppdp.query.row_counts import COUNT_COLUMN, RowCounter
from ppdp.release.arrow import rows_from_arrow
from ppdp.workers import run_all

PAIR_COUNTS = "pair_counts"
"""The stem of the file of Anatomy's pair counts."""

SIZE_COLUMN = "__group_size"
"""The column of ``pair_counts.parquet`` that holds the size s of the pairs' groups."""

PAIR_CHUNK_ROWS = 1 << 18
"""QIT rows whose pairs are counted at once: about 30 MB of pairs for l = 3."""


def count_pair_parts(schema: Schema, qit: Mapping[str, np.ndarray], qit_groups: np.ndarray,
                     st: Sequence[np.ndarray], n_groups: int) -> list[Any]:
    """``T`` of the QIT's rows in chunks (`PAIR_CHUNK_ROWS`), counted on the workers, each as
    `RowCounter.count_part` gives it: to be added up with `RowCounter.add`. ``schema``: the
    quasi-identifiers and the sensitive column, in the order of the file's columns."""
    st_groups, st_values, st_counts = (np.asarray(a) for a in st)
    per_group = np.bincount(st_groups, minlength=n_groups)
    first_line = np.cumsum(per_group) - per_group
    sizes = np.bincount(st_groups, weights=st_counts, minlength=n_groups).astype(np.int64)
    sensitive = schema[schema.sensitive[0]]
    quasi = [schema[name] for name in schema.quasi_identifiers]
    radix = [column.size for column in quasi]
    n_values = sensitive.size
    # The sizes groups have, numbered (few: l to 2l - 1).
    size_values = sorted_distinct(sizes[per_group > 0])
    # Each ST line as (value, size number) in one code, the lines of each group one after
    # the other (the ST lists them by group already: no sort then), so that a pair costs
    # two gathers of adjacent lines.
    lines = None if np.all(st_groups[1:] >= st_groups[:-1]) \
        else np.argsort(st_groups, kind="stable")
    in_order = (lambda a: a) if lines is None else (lambda a: a[lines])
    size_number = np.zeros(int(size_values.max(initial=0)) + 1, dtype=np.int64)
    size_number[size_values] = np.arange(len(size_values))
    line_codes = (in_order(st_values).astype(np.int64) * len(size_values)
                  + size_number[sizes[in_order(st_groups)]])
    line_counts = None if np.all(st_counts == 1) else in_order(st_counts)

    def count(start: int) -> Any:
        rows = slice(start, start + PAIR_CHUNK_ROWS)
        groups = qit_groups[rows]
        # The chunk's distinct quasi-identifier rows, numbered: each pair is then a cell
        # (row number, value, size) of a dense table, summed by one bincount, and only the
        # distinct rows are spelled out again.
        keys = pack_codes([qit[column.name][rows] for column in quasi], radix)
        distinct, number = _numbered(keys)
        lengths = per_group[groups]
        first = first_line[groups]
        n_cells = len(number) and (int(number.max()) + 1) * n_values * len(size_values)
        base = number * (n_values * len(size_values))
        cells, weights = [], []
        # The j-th ST line of each row's group, for every j: a pass per line of the largest
        # group, over the rows whose group has that many lines.
        fewest = int(lengths.min(initial=0))
        for j in range(int(lengths.max(initial=0))):
            if j < fewest:
                line = first + j
                cells.append(base + line_codes[line])
            else:
                has = lengths > j
                line = first[has] + j
                cells.append(base[has] + line_codes[line])
            weights.append(np.ones(len(line)) if line_counts is None else line_counts[line])
        found, totals = _summed(np.concatenate(cells) if cells else np.zeros(0, np.int64),
                                np.concatenate(weights) if weights else np.zeros(0), n_cells)
        rest, found_sizes = np.divmod(found, len(size_values))
        row_numbers, found_values = np.divmod(rest, n_values)
        codes = unpack_codes([key[row_numbers] for key in distinct], radix)
        pairs = pa.table(
            [*(column.dictionary_array(values) for column, values in zip(quasi, codes,
                                                                          strict=True)),
             sensitive.dictionary_array(found_values),
             pa.array(size_values[found_sizes].astype(np.uint32), pa.uint32())],
            names=[*(column.name for column in quasi), sensitive.name, SIZE_COLUMN])
        return RowCounter().count_part(pairs, weights=totals)

    return run_all(count, list(range(0, max(len(qit_groups), 1), PAIR_CHUNK_ROWS)))


class PairCounts:
    """Anatomy's counts read from ``T`` (`PAIR_COUNTS`): `plain`, the quasi-identifier
    counts n(k), and `expected`, the expected counts E(k, x), each a weighted `Cube` over the
    distinct rows.

    Construction checks ``T`` against the release it claims to summarize: every value in its
    domain, every count and group size positive and every group at least ``l`` rows,
    ``sum_x T(k, x, s)`` a multiple of s (each group's units add up to its size), ``n_rows``
    QIT rows in all, and ``n_groups`` groups (``sum_{k, x} T(k, x, s) = s^2 * G_s`` for the
    ``G_s`` groups of size s). As for the counts of a rows release's distinct rows
    (`ppdp.query.row_counts`), this catches accidents; the release's digests cover the file.
    """

    def __init__(self, schema: Schema, table: pa.Table, *, n_rows: int, n_groups: int,
                 l: int) -> None:  # noqa: E741 - the paper's symbol
        (sensitive,) = schema.sensitive
        names = [*schema.quasi_identifiers, sensitive]
        for name in (SIZE_COLUMN, COUNT_COLUMN):
            if name not in table.column_names:
                raise ValueError(f"{PAIR_COUNTS} has no column {name!r}")
        codes = rows_from_arrow(schema.select(names), table.select(names), table.num_rows)
        sizes = table.column(SIZE_COLUMN).to_numpy().astype(np.int64)
        counts = table.column(COUNT_COLUMN).to_numpy().astype(np.int64)
        if len(counts) and (counts.min() < 1 or sizes.min() < l):
            raise ValueError(f"{PAIR_COUNTS} holds a count below 1 or a group of fewer than "
                             f"l = {l} rows")
        domain_sizes = schema.sizes()
        quasi = schema.quasi_identifiers
        # Each distinct k (and, for the expected counts, (k, x)) numbered in code order.
        plain_id, plain_first = _runs([codes[name] for name in quasi], len(counts))
        _, expected_first = _runs([codes[name] for name in names], len(counts))
        by_size = sorted_distinct(sizes)
        # n_s(k) = sum_x T(k, x, s) / s, whole: counted per (k, s) as whole numbers.
        cell = plain_id * len(by_size) + np.searchsorted(by_size, sizes)
        units = np.bincount(cell, weights=counts, minlength=len(plain_first) * len(by_size))
        per_size = by_size[np.arange(len(units)) % len(by_size)] if len(units) else by_size
        if np.any(units % per_size):
            raise ValueError(f"{PAIR_COUNTS} does not add up to whole groups")
        plain_counts = (units // per_size).reshape(-1, len(by_size)).sum(axis=1) \
            if len(by_size) else np.zeros(0)
        if int(plain_counts.sum()) != n_rows:
            raise ValueError(f"{PAIR_COUNTS} counts {int(plain_counts.sum())} QIT rows, not "
                             f"{n_rows}")
        pairs_by_size = np.bincount(np.searchsorted(by_size, sizes), weights=counts,
                                    minlength=len(by_size))
        if np.any(pairs_by_size % (by_size * by_size)) \
                or int((pairs_by_size // (by_size * by_size)).sum()) != n_groups:
            raise ValueError(f"{PAIR_COUNTS} does not hold the release's {n_groups} groups")
        self.plain = Cube({name: codes[name][plain_first] for name in quasi},
                          {name: domain_sizes[name] for name in quasi}, len(plain_first),
                          weights=plain_counts.astype(np.float64))
        # E(k, x) = sum_s T(k, x, s) / s, summed over the sizes in ascending order (the
        # file's order), the same whoever reads the file.
        expected = np.add.reduceat(counts / sizes, expected_first) if len(counts) \
            else np.zeros(0)
        self.expected = Cube({name: codes[name][expected_first] for name in names},
                             {name: domain_sizes[name] for name in names},
                             len(expected_first), weights=expected)


def _runs(columns: Sequence[np.ndarray], length: int) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by ``columns`` (lexicographically): each row's run of equal values,
    numbered from 0, and the first row of each run."""
    change = np.zeros(length, dtype=bool)
    if length:
        change[0] = True
    for values in columns:
        change[1:] |= values[1:] != values[:-1]
    return np.cumsum(change) - 1, np.flatnonzero(change)


def _summed(cells: np.ndarray, weights: np.ndarray, n_cells: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct cells (below ``n_cells``), in order, and the sum of their weights (whole
    numbers): by a dense count where the cells are few against the pairs, else by a sort."""
    if n_cells <= 4 * len(cells) + (1 << 16):
        totals = np.bincount(cells, weights=weights, minlength=n_cells)
        found = np.flatnonzero(totals)
        return found, totals[found].astype(np.int64)
    order = np.argsort(cells, kind="stable")
    ordered = cells[order]
    starts = np.flatnonzero(np.diff(ordered, prepend=-1))
    return ordered[starts], np.add.reduceat(weights[order].astype(np.int64), starts) \
        if len(starts) else np.zeros(0, np.int64)


def _numbered(keys: Sequence[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of packed keys (`pack_codes`), as keys in order, and each row's
    number among them (by one sort: a search of each key took twice as long)."""
    order = np.lexsort(keys[::-1]) if len(keys) > 1 else np.argsort(keys[0])
    ordered = [key[order] for key in keys]
    change = np.zeros(len(order), dtype=bool)
    change[:1] = True
    for key in ordered:
        change[1:] |= key[1:] != key[:-1]
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.cumsum(change) - 1
    return [key[change] for key in ordered], number
