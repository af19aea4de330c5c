"""The usefulness of alpha-beta views: Theorem 4.4 for any r, and rho for each view of a
sequence (Section 4.4.1, Algorithm 4).

Theorem 4.4: if beta <= r alpha^2 n/m, alpha-beta is (rho, epsilon)-useful for
``rho = sqrt(2 (r + 1) ln(2/epsilon))``. Its r + 1 stands for the variance of a count's
estimate over n: the n tuples of the table add about n, the beta m inserted tuples
``beta m/alpha^2 <= r n``; rho sqrt(n) is then the Gaussian tail bound at probability epsilon.

Later views are noisier. Section 4.4.1 states only the order of view i's tradeoff, rho =
v sqrt(k/gamma): a tuple of V' outside I is inserted with probability (alpha + beta) e^(-1/v)
and the estimator divides by (alpha + beta)(1 - e^(-1/v)), about (alpha + beta)/v, so the
standard error grows about v-fold. ppdp states the rho of view i as the first view's rho times
the ratio of the two views' standard errors for the count of all of D, which has the largest
variance of any count (every tuple of D adds a positive term to it)."""

from __future__ import annotations

import math

import numpy as np


def theorem_4_4_r(*, alpha: float, beta: float, n: int, m: int) -> float:
    """The smallest r of Theorem 4.4 that alpha and beta meet: ``beta <= r alpha^2 n/m``, so
    ``r = beta m/(alpha^2 n)`` (infinite for an empty table)."""
    if n <= 0:
        return math.inf
    return beta * m / (alpha**2 * n)


def theorem_4_4_rho(r: float, epsilon: float = 0.05) -> float:
    """rho of Theorem 4.4: ``sqrt(2 (r + 1) ln(2/epsilon))``."""
    return math.sqrt(2 * (r + 1) * math.log(2 / epsilon))


def view_variances(*, alpha: float, beta: float, v: int, n: int, m: int) -> np.ndarray:
    """The variance of each view's estimate (views 1..v) of the count of all of D, the largest
    of any count, over the draws of the view and of V' (the earlier views).

    With the rates of `ppdp.mechanisms.alphabeta.draws.view_rates` (A, B for tuples of V', A',
    C for the others): a tuple of I held once is in V' with probability
    ``1 - (1 - alpha - beta)^(i-1)``, a tuple of D - I with ``1 - prod_{j<i} (1 - C_j)``; each
    adds the Bernoulli variance of its rate over the square of the rate the estimator divides
    by (`ppdp.mechanisms.alphabeta.release`). View 1 gives
    ``(n (alpha + beta)(1 - alpha - beta) + (m - n) beta (1 - beta))/alpha^2``. Computed for
    all views at once (v may be 10^6), from the same rates as `view_rates`."""
    keep = alpha + beta
    earlier = keep * math.exp(-1 / v)
    seen = keep - earlier
    before = np.arange(v, dtype=float)  # i - 1 for views i = 1..v
    other = (1 - keep) ** before * beta
    unseen = keep - other
    seen_in = 1 - (1 - keep) ** before
    unseen_out = np.concatenate([[1.0], np.cumprod(1 - other)[:-1]])
    table = n * keep * (1 - keep) * (seen_in / seen**2 + (1 - seen_in) / unseen**2)
    noise = max(m - n, 0) * ((1 - unseen_out) * earlier * (1 - earlier) / seen**2
                             + unseen_out * other * (1 - other) / unseen**2)
    result: np.ndarray = table + noise
    return result


def view_rhos(first: float, *, alpha: float, beta: float, v: int, n: int, m: int
              ) -> np.ndarray:
    """rho of each view 1..v: the first view's ``first`` times the ratio of the view's standard
    error to the first view's, for the count of all of D (`view_variances`)."""
    variances = view_variances(alpha=alpha, beta=beta, v=v, n=n, m=m)
    result: np.ndarray = first * np.sqrt(variances / variances[0])
    return result
