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

The ambiguity pools (ambiguity paper, Section 8.1) ask for one sensitive value v under
conditions on k quasi-identifiers, in three forms: *range* (``A1 BETWEEN a AND b AND .. AND
S = v``, runs of consecutive values on ordered columns only, `ordered_range_pool`), *IN-list*
(``A1 IN (..) AND .. AND S = v``, value sets on any column, `in_list_pool`) and *GROUP BY*
(every non-empty cell of the paper's ``SELECT QT1.., COUNT(*) WHERE S = v GROUP BY QT1..`` as
one query ``QT1 = a1 AND .. AND S = v``, `group_by_pool`). A query's *selectivity* is that of
its quasi-identifier part, drawn near 1 %, 5 % or 10 %; for GROUP BY, the mean over a
statement's cells (see `group_by_pool`). `range_pool` mixes the first two forms by column
type (runs on numbers, sets on text).
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
from ppdp.query.cube import Cube, count_histogram, flat_key
from ppdp.query.predicates import AllOf, ColumnSet
from ppdp.query.syntax import And, Between, Col, Compare, Condition, In, Lit, Query
from ppdp.randomness import RandomState, make_rng
from ppdp.table.table import Table

__all__ = ["AMBIGUITY_SELECTIVITIES", "SDR_SELECTIVITIES", "QueryPool", "format_condition",
           "group_by_pool", "in_list_pool", "ordered_range_pool", "quote_identifier",
           "quote_literal", "range_columns", "range_pool", "sdr_pool", "splu_pools"]

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
    list) otherwise; each leaves out at least one value. `ordered_range_pool` and
    `in_list_pool` keep to one form of condition.
    The sensitive value is uniform on the values present. Queries with a true count of 0 are
    kept (filter them before taking relative errors).
    """
    return _conjunction_pool(table, "mixed", selectivity, attributes, sensitive, size,
                             random_state, max_attempts)


def ordered_range_pool(table: Table, *, selectivity: float,
                       attributes: Sequence[int] = (1, 2, 3), sensitive: str | None = None,
                       size: int = 500, random_state: RandomState = None,
                       max_attempts: int = 100) -> QueryPool:
    """Range queries: runs of consecutive values on ``k`` ordered quasi-identifiers and one
    sensitive value, the quasi-identifier part selecting ``selectivity / 2`` to
    ``2 * selectivity`` of the rows (ambiguity paper, Section 8.1).

    Only numeric and ordered-text columns (`range_columns`) take conditions, so ``attributes``
    may not exceed their number (Adult has one, age). Drawn as `range_pool` draws its numeric
    conditions; pool name ``"range, selectivity s, k attributes"``.
    """
    return _conjunction_pool(table, "range", selectivity, attributes, sensitive, size,
                             random_state, max_attempts)


def in_list_pool(table: Table, *, selectivity: float, attributes: Sequence[int] = (1, 2, 3),
                 sensitive: str | None = None, size: int = 500,
                 random_state: RandomState = None, max_attempts: int = 100) -> QueryPool:
    """IN-list queries: a random set of values on each of ``k`` quasi-identifiers and one
    sensitive value, the quasi-identifier part selecting ``selectivity / 2`` to
    ``2 * selectivity`` of the rows (ambiguity paper, Section 8.1).

    Any quasi-identifier takes a set, numeric ones too (a set, not a run: the values are
    drawn in a random order), always written ``A IN (..)``; pool name
    ``"IN-list, selectivity s, k attributes"``.
    """
    return _conjunction_pool(table, "in-list", selectivity, attributes, sensitive, size,
                             random_state, max_attempts)


def range_columns(table: Table, sensitive: str | None = None) -> list[str]:
    """The quasi-identifiers a range condition can take: numbers and ordered text."""
    sensitive = _sensitive_column(table, sensitive)
    return [name for name in _quasi_columns(table, sensitive) if _is_ordered(table, name)]


def _is_ordered(table: Table, name: str) -> bool:
    column = table.schema[name]
    # A boolean has two values: a run that leaves one out is an equality, not a range.
    return column.kind in ("int", "float") or column.ordered


_POOL_LABELS = {"range": "range, ", "in-list": "IN-list, ", "mixed": ""}


def _conjunction_pool(table: Table, form: str, selectivity: float,
                      attributes: Sequence[int], sensitive: str | None, size: int,
                      random_state: RandomState, max_attempts: int) -> QueryPool:
    """The pools of conjunctions (Section 8.1): ``form`` is ``"range"`` (runs on ordered
    columns), ``"in-list"`` (value sets on any column) or ``"mixed"`` (runs on numeric
    columns, sets on the others)."""
    _check_pool_arguments(selectivity, size)
    sensitive = _sensitive_column(table, sensitive)
    quasi = _quasi_columns(table, sensitive)
    eligible = range_columns(table, sensitive) if form == "range" else quasi
    if not attributes or min(attributes) < 1 or max(attributes) > len(eligible):
        what = "ordered quasi-identifiers" if form == "range" else "quasi-identifiers"
        raise ValueError(f"attributes must be between 1 and {len(eligible)} (the {what} "
                         f"besides {sensitive!r}: {eligible}), got {list(attributes)}")
    ordered = {name: form == "range" or (form == "mixed"
                                         and table.schema[name].kind != "string")
               for name in eligible}
    rng = make_rng(random_state)
    present = np.flatnonzero(table.cube.histogram((sensitive,)))
    queries: list[Query] = []
    truth: list[float] = []
    for _ in range(size * max_attempts):
        if len(queries) == size:
            break
        k = int(rng.choice(attributes))
        columns = [str(c) for c in rng.choice(eligible, size=k, replace=False)]
        # Conditions are drawn one after another on the rows the earlier ones keep, each
        # keeping an equal share of what is left to reach the target.
        conjunction = _Conjunction(table)
        for left, column in zip(range(k, 0, -1), columns, strict=True):
            counts = conjunction.counts(column)
            kept = max(int(counts.sum()), 1)
            keep = min(1.0, (selectivity * table.n_rows / kept) ** (1 / left))
            conjunction.add(column, _mass_run(counts / kept, keep, ordered[column], rng))
        luts = dict(conjunction.luts)
        share = int(conjunction.counts()) / table.n_rows
        # A condition that keeps every value would not involve its attribute.
        if any(lut.all() for lut in luts.values()) \
                or not selectivity / 2 <= share < 2 * selectivity:
            continue
        value = int(rng.choice(present))
        sensitive_lut = np.zeros(table.schema[sensitive].size, dtype=bool)
        sensitive_lut[value] = True
        conjunction.add(sensitive, sensitive_lut)
        truth.append(float(conjunction.counts()))
        # Built as parse_query would read the text: an IN list of an income's thousand values
        # takes far longer to parse than to write.
        parts = [_set_condition(table, c, lut, between=form != "in-list")
                 for c, lut in luts.items()]
        label = table.schema[sensitive].domain[value]
        parts.append((Compare("=", Col(sensitive), Lit(label)),
                      format_condition([(sensitive, label)])))
        queries.append(Query(where=And(tuple(c for c, _ in parts)),
                             text=" AND ".join(t for _, t in parts)))
    name = f"{_POOL_LABELS[form]}selectivity {selectivity:g}, " \
           f"{'/'.join(map(str, attributes))} attributes"
    if len(queries) < size:
        warnings.warn(f"pool {name!r}: only {len(queries)} of {size} queries found in "
                      f"{size * max_attempts} attempts", stacklevel=3)
    return QueryPool(name, tuple(queries), np.asarray(truth, dtype=np.float64))


def group_by_pool(table: Table, *, selectivity: float, attributes: Sequence[int] = (1, 2, 3),
                  sensitive: str | None = None, size: int = 500,
                  random_state: RandomState = None, max_attempts: int = 2000) -> QueryPool:
    """The cells of ``SELECT QT1.., COUNT(*) FROM data WHERE S = v GROUP BY QT1..`` as count
    queries (ambiguity paper, Section 8.1).

    Each statement takes ``k`` quasi-identifiers at random (k drawn from ``attributes``) and
    a sensitive value v uniform on the values present; every cell with a positive count is
    one query ``QT1 = a1 AND .. AND S = v``, so a statement's truths add up to the rows of
    ``S = v``. Statements are distinct and whole: the pool stops at the first statement that
    brings it to ``size`` queries or more.

    Selectivity: a query's is that of its quasi-identifier part (the rows of its cell), as
    for the other ambiguity pools, and a statement's is the mean over its cells, kept when it
    lies in ``[selectivity / 2, 2 * selectivity)``. A statement's cells hold at most all the
    rows, so that mean is at most 1 / (number of cells): the band keeps the attribute sets
    with about 1 / selectivity occupied cells (100 at 1 %, 10 at 10 %), while single cells
    may lie far from it. The paper ties its three batches to the selectivities 1/5/10 %
    without saying whose share that is; the share of ``S = v`` would not depend on the
    attributes grouped by, so it could not tell the batches apart.
    """
    _check_pool_arguments(selectivity, size)
    sensitive = _sensitive_column(table, sensitive)
    quasi = _quasi_columns(table, sensitive)
    if not attributes or min(attributes) < 1 or max(attributes) > len(quasi):
        raise ValueError(f"attributes must be between 1 and {len(quasi)} (the quasi-identifiers"
                         f" besides {sensitive!r}), got {list(attributes)}")
    rng = make_rng(random_state)
    # A statement looks up a few cells: a dense table larger than the rows is not worth it.
    counter = _Counter(table, quasi, sensitive, dense_cells=table.n_rows)
    sizes = counter.sizes
    values = table.codes[sensitive]
    # The rows of each sensitive value, as slices of one order: a statement reads only its
    # value's rows.
    by_value = np.argsort(values, kind="stable")
    per_value = np.bincount(values, minlength=counter.sensitive_size)
    ends = np.cumsum(per_value)
    present = np.flatnonzero(per_value)
    seen: set[tuple[frozenset[str], int]] = set()
    queries: list[Query] = []
    truth: list[np.ndarray] = []
    held = 0
    for _ in range(max_attempts):
        if held >= size:
            break
        k = int(rng.choice(attributes))
        columns = tuple(str(c) for c in rng.choice(quasi, size=k, replace=False))
        value = int(rng.choice(present))
        if (frozenset(columns), value) in seen:
            continue
        seen.add((frozenset(columns), value))
        rows = by_value[ends[value] - per_value[value]:ends[value]]
        keys = flat_key({c: table.codes[c][rows] for c in columns}, columns, sizes)
        cells, counts = np.unique(keys, return_counts=True)
        codes = np.unravel_index(cells, tuple(sizes[c] for c in columns))
        # One division of integers: a share on the band's edge stays on the side it is on.
        share = int(counter.lookup(columns, list(codes)).sum()) / (len(cells) * table.n_rows)
        if not selectivity / 2 <= share < 2 * selectivity:
            continue
        label = (sensitive, table.schema[sensitive].domain[value])
        for cell in zip(*codes, strict=True):
            pairs = [(c, table.schema[c].domain[int(code)])
                     for c, code in zip(columns, cell, strict=True)]
            queries.append(Query(where=And(tuple(Compare("=", Col(n), Lit(v))
                                                 for n, v in (*pairs, label))),
                                 text=format_condition([*pairs, label])))
        truth.append(counts)
        held += len(cells)
    name = f"GROUP BY, selectivity {selectivity:g}, {'/'.join(map(str, attributes))} " \
           f"attributes"
    if held < size:
        warnings.warn(f"pool {name!r}: only {held} of {size} queries from the statements "
                      f"found in {max_attempts} attempts", stacklevel=2)
    return QueryPool(name, tuple(queries),
                     np.concatenate([np.empty(0, np.int64), *truth]).astype(np.float64))


class _Conjunction:
    """The rows meeting a conjunction of value sets, as its conditions are added.

    Counted from the table's cached contingency tables while the one over the conditions'
    columns has no more cells than the table has rows; beyond, building and slicing it would
    cost more than reading the rows (a column of thousands of values, such as an income,
    times two others), and the rows met are kept as positions that each further condition
    narrows.
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self.sizes = table.schema.sizes()
        self.luts: dict[str, np.ndarray] = {}
        self.rows: np.ndarray | None = None

    def add(self, column: str, lut: np.ndarray) -> None:
        self.luts[column] = lut
        if self.rows is not None:
            self.rows = self.rows[lut[self.table.codes[column][self.rows]]]

    def counts(self, by: str | None = None) -> np.ndarray:
        """The rows met, counted by the values of column ``by`` (one count without it)."""
        dims = () if by is None else (by,)
        if self.rows is None:
            cells = np.prod([self.sizes[c] for c in {*self.luts, *dims}], dtype=np.float64)
            if not self.luts or cells <= self.table.n_rows:
                predicate = AllOf(tuple(ColumnSet(c, lut) for c, lut in self.luts.items()))
                return np.asarray(count_histogram(self.table.cube, predicate, dims))
            self.rows = np.flatnonzero(np.logical_and.reduce(
                [lut[self.table.codes[c]] for c, lut in self.luts.items()]))
        if by is None:
            return np.asarray(len(self.rows))
        return np.bincount(self.table.codes[by][self.rows], minlength=self.sizes[by])


def _check_pool_arguments(selectivity: float, size: int) -> None:
    if not 0 < selectivity < 1:
        raise ValueError(f"selectivity must be in (0, 1), got {selectivity!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")


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


def _set_condition(table: Table, column: str, lut: np.ndarray, *, between: bool
                   ) -> tuple[Condition, str]:
    """The condition ``column IN (..)`` on the values of ``lut``, and its SQL text; with
    ``between``, a run of consecutive numbers as ``column BETWEEN a AND b``."""
    domain = table.schema[column].domain
    codes = np.flatnonzero(lut)
    name = quote_identifier(column)
    if between and table.schema[column].kind != "string" \
            and codes[-1] - codes[0] + 1 == len(codes):
        low, high = domain[codes[0]], domain[codes[-1]]
        return (Between(Col(column), Lit(low), Lit(high)),
                f"{name} BETWEEN {quote_literal(low)} AND {quote_literal(high)}")
    values = [domain[c] for c in codes]
    return (In(Col(column), tuple(Lit(v) for v in values)),
            f"{name} IN ({', '.join(quote_literal(v) for v in values)})")


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

    def __init__(self, table: Table, quasi: Sequence[str], sensitive: str, *,
                 dense_cells: float = float("inf")) -> None:
        self.dense_cells = dense_cells
        """Largest contingency table counted densely (and at most the cube's limit)."""
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
            truth[members] = self.lookup(columns, codes)
        return truth

    def lookup(self, columns: tuple[str, ...], codes: list[np.ndarray]) -> np.ndarray:
        """The rows in the cells ``codes`` (one code array per column) of ``columns``."""
        if self.cube.fits(columns) \
                and np.prod([self.sizes[c] for c in columns], dtype=np.float64) \
                <= self.dense_cells:
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
