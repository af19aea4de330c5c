"""alpha and beta for (d, gamma)-privacy (Theorems 4.3-4.4): the parameters of Section
4.2 for d = k n/m, the conditions of Theorem 4.3, and the usefulness rho of Theorem 4.4."""

from __future__ import annotations

import math

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.parameters import require_open_unit, require_positive


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
