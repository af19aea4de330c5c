"""FRAPP's gamma-diagonal randomization over the whole tuple domain, the comparator of the
alpha-beta paper (Agrawal and Haritsa 2005; alpha-beta paper Section 4.3 and Section 5).

Every row of the table is published as itself with probability p + q and as any other tuple of
the domain D with probability q = (1 - p)/m each (the gamma-diagonal matrix: diagonal p + q,
off-diagonal q): with probability p the row is kept, otherwise it is replaced by a uniform tuple
of D. The view has as many rows as the table. A count is estimated by
``(n_V - (1 - p) n n_D/m)/p``: a row satisfying the condition is published inside it with
probability p + (1 - p) n_D/m, any other row with probability (1 - p) n_D/m.

Parameters for (d, gamma)-privacy. The alpha-beta paper compares the two mechanisms at the same
(d, gamma)-privacy (Section 5) but gives no parameters for FRAPP; they follow from the same
argument as Theorem 4.3 for alpha-beta, on the event "t is in V" for a tuple t that occurs once:

- t in I is in V unless its row moves away and no other row lands on t:
  ``P_in = 1 - (1 - p - q)(1 - q)^(n-1)``; t not in I is in V when some row lands on it:
  ``P_out = 1 - (1 - q)^n``.
- A prior Pr[t] <= d turns into a posterior <= gamma when the likelihood ratio
  ``P_out/P_in >= lambda = d(1 - gamma)/(gamma(1 - d))`` (the condition on beta/(alpha + beta)
  in Theorem 4.3), and seeing t absent lowers the prior by at most the factor d/gamma when
  ``(1 - p - q)/(1 - q) >= d/gamma`` (the condition on alpha + beta).

P_out/P_in falls as p grows, so ppdp takes the largest p meeting both (solved numerically).
With small q, P_out ~ n q and P_in ~ p + n q, giving p ~ gamma/(k (1 - gamma)) for d = k n/m:
the retention, and so the error, scales with k/gamma where alpha-beta's scales with
sqrt(k/gamma) (Section 4.2, "Comparison with randomized response algorithms")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# At import, not when the retention is solved: loading SciPy's BLAS (which scipy.optimize
# needs) waits forever for memory under an address-space limit once a publish has taken the
# room, where at import it fails at once or not at all.
from scipy.optimize import brentq

from ppdp.data.schema import Schema
from ppdp.errors import InfeasibleError
from ppdp.mechanisms.alphabeta.domain import TUPLE_DOMAIN_RISK, TupleDomain
from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
from ppdp.mechanisms.alphabeta.parameters import (
    check_frapp,
    check_frapp_view,
    check_published_columns,
)
from ppdp.mechanisms.alphabeta.release import bernoulli_variance
from ppdp.mechanisms.base import RowMechanism, require_declared_domains
from ppdp.mechanisms.parameters import Parameter
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.resources import Footprint
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import count_histogram
from ppdp.query.domain_count import count_domain
from ppdp.release.base import RowsRelease
from ppdp.table.source import SummarySource
from ppdp.table.table import Table

MIN_RETENTION = 1e-9
"""The smallest retention p for which counts are estimated (the estimator divides by p)."""


def view_presence(p: float, *, n: int, m: int) -> tuple[float, float]:
    """P_in and P_out of the module doc: the chances that a tuple occurring once in the table,
    and one absent from it, are in a view of retention p over a domain of m tuples."""
    q = (1 - p) / m
    stay = math.exp((n - 1) * math.log1p(-q))
    outside = -math.expm1(n * math.log1p(-q))
    # 1 - (1 - p - q) stay, written without the cancellation that makes it 0 when q is
    # below float64's resolution (domains beyond 10^16 tuples).
    inside = -math.expm1((n - 1) * math.log1p(-q)) + (p + q) * stay
    return inside, outside


def frapp_retention(*, k: float, gamma: float, n: int, m: int) -> float:
    """The largest retention p of FRAPP's gamma-diagonal matrix giving (k n/m, gamma)-privacy
    (derivation in the module docstring)."""
    check_frapp(k, gamma)
    if m < 2:
        raise InfeasibleError("the domain holds a single tuple (m = 1): every row is that tuple "
                              "and no randomization can hide it; publish more columns or wider "
                              "domains")
    d = k * n / m
    if not d < gamma:
        raise InfeasibleError(f"(d, gamma)-privacy needs d = k n/m = {d:.4g} below gamma = "
                              f"{gamma:g}; lower k below {gamma * m / n:.4g}")
    needed = d * (1 - gamma) / (gamma * (1 - d))

    def ratio(p: float) -> float:
        inside, outside = view_presence(p, n=n, m=m)
        return outside / inside - needed

    positive = brentq(ratio, 0.0, 1.0 - 1e-15, xtol=1e-15, rtol=1e-12) if ratio(
        1.0 - 1e-15) < 0 else 1.0
    # (1 - p - q)/(1 - q) >= r = d/gamma with q = (1 - p)/m is (1 - p)(1 - 1/m + r/m) >= r.
    negative = 1 - (d / gamma) / ((1 - 1 / m) + (d / gamma) / m)
    retention = float(min(positive, negative))
    # The estimator divides by p, which brentq finds to about 1e-15 absolutely: below
    # MIN_RETENTION it would keep fewer than 6 correct digits.
    if retention < MIN_RETENTION:
        raise InfeasibleError(f"(d, gamma)-privacy with d = k n/m = {d:.4g} and gamma = "
                              f"{gamma:g} leaves FRAPP a retention p = {retention:.3g}, too small "
                              f"to estimate counts from (at least {MIN_RETENTION:g}); lower k, "
                              f"raise gamma or publish over a larger domain")
    return retention


@dataclass(frozen=True)
class FrappGuarantee:
    """(d, gamma)-privacy of FRAPP's gamma-diagonal randomization with retention p."""

    k: float
    gamma: float
    d: float | None
    n: int | None
    m: int | None
    retention: float | None
    diagonal: float | None

    def to_dict(self) -> dict[str, Any]:
        data = {"mechanism": "frapp", **vars(self)}
        data["statement"] = (
            "give a table (or n and m) for the retention" if self.retention is None else
            f"(d, gamma)-privacy with d = {self.d:.4g} (k n/m) and gamma = {self.gamma:g}: each "
            f"row is kept with probability p = {self.retention:.4g}, else replaced by a uniform "
            f"tuple of the domain (the likelihood-ratio conditions of Theorem 4.3 on the event "
            f"that a tuple is in the view)")
        return data


class FRAPP(RowMechanism):
    """FRAPP's gamma-diagonal randomization of whole tuples (alpha-beta paper, Section 4.3)."""

    name = "frapp"
    summary = ("FRAPP: each row kept with probability p, else replaced by a uniform tuple of the "
               "domain; p set for (d, gamma)-privacy")
    # Measured (`ppdp.plan.resources`): 17.1, 23.8 and 53.1 bytes a row for 3, 9 and 24 columns.
    footprint = Footprint(per_row=15, per_column=2)
    parameters = (
        Parameter("k", float, "adversary bound d = k n/m"),
        Parameter("gamma", float, "posterior bound gamma of (d, gamma)-privacy"),
    )
    guarantee_uses_table = True
    guarantee_parameters = AlphaBeta.guarantee_parameters

    def __init__(self, *, k: float, gamma: float) -> None:
        check_frapp(k, gamma)
        self.k, self.gamma = k, gamma

    def release_of(self, plan: RowPlan, rows: PublishedRows) -> FrappRelease:
        """Each row kept with probability p, else a uniform tuple of D, shuffled.

        The view has exactly the table's n rows, so unlike alpha-beta's it cannot outgrow the
        input: only the memory of the copies is stated (``footprint``)."""
        release = FrappRelease(plan.schema, plan.parameters, rows.n_rows, rows.codes)
        release.part_rows = rows.part_rows
        return release

    def row_plan(self, source: SummarySource, key: int) -> RowPlan:
        """The plan: the retention p from n and m, then per row one keyed draw to keep or
        replace it and one per column for the replacing tuple."""
        domain = TupleDomain.of(source.schema)
        require_declared_domains(source, domain.columns, "frapp", TUPLE_DOMAIN_RISK)
        n, m = source.n_rows, domain.size
        p = frapp_retention(k=self.k, gamma=self.gamma, n=n, m=m)
        stream = KeyedStream(key, "replace")
        groups = _column_groups(domain.shape)

        def kernel(codes: Mapping[str, np.ndarray], start: int) -> dict[str, np.ndarray]:
            count = len(codes[domain.columns[0]])
            draws = stream.uniform(start, count, 1 + len(groups))
            replaced = np.flatnonzero(draws[:, 0] >= p)
            rows = {column: codes[column].copy() for column in domain.columns}
            # The replacing tuple: one draw for each group of columns, an index into the
            # product of their domains, read digit by digit (the last column fastest).
            for draw, group in enumerate(groups, start=1):
                sizes = [domain.shape[index] for index in group]
                product = math.prod(sizes)
                tuples = np.minimum((draws[replaced, draw] * product).astype(np.int64),
                                    product - 1)
                for index, size in zip(group[::-1], sizes[::-1], strict=True):
                    tuples, digit = np.divmod(tuples, size)
                    column = domain.columns[index]
                    rows[column][replaced] = digit.astype(rows[column].dtype)
            return rows

        parameters = {"k": self.k, "gamma": self.gamma, "d": self.k * n / m, "retention": p}
        return RowPlan(self.name, source.schema.select(domain.columns), kernel, parameters)

    def guarantee(self, table: Table | None = None, *, n: int | None = None,
                  m: int | None = None) -> FrappGuarantee:
        n, m = AlphaBeta.table_size(table, n, m)
        if n is None or m is None:
            return FrappGuarantee(self.k, self.gamma, None, n, m, None, None)
        p = frapp_retention(k=self.k, gamma=self.gamma, n=n, m=m)
        return FrappGuarantee(self.k, self.gamma, self.k * n / m, n, m, p, p + (1 - p) / m)


_GROUP_TUPLES = 1 << 21
"""Most tuples of a group of columns whose replacing values come from one draw: a 53-bit
uniform draw scaled to 2^21 tuples favours none of them by more than a factor 1 + 2^-32."""


def _column_groups(shape: Sequence[int]) -> list[list[int]]:
    """The columns (by position) in consecutive groups of at most `_GROUP_TUPLES` tuples (a
    larger column alone), so that a replacing tuple takes a few draws rather than one a column
    (Adult's nine columns: two)."""
    groups: list[list[int]] = []
    product = _GROUP_TUPLES + 1
    for index, size in enumerate(shape):
        if product * size > _GROUP_TUPLES:
            groups.append([])
            product = 1
        groups[-1].append(index)
        product *= size
    return groups


class FrappRelease(RowsRelease):
    """A FRAPP view: n randomized rows and the retention p."""

    mechanism = "frapp"

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """k and gamma as `FRAPP` takes them, d below gamma, a retention p in (0, 1], and
        every column in a tuple domain of more than one tuple (`frapp_retention`)."""
        check_frapp_view(dict(parameters))
        check_published_columns(schema, "frapp")
        if TupleDomain.of(schema).size < 2:
            raise ValueError("the domain holds a single tuple (m = 1): FRAPP publishes none")

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        p = float(self.parameters["retention"])
        m = TupleDomain.of(self.schema).size
        results: list[tuple[np.ndarray, np.ndarray | None]] = []
        for query in queries:
            observed = np.asarray(count_histogram(self._cube, query.predicate, query.group_by),
                                  dtype=float)
            landing = (1 - p) * count_domain(query.predicate, self.schema.sizes(),
                                             query.group_by) / m
            estimate = (observed - landing * self.n_rows) / p
            # Rows inside the condition are published in it with p + landing, the others with
            # landing: each a Bernoulli draw.
            variance = bernoulli_variance(estimate, np.full(estimate.shape, float(self.n_rows)),
                                          p + landing, landing) / p ** 2
            results.append((estimate, np.sqrt(variance)))
        return results
