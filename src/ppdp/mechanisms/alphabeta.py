"""The alpha-beta algorithm: random deletion of tuples and insertion of domain tuples
(Rastogi, Suciu, Hong: "The boundary between privacy and utility in data publishing", VLDB
2007, Sections 2 and 4).

The view V keeps each tuple of the table I with probability alpha + beta (alpha-step) and adds
each other tuple of the domain D = D_1 x .. x D_l with probability beta (beta-step). The beta-step
never enumerates D (Algorithm 2): it draws how many tuples to add, r ~ Binomial(m - n, beta), then
uniform tuples of D one attribute at a time, rejecting those in I or already added. A count
query is estimated by ``(n_V - beta n_D)/alpha`` (Algorithm 3), with n_D counted over the domain
by ``ppdp.domain.count_domain``.

Privacy is (d, gamma)-privacy against tuple-independent adversaries whose prior on any tuple is
at most d (Definitions 2.1-2.3): Theorem 4.3 holds when d <= gamma,
``beta/(alpha + beta) >= d(1 - gamma)/(gamma(1 - d))`` and ``alpha + beta <= 1 - d/gamma``. For
d = k n/m the paper chooses alpha + beta = 1/2 and beta = d/gamma = k n/(gamma m)
(Section 4.2).

Rows that repeat a tuple. The paper's I is a set; real tables repeat tuples (Adult's 30,162 rows
hold 19,502 distinct tuples). Here each of the c rows of a tuple is kept with probability
``alpha + beta/c`` (for c = 1 exactly the paper's alpha + beta), so that a tuple contributes
alpha c + beta copies in expectation and the estimator stays unbiased for row counts. A tuple
that appears twice in V was certainly in I: repeated tuples are perfectly correlated, which the
paper's guarantee excludes (Section 6.1), and the guarantee covers tuples that occur once.

Multiple views (Section 4.4.1, Algorithm 4) are published by ``ViewSequence``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.domain import count_domain
from ppdp.errors import InfeasibleError, ReleaseError, SchemaError
from ppdp.mechanisms.base import (
    Mechanism,
    Parameter,
    require_declared_domains,
    require_open_unit,
    require_positive,
    shuffled_positions,
)
from ppdp.query import BoundQuery, Cube, count_histogram
from ppdp.randomness import RandomState, make_rng
from ppdp.release import Release, rows_from_arrow, rows_to_arrow
from ppdp.resources import (
    ALPHABETA_ROW,
    ALPHABETA_TUPLE,
    check_memory,
    format_bytes,
    format_count,
    format_value,
    published_columns,
)
from ppdp.storage import commit_directory, staged_directory
from ppdp.table import Role, Schema, Table

TUPLE_DOMAIN_RISK = (
    "the guarantee is about the presence of tuples, while a release over those domains lists "
    "every value present and draws no tuple with a value that is absent")

MAX_DOMAIN = (1 << 62) - 1
"""The largest domain m supported: tuples are keyed by their index in D as 64-bit integers."""

# -- the paper's conditions -----------------------------------------------------------------


def privacy_parameters(*, k: float, gamma: float, n: int, m: int) -> tuple[float, float, float]:
    """alpha, beta and d for (k n/m, gamma)-privacy (Section 4.2, "Choice of parameters").

    d = k n/m, alpha + beta = 1/2, beta = d/gamma; Theorem 4.3 then holds when d/gamma <= 1/2.
    """
    require_positive("k", k)
    require_open_unit("gamma", gamma)
    d = k * n / m
    if not d < 1:
        raise InfeasibleError(f"d = k n/m = {d:.4g} must be below 1; lower k below {m / n:.4g}")
    beta = d / gamma
    if beta > 0.5:
        raise InfeasibleError(
            f"(d, gamma)-privacy with d = k n/m = {d:.4g} and gamma = {gamma:g} needs beta = "
            f"d/gamma = {beta:.4g} > 1/2 = alpha + beta (Theorem 4.3); raise gamma to at least "
            f"{2 * d:.4g} or lower k to at most {gamma * m / (2 * n):.4g}")
    return 0.5 - beta, beta, d


def public_row_count(n: int, *, k: float, gamma: float) -> int:
    """n rounded up to a multiple of a power of two at least twice the precision to which a
    view's size already reveals n, so that beta = k n'/(gamma m) reveals no more.

    With alpha + beta = 1/2 (Section 4.2) the view holds about n/2 + beta m tuples with a
    spread of sqrt(beta m) = sqrt(k n/gamma), so its size tells n to about
    s = 2 sqrt(k n/gamma); the step is the power of two at or above 2 s. A larger n' means a
    larger d' = k n'/m: the guarantee for d' covers every adversary with prior <= d.
    """
    spread = 2 * math.sqrt(k * n / gamma)
    if not spread < 2.0**62:
        # Beta far above 1/2 whatever the rounding: refused before anything is published.
        return n
    step = 1 << max(0, math.ceil(math.log2(2 * spread)))
    return -(-n // step) * step


def theorem_4_3_violations(*, alpha: float, beta: float, d: float, gamma: float) -> list[str]:
    """The conditions of Theorem 4.3 that (alpha, beta) fail for (d, gamma)-privacy."""
    if d > gamma:
        return [f"d <= gamma fails ({d:.4g} > {gamma:g}): the adversary's prior bound must not "
                f"exceed the posterior bound; raise gamma above {d:.4g} or lower k"]
    failed = []
    needed = d * (1 - gamma) / (gamma * (1 - d))
    if beta / (alpha + beta) < needed:
        failed.append(f"beta/(alpha + beta) >= d(1 - gamma)/(gamma(1 - d)) fails: "
                      f"{beta / (alpha + beta):.4g} < {needed:.4g}; raise beta to at least "
                      f"{needed * alpha / (1 - needed):.4g}")
    if alpha + beta > 1 - d / gamma:
        failed.append(f"alpha + beta <= 1 - d/gamma fails: {alpha + beta:.4g} > "
                      f"{1 - d / gamma:.4g}; lower alpha to at most {1 - d / gamma - beta:.4g}")
    return failed


def usefulness_rho(*, k: float, gamma: float, epsilon: float = 0.05) -> float:
    """rho of (rho, epsilon)-usefulness for the Section 4.2 parameters (Theorem 4.4):
    ``rho = 2 sqrt(2 k (1 - gamma)/gamma ln(2/epsilon))``; the absolute error of any count is
    below rho sqrt(n) with probability at least 1 - epsilon."""
    return 2 * math.sqrt(2 * k * (1 - gamma) / gamma * math.log(2 / epsilon))


# -- the tuple domain -----------------------------------------------------------------------


@dataclass(frozen=True)
class TupleDomain:
    """The domain D of a table's published columns, tuples keyed by their index in D."""

    columns: tuple[str, ...]
    shape: tuple[int, ...]

    @classmethod
    def of(cls, schema: Schema) -> TupleDomain:
        columns = tuple(c.name for c in schema.columns if c.role != Role.IGNORED)
        shape = tuple(schema[c].size for c in columns)
        size = math.prod(shape)
        if size > MAX_DOMAIN:
            # format_count: the size of a domain of many columns does not fit a float.
            raise SchemaError(f"the domain of {len(columns)} columns has {format_count(size)} "
                              f"tuples, more than the 2^62 supported; leave columns out "
                              f"(role 'ignored') or coarsen their domains")
        return cls(columns, shape)

    @property
    def size(self) -> int:
        """m = |D|."""
        return math.prod(self.shape)

    def keys(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.ravel_multi_index(tuple(codes[c] for c in self.columns), self.shape)

    def codes(self, keys: np.ndarray, schema: Schema) -> dict[str, np.ndarray]:
        parts = np.unravel_index(keys, self.shape)
        return {c: p.astype(schema[c].dtype) for c, p in zip(self.columns, parts, strict=True)}

    def sample(self, count: int, excluded: np.ndarray, rng: np.random.Generator,
               source: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """``count`` distinct tuples of D outside the sorted key array ``excluded``, drawn an
        attribute at a time in vectorised batches: uniform (Algorithm 2, steps 3-9) or from the
        per-attribute ``source`` distributions (Algorithm 5, steps 4-10)."""
        accepted = np.empty(0, dtype=np.int64)
        while len(accepted) < count:
            wanted = count - len(accepted)
            batch = wanted + wanted // 8 + 64
            draws = np.zeros(batch, dtype=np.int64)
            for axis, size in enumerate(self.shape):
                values = (rng.integers(0, size, size=batch) if source is None
                          else rng.choice(size, size=batch, p=source[axis]))
                draws = draws * size + values
            # Keep first occurrences in draw order, so that the accepted set is a uniform
            # sample without replacement.
            _, first = np.unique(draws, return_index=True)
            draws = draws[np.sort(first)]
            fresh = ~_contains(excluded, draws) & ~np.isin(draws, accepted)
            accepted = np.concatenate([accepted, draws[fresh][:wanted]])
        return accepted


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """The distinct keys, sorted (a sort is faster than numpy's hashing unique here)."""
    ordered = np.sort(keys)
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if len(ordered) \
        else ordered


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), dtype=bool)
    where = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[where] == keys


# -- the mechanism --------------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaBetaGuarantee:
    """(d, gamma)-privacy (Theorem 4.3) and usefulness (Theorem 4.4) of an alpha-beta view."""

    alpha: float
    beta: float
    gamma: float | None
    k: float | None
    d: float | None
    n: int | None
    m: int | None
    views: int
    rho: float | None
    expected_view_size: float | None

    def to_dict(self) -> dict[str, Any]:
        data = {"mechanism": "alphabeta", **vars(self)}
        data["statement"] = self.statement()
        return data

    def statement(self) -> str:
        if self.d is None or self.gamma is None:
            return (f"alpha = {self.alpha:.4g}, beta = {self.beta:.4g}; give k and gamma (and a "
                    f"table, or n and m) to check (d, gamma)-privacy (Theorem 4.3)")
        text = (f"(d, gamma)-privacy with d = {self.d:.4g} (k n/m) and gamma = {self.gamma:g}: "
                f"against any tuple-independent adversary whose prior on a tuple is at most d, "
                f"the posterior is at most gamma and at least prior*d/gamma (Theorem 4.3)")
        if self.rho is not None:
            text += (f"; every count is within rho sqrt(n) = {self.rho:.4g} sqrt(n) of the truth "
                     f"with probability >= 0.95 (Theorem 4.4)")
        if self.views > 1:
            text += (f"; up to v = {self.views} views of the same table (Algorithm 4, Section "
                     f"4.4.1)")
        return text


class AlphaBeta(Mechanism):
    """The alpha-beta algorithm (Algorithms 1-3), with Algorithm 4 for repeated views."""

    name = "alphabeta"
    summary = ("alpha-beta: keep each tuple with probability alpha + beta, add random domain "
               "tuples with probability beta; (d, gamma)-privacy of whole tuples")
    parameters = (
        Parameter("k", float, "adversary bound d = k n/m (with gamma; Section 4.2)",
                  default=None),
        Parameter("gamma", float, "posterior bound gamma of (d, gamma)-privacy", default=None),
        Parameter("alpha", float, "explicit alpha (with beta; checked against Theorem 4.3 when "
                                  "k and gamma are given)", default=None),
        Parameter("beta", float, "explicit beta (with alpha)", default=None),
        Parameter("v", int, "bound on the number of views of the same table (Algorithm 4)",
                  default=1),
        Parameter("noise", str, "'uniform' (Algorithm 2) or 'marginal': tuples inserted with "
                                "probability proportional to the table's smoothed attribute "
                                "marginals, beta for the most likely (Algorithm 5)",
                  default="uniform"),
        Parameter("max_rows", int, "refuse a view expected to hold more tuples than this (a "
                                   "resource limit, not a privacy parameter; a tuple takes "
                                   "about 100 bytes while publishing)",
                  default=20_000_000, resource=True),
    )
    max_views = 10**6
    """The largest v: later views divide by (alpha + beta)(1 - e^(-1/v)), computed with a
    cancellation that loses about log10(v) of float64's 16 digits (Algorithm 4)."""
    min_alpha = 1e-9
    """The smallest alpha: the estimator divides by alpha, recovered as (alpha + beta) - beta
    (Algorithm 3), which keeps 7 digits of it at this bound."""
    guarantee_uses_table = True
    guarantee_parameters = (
        Parameter("n", int, "number of rows n (taken from the table when one is given)",
                  default=None),
        Parameter("m", int, "domain size m (taken from the table when one is given)",
                  default=None),
    )

    def __init__(self, *, k: float | None = None, gamma: float | None = None,
                 alpha: float | None = None, beta: float | None = None, v: int = 1,
                 noise: str = "uniform", max_rows: int = 20_000_000) -> None:
        explicit = alpha is not None or beta is not None
        if explicit and (alpha is None or beta is None):
            raise ValueError("give both alpha and beta, or neither (then k and gamma)")
        if (k is None) != (gamma is None):
            raise ValueError("give both k and gamma: the privacy is (k n/m, gamma)")
        if not explicit and k is None:
            raise ValueError("alphabeta needs k and gamma ((d, gamma)-privacy with d = k n/m), "
                             "or explicit alpha and beta; e.g. -p k=10 -p gamma=0.2")
        if k is not None:
            require_positive("k", k)
            require_open_unit("gamma", gamma)
        if explicit:
            require_open_unit("alpha", alpha)
            require_open_unit("beta", beta)
            if alpha + beta > 1:
                raise ValueError(f"alpha + beta is a probability; got {alpha + beta:g} > 1")
            if alpha < self.min_alpha:
                raise ValueError(f"alpha must be at least {self.min_alpha:g} for the counts to "
                                 f"be estimated (Algorithm 3 divides by it), got {alpha!r}")
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= self.max_views:
            raise ValueError(f"v (number of views) must be an integer in 1..{self.max_views:,}, "
                             f"got {format_value(v)}")
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ValueError(f"max_rows must be an integer >= 1 (the largest expected view "
                             f"size), got {max_rows!r}")
        if noise not in ("uniform", "marginal"):
            raise ValueError(f"noise must be 'uniform' or 'marginal', got {noise!r}")
        if noise == "marginal" and v > 1:
            raise ValueError("non-uniform noise (Algorithm 5) is for a single view: use v = 1")
        self.k, self.gamma, self.alpha, self.beta, self.v = k, gamma, alpha, beta, v
        self.noise = noise
        self.max_rows = max_rows

    def probabilities(self, n: int, m: int) -> tuple[float, float, float | None]:
        """alpha, beta and d for a table of n rows over a domain of m tuples, checked against
        Theorem 4.3 (InfeasibleError naming the condition that fails)."""
        if self.alpha is None:
            alpha, beta, d = privacy_parameters(k=self.k, gamma=self.gamma, n=n, m=m)
            if alpha < self.min_alpha:
                raise InfeasibleError(
                    f"(d, gamma)-privacy with d = k n/m = {d:.4g} and gamma = {self.gamma:g} "
                    f"leaves alpha = 1/2 - d/gamma = {alpha:.3g}, too small to estimate counts "
                    f"from (at least {self.min_alpha:g}); raise gamma or lower k")
            return alpha, beta, d
        if self.k is None:
            return self.alpha, self.beta, None
        d = self.k * n / m
        failed = theorem_4_3_violations(alpha=self.alpha, beta=self.beta, d=d, gamma=self.gamma)
        if failed:
            raise InfeasibleError(f"alpha = {self.alpha:g}, beta = {self.beta:g} do not give "
                                  f"(d, gamma)-privacy for d = k n/m = {d:.4g}, gamma = "
                                  f"{self.gamma:g}: " + "; ".join(failed))
        return self.alpha, self.beta, d

    def publish(self, table: Table, *, random_state: RandomState = None) -> AlphaBetaRelease:
        """Publish the first view (Algorithm 1); ``views`` continues with Algorithm 4."""
        return self.views(table).publish(random_state=random_state)

    def views(self, table: Table) -> ViewSequence:
        """A sequence of views of ``table`` (Algorithm 4), the first of which is Algorithm 1;
        each view is refused when it is expected to exceed ``max_rows`` tuples."""
        return ViewSequence(self, table)

    def public_probabilities(self, n: int, m: int) -> tuple[float, float, float | None]:
        """alpha, beta and d as published for a table of n rows: with k and gamma, from n
        rounded up by `public_row_count`, since beta = k n/(gamma m) would give n exactly."""
        if self.k is None:
            return self.probabilities(n, m)
        rounded = public_row_count(n, k=self.k, gamma=self.gamma)
        try:
            return self.probabilities(rounded, m)
        except InfeasibleError:
            if self.alpha is not None:
                raise
        raise InfeasibleError(self._infeasible_message(n, rounded, m)) from None

    def _infeasible_message(self, n: int, rounded: int, m: int) -> str:
        """Why k and gamma fail for n rows once n is rounded, and the k or gamma that work."""

        def feasible(k: float, gamma: float) -> bool:
            beta = k * public_row_count(n, k=k, gamma=gamma) / (gamma * m)
            return beta <= 0.5 and 0.5 - beta >= self.min_alpha

        def boundary(low: float, high: float, ok: Callable[[float], bool]) -> float:
            # ok is monotone on [low, high] (the rounded n grows with k, falls with gamma).
            for _ in range(60):
                middle = (low + high) / 2
                low, high = (middle, high) if not ok(middle) else (low, middle)
            return high

        k, gamma = self.k, self.gamma
        largest_k = boundary(0.0, k, lambda x: not feasible(x, gamma))
        beta = k * rounded / (gamma * m)
        text = (f"(d, gamma)-privacy with k = {k:g} and gamma = {gamma:g} needs beta = "
                f"k n'/(gamma m) = {beta:.4g} > 1/2 (Theorem 4.3), where n' = {rounded:,} is the "
                f"row count rounded up so that beta does not reveal it; lower k to at most "
                f"{largest_k * 0.999:.4g}")
        if feasible(k, 1 - 1e-9):
            smallest = boundary(gamma, 1 - 1e-9, lambda x: feasible(k, x))
            text += f" or raise gamma to at least {min(smallest * 1.001, 1 - 1e-9):.4g}"
        return text

    def expected_view_size(self, n: int, m: int, *, earlier: int = 0, view: int = 1) -> float:
        """The expected number of tuples of view ``view`` of a table of n rows over m tuples,
        with ``earlier`` tuples in V': alpha n + beta m for the first (Algorithm 1), and for
        later ones ``(alpha + beta) n + B |V'| + C (m - n - |V'|)`` (Algorithm 4)."""
        alpha, beta, _ = self.public_probabilities(n, m)
        rates = view_rates(alpha, beta, self.v, view)
        return (alpha + beta) * n + rates.earlier * earlier + rates.other * max(
            m - n - earlier, 0)

    def check_view_size(self, table: Table, *, earlier: int = 0, view: int = 1) -> float:
        """Refuse (InfeasibleError) a view expected to hold more than ``max_rows`` tuples
        before any of it is drawn, and warn (``ppdp.resources.MemoryNeedWarning``) when the
        memory it needs is not available; return the expected number of tuples."""
        domain = TupleDomain.of(table.schema)
        n, m = table.n_rows, domain.size
        size = self.expected_view_size(n, m, earlier=earlier, view=view)
        columns = published_columns(table)
        need = ALPHABETA_ROW.need(n, columns) + ALPHABETA_TUPLE.need(size, columns)
        if size > self.max_rows:
            alpha, beta, _ = self.public_probabilities(n, m)
            # A limit with two significant digits at or above the expected size.
            step = 10 ** max(0, math.floor(math.log10(size)) - 1)
            enough = math.ceil(size / step) * step
            how = "alpha n + beta m" if view == 1 else f"view {view}, |V'| = {earlier:,}"
            smaller = "beta" if self.k is None or self.alpha is not None else \
                "beta = k n/(gamma m) (raise gamma or lower k)"
            raise InfeasibleError(
                f"the alpha-beta view would hold about {format_count(size)} tuples ({how} with "
                f"n = {n:,}, m = {format_count(m)}, alpha = {alpha:.4g}, beta = {beta:.4g}) "
                f"and need about {format_bytes(need)} of memory, more than max_rows = "
                f"{self.max_rows:,}; lower {smaller}, or raise the limit if the memory is "
                f"there: max_rows={enough} (CLI: -p max_rows={enough})")
        check_memory(table, self.name, need=need, stacklevel=4)
        return size

    @staticmethod
    def table_size(table: Table | None, n: int | None, m: int | None
                   ) -> tuple[int | None, int | None]:
        """n and m of ``table`` when one is given, else the options n and m, checked."""
        if table is not None:
            return table.n_rows, TupleDomain.of(table.schema).size
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise ValueError(f"n (number of rows) must be an integer >= 0, got {format_value(n)}")
        if m is not None and (isinstance(m, bool) or not isinstance(m, int)
                              or not 1 <= m <= MAX_DOMAIN):
            raise ValueError(f"m (domain size) must be an integer in 1..2^62 - 1, got "
                             f"{format_value(m)}")
        return n, m

    def guarantee(self, table: Table | None = None, *, n: int | None = None,
                  m: int | None = None) -> AlphaBetaGuarantee:
        """Theorem 4.3 (and 4.4 for the Section 4.2 parameters) for a table of n rows over a
        domain of m tuples, with alpha, beta and d as a view publishes them (from n rounded
        up by `public_row_count` when they come from k and gamma)."""
        n, m = self.table_size(table, n, m)
        if n is None or m is None:
            if self.alpha is None:
                raise ValueError("the alpha and beta of k and gamma depend on n and m: give a "
                                 "table (SOURCE) or -p n=... -p m=...")
            alpha, beta, d = self.alpha, self.beta, None
        else:
            alpha, beta, d = self.public_probabilities(n, m)
        rho = (usefulness_rho(k=self.k, gamma=self.gamma)
               if self.k is not None and self.alpha is None else None)
        size = None if n is None or m is None else alpha * n + beta * m
        return AlphaBetaGuarantee(alpha=alpha, beta=beta, gamma=self.gamma, k=self.k, d=d,
                                  n=n, m=m, views=self.v, rho=rho, expected_view_size=size)


# -- views ----------------------------------------------------------------------------------


class ViewSequence:
    """Views of one table: the first by Algorithm 1, the next ones by Algorithm 4.

    For view i, with V' the union of the views published so far and A + B = alpha + beta,
    ``B = (alpha + beta) e^(-1/v)`` and ``C = (1 - alpha - beta)^(i-1) beta``: a tuple of V' not
    in I is inserted with probability B, a tuple outside I and V' with probability C, and a tuple
    of I held by c rows has each row kept with probability ``A + B/c`` if it is in V', else
    ``alpha + beta - C + C/c`` (for c = 1 both are alpha + beta, as in Algorithm 4). ``state``
    (the views published and V') is private to the publisher: ``save_state``/``load_state``.
    """

    def __init__(self, mechanism: AlphaBeta, table: Table, *, published: int = 0,
                 earlier: np.ndarray | None = None) -> None:
        self.mechanism = mechanism
        self.table = table
        self.domain = TupleDomain.of(table.schema)
        require_declared_domains(table, self.domain.columns, "alphabeta", TUPLE_DOMAIN_RISK)
        self.alpha, self.beta, self.d = mechanism.public_probabilities(table.n_rows,
                                                                       self.domain.size)
        self.published = published
        self.earlier = np.empty(0, dtype=np.int64) if earlier is None else np.sort(earlier)
        self._checked_view = 0
        if published < mechanism.v:
            self._check_next_view()

    def _check_next_view(self) -> None:
        """Refuse the next view before drawing it when it would exceed ``max_rows``."""
        self.mechanism.check_view_size(self.table, earlier=len(self.earlier),
                                       view=self.published + 1)
        self._checked_view = self.published + 1

    def publish(self, *, random_state: RandomState = None) -> AlphaBetaRelease:
        """The next view; raises when the bound v on the number of views is reached."""
        v = self.mechanism.v
        if self.published >= v:
            raise InfeasibleError(f"{self.published} views of this table were published, the "
                                  f"bound v = {v} it was set up with; more views would break "
                                  f"the guarantee (publish with a larger v from the start)")
        if self._checked_view != self.published + 1:
            self._check_next_view()
        rng = make_rng(random_state)
        view = self.published + 1
        rates = view_rates(self.alpha, self.beta, v, view)
        keys = self.domain.keys(self.table.codes)
        tuples, row_tuple, multiplicity = np.unique(keys, return_inverse=True,
                                                    return_counts=True)
        in_earlier = _contains(self.earlier, tuples)
        # Per-row keep probability: (A + B/c) for tuples seen before, (A' + C/c) otherwise.
        base = np.where(in_earlier, rates.seen, rates.unseen)
        extra = np.where(in_earlier, rates.earlier, rates.other)
        source = None
        if self.mechanism.noise == "marginal":
            source = source_distribution(self.table, self.domain)
            scale = source_scale(self.beta, source)
            extra = scale * tuple_probability(tuples, self.domain, source)
        keep = rng.random(self.table.n_rows) < (base + extra / multiplicity)[row_tuple]
        kept_keys = keys[keep]
        excluded = _sorted_unique(np.concatenate([tuples, self.earlier]))
        # Tuples of V' - I, each with probability B; other tuples of D by Algorithm 2 with C.
        earlier_only = self.earlier[~_contains(tuples, self.earlier)]
        repeated = earlier_only[rng.random(len(earlier_only)) < rates.earlier]
        outside = self.domain.size - len(excluded)
        if source is None:
            count = int(rng.binomial(outside, rates.other))
        else:
            # Algorithm 5, step 1: the number inserted follows Binomial(m - n, mean beta(t) over
            # D - I); the beta(t) of D - I sum to scale (1 - source(I)).
            mean = scale * (1 - float(np.sum(
                tuple_probability(tuples, self.domain, source)))) / outside
            count = int(rng.binomial(outside, mean))
        noise = self.domain.sample(count, excluded, rng, source)
        view_keys = np.concatenate([kept_keys, repeated, noise])
        view_keys = view_keys[shuffled_positions(len(view_keys), rng)]
        schema = self.table.schema.select(self.domain.columns)
        parameters: dict[str, Any] = {
            "alpha": self.alpha, "beta": self.beta, "k": self.mechanism.k,
            "gamma": self.mechanism.gamma, "v": v, "view": view}
        if source is not None:
            parameters["source"] = {c: [float(x) for x in p]
                                    for c, p in zip(self.domain.columns, source, strict=True)}
        release = AlphaBetaRelease(
            schema, parameters,
            len(view_keys), self.domain.codes(view_keys, schema),
            earlier=self.domain.codes(self.earlier, schema))
        self.earlier = _sorted_unique(np.concatenate([self.earlier, view_keys]))
        self.published = view
        return release

    def save_state(self, directory: str | os.PathLike[str]) -> Path:
        """Write the publisher's private state (views published, V', the table's fingerprint
        and the parameters) atomically, for the next ``load_state``."""
        target = Path(directory)
        with staged_directory(target) as staging:
            pq.write_table(pa.table({"key": self.earlier}), staging / "earlier.parquet")
            state = {"format": STATE_FORMAT, "fingerprint": fingerprint(self.table),
                     "parameters": self.mechanism.parameter_values, "published": self.published}
            (staging / "state.json").write_text(json.dumps(state, indent=2) + "\n")
            commit_directory(staging, target, overwrite=True, replaceable=_require_state)
        return target

    @classmethod
    def load_state(cls, directory: str | os.PathLike[str], mechanism: AlphaBeta,
                   table: Table) -> ViewSequence:
        """Continue a sequence from ``save_state``; the table and parameters must match."""
        root = Path(directory)
        try:
            state = json.loads((root / "state.json").read_text())
            earlier = pq.read_table(root / "earlier.parquet").column("key").to_numpy()
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            raise ReleaseError(f"{root} is not a readable alpha-beta view state: {exc}") from exc
        if state.get("format") != STATE_FORMAT or state.get("fingerprint") != fingerprint(table):
            raise ReleaseError(f"{root} holds the state of another table")
        if state.get("parameters") != mechanism.parameter_values:
            raise ReleaseError(f"the views of this table were published with "
                               f"{state.get('parameters')}; later views must use the same "
                               f"parameters")
        return cls(mechanism, table, published=int(state["published"]), earlier=earlier)


STATE_FORMAT = "ppdp-alphabeta-views-1"


def _require_state(path: Path) -> None:
    """Raise unless ``path`` holds the state of alpha-beta views (and so may be replaced)."""
    try:
        state = json.loads((path / "state.json").read_text())
        ours = isinstance(state, dict) and state.get("format") == STATE_FORMAT and {
            p.name for p in path.iterdir()} <= {"state.json", "earlier.parquet"}
    except (OSError, ValueError, RecursionError):
        ours = False
    if not ours:
        raise ReleaseError(f"{path} is not the state of alpha-beta views; it is left alone: "
                           f"choose another state directory")


def default_state_root() -> Path:
    """Where the private state of alpha-beta views is kept unless told: ``$PPDP_STATE_DIR``,
    else ``$XDG_STATE_HOME/ppdp``, else ``~/.local/state/ppdp``; one place per user, so that
    the views of a table are counted wherever their releases are written."""
    if os.environ.get("PPDP_STATE_DIR"):
        return Path(os.environ["PPDP_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ppdp"


def state_directory(root: str | os.PathLike[str], table: Table) -> Path:
    """The state of the views of ``table`` under ``root``: keyed by the table's tuples alone,
    so that other parameters cannot start a fresh count (they are refused instead)."""
    return Path(root) / f"alphabeta-{fingerprint(table)[:32]}"


def fingerprint(table: Table) -> str:
    """A digest of a table's tuples, to recognise the same data again: the published columns
    with their domains and the multiset of rows, whatever the column roles and the row order
    (alpha-beta ignores roles, and a reordered copy is the same instance)."""
    domain = TupleDomain.of(table.schema)
    columns = [[c, [str(v) for v in table.schema[c].domain]] for c in domain.columns]
    digest = hashlib.sha256(json.dumps(columns).encode())
    digest.update(np.sort(domain.keys(table.codes)).astype(np.int64).tobytes())
    return digest.hexdigest()


def source_distribution(table: Table, domain: TupleDomain) -> list[np.ndarray]:
    """Each attribute's marginal with add-one smoothing, so that every tuple of D can be
    inserted (Algorithm 5's attribute-independent source distribution)."""
    return [(np.bincount(table.codes[c], minlength=size) + 1) / (table.n_rows + size)
            for c, size in zip(domain.columns, domain.shape, strict=True)]


def source_scale(beta: float, source: Sequence[np.ndarray]) -> float:
    """beta(t) = scale source(t): the most likely tuple gets beta, the others less.

    Algorithm 5 makes beta(t) proportional to source(t) but does not fix the constant. An
    adversary whose prior is shaped like the source has prior d on the most likely tuple and
    less on the others; Theorem 4.3 then needs beta(t) >= d(t)/gamma tuple by tuple, which
    ``beta max source / max source`` meets with beta = d/gamma: the same privacy as uniform
    noise with fewer inserted tuples."""
    return beta / math.prod(float(p.max()) for p in source)


def tuple_probability(keys: np.ndarray, domain: TupleDomain,
                      source: Sequence[np.ndarray]) -> np.ndarray:
    """source(t) = p(t.A_1) .. p(t.A_l) for tuples given by their keys."""
    parts = np.unravel_index(keys, domain.shape)
    result = np.ones(len(keys))
    for part, probabilities in zip(parts, source, strict=True):
        result = result * probabilities[part]
    return result


@dataclass(frozen=True)
class ViewRates:
    """Insertion probabilities of Algorithm 4 for one view (see ``ViewSequence``)."""

    seen: float  # A: the alpha of a tuple of I that is in V'
    earlier: float  # B: a tuple of V' (not in I)
    unseen: float  # A': the alpha of a tuple of I not in V'
    other: float  # C: any other tuple of D


def view_rates(alpha: float, beta: float, v: int, view: int) -> ViewRates:
    """The rates of view ``view`` (1-based) of at most v (Algorithm 4; view 1 is Algorithm 1)."""
    keep = alpha + beta
    earlier = keep * math.exp(-1 / v)
    other = (1 - keep) ** (view - 1) * beta
    return ViewRates(seen=keep - earlier, earlier=earlier, unseen=keep - other, other=other)


# -- the release ----------------------------------------------------------------------------


class AlphaBetaRelease(Release):
    """An alpha-beta view: its tuples, alpha, beta and the domains (Algorithm 1, step 4); for
    a view after the first, also V', the union of the earlier views (public already)."""

    mechanism = "alphabeta"

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray],
                 earlier: Mapping[str, np.ndarray] | None = None) -> None:
        super().__init__(schema, parameters, n_rows)
        self.codes = dict(codes)
        self.domain = TupleDomain.of(schema)
        self.earlier = {c: np.asarray(earlier[c]) if earlier else
                        np.empty(0, dtype=schema[c].dtype) for c in schema.names}
        n_earlier = len(self.earlier[schema.names[0]])
        self.rates = view_rates(float(parameters["alpha"]), float(parameters["beta"]),
                                int(parameters.get("v", 1)), int(parameters.get("view", 1)))
        earlier_keys = np.sort(self.domain.keys(self.earlier)) if n_earlier else np.empty(
            0, dtype=np.int64)
        seen = _contains(earlier_keys, self.domain.keys(self.codes)).astype(np.uint8)
        self._cube = Cube({**self.codes, _SEEN: seen}, {**schema.sizes(), _SEEN: 2}, n_rows)
        self._earlier_cube = Cube(self.earlier, schema.sizes(), n_earlier)

    def _tables(self) -> dict[str, pa.Table]:
        tables = {"view": rows_to_arrow(self.schema, self.codes)}
        if int(self.parameters.get("view", 1)) > 1:
            tables["earlier"] = rows_to_arrow(self.schema, self.earlier)
        return tables

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> AlphaBetaRelease:
        codes = rows_from_arrow(schema, tables["view"], n_rows)
        earlier = None
        if "earlier" in tables:
            earlier = rows_from_arrow(schema, tables["earlier"], tables["earlier"].num_rows)
        for name in ("alpha", "beta"):
            value = float(parameters[name])
            if not 0 < value < 1:
                raise ValueError(f"{name} = {value} is not a probability")
        return cls(schema, parameters, n_rows, codes, earlier)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return [self._estimate_one(q) for q in queries]

    def _estimate_one(self, query: BoundQuery) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 3 for one view; after the first, the tuples seen in V' and the others are
        estimated apart (Algorithm 4's rates differ between them) and added."""
        rates = self.rates
        dims = tuple(query.group_by)
        in_view = count_histogram(self._cube, query.predicate, (*dims, _SEEN))
        seen, unseen = in_view[..., 1].astype(float), in_view[..., 0].astype(float)
        n_domain = count_domain(query.predicate, self.schema.sizes(), dims)
        n_earlier = np.asarray(count_histogram(self._earlier_cube, query.predicate, dims),
                               dtype=float)
        # Tuples outside V': kept at A' + C (rows of I), inserted at C (the rest of D - V').
        outside = n_domain - n_earlier
        other = rates.other
        if "source" in self.parameters:
            # Algorithm 5: beta n_D becomes the sum of beta(t) = scale source(t) over Q(D),
            # which is scale times the source probability of the condition.
            source = {c: np.asarray(p) for c, p in self.parameters["source"].items()}
            inserted = source_scale(self.rates.other, list(source.values())) * count_domain(
                query.predicate, self.schema.sizes(), dims, weights=source)
            other = np.divide(inserted, outside, out=np.zeros_like(inserted),
                              where=outside > 0)
        estimate = (unseen - other * outside) / rates.unseen
        variance = bernoulli_variance(estimate, outside, rates.unseen + other,
                                      other) / rates.unseen ** 2
        if self.parameters.get("view", 1) > 1:
            # Tuples of V': kept at A + B (rows of I), repeated at B (the rest of V').
            part = (seen - rates.earlier * n_earlier) / rates.seen
            estimate = estimate + part
            variance = variance + bernoulli_variance(
                part, n_earlier, rates.seen + rates.earlier, rates.earlier) / rates.seen ** 2
        return estimate, np.sqrt(variance)


_SEEN = "\0seen"


def bernoulli_variance(estimate: np.ndarray, total: np.ndarray, inside: Any,
                       outside: Any) -> np.ndarray:
    """Variance of a count over ``total`` candidate tuples when ``estimate`` rows of the table
    are each present with probability ``inside`` and the other candidates with ``outside``.

    ``estimate`` counts rows and ``total`` distinct tuples, so the first is not capped by the
    second: the c rows of one tuple contribute c Bernoulli variances."""
    present = np.maximum(estimate, 0)
    others = np.maximum(total - present, 0)
    return present * inside * (1 - inside) + others * outside * (1 - outside)
