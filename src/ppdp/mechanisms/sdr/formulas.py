"""The formulas of uniform perturbation under (rho1, rho2)-privacy (Small Domain
Randomization, Sections 3-4): gamma from (rho1, rho2) (Theorem 1, Eq. 6), p and q (Eq. 4), the
perturbation matrix (Eq. 1), the error bound (Eq. 11) and the values rho1 protects."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.parameters import require_open_unit


def check_privacy(rho1: float, rho2: float) -> tuple[float, float]:
    """Validate a (rho1, rho2)-privacy requirement: 0 < rho1 < rho2 < 1 (Section 3.2)."""
    rho1, rho2 = require_open_unit("rho1", rho1), require_open_unit("rho2", rho2)
    if rho1 >= rho2:
        raise ValueError(f"(rho1, rho2)-privacy needs rho1 < rho2 (the posterior bound must "
                         f"exceed the prior bound), got rho1 = {rho1:g} >= rho2 = {rho2:g}; "
                         f"lower rho1 below {rho2:g} or raise rho2 above {rho1:g}")
    return rho1, rho2


def check_delta(delta: float) -> float:
    """Validate the confidence parameter delta of the error bound (it holds with probability
    1 - delta): 0 < delta < 1."""
    return require_open_unit("delta", delta)


def amplification_gamma(rho1: float | np.ndarray, rho2: float) -> Any:
    """The largest amplification ratio gamma giving (rho1, rho2)-privacy.

    Section 3.2, Eq. 6 (and Eq. 10 with rho1_i for a sub-table):
    ``gamma = rho2 (1 - rho1) / (rho1 (1 - rho2))``.
    """
    return rho2 * (1 - np.asarray(rho1, dtype=float)) / (np.asarray(rho1, dtype=float)
                                                          * (1 - rho2))


def uniform_probabilities(gamma: Any, m: Any) -> tuple[Any, Any]:
    """Retention probability p and replacement probability q of Uniform Perturbation.

    Section 3.2, Eq. 4: ``p = (gamma - 1)/(m - 1 + gamma)``, ``q = 1/(m - 1 + gamma)``;
    Pr[x -> x] = p + q = gamma q.
    """
    gamma, m = np.asarray(gamma, dtype=float), np.asarray(m, dtype=float)
    return (gamma - 1) / (m - 1 + gamma), 1 / (m - 1 + gamma)


def perturbation_matrix(gamma: float, m: int) -> np.ndarray:
    """The m x m perturbation matrix P[j][i] = Pr[x_i -> y_j] (Section 3.2, Eq. 5)."""
    _, q = uniform_probabilities(gamma, m)
    return np.full((m, m), float(q)) + np.eye(m) * float(q) * (gamma - 1)


def error_bound(n: Any, m: Any, gamma: Any, delta: float) -> Any:
    """The relative-frequency error bound eps of Theorem 2 at equality (Section 4.2, Eq. 11).

    ``eps = a/sqrt(n) * (m/(gamma - 1) + 1)`` with ``a = 2 sqrt(log(2/delta))``: with
    probability at least 1 - delta every reconstructed frequency f*/n is within eps of f/n.
    """
    a = 2 * math.sqrt(math.log(2 / delta))
    n, m, gamma = (np.asarray(v, dtype=float) for v in (n, m, gamma))
    return a / np.sqrt(n) * (m / (gamma - 1) + 1)


def protected_values(frequencies: np.ndarray, rho1: float) -> np.ndarray:
    """SA': the values whose relative frequency is at most rho1 (Section 4.1, Eq. 9).

    Raises InfeasibleError when no value qualifies: (rho1, rho2)-privacy then bounds nothing.
    """
    n = int(frequencies.sum())
    present = frequencies > 0
    # f/n <= rho1 rather than f <= rho1 n: a rho1 given as a relative frequency (1/161)
    # rounds like f/n does, while rho1 * n can round below f and drop the value from SA'.
    protected = present & (frequencies / n <= rho1)
    if not protected.any():
        least = int(frequencies[present].min())
        raise InfeasibleError(
            f"every sensitive value is more frequent than rho1 = {rho1:g} (the least frequent "
            f"has relative frequency {least / n:.4g}), so (rho1, rho2)-privacy protects "
            f"nothing; raise rho1 to at least {least / n:.4g} (and rho2 above it)")
    return protected
