"""The alpha-beta algorithm: random deletion of tuples and insertion of domain tuples
(Sections 2 and 4, Algorithms 1-3).

The view V keeps each tuple of the table I with probability alpha + beta (alpha-step) and adds
each other tuple of the domain D = D_1 x .. x D_l with probability beta (beta-step, never
enumerating D: `ppdp.mechanisms.alphabeta.draws`). A count query is estimated by
``(n_V - beta n_D)/alpha`` (Algorithm 3), with n_D counted over the domain by
`ppdp.query.domain_count.count_domain`.

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

Multiple views (Section 4.4.1, Algorithm 4) are published by `ViewSequence`; its steps run on
every engine (in memory, batch by batch, on Spark), whose files are the same for the same key."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.alphabeta.domain import MAX_DOMAIN, TupleDomain
from ppdp.mechanisms.alphabeta.draws import view_rates
from ppdp.mechanisms.alphabeta.exclusive import (
    exclusive_posterior,
    meets_theorem_6_3,
    theorem_6_3_beta,
    theorem_6_3_violations,
)
from ppdp.mechanisms.alphabeta.guarantee import AlphaBetaGuarantee
from ppdp.mechanisms.alphabeta.parameters import (
    MAX_VIEWS,
    MIN_ALPHA,
    check_alphabeta,
    check_view,
)
from ppdp.mechanisms.alphabeta.privacy import (
    chosen_beta,
    noise_scale,
    privacy_parameters,
    public_row_count,
    theorem_4_3_violations,
    usefulness_rho,
)
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease
from ppdp.mechanisms.alphabeta.usefulness import theorem_4_4_r, theorem_4_4_rho, view_rhos
from ppdp.mechanisms.alphabeta.views import ViewSequence
from ppdp.mechanisms.base import StepsMechanism
from ppdp.mechanisms.parameters import Parameter
from ppdp.plan.resources import (
    Footprint,
    check_memory,
    format_bytes,
    format_count,
    format_value,
    published_columns,
)
from ppdp.randomness import RandomState
from ppdp.table.source import SummarySource
from ppdp.table.table import Table

MAX_LISTED_VIEWS = 100
"""A guarantee lists the rho of every view up to this v (any view's through ``view``)."""

ALPHABETA_ROW = Footprint(per_row=30, per_column=8)
"""Alpha-beta per row of the table: int64 tuple keys, the distinct tuples with their inverse and
counts, the per-row keep probabilities. Measured without inserted tuples at 2 10^6 rows: 78 bytes
a row for 3 columns and 145 for 9, of which 0.4 (alpha) times ``ALPHABETA_TUPLE`` are the kept
rows."""


ALPHABETA_TUPLE = Footprint(per_row=16, per_column=9, minimum=64)
"""Alpha-beta per tuple of the view: the sampled int64 keys with the sort of ``np.unique`` (the
64-byte floor), then one int64 array per column from ``np.unravel_index``. Measured with 10^3
rows and views of 4 10^5 to 5 10^6 tuples: 61, 64, 70, 97 and 124 bytes a tuple for 2, 3, 6, 9
and 12 columns."""


class AlphaBeta(StepsMechanism):
    """The alpha-beta algorithm (Algorithms 1-3), with Algorithm 4 for repeated views."""

    name = "alphabeta"
    summary = ("alpha-beta: keep each tuple with probability alpha + beta, add random domain "
               "tuples with probability beta; (d, gamma)-privacy of whole tuples")
    footprint = ALPHABETA_ROW
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
        Parameter("adversary", str, "'independent' (Theorem 4.3: beta = d/gamma) or "
                                    "'exclusive': beta = 2 (d/gamma)(1 - gamma)/(1 - d), "
                                    "alpha + beta = 1/2, so that Theorem 6.3 prevents positive "
                                    "leakage against d-exclusive adversaries (join/link "
                                    "attacks); needs k and gamma, one view",
                  default="independent"),
        Parameter("max_rows", int, "refuse a view expected to hold more tuples than this (a "
                                   "resource limit, not a privacy parameter; a tuple takes "
                                   "about 100 bytes while publishing)",
                  default=20_000_000, resource=True),
    )
    max_views = MAX_VIEWS
    """The largest v (`ppdp.mechanisms.alphabeta.parameters.MAX_VIEWS`)."""
    min_alpha = MIN_ALPHA
    """The smallest alpha (`ppdp.mechanisms.alphabeta.parameters.MIN_ALPHA`)."""
    guarantee_uses_table = True
    guarantee_parameters = (
        Parameter("n", int, "number of rows n (taken from the table when one is given)",
                  default=None),
        Parameter("m", int, "domain size m (taken from the table when one is given)",
                  default=None),
        Parameter("view", int, "the view (1..v) whose rho to state; every view's by default",
                  default=None),
    )

    def __init__(self, *, k: float | None = None, gamma: float | None = None,
                 alpha: float | None = None, beta: float | None = None, v: int = 1,
                 noise: str = "uniform", adversary: str = "independent",
                 max_rows: int = 20_000_000) -> None:
        check_alphabeta(k=k, gamma=gamma, alpha=alpha, beta=beta, v=v, noise=noise,
                        adversary=adversary)
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ValueError(f"max_rows must be an integer >= 1 (the largest expected view "
                             f"size), got {max_rows!r}")
        self.k, self.gamma, self.alpha, self.beta, self.v = k, gamma, alpha, beta, v
        self.noise = noise
        self.adversary = adversary
        self.max_rows = max_rows

    @property
    def parameter_values(self) -> dict[str, Any]:
        """As for every mechanism, but ``adversary`` only when it is not the default: the view
        states and releases written before it existed keep matching."""
        values = super().parameter_values
        if self.adversary == "independent":
            del values["adversary"]
        return values

    def _rates(self) -> tuple[float, float] | None:
        """The explicit alpha and beta, if given (both or neither: `__init__`)."""
        if self.alpha is None:
            return None
        assert self.beta is not None
        return self.alpha, self.beta

    def _privacy(self) -> tuple[float, float] | None:
        """k and gamma, if given (both or neither: `__init__`)."""
        if self.k is None:
            return None
        assert self.gamma is not None
        return self.k, self.gamma

    def probabilities(self, n: int, m: int) -> tuple[float, float, float | None]:
        """alpha, beta and d for a table of n rows over a domain of m tuples, checked against
        Theorem 4.3 (InfeasibleError naming the condition that fails)."""
        rates, privacy = self._rates(), self._privacy()
        if rates is None:
            assert privacy is not None  # without alpha and beta, `__init__` needs k and gamma
            k, gamma = privacy
            alpha, beta, d = privacy_parameters(k=k, gamma=gamma, n=n, m=m,
                                                adversary=self.adversary)
            if alpha < self.min_alpha:
                raise InfeasibleError(
                    f"(d, gamma)-privacy with d = k n/m = {d:.4g} and gamma = {gamma:g} "
                    f"leaves alpha = 1/2 - beta = {alpha:.3g}, too small to estimate counts "
                    f"from (at least {self.min_alpha:g}); raise gamma or lower k")
            return alpha, beta, d
        alpha, beta = rates
        if privacy is None:
            return alpha, beta, None
        k, gamma = privacy
        d = k * n / m
        failed = theorem_4_3_violations(alpha=alpha, beta=beta, d=d, gamma=gamma)
        if self.adversary == "exclusive":
            failed += theorem_6_3_violations(alpha=alpha, beta=beta, d=d, gamma=gamma)
        if failed:
            raise InfeasibleError(f"alpha = {alpha:g}, beta = {beta:g} do not give "
                                  f"(d, gamma)-privacy for d = k n/m = {d:.4g}, gamma = "
                                  f"{gamma:g}: " + "; ".join(failed))
        return alpha, beta, d

    def publish_table(self, table: Table, *, random_state: RandomState = None
                      ) -> AlphaBetaRelease:
        """The first view of a table in memory (Algorithm 1); ``views`` continues with
        Algorithm 4."""
        return self.views(table).publish(random_state=random_state)

    def views(self, table: Table) -> ViewSequence:
        """A sequence of views of ``table`` (Algorithm 4), the first of which is Algorithm 1;
        each view is refused when it is expected to exceed ``max_rows`` tuples."""
        return ViewSequence(self, table)

    def public_probabilities(self, n: int, m: int) -> tuple[float, float, float | None]:
        """alpha, beta and d as published for a table of n rows: with k and gamma, from n
        rounded up by `public_row_count`, since beta = k n/(gamma m) would give n exactly."""
        privacy = self._privacy()
        if privacy is None:
            return self.probabilities(n, m)
        k, gamma = privacy
        rounded = self._public_row_count(n, m, k, gamma)
        try:
            return self.probabilities(rounded, m)
        except InfeasibleError:
            if self.alpha is not None:
                raise
        raise InfeasibleError(self._infeasible_message(n, rounded, m, k, gamma)) from None

    def _public_row_count(self, n: int, m: int, k: float, gamma: float) -> int:
        """n rounded up as beta publishes it (`public_row_count`, for this adversary's beta)."""
        scale = noise_scale(self.adversary, k=k, gamma=gamma, n=n, m=m)
        return public_row_count(n, k=k, gamma=gamma, scale=scale)

    def _infeasible_message(self, n: int, rounded: int, m: int, k: float, gamma: float) -> str:
        """Why k and gamma fail for n rows once n is rounded, and the k or gamma that work."""

        def feasible(k: float, gamma: float) -> bool:
            d = k * self._public_row_count(n, m, k, gamma) / m
            if not d < 1:
                return False
            beta = chosen_beta(d, gamma, self.adversary)
            return beta <= 0.5 and 0.5 - beta >= self.min_alpha

        def boundary(low: float, high: float, ok: Callable[[float], bool]) -> float:
            # ok is monotone on [low, high] (the rounded n grows with k, falls with gamma).
            for _ in range(60):
                middle = (low + high) / 2
                low, high = (middle, high) if not ok(middle) else (low, middle)
            return high

        largest_k = boundary(0.0, k, lambda x: not feasible(x, gamma))
        d = k * rounded / m
        if self.adversary == "exclusive":
            needs = (f"Theorem 6.3 (d-exclusive adversaries) with k = {k:g} and gamma = "
                     f"{gamma:g} needs d = k n'/m = {d:.4g} below 1" if not d < 1 else
                     f"Theorem 6.3 (d-exclusive adversaries) with k = {k:g} and gamma = "
                     f"{gamma:g} needs beta = 2 (d/gamma)(1 - gamma)/(1 - d) = "
                     f"{theorem_6_3_beta(d, gamma):.4g} > 1/2 with d = k n'/m")
        else:
            beta = k * rounded / (gamma * m)
            needs = (f"(d, gamma)-privacy with k = {k:g} and gamma = {gamma:g} needs beta = "
                     f"k n'/(gamma m) = {beta:.4g} > 1/2 (Theorem 4.3)")
        text = (f"{needs}, where n' = {rounded:,} is the row count rounded up so that beta "
                f"does not reveal it; lower k to at most {largest_k * 0.999:.4g}")
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

    def check_view_size(self, table: Table | SummarySource, *, earlier: int = 0,
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
                  m: int | None = None, view: int | None = None) -> AlphaBetaGuarantee:
        """Theorem 4.3, Theorem 4.4 and Theorem 6.3 for a table of n rows over a domain of m
        tuples, with alpha, beta and d as a view publishes them (from n rounded up by
        `public_row_count` when they come from k and gamma).

        rho is Theorem 4.4's for the smallest r that alpha and beta meet (Section 4.2's closed
        form for its parameters, which does not follow from the theorem, is
        ``rho_as_printed``); for v > 1 each view has its own (`ppdp.mechanisms.alphabeta.
        usefulness.view_rhos`), and ``rho`` is that of ``view``, or the largest of the v views
        (the one that holds for every view) when no view is named."""
        n, m = self.table_size(table, n, m)
        if view is not None:
            check_view(view, self.v)
        if n is None or m is None:
            if self.alpha is None:
                raise ValueError("the alpha and beta of k and gamma depend on n and m: give a "
                                 "table (SOURCE) or -p n=... -p m=...")
            alpha, beta = self.alpha, self.beta
            assert beta is not None  # with alpha: `__init__`
            d = None
        else:
            alpha, beta, d = self.public_probabilities(n, m)
        r = rhos = rho = None
        if n is not None and m is not None and n > 0:
            r = theorem_4_4_r(alpha=alpha, beta=beta, n=n, m=m)
            every = view_rhos(theorem_4_4_rho(r), alpha=alpha, beta=beta, v=self.v, n=n, m=m)
            rho = float(every.max() if view is None else every[view - 1])
            if self.v <= MAX_LISTED_VIEWS:
                rhos = tuple(float(x) for x in every)
        privacy = self._privacy()
        printed = (usefulness_rho(k=privacy[0], gamma=privacy[1])
                   if privacy is not None and self.alpha is None
                   and self.adversary == "independent" else None)
        size = None if n is None or m is None else alpha * n + beta * m
        needed = meets = posterior = None
        if self.gamma is not None and d is not None and d < 1 and self.v == 1 \
                and self.noise == "uniform":
            # Theorem 6.3 is stated for one view of uniform noise.
            needed = theorem_6_3_beta(d, self.gamma)
            meets = meets_theorem_6_3(alpha=alpha, beta=beta, d=d, gamma=self.gamma)
            posterior = exclusive_posterior(alpha=alpha, beta=beta, d=d)
        return AlphaBetaGuarantee(
            alpha=alpha, beta=beta, gamma=self.gamma, k=self.k, d=d, n=n, m=m, views=self.v,
            rho=rho, expected_view_size=size, view=view, rhos=rhos, r=r, rho_as_printed=printed,
            adversary=self.adversary, exclusive_beta=needed, theorem_6_3=meets,
            exclusive_posterior=posterior)
