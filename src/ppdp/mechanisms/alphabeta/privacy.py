"""alpha and beta for (d, gamma)-privacy (Theorems 4.3-4.4): the parameters of Section
4.2 for d = k n/m (or Theorem 6.3's beta against d-exclusive adversaries), the conditions of
Theorem 4.3, and the usefulness rho Section 4.2 prints for its parameters."""

from __future__ import annotations

import math

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.alphabeta.exclusive import theorem_6_3_beta
from ppdp.mechanisms.parameters import require_open_unit, require_positive


def privacy_parameters(*, k: float, gamma: float, n: int, m: int,
                       adversary: str = "independent") -> tuple[float, float, float]:
    """alpha, beta and d for (k n/m, gamma)-privacy (Section 4.2, "Choice of parameters").

    d = k n/m, alpha + beta = 1/2, beta = d/gamma; Theorem 4.3 then holds when d/gamma <= 1/2.
    Against d-exclusive adversaries (``adversary="exclusive"``) beta is Theorem 6.3's
    ``2 (d/gamma)(1 - gamma)/(1 - d)`` instead, with alpha + beta = 1/2 still.
    """
    require_positive("k", k)
    require_open_unit("gamma", gamma)
    d = k * n / m
    if not d < 1:
        raise InfeasibleError(f"d = k n/m = {d:.4g} must be below 1; lower k below {m / n:.4g}")
    beta = chosen_beta(d, gamma, adversary)
    if beta > 0.5:
        if adversary == "exclusive":
            raise InfeasibleError(
                f"Theorem 6.3 (d-exclusive adversaries) with d = k n/m = {d:.4g} and gamma = "
                f"{gamma:g} needs beta = 2 (d/gamma)(1 - gamma)/(1 - d) = {beta:.4g} > 1/2 = "
                f"alpha + beta; raise gamma to at least {4 * d / (1 + 3 * d):.4g} or lower k "
                f"to at most {gamma * m / ((4 - 3 * gamma) * n):.4g}")
        raise InfeasibleError(
            f"(d, gamma)-privacy with d = k n/m = {d:.4g} and gamma = {gamma:g} needs beta = "
            f"d/gamma = {beta:.4g} > 1/2 = alpha + beta (Theorem 4.3); raise gamma to at least "
            f"{2 * d:.4g} or lower k to at most {gamma * m / (2 * n):.4g}")
    return 0.5 - beta, beta, d


def chosen_beta(d: float, gamma: float, adversary: str = "independent") -> float:
    """beta for d and gamma: Section 4.2's d/gamma, or Theorem 6.3's
    ``2 (d/gamma)(1 - gamma)/(1 - d)`` against d-exclusive adversaries (d < 1)."""
    if adversary == "exclusive":
        return theorem_6_3_beta(d, gamma)
    return d / gamma


def noise_scale(adversary: str, *, k: float, gamma: float, n: int, m: int) -> float:
    """beta m over k n/gamma, for `public_row_count`: 1 for Section 4.2's beta, and Theorem
    6.3's ``2 (1 - gamma)/(1 - d)`` against d-exclusive adversaries (infinite for d >= 1,
    which is refused anyway)."""
    if adversary != "exclusive":
        return 1.0
    d = k * n / m
    return 2 * (1 - gamma) / (1 - d) if d < 1 else math.inf


def public_row_count(n: int, *, k: float, gamma: float, scale: float = 1.0) -> int:
    """n rounded up to a multiple of a power of two at least twice the precision to which a
    view's size already reveals n, so that beta = k n'/(gamma m) reveals no more.

    With alpha + beta = 1/2 (Section 4.2) the view holds about n/2 + beta m tuples with a
    spread of sqrt(beta m) = sqrt(k n/gamma), so its size tells n to about
    s = 2 sqrt(k n/gamma); the step is the power of two at or above 2 s. A larger n' means a
    larger d' = k n'/m: the guarantee for d' covers every adversary with prior <= d. ``scale``
    is beta m over k n/gamma when beta is not d/gamma (`noise_scale`).
    """
    spread = 2 * math.sqrt(scale * k * n / gamma)
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
    """rho of (rho, epsilon)-usefulness as Section 4.2 prints it for its parameters:
    ``rho = 2 sqrt(2 k (1 - gamma)/gamma ln(2/epsilon))``.

    It does not follow from Theorem 4.4, whose r for these parameters is 4k/gamma
    (`ppdp.mechanisms.alphabeta.usefulness.theorem_4_4_rho`): 34.4 against 38.5 at k = 10,
    gamma = 0.2, and at gamma = 0.5 below the error's 95 % quantile. Guarantees state the
    theorem's and keep this one as ``rho_as_printed``."""
    return 2 * math.sqrt(2 * k * (1 - gamma) / gamma * math.log(2 / epsilon))
