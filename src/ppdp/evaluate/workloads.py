"""Query pools of the SPLU-Gen evaluation (Section 6.1) and of Small Domain Randomization
(Appendix 10.9).

Every query has the form ``A1 = a1 AND .. AND Ad = ad AND S = x``: d is uniform on {1, 2, 3},
the Ai are d distinct non-sensitive columns drawn without replacement, each ai is uniform on
its column's domain and x is uniform on the sensitive column's domain. Candidates are drawn in
vectorised batches, answered from contingency tables of the table's codes, and sorted into two
pools by their true count: *small* counts (1 to 10) and *large* counts (selectivity in
[0.5 %, 5 %), the CENSUS setting of Section 6.1).

The SDR pool (Appendix 10.9) draws 200 such conditions on the non-sensitive columns and asks
each of them with every value of the sensitive column; its errors are reported over the queries
whose selectivity reaches 0.1 %, 0.5 % or 1 % (Section 6.1).

The ambiguity pools (ambiguity paper, Section 8.1) put range or IN-list conditions on k
quasi-identifiers and ask for one sensitive value: ``A1 BETWEEN .. AND A2 IN (..) AND S = v``.
Their *selectivity* is that of the quasi-identifier part (the rows of one GROUP BY cell of the
paper's ``SELECT QT1.., COUNT(*) WHERE S = v GROUP BY QT1..``), drawn near 1 %, 5 % or 10 %.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot.tokens import Tokenizer

from ppdp.errors import SchemaError
from ppdp.query import (
    AllOf,
    And,
    Col,
    ColumnSet,
    Compare,
    Cube,
    Lit,
    Query,
    count_histogram,
    flat_key,
    parse_query,
)
from ppdp.randomness import RandomState, make_rng
from ppdp.table import Table

__all__ = ["AMBIGUITY_SELECTIVITIES", "SDR_SELECTIVITIES", "QueryPool", "format_condition",
           "quote_identifier", "quote_literal", "range_pool", "sdr_pool", "splu_pools"]

SMALL_MAX = 10
"""Largest true count of a small-count query (Section 6.1: "no more than 10")."""

LARGE_SELECTIVITY = (0.005, 0.05)
"""Selectivity band [low, high) of a large-count query (Section 6.1, CENSUS)."""

SDR_SELECTIVITIES = (0.001, 0.005, 0.01)
"""Minimum selectivities s over which SDR reports average relative errors (Section 6.1)."""

AMBIGUITY_SELECTIVITIES = (0.01, 0.05, 0.10)
"""Selectivities of the quasi-identifier part of the ambiguity pools (Section 8.1)."""

_BATCH = 50_000
_MAX_CONDITIONS = 3
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class QueryPool:
    """A named pool of count queries with their true answers on the source table."""

    name: str
    queries: tuple[Query, ...]
    truth: np.ndarray

    def __len__(self) -> int:
        return len(self.queries)


def splu_pools(table: Table, *, sensitive: str | None = None, size: int = 5000,
               random_state: RandomState = None, distinct: bool = False,
               max_candidates: int = 2_000_000) -> tuple[QueryPool, QueryPool]:
    """The small-count and large-count query pools of SPLU-Gen Section 6.1 (SDR App. 10.9).

    Draws candidate queries in batches until both pools hold ``size`` queries or
    ``max_candidates`` candidates were drawn; a pool left short triggers a warning. Each query
    is an independent random draw, as in the paper, so a pool may repeat a query; with
    ``distinct=True`` it holds distinct queries only (Adult has 2,129 distinct large-count
    queries, fewer than 5,000). With fewer than three non-sensitive columns, d is uniform on
    {1, .., number of such columns}.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    if isinstance(max_candidates, bool) or not isinstance(max_candidates, int) \
            or max_candidates < 1:
        raise ValueError(f"max_candidates must be a positive integer, got {max_candidates!r}")
    sensitive = _sensitive_column(table, sensitive)
    quasi = _quasi_columns(table, sensitive)
    rng = make_rng(random_state)
    counter = _Counter(table, quasi, sensitive)
    n_rows = table.n_rows
    width = len(quasi) + 1
    accepted = {"small": np.empty((0, width), np.int64), "large": np.empty((0, width), np.int64)}
    truths = {"small": np.empty(0, np.int64), "large": np.empty(0, np.int64)}
    drawn = 0
    while drawn < max_candidates and min(len(a) for a in accepted.values()) < size:
        batch = min(_BATCH, max_candidates - drawn)
        drawn += batch
        rows = _draw(rng, batch, counter.quasi_sizes, counter.sensitive_size)
        truth = counter.counts(rows)
        low, high = LARGE_SELECTIVITY
        bands = {
            "small": (truth >= 1) & (truth <= SMALL_MAX),
            # low <= truth / N < high, in integers: truth >= N / 200 and truth < N / 20.
            "large": (truth * round(1 / low) >= n_rows) & (truth * round(1 / high) < n_rows),
        }
        for name, in_band in bands.items():
            needed = size - len(accepted[name])
            if needed <= 0:
                continue
            fresh = (_new_distinct(accepted[name], rows[in_band]) if distinct
                     else np.arange(int(in_band.sum())))[:needed]
            accepted[name] = np.concatenate([accepted[name], rows[in_band][fresh]])
            truths[name] = np.concatenate([truths[name], truth[in_band][fresh]])
    pools = []
    for name, label in (("small", f"1..{SMALL_MAX}"),
                        ("large", f"selectivity [{LARGE_SELECTIVITY[0]:.1%}, "
                                  f"{LARGE_SELECTIVITY[1]:.0%})")):
        found = len(accepted[name])
        if found < size:
            kind = "distinct " if distinct else ""
            warnings.warn(f"only {found} of {size} {kind}{name}-count queries (true count "
                          f"{label}) found among {drawn} candidates; the {name} pool is short",
                          stacklevel=2)
        queries = tuple(_query(table, quasi, sensitive, row) for row in accepted[name])
        pools.append(QueryPool(name, queries, truths[name].astype(np.float64)))
    return pools[0], pools[1]


def sdr_pool(table: Table, *, sensitive: str | None = None, conditions: int = 200,
             random_state: RandomState = None) -> QueryPool:
    """The count-query pool of Small Domain Randomization, Appendix 10.9.

    ``conditions`` random conditions ``A1 = a1 AND .. AND Ad = ad`` (d uniform on {1, 2, 3},
    distinct non-sensitive columns, values uniform on their domains), each asked with every
    value x of the sensitive column: ``conditions * m`` queries, with their true counts
    (zero counts included; filter by selectivity before taking relative errors).
    """
    if isinstance(conditions, bool) or not isinstance(conditions, int) or conditions < 1:
        raise ValueError(f"conditions must be a positive integer, got {conditions!r}")
    sensitive = _sensitive_column(table, sensitive)
    quasi = _quasi_columns(table, sensitive)
    counter = _Counter(table, quasi, sensitive)
    drawn = _draw(make_rng(random_state), conditions, counter.quasi_sizes, 1)
    m = counter.sensitive_size
    rows = np.repeat(drawn, m, axis=0)
    rows[:, -1] = np.tile(np.arange(m), conditions)
    truth = counter.counts(rows).astype(np.float64)
    queries = tuple(_query(table, quasi, sensitive, row) for row in rows)
    return QueryPool("sdr", queries, truth)


def range_pool(table: Table, *, selectivity: float, attributes: Sequence[int] = (1, 2, 3),
               sensitive: str | None = None, size: int = 500,
               random_state: RandomState = None, max_attempts: int = 100) -> QueryPool:
    """Range / IN-list queries on ``k`` quasi-identifiers (k drawn from ``attributes``) with
    one sensitive value, whose quasi-identifier part selects between ``selectivity / 2`` and
    ``2 * selectivity`` of the rows (ambiguity paper, Section 8.1; see the module doc).

    The conditions are drawn in turn, each keeping about an equal share of the rows the earlier
    ones kept: a run of consecutive values for a numeric column, a random set of values (an IN
    list) otherwise; each leaves out at least one value.
    The sensitive value is uniform on the values present. Queries with a true count of 0 are
    kept (filter them before taking relative errors).
    """
    if not 0 < selectivity < 1:
        raise ValueError(f"selectivity must be in (0, 1), got {selectivity!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    sensitive = _sensitive_column(table, sensitive)
    quasi = _quasi_columns(table, sensitive)
    if not attributes or min(attributes) < 1 or max(attributes) > len(quasi):
        raise ValueError(f"attributes must be between 1 and {len(quasi)} (the quasi-identifiers"
                         f" besides {sensitive!r}), got {list(attributes)}")
    rng = make_rng(random_state)
    cube = table.cube
    present = np.flatnonzero(cube.histogram((sensitive,)))
    queries: list[Query] = []
    truth: list[float] = []
    for _ in range(size * max_attempts):
        if len(queries) == size:
            break
        k = int(rng.choice(attributes))
        columns = [str(c) for c in rng.choice(quasi, size=k, replace=False)]
        # Conditions are drawn one after another on the rows the earlier ones keep, each
        # keeping an equal share of what is left to reach the target.
        rows = np.ones(table.n_rows, dtype=bool)
        luts = {}
        for left, column in zip(range(k, 0, -1), columns, strict=True):
            kept = max(int(rows.sum()), 1)
            keep = min(1.0, (selectivity * table.n_rows / kept) ** (1 / left))
            codes = table.codes[column]
            marginal = np.bincount(codes[rows], minlength=table.schema[column].size) / kept
            luts[column] = _mass_run(marginal, keep, table.schema[column].kind != "string",
                                     rng)
            rows &= luts[column][codes]
        share = rows.sum() / table.n_rows
        # A condition that keeps every value would not involve its attribute.
        if any(lut.all() for lut in luts.values()) \
                or not selectivity / 2 <= share < 2 * selectivity:
            continue
        value = int(rng.choice(present))
        sensitive_lut = np.zeros(table.schema[sensitive].size, dtype=bool)
        sensitive_lut[value] = True
        predicate = AllOf((*(ColumnSet(c, lut) for c, lut in luts.items()),
                           ColumnSet(sensitive, sensitive_lut)))
        truth.append(float(count_histogram(cube, predicate, ())))
        text = " AND ".join([*(_range_text(table, c, lut) for c, lut in luts.items()),
                             format_condition([(sensitive,
                                                table.schema[sensitive].domain[value])])])
        queries.append(parse_query(text))
    if len(queries) < size:
        warnings.warn(f"range pool at selectivity {selectivity:g}: only {len(queries)} of "
                      f"{size} queries found in {size * max_attempts} attempts", stacklevel=2)
    return QueryPool(f"selectivity {selectivity:g}, {'/'.join(map(str, attributes))} "
                     f"attributes", tuple(queries), np.asarray(truth, dtype=np.float64))


def _mass_run(marginal: np.ndarray, keep: float, ordered: bool,
              rng: np.random.Generator) -> np.ndarray:
    """Values of one column holding about ``keep`` of its rows: consecutive ones if
    ``ordered``, else a random set (consecutive in a random order)."""
    order = np.arange(len(marginal)) if ordered else rng.permutation(len(marginal))
    mass = marginal[order]
    end = np.cumsum(mass)
    start = end - mass
    low = rng.uniform(0.0, max(1.0 - keep, 0.0))
    chosen = order[(end > low) & (start < low + keep)]
    lut = np.zeros(len(marginal), dtype=bool)
    lut[chosen] = True
    return lut


def _range_text(table: Table, column: str, lut: np.ndarray) -> str:
    domain = table.schema[column].domain
    codes = np.flatnonzero(lut)
    name = quote_identifier(column)
    if table.schema[column].kind != "string" and codes[-1] - codes[0] + 1 == len(codes):
        return (f"{name} BETWEEN {quote_literal(domain[codes[0]])} AND "
                f"{quote_literal(domain[codes[-1]])}")
    return f"{name} IN ({', '.join(quote_literal(domain[c]) for c in codes)})"


def _quasi_columns(table: Table, sensitive: str) -> list[str]:
    quasi = [name for name in table.schema.quasi_identifiers if name != sensitive]
    if not quasi:
        raise SchemaError("query pools need at least one non-sensitive (quasi-identifier) "
                          "column to put conditions on")
    return quasi


def _sensitive_column(table: Table, sensitive: str | None) -> str:
    if sensitive is not None:
        table.schema[sensitive]  # raises a SchemaError naming the columns if unknown
        return sensitive
    marked = table.schema.sensitive
    if len(marked) != 1:
        what = "no sensitive column" if not marked else f"sensitive columns {list(marked)}"
        raise SchemaError(f"the table has {what}; pass sensitive=NAME to choose the column "
                          f"the queries condition on")
    return marked[0]


def _draw(rng: np.random.Generator, n: int, quasi_sizes: np.ndarray,
          sensitive_size: int) -> np.ndarray:
    """``n`` candidates as rows: code + 1 per non-sensitive column (0: no condition), then x."""
    k = len(quasi_sizes)
    most = min(_MAX_CONDITIONS, k)
    d = rng.integers(1, most + 1, size=n)
    # The first `most` columns of a random permutation per candidate: drawn without replacement.
    columns = np.argsort(rng.random((n, k)), axis=1)[:, :most]
    values = rng.integers(0, quasi_sizes[columns])
    used = np.arange(most) < d[:, None]
    rows = np.zeros((n, k + 1), dtype=np.int64)
    candidate = np.broadcast_to(np.arange(n)[:, None], used.shape)
    rows[candidate[used], columns[used]] = values[used] + 1
    rows[:, k] = rng.integers(0, sensitive_size, size=n)
    return rows


def _new_distinct(accepted: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``rows`` of their first occurrences that are not already accepted."""
    if len(rows) == 0:
        return np.empty(0, dtype=np.int64)
    combined = np.concatenate([accepted, rows])
    _, first = np.unique(combined, axis=0, return_index=True)
    return np.sort(first[first >= len(accepted)]) - len(accepted)


class _Counter:
    """True counts of candidate rows, one contingency table per set of conditioned columns."""

    def __init__(self, table: Table, quasi: Sequence[str], sensitive: str) -> None:
        self.quasi = list(quasi)
        self.sensitive = sensitive
        self.sizes = table.schema.sizes()
        self.quasi_sizes = np.asarray([self.sizes[c] for c in quasi], dtype=np.int64)
        self.sensitive_size = self.sizes[sensitive]
        self.cube = Cube(table.codes, self.sizes, table.n_rows)
        self._sparse: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}

    def counts(self, rows: np.ndarray) -> np.ndarray:
        k = len(self.quasi)
        used = rows[:, :k] > 0
        if k < 63:
            # One integer per set of conditioned columns: sorting integers is far quicker than
            # sorting boolean rows.
            signature = used.astype(np.int64) @ (np.int64(1) << np.arange(k, dtype=np.int64))
            _, first, inverse = np.unique(signature, return_index=True, return_inverse=True)
            patterns = used[first]
        else:
            patterns, inverse = np.unique(used, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        groups = np.split(order, np.cumsum(np.bincount(inverse, minlength=len(patterns)))[:-1])
        truth = np.zeros(len(rows), dtype=np.int64)
        for pattern, members in zip(patterns, groups, strict=True):
            positions = np.flatnonzero(pattern)
            columns = (*(self.quasi[j] for j in positions), self.sensitive)
            codes = [rows[members, j] - 1 for j in positions] + [rows[members, k]]
            truth[members] = self._lookup(columns, codes)
        return truth

    def _lookup(self, columns: tuple[str, ...], codes: list[np.ndarray]) -> np.ndarray:
        if self.cube.fits(columns):
            return self.cube.histogram(columns)[tuple(codes)].astype(np.int64)
        # Too many cells for a dense table: count the rows' occupied cells only.
        if columns not in self._sparse:
            keys = flat_key(self.cube.codes, columns, self.sizes)
            self._sparse[columns] = np.unique(keys, return_counts=True)
        cells, counts = self._sparse[columns]
        wanted = flat_key(dict(zip(columns, codes, strict=True)), columns, self.sizes)
        where = np.minimum(np.searchsorted(cells, wanted), len(cells) - 1)
        return np.where(cells[where] == wanted, counts[where], 0).astype(np.int64)


def _query(table: Table, quasi: Sequence[str], sensitive: str, row: np.ndarray) -> Query:
    pairs = [(name, table.schema[name].domain[int(row[j]) - 1])
             for j, name in enumerate(quasi) if row[j] > 0]
    pairs.append((sensitive, table.schema[sensitive].domain[int(row[-1])]))
    where = And(tuple(Compare("=", Col(name), Lit(value)) for name, value in pairs))
    return Query(where=where, text=format_condition(pairs))


def format_condition(pairs: Sequence[tuple[str, Any]]) -> str:
    """``A1 = a1 AND ..`` as SQL text that ``parse_query`` reads back to the same conditions."""
    return " AND ".join(f"{quote_identifier(name)} = {quote_literal(value)}"
                        for name, value in pairs)


def quote_identifier(name: str) -> str:
    """A column name as SQL: double-quoted unless it is a plain identifier."""
    if _PLAIN_NAME.fullmatch(name) and name.upper() not in Tokenizer.KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: Any) -> str:
    """A domain value as a SQL literal: single-quoted text, TRUE or FALSE, or a number."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return repr(float(value))
    raise ValueError(f"cannot write {value!r} as a SQL literal")
