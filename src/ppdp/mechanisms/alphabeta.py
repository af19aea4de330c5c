"""The alpha-beta algorithm: random deletion of tuples and insertion of domain tuples
(Rastogi, Suciu, Hong: "The boundary between privacy and utility in data publishing", VLDB
2007, Sections 2 and 4).

The view V keeps each tuple of the table I with probability alpha + beta (alpha-step) and adds
each other tuple of the domain D = D_1 x .. x D_l with probability beta (beta-step). The beta-step
never enumerates D (Algorithm 2): D's tuples are numbered 0 .. m - 1 and cut into chunks of
consecutive numbers; in each chunk of s tuples it draws how many to take, Binomial(s, beta), then
that many distinct uniform tuples of the chunk, and drops those in I. Every tuple of D - I is so
inserted independently with probability beta, as Algorithm 2's Binomial(m - n, beta) uniform
tuples of D - I are. A count query is estimated by ``(n_V - beta n_D)/alpha`` (Algorithm 3),
with n_D counted over the domain by ``ppdp.domain.count_domain``.

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

Keyed draws. Every random draw of a view is a pure function of the release key
(`ppdp.keyed.make_key`), the view number v and a row id or a chunk of D (``ViewDraws``): row r
of the table is kept by draw r of stream ``view{v}/retain``; the beta-step cuts D into chunks of
consecutive keys, each drawn from a generator of its own (stream ``view{v}/noise``) and then
rid of the tuples of I and of earlier views; the published rows are ordered by a keyed rank
(stream ``view{v}/rank``, ties by id) and cut into parts as `ppdp.plans` does for every
mechanism. So ``AlphaBeta.publish_source`` writes, batch by batch, the very files that
``publish`` and `Release.save` write from a table in memory, whatever the batches and their
order. The key is never written: not to a release, not to the views' state.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.domain import count_domain
from ppdp.errors import InfeasibleError, ReleaseError, SchemaError
from ppdp.keyed import KeyedStream, make_key
from ppdp.mechanisms.base import (
    Mechanism,
    Parameter,
    Progress,
    require_declared_domains,
    require_open_unit,
    require_positive,
)
from ppdp.plans import in_release_order, part_count, part_of, split_parts
from ppdp.query import BoundQuery, Cube, count_histogram
from ppdp.randomness import RandomState
from ppdp.release import (
    Release,
    check_target,
    part_names,
    require_replaceable_release,
    rows_from_arrow,
    rows_to_arrow,
    write_metadata,
    write_parquet,
    write_parts,
)
from ppdp.resources import (
    ALPHABETA_ROW,
    ALPHABETA_TUPLE,
    check_memory,
    format_bytes,
    format_count,
    format_value,
    published_columns,
)
from ppdp.sources import DEFAULT_BATCH_ROWS, Batch, Source, TableSource
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
        # Last column fastest, as ``keys``; divmod is twice as fast as np.unravel_index here.
        parts, rest = {}, np.asarray(keys, dtype=np.int64)
        for column, size in zip(self.columns[:0:-1], self.shape[:0:-1], strict=True):
            rest, parts[column] = np.divmod(rest, size)
        parts[self.columns[0]] = rest
        return {c: parts[c].astype(schema[c].dtype) for c in self.columns}


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

    def check_view_size(self, table: Table | Source, *, earlier: int = 0,
                        view: int = 1) -> float:
        """Refuse (InfeasibleError) a view expected to hold more than ``max_rows`` tuples
        before any of it is drawn, and warn (``ppdp.resources.MemoryNeedWarning``) when the
        memory it needs in memory is not available (a source is published on disk); return
        the expected number of tuples."""
        n, m = table.n_rows, TupleDomain.of(table.schema).size
        size = self.expected_view_size(n, m, earlier=earlier, view=view)
        if not isinstance(table, Table):
            self._refuse_beyond_max_rows(n, m, size, earlier=earlier, view=view)
            return size
        columns = published_columns(table)
        need = ALPHABETA_ROW.need(n, columns) + ALPHABETA_TUPLE.need(size, columns)
        self._refuse_beyond_max_rows(n, m, size, earlier=earlier, view=view, memory=need)
        check_memory(table, self.name, need=need, stacklevel=4)
        return size

    def _refuse_beyond_max_rows(self, n: int, m: int, size: float, *, earlier: int = 0,
                                view: int = 1, memory: int | None = None) -> None:
        """Refuse a view of ``size`` expected tuples beyond ``max_rows``, stating the memory it
        needs when it is built in memory."""
        if size <= self.max_rows:
            return
        alpha, beta, _ = self.public_probabilities(n, m)
        # A limit with two significant digits at or above the expected size.
        step = 10 ** max(0, math.floor(math.log10(size)) - 1)
        enough = math.ceil(size / step) * step
        how = "alpha n + beta m" if view == 1 else f"view {view}, |V'| = {earlier:,}"
        smaller = "beta" if self.k is None or self.alpha is not None else \
            "beta = k n/(gamma m) (raise gamma or lower k)"
        need = "" if memory is None else f" and need about {format_bytes(memory)} of memory"
        room = "disk space" if memory is None else "memory"
        raise InfeasibleError(
            f"the alpha-beta view would hold about {format_count(size)} tuples ({how} with "
            f"n = {n:,}, m = {format_count(m)}, alpha = {alpha:.4g}, beta = {beta:.4g})"
            f"{need}, more than max_rows = {self.max_rows:,}; lower {smaller}, or raise the "
            f"limit if the {room} is there: max_rows={enough} (CLI: -p max_rows={enough})")

    def publish_source(self, source: Source, directory: str | os.PathLike[str], *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       overwrite: bool = False, progress: Progress | None = None) -> Path:
        """Publish the first view of a source's rows straight into a release directory
        (Algorithms 1-2, and 5 for marginal noise), batch by batch; the directory.

        Like ``publish``, it keeps no state of views: `ViewSequence.publish_to` continues a
        sequence. See there for the passes, memory and ``progress``."""
        return ViewSequence(self, source).publish_to(
            directory, random_state=random_state, batch_rows=batch_rows, overwrite=overwrite,
            progress=progress)

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

    def __init__(self, mechanism: AlphaBeta, table: Table | Source, *, published: int = 0,
                 earlier: np.ndarray | None = None) -> None:
        self.mechanism = mechanism
        self.table = table
        self._distinct: tuple[np.ndarray, np.ndarray] | None = None
        self._fingerprint: str | None = None
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

    def distinct(self, progress: Progress | None = None, batch_rows: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The distinct tuples of the table (sorted keys) and their row counts: one pass over
        a source, kept for the views and the fingerprint."""
        if self._distinct is None:
            if isinstance(self.table, Table):
                batches: Iterable[Batch] = [(0, self.table.codes)]
            else:
                batches = _reported(
                    self.table.batches(batch_rows or DEFAULT_BATCH_ROWS, self.domain.columns),
                    "tuples", self.table.n_rows, progress or _silent)
            self._distinct = distinct_tuples(batches, self.domain)
        return self._distinct

    @property
    def fingerprint(self) -> str:
        """The table's `fingerprint` (private: it is a digest of the rows)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.table, self.distinct())
        return self._fingerprint

    def _next_view(self, random_state: RandomState, progress: Progress | None = None,
                   batch_rows: int | None = None) -> tuple[int, ViewDraws, dict[str, Any]]:
        """The number, keyed draws and public parameters of the next view; raises when the
        bound v on the number of views is reached."""
        v = self.mechanism.v
        require_another_view(self.published, v)
        if self._checked_view != self.published + 1:
            self._check_next_view()
        view = self.published + 1
        tuples, counts = self.distinct(progress, batch_rows)
        source = TableSource(self.table) if isinstance(self.table, Table) else self.table
        marginals = (source_distribution(source, self.domain)
                     if self.mechanism.noise == "marginal" else None)
        draws = ViewDraws(make_key(random_state), view, self.domain,
                          view_rates(self.alpha, self.beta, v, view), self.table.n_rows, tuples,
                          counts, self.earlier, marginals)
        return view, draws, view_parameters(self.mechanism, self.alpha, self.beta, view,
                                            self.domain, marginals)

    def _published(self, view: int, keys: Sequence[np.ndarray]) -> None:
        """Count view ``view`` as published, its tuples (``keys``, in pieces) joining V'."""
        self.earlier = _sorted_unique(np.concatenate([self.earlier, *keys]))
        self.published = view

    def publish(self, *, random_state: RandomState = None) -> AlphaBetaRelease:
        """The next view, in memory; raises when the bound v on the number of views is
        reached (a source is published with `publish_to`).

        ``random_state`` makes the view's key (`ppdp.keyed.make_key`: OS entropy for None, the
        default). The draws are keyed by the view number too, so the views are independent
        whatever their keys, and the same key and view number give the same view."""
        if not isinstance(self.table, Table):
            raise TypeError("the views of a source are written to a directory: use publish_to")
        view, draws, parameters = self._next_view(random_state)
        codes = self.table.codes
        keys, part_rows = release_order([draws.retained(0, codes), draws.repeated(),
                                         *draws.noise()])
        schema = self.table.schema.select(self.domain.columns)
        release = AlphaBetaRelease(
            schema, parameters, len(keys), self.domain.codes(keys, schema),
            earlier=self.domain.codes(self.earlier, schema), part_rows=part_rows)
        self._published(view, [keys])
        return release

    def publish_to(self, directory: str | os.PathLike[str], *,
                   random_state: RandomState = None, batch_rows: int | None = None,
                   overwrite: bool = False, progress: Progress | None = None,
                   before_commit: Callable[[], object] | None = None) -> Path:
        """Write the next view straight into a release directory, batch by batch; the
        directory. For a table in memory or a source read in batches.

        The files are those ``publish`` then `Release.save` write from the same rows, views and
        key, whatever ``batch_rows`` and the order of the batches. Two passes over the
        batches: the first gathers the table's distinct tuples with their counts
        (`distinct_tuples`: O(distinct tuples) memory, at most 16 bytes a row), against which
        the alpha-step looks up each row's probability and every chunk of the beta-step is
        anti-joined with the table and V'; the second keeps rows. Published rows are spilled
        to disk by rank, then each part is put in order alone. ``before_commit`` runs once the
        files are written and the view counted (``save_state``, say); ``overwrite`` as in
        `Release.save`. ``progress(stage, done, total)`` hears of ``tuples`` and ``retain``
        (rows), ``noise`` (chunks of D) and ``write`` (parts)."""
        target = Path(directory)
        check_target(target, overwrite)
        batch_rows = batch_rows or DEFAULT_BATCH_ROWS
        report = progress or _silent
        view, draws, parameters = self._next_view(random_state, report, batch_rows)
        domain = self.domain
        source = TableSource(self.table) if isinstance(self.table, Table) else self.table
        schema = source.schema.select(domain.columns)
        size = self.mechanism.expected_view_size(source.n_rows, domain.size,
                                                 earlier=len(self.earlier), view=view)
        with staged_directory(target) as staging:
            spill = RankSpill(staging / ".spill", size)
            for start, codes in _reported(source.batches(batch_rows, domain.columns),
                                          "retain", source.n_rows, report):
                spill.add(draws.retained(start, codes))
            spill.add(draws.repeated())
            for chunk, piece in enumerate(draws.noise()):
                spill.add(piece)
                report("noise", chunk + 1, draws.chunks)
            names = part_names("view", part_count(spill.rows))
            digests, published = {}, []
            for index, name in enumerate(names):
                ranks, ids, keys = spill.part(index, len(names))
                keys = in_release_order({"key": keys}, ranks, ids)["key"]
                digests[name] = write_parquet(staging / name,
                                              rows_to_arrow(schema, domain.codes(keys, schema)))
                published.append(np.unique(keys))
                report("write", index + 1, len(names))
            spill.remove()
            files: dict[str, str | list[str]] = {"view": names[0] if len(names) == 1 else names}
            if view > 1:
                # V' before this view, public already: the estimator needs it (as `save`).
                files["earlier"] = write_parts(
                    staging, "earlier",
                    split_parts(rows_to_arrow(schema, domain.codes(self.earlier, schema)),
                                even_parts(len(self.earlier))), digests)
            write_metadata(staging, AlphaBetaRelease.mechanism, parameters, spill.rows, schema,
                           files, digests)
            self._published(view, published)
            if before_commit is not None:
                before_commit()
            commit_directory(staging, target, overwrite=overwrite,
                             replaceable=require_replaceable_release)
        return target

    def save_state(self, directory: str | os.PathLike[str]) -> Path:
        """Write the publisher's private state (views published, V', the table's fingerprint
        and the parameters) atomically, for the next ``load_state``."""
        target = Path(directory)
        with staged_directory(target) as staging:
            pq.write_table(pa.table({"key": self.earlier}), staging / "earlier.parquet")
            state = {"format": STATE_FORMAT, "fingerprint": self.fingerprint,
                     "parameters": self.mechanism.parameter_values, "published": self.published}
            (staging / "state.json").write_text(json.dumps(state, indent=2) + "\n")
            commit_directory(staging, target, overwrite=True, replaceable=_require_state)
        return target

    @classmethod
    def load_state(cls, directory: str | os.PathLike[str], mechanism: AlphaBeta,
                   table: Table | Source) -> ViewSequence:
        """Continue a sequence from ``save_state``; the table and parameters must match."""
        return cls(mechanism, table).resume(directory)

    def resume(self, directory: str | os.PathLike[str]) -> ViewSequence:
        """Continue from the state ``save_state`` wrote (this sequence, updated); the table and
        parameters must match."""
        root = Path(directory)
        try:
            state = json.loads((root / "state.json").read_text())
            earlier = pq.read_table(root / "earlier.parquet").column("key").to_numpy()
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            raise ReleaseError(f"{root} is not a readable alpha-beta view state: {exc}") from exc
        if state.get("format") != STATE_FORMAT or state.get("fingerprint") != self.fingerprint:
            raise ReleaseError(f"{root} holds the state of another table")
        if state.get("parameters") != self.mechanism.parameter_values:
            raise ReleaseError(f"the views of this table were published with "
                               f"{state.get('parameters')}; later views must use the same "
                               f"parameters")
        self.published, self.earlier = int(state["published"]), np.sort(earlier)
        self._checked_view = 0
        if self.published < self.mechanism.v:
            self._check_next_view()
        return self


STATE_FORMAT = "ppdp-alphabeta-views-1"


def require_another_view(published: int, v: int) -> None:
    """Refuse a view beyond the bound v on the number of views (Algorithm 4)."""
    if published >= v:
        raise InfeasibleError(f"{published} views of this table were published, the bound "
                              f"v = {v} it was set up with; more views would break the "
                              f"guarantee (publish with a larger v from the start)")


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


def state_directory(root: str | os.PathLike[str], table_fingerprint: str) -> Path:
    """The state of the views of a table under ``root``, by the table's `fingerprint`: keyed
    by the table's tuples alone, so that other parameters cannot start a fresh count (they are
    refused instead)."""
    return Path(root) / f"alphabeta-{table_fingerprint[:32]}"


def fingerprint(table: Table | Source,
                distinct: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """A digest of a table's tuples, to recognise the same data again: the published columns
    with their domains and the multiset of rows, whatever the column roles and the row order
    (alpha-beta ignores roles, and a reordered copy is the same instance).

    The rows are hashed as their sorted tuple keys; from ``distinct`` (sorted keys and counts,
    `distinct_tuples`), a source's are hashed by repeating each key, chunk by chunk, so a table
    and a source of the same rows agree."""
    domain = TupleDomain.of(table.schema)
    digest = hashlib.sha256(fingerprint_prefix(table.schema))
    if distinct is None and isinstance(table, Table):
        digest.update(np.sort(domain.keys(table.codes)).astype(np.int64).tobytes())
        return digest.hexdigest()
    tuples, counts = distinct if distinct is not None else distinct_tuples(
        table.batches(columns=domain.columns), domain)
    for keys in _repeated(tuples, counts):
        digest.update(keys.astype(np.int64).tobytes())
    return digest.hexdigest()


def fingerprint_prefix(schema: Schema) -> bytes:
    """What `fingerprint` hashes before the rows: the published columns and their domains."""
    columns = [[c, [str(v) for v in schema[c].domain]] for c in TupleDomain.of(schema).columns]
    return json.dumps(columns).encode()


def _repeated(keys: np.ndarray, counts: np.ndarray, size: int = 1 << 20) -> Iterator[np.ndarray]:
    """``np.repeat(keys, counts)`` in pieces of at most ``size``, in order."""
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    for low in range(0, total, size):
        high = min(low + size, total)
        first = int(np.searchsorted(ends, low, side="right"))
        last = int(np.searchsorted(ends, high - 1, side="right"))
        covered = np.arange(first, last + 1)
        starts = np.maximum(ends[covered] - counts[covered], low)
        yield np.repeat(keys[covered], np.minimum(ends[covered], high) - starts)


def source_distribution(source: Source, domain: TupleDomain) -> list[np.ndarray]:
    """Each attribute's marginal with add-one smoothing, so that every tuple of D can be
    inserted (Algorithm 5's attribute-independent source distribution)."""
    return [(source.histogram((c,)) + 1) / (source.n_rows + size)
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


def published_rates(parameters: Mapping[str, Any]) -> ViewRates:
    """The rates of a view from its public parameters (alpha, beta, v and its number)."""
    return view_rates(float(parameters["alpha"]), float(parameters["beta"]),
                      int(parameters.get("v", 1)), int(parameters.get("view", 1)))


# -- keyed draws ------------------------------------------------------------------------------

NOISE_CHUNK = 1 << 20
"""Tuples the beta-step draws per chunk of D, on average: a chunk spans NOISE_CHUNK/C keys, so
the chunks follow from C and m alone, never from how the table's rows are batched."""

DENSE_NOISE = 0.25
"""From this probability C on, a chunk's tuples are drawn key by key (a uniform each), which
is then cheaper than drawing a count of distinct keys."""

SPILL_ROWS = 1 << 22
"""Rows per spill file, on average, while ``publish_source`` puts a view in release order."""

Piece = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Published rows of a view, in no particular order: their ranks, ids and tuple keys."""


def bernoulli_keys(rng: np.random.Generator, low: int, high: int,
                   probability: float) -> np.ndarray:
    """The keys of ``low .. high - 1``, each drawn with ``probability`` independently, sorted
    (Algorithm 2 on one chunk of D: a binomial count of uniform distinct keys)."""
    size = high - low
    if probability >= DENSE_NOISE:
        return np.flatnonzero(rng.random(size) < probability) + low
    count = int(rng.binomial(size, probability))
    chosen = np.empty(0, dtype=np.int64)
    while len(chosen) < count:
        # Draw as many keys as are missing and add the new ones: no permutation of the keys
        # changes how this proceeds, so every set of ``count`` keys is equally likely.
        fresh = _sorted_unique(rng.integers(0, size, count - len(chosen)))
        fresh = fresh[~_contains(chosen, fresh)]
        chosen = np.insert(chosen, np.searchsorted(chosen, fresh), fresh)
    return chosen + low


def distinct_tuples(batches: Iterable[Batch], domain: TupleDomain
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tuples of the rows (sorted int64 keys) and how many rows hold each.

    Batches are reduced as they come and merged when the pending ones outnumber the merged
    tuples, so the work is O(r log r) for r rows in any batching; the result takes 16 bytes a
    distinct tuple, O(rows) memory: fine up to about 10^8 rows."""
    merged = _counted(np.empty(0, dtype=np.int64))
    pending: list[tuple[np.ndarray, np.ndarray]] = []
    waiting = 0
    for _, codes in batches:
        pending.append(_counted(domain.keys(codes)))
        waiting += len(pending[-1][0])
        if waiting > len(merged[0]):
            merged, pending, waiting = _merge_counts([merged, *pending]), [], 0
    return _merge_counts([merged, *pending])


def _counted(keys: np.ndarray, counts: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and the counts of each (summing ``counts``, else 1 a key); a sort
    is much faster than numpy's hashing unique here."""
    if counts is None:
        keys, counts = np.sort(keys), np.ones(len(keys), dtype=np.int64)
    else:
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
    if not len(keys):
        return keys.astype(np.int64), counts.astype(np.int64)
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    return keys[starts].astype(np.int64), np.add.reduceat(counts, starts)


def _merge_counts(parts: Sequence[tuple[np.ndarray, np.ndarray]]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """One sorted array of distinct keys with summed counts, from sorted (keys, counts)."""
    parts = [part for part in parts if len(part[0])] or [parts[0]]
    if len(parts) == 1:
        return parts[0]
    # Sorted runs: the stable sort merges them.
    return _counted(np.concatenate([k for k, _ in parts]), np.concatenate([c for _, c in parts]))


class ViewStreams:
    """The keyed draws of one view (Algorithms 1, 2, 4 and 5) as functions of the key, the
    view number v, a row id or a chunk of D, and what is known of each row (the count of its
    tuple, whether the tuple is in V'), so that any executor that brings those along draws the
    same view; no per-tuple table is held (`ViewDraws` adds the table's and V''s tuples).

    Ids: row r of the table keeps r; the tuple at position i of V' (sorted) gets n + i; the
    inserted tuples get n + |V'| + j, j counting them chunk by chunk. Rows of I and tuples of V'
    are kept by stream ``view{v}/retain`` at their ids, chunk c of D is drawn from
    ``view{v}/noise`` (generator c), and every published row gets its rank from ``view{v}/rank``
    at its id.
    """

    def __init__(self, key: int, view: int, domain: TupleDomain, rates: ViewRates,
                 n_rows: int, n_earlier: int,
                 marginals: Sequence[np.ndarray] | None = None) -> None:
        self.domain, self.rates, self.n_rows = domain, rates, n_rows
        self.n_earlier, self.marginals = n_earlier, marginals
        self._retain = KeyedStream(key, f"view{view}/retain")
        self._noise = KeyedStream(key, f"view{view}/noise")
        self._rank = KeyedStream(key, f"view{view}/rank")
        if marginals is not None:
            self.scale = source_scale(rates.other, marginals)
        # Chunks of D of NOISE_CHUNK tuples drawn on average (one chunk when C m is smaller).
        m, other = domain.size, rates.other
        self.span = m if other * m <= NOISE_CHUNK else math.ceil(NOISE_CHUNK / other)
        self.chunks = -(-m // self.span) if other > 0 else 0

    def keep(self, keys: np.ndarray, counts: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """The probability that each row is kept, from its tuple's key, the tuple's row count c
        and whether the tuple is in V': (A + B/c) for tuples of V', (A' + C/c) for the others,
        beta(t)/c in place of C/c for Algorithm 5."""
        rates = self.rates
        base = np.where(seen, rates.seen, rates.unseen)
        extra = np.where(seen, rates.earlier, rates.other)
        if self.marginals is not None:
            extra = self.scale * tuple_probability(keys, self.domain, self.marginals)
        return base + extra / counts

    def retained_rows(self, start: int, keys: np.ndarray, counts: np.ndarray,
                      seen: np.ndarray) -> Piece:
        """The alpha-step on rows ``start .. start + len(keys) - 1`` of the table, given each
        row's tuple key, its tuple's row count and whether the tuple is in V' (`keep`)."""
        kept = np.flatnonzero(self._retain.uniform(start, len(keys))
                              < self.keep(keys, counts, seen))
        return self._rank.raw(start, len(keys))[kept], kept + start, keys[kept]

    def repeated_rows(self, position: int, keys: np.ndarray, in_table: np.ndarray) -> Piece:
        """Algorithm 4 on the tuples at positions ``position ..`` of V' (sorted; ``keys``):
        each not in I (``in_table``) inserted with probability B."""
        first = self.n_rows + position
        chosen = np.flatnonzero((self._retain.uniform(first, len(keys)) < self.rates.earlier)
                                & ~in_table)
        return self._rank.raw(first, len(keys))[chosen], chosen + first, keys[chosen]

    def candidates(self, chunk: int) -> tuple[np.random.Generator, np.ndarray]:
        """Chunk ``chunk`` of D drawn with probability C a tuple (Algorithm 2), before the
        tuples of I and V' are taken out: its generator (for `inserted`) and sorted keys."""
        rng = self._noise.generator(chunk)
        low = chunk * self.span
        return rng, bernoulli_keys(rng, low, min(low + self.span, self.domain.size),
                                   self.rates.other)

    def inserted(self, rng: np.random.Generator, keys: np.ndarray) -> np.ndarray:
        """The candidates of a chunk outside I and V' that are inserted: all for uniform noise;
        for Algorithm 5, each kept with probability beta(t)/C <= 1 (the most likely tuple gets
        beta = C), drawn from the chunk's generator after `candidates`."""
        if self.marginals is None:
            return keys
        chance = (self.scale * tuple_probability(keys, self.domain, self.marginals)
                  / self.rates.other)
        return keys[rng.random(len(keys)) < chance]

    def numbered(self, first: int, keys: np.ndarray) -> Piece:
        """Inserted tuples ``first .. first + len(keys) - 1`` (j, counted chunk by chunk) as
        published rows: ranks and ids n + |V'| + j."""
        start = self.n_rows + self.n_earlier + first
        return self._rank.raw(start, len(keys)), np.arange(start, start + len(keys)), keys


class ViewDraws(ViewStreams):
    """The keyed draws of one view of a table whose distinct tuples (sorted keys ``tuples``,
    row counts ``counts``) and V' (sorted ``earlier``) are arrays in memory."""

    def __init__(self, key: int, view: int, domain: TupleDomain, rates: ViewRates,
                 n_rows: int, tuples: np.ndarray, counts: np.ndarray, earlier: np.ndarray,
                 marginals: Sequence[np.ndarray] | None = None) -> None:
        super().__init__(key, view, domain, rates, n_rows, len(earlier), marginals)
        self.tuples, self.counts, self.earlier = tuples, counts, earlier
        self.seen = _contains(earlier, tuples)

    def retained(self, start: int, codes: Mapping[str, np.ndarray]) -> Piece:
        """The alpha-step on rows ``start ..`` of the table (one batch of codes)."""
        keys = self.domain.keys(codes)
        at = np.searchsorted(self.tuples, keys)
        return self.retained_rows(start, keys, self.counts[at], self.seen[at])

    def repeated(self) -> Piece:
        """Algorithm 4: each tuple of V' outside I inserted with probability B."""
        return self.repeated_rows(0, self.earlier, _contains(self.tuples, self.earlier))

    def noise(self) -> Iterator[Piece]:
        """The beta-step, chunk by chunk: each tuple of D outside I and V' with probability C
        (Algorithm 2), or beta(t) (Algorithm 5)."""
        first = 0
        for chunk in range(self.chunks):
            rng, keys = self.candidates(chunk)
            keys = keys[~_contains(self.tuples, keys) & ~_contains(self.earlier, keys)]
            piece = self.numbered(first, self.inserted(rng, keys))
            first += len(piece[2])
            yield piece


def release_order(pieces: Iterable[Piece]) -> tuple[np.ndarray, tuple[int, ...]]:
    """The tuple keys of a view's rows in release order (by rank, ties by id) and the row
    counts of its parts (`ppdp.plans.part_of`)."""
    ranks, ids, keys = (np.concatenate(column) for column in zip(*pieces, strict=True))
    parts = part_count(len(ranks))
    part_rows = np.bincount(part_of(ranks, parts), minlength=parts)
    return (in_release_order({"key": keys}, ranks, ids)["key"],
            tuple(int(rows) for rows in part_rows))


class RankSpill:
    """The rows of a view on disk, in files by the top bits of their rank, so that each part
    of the release (a range of ranks) is put in order in memory on its own."""

    RECORD = np.dtype([("rank", "<u8"), ("id", "<i8"), ("key", "<i8")])

    def __init__(self, directory: Path, expected_rows: float) -> None:
        self.directory = directory
        directory.mkdir()
        self.bits = int(np.clip(math.ceil(math.log2(max(expected_rows / SPILL_ROWS, 2))), 1, 12))
        self.rows = 0

    def add(self, piece: Piece) -> None:
        """Append rows to the files of their ranks."""
        ranks, ids, keys = piece
        records = np.empty(len(ranks), dtype=self.RECORD)
        records["rank"], records["id"], records["key"] = ranks, ids, keys
        buckets = (ranks >> np.uint64(64 - self.bits)).astype(np.int64)
        counts = np.bincount(buckets, minlength=1 << self.bits)
        ends = np.cumsum(counts)
        records = records[np.argsort(buckets, kind="stable")]
        for bucket in np.flatnonzero(counts):
            with open(self.directory / f"{bucket:04x}", "ab") as file:
                records[ends[bucket] - counts[bucket]:ends[bucket]].tofile(file)
        self.rows += len(ranks)

    def part(self, index: int, parts: int) -> Piece:
        """The rows of part ``index`` of ``parts``, in no particular order."""
        width = np.uint64(64 - self.bits)
        low = np.arange(1 << self.bits, dtype=np.uint64) << width
        high = low | ((np.uint64(1) << width) - np.uint64(1))
        files = [self.directory / f"{bucket:04x}" for bucket in np.flatnonzero(
            (part_of(low, parts) <= index) & (part_of(high, parts) >= index))]
        records = np.concatenate([np.empty(0, dtype=self.RECORD)] + [
            np.fromfile(path, dtype=self.RECORD) for path in files if path.exists()])
        records = records[part_of(records["rank"], parts) == index]
        return records["rank"], records["id"], records["key"]

    def remove(self) -> None:
        shutil.rmtree(self.directory)


def _silent(stage: str, done: int, total: int) -> None:
    return None


def _reported(batches: Iterable[Batch], stage: str, total: int,
              report: Progress) -> Iterator[Batch]:
    """The batches, telling ``report`` the rows done after each."""
    done = 0
    for start, codes in batches:
        yield start, codes
        done += len(next(iter(codes.values()), ()))
        report(stage, done, total)


def view_parameters(mechanism: AlphaBeta, alpha: float, beta: float, view: int,
                    domain: TupleDomain, marginals: Sequence[np.ndarray] | None
                    ) -> dict[str, Any]:
    """The public parameters of a view (Algorithm 1, step 4): what the estimator needs."""
    parameters: dict[str, Any] = {
        "alpha": alpha, "beta": beta, "k": mechanism.k, "gamma": mechanism.gamma,
        "v": mechanism.v, "view": view}
    if marginals is not None:
        parameters["source"] = {c: [float(x) for x in p]
                                for c, p in zip(domain.columns, marginals, strict=True)}
    return parameters


# -- the release ----------------------------------------------------------------------------


class AlphaBetaRelease(Release):
    """An alpha-beta view: its tuples, alpha, beta and the domains (Algorithm 1, step 4); for
    a view after the first, also V', the union of the earlier views (public already)."""

    mechanism = "alphabeta"

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray],
                 earlier: Mapping[str, np.ndarray] | None = None,
                 part_rows: Sequence[int] | None = None) -> None:
        super().__init__(schema, parameters, n_rows)
        self.codes = dict(codes)
        # The view's parts are cut by rank when it is published (`release_order`).
        self.part_rows = None if part_rows is None else tuple(part_rows)
        self.domain = TupleDomain.of(schema)
        self.earlier = {c: np.asarray(earlier[c]) if earlier else
                        np.empty(0, dtype=schema[c].dtype) for c in schema.names}
        n_earlier = len(self.earlier[schema.names[0]])
        self.rates = published_rates(parameters)
        earlier_keys = np.sort(self.domain.keys(self.earlier)) if n_earlier else np.empty(
            0, dtype=np.int64)
        seen = _contains(earlier_keys, self.domain.keys(self.codes)).astype(np.uint8)
        self._cube = Cube({**self.codes, _SEEN: seen}, {**schema.sizes(), _SEEN: 2}, n_rows)
        self._earlier_cube = Cube(self.earlier, schema.sizes(), n_earlier)

    def _tables(self) -> dict[str, pa.Table]:
        tables = {"view": split_parts(rows_to_arrow(self.schema, self.codes), self.part_rows)}
        if int(self.parameters.get("view", 1)) > 1:
            n_earlier = len(self.earlier[self.schema.names[0]])
            tables["earlier"] = split_parts(rows_to_arrow(self.schema, self.earlier),
                                            even_parts(n_earlier))
        return tables

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> AlphaBetaRelease:
        codes = rows_from_arrow(schema, tables["view"], n_rows)
        earlier = None
        if "earlier" in tables:
            earlier = rows_from_arrow(schema, tables["earlier"], tables["earlier"].num_rows)
        require_probabilities(parameters)
        return cls(schema, parameters, n_rows, codes, earlier)

    @classmethod
    def scanned_on_spark(cls, stems: Iterable[str]) -> frozenset[str]:
        return frozenset({"view", "earlier"}.intersection(stems))

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: Mapping[str, Sequence[Path]]
                    ) -> AlphaBetaRelease:
        """Loaded with ``engine="spark"``: the view and V' stay in their files, every count a
        Spark job (`ppdp.spark.alphabeta_count`)."""
        from ppdp.spark.alphabeta_count import load_alphabeta

        return load_alphabeta(schema, parameters, n_rows, scans["view"],
                              scans.get("earlier", ()))

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


def require_probabilities(parameters: Mapping[str, Any]) -> None:
    """Refuse a loaded view whose alpha or beta is not a probability."""
    for name in ("alpha", "beta"):
        value = float(parameters[name])
        if not 0 < value < 1:
            raise ValueError(f"{name} = {value} is not a probability")


def even_parts(n_rows: int) -> list[int]:
    """Row counts of `ppdp.plans.part_count` parts of nearly equal size, for rows without
    ranks (V', in key order)."""
    parts = part_count(n_rows)
    return [(i + 1) * n_rows // parts - i * n_rows // parts for i in range(parts)]


def bernoulli_variance(estimate: np.ndarray, total: np.ndarray, inside: Any,
                       outside: Any) -> np.ndarray:
    """Variance of a count over ``total`` candidate tuples when ``estimate`` rows of the table
    are each present with probability ``inside`` and the other candidates with ``outside``.

    ``estimate`` counts rows and ``total`` distinct tuples, so the first is not capped by the
    second: the c rows of one tuple contribute c Bernoulli variances."""
    present = np.maximum(estimate, 0)
    others = np.maximum(total - present, 0)
    return present * inside * (1 - inside) + others * outside * (1 - outside)
