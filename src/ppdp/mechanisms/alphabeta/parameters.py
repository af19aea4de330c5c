"""The checks of alpha-beta's and FRAPP's parameters, made when a mechanism is built and again
when one of its views is loaded: a view is trusted only as far as the parameters it lists are
ones the mechanism would take."""

from __future__ import annotations

from typing import Any

from ppdp.data.schema import Role, Schema
from ppdp.mechanisms.alphabeta.exclusive import ADVERSARIES
from ppdp.mechanisms.parameters import (
    is_real,
    require_open_unit,
    require_positive,
    require_unit_interval,
)
from ppdp.plan.resources import format_value

MAX_VIEWS = 10**6
"""The largest v: later views divide by (alpha + beta)(1 - e^(-1/v)), computed with a
cancellation that loses about log10(v) of float64's 16 digits (Algorithm 4)."""

MIN_ALPHA = 1e-9
"""The smallest alpha: the estimator divides by alpha, recovered as (alpha + beta) - beta
(Algorithm 3), which keeps 7 digits of it at this bound."""

NOISES = ("uniform", "marginal")
"""Algorithm 2's uniform insertions, or Algorithm 5's by the smoothed marginals."""


def check_alphabeta(*, k: Any, gamma: Any, alpha: Any, beta: Any, v: Any, noise: Any,
                    adversary: Any = "independent") -> None:
    """k and gamma (both or neither), alpha and beta (both or neither; one pair at least), the
    bound v on the views, the kind of noise and the adversary, as alpha-beta takes them
    (Sections 2, 4 and 6.2)."""
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
        if alpha < MIN_ALPHA:
            raise ValueError(f"alpha must be at least {MIN_ALPHA:g} for the counts to be "
                             f"estimated (Algorithm 3 divides by it), got {alpha!r}")
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_VIEWS:
        raise ValueError(f"v (number of views) must be an integer in 1..{MAX_VIEWS:,}, got "
                         f"{format_value(v)}")
    if noise not in NOISES:
        raise ValueError(f"noise must be 'uniform' or 'marginal', got {noise!r}")
    if noise == "marginal" and v > 1:
        raise ValueError("non-uniform noise (Algorithm 5) is for a single view: use v = 1")
    check_adversary(adversary, k=k, v=v, noise=noise)


def check_adversary(adversary: Any, *, k: Any, v: int, noise: str) -> None:
    """The adversary the parameters are chosen against; Theorem 6.3 (d-exclusive) needs d, so
    k and gamma, and covers one view of uniform noise."""
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be 'independent' or 'exclusive', got {adversary!r}")
    if adversary != "exclusive":
        return
    if k is None:
        raise ValueError("adversary=exclusive needs k and gamma: Theorem 6.3's beta depends on "
                         "d = k n/m")
    if v > 1:
        raise ValueError("adversary=exclusive (Theorem 6.3) covers a single view: use v = 1")
    if noise != "uniform":
        raise ValueError("adversary=exclusive (Theorem 6.3) is for uniform noise: use "
                         "noise=uniform")


def check_view(view: Any, v: int) -> int:
    """A view's number: an integer from 1 to the bound v (Algorithm 4 publishes no more)."""
    if isinstance(view, bool) or not isinstance(view, int) or not 1 <= view <= v:
        raise ValueError(f"the view number must be an integer in 1..v = {v}, got "
                         f"{format_value(view)}")
    return view


def check_frapp(k: Any, gamma: Any) -> tuple[float, float]:
    """FRAPP's k and gamma: (k n/m, gamma)-privacy with k > 0 and 0 < gamma < 1."""
    return require_positive("k", k), require_open_unit("gamma", gamma)


def check_frapp_view(parameters: dict[str, Any]) -> None:
    """A FRAPP view's parameters as FRAPP writes them: k and gamma as it takes them, d = k n/m
    below gamma, and a retention p in (0, 1] (the estimator divides by it)."""
    _, gamma = check_frapp(parameters["k"], parameters["gamma"])
    d = require_positive("d", parameters["d"])
    if not d < gamma:
        raise ValueError(f"d = {d:g} must be below gamma = {gamma:g} for (d, gamma)-privacy")
    require_unit_interval("retention", parameters["retention"])


def check_published_columns(schema: Schema, mechanism: str) -> None:
    """A view publishes every column of its tuple domain: one listed as ignored would leave
    the domain D, and with it the estimator's n_D, out of step with the published tuples."""
    ignored = schema.names_with_role(Role.IGNORED)
    if ignored:
        raise ValueError(f"{mechanism} publishes no ignored column, but {list(ignored)} are")


def check_marginals(source: Any, sizes: dict[str, int]) -> None:
    """Algorithm 5's smoothed marginals: for each column, a probability per domain value."""
    if not isinstance(source, dict) or set(source) != set(sizes):
        raise ValueError(f"source must give the marginal of each column ({', '.join(sizes)})")
    for column, probabilities in source.items():
        if not isinstance(probabilities, list) or len(probabilities) != sizes[column] or not all(
                is_real(p) and 0 <= float(p) <= 1 for p in probabilities):
            raise ValueError(f"the marginal of {column!r} must list a probability for each of "
                             f"its {sizes[column]} values")
