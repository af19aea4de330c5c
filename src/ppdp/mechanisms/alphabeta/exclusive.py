"""alpha-beta against d-exclusive adversaries (Section 6.2): Theorem 6.3's condition for the
absence of positive leakage, and the largest posterior such an adversary reaches.

A d-exclusive adversary (Definition 6.2) knows a partition of D into sets of which exactly one
tuple each is in the table (a join/link attack: the age and zip code of a person known to be
there), with a prior of at most d on each tuple and the sets independent of each other.
Theorem 6.3: with alpha + beta = 1/2 and ``beta >= 2 (d/gamma)(1 - gamma)/(1 - d)`` a tuple of
prior at most d keeps a posterior of at most gamma; negative leakage is not prevented (Example
6.4). At gamma = 0.2 that beta is 1.6 times Section 4.2's d/gamma."""

from __future__ import annotations

ADVERSARIES = ("independent", "exclusive")
"""The adversaries alpha-beta's parameters are chosen against: d-independent (Theorem 4.3,
Section 4.2's beta = d/gamma) or d-exclusive (Theorem 6.3's beta)."""

HALF_TOLERANCE = 1e-9
"""How far alpha + beta may be from Theorem 6.3's 1/2: alpha is computed as 1/2 - beta."""


def theorem_6_3_beta(d: float, gamma: float) -> float:
    """The smallest beta of Theorem 6.3: ``2 (d/gamma)(1 - gamma)/(1 - d)``, for d < 1."""
    return 2 * (d / gamma) * (1 - gamma) / (1 - d)


def theorem_6_3_violations(*, alpha: float, beta: float, d: float, gamma: float) -> list[str]:
    """The conditions of Theorem 6.3 that (alpha, beta) fail for d and gamma."""
    failed = []
    if abs(alpha + beta - 0.5) > HALF_TOLERANCE:
        failed.append(f"Theorem 6.3 (d-exclusive adversaries) needs alpha + beta = 1/2, got "
                      f"{alpha + beta:.4g}")
    needed = theorem_6_3_beta(d, gamma) if d < 1 else float("inf")
    if not beta >= needed:
        failed.append(f"Theorem 6.3 (d-exclusive adversaries) needs beta >= 2 (d/gamma)"
                      f"(1 - gamma)/(1 - d) = {needed:.4g}, got {beta:.4g}")
    return failed


def meets_theorem_6_3(*, alpha: float, beta: float, d: float, gamma: float) -> bool:
    """Whether (alpha, beta) meet Theorem 6.3's condition for d and gamma."""
    return not theorem_6_3_violations(alpha=alpha, beta=beta, d=d, gamma=gamma)


def exclusive_posterior(*, alpha: float, beta: float, d: float) -> float:
    """The largest posterior of a tuple t of prior at most d that a d-exclusive adversary
    reaches from one view: t is in the view and the other tuples of its set are not.

    The view's tuples are drawn independently, so the posterior of t depends only on the
    view's tuples of t's set. Against "t' of the set is in I" a view holding t and none of the
    others has likelihood ratio ``a = (alpha + beta)/beta`` for t' = t and
    ``b = (1 - alpha - beta)/(1 - beta)`` for any other t', so the posterior is
    ``p a/(p a + (1 - p) b)``, largest at p = d. Any other tuple of the set in the view, or t
    absent, lowers it. ``<= gamma`` exactly when ``(a/b)(1 - gamma) d <= gamma (1 - d)``: with
    alpha + beta = 1/2, when ``beta/(1 - beta) >= (d/gamma)(1 - gamma)/(1 - d)``, which
    Theorem 6.3's beta meets with room (and Section 4.2's d/gamma too)."""
    present = (alpha + beta) / beta
    absent = (1 - alpha - beta) / (1 - beta)
    return d * present / (d * present + (1 - d) * absent)
