"""Iterative Bayesian reconstruction of true state counts from randomized observations.

SPLU-Gen Section 5 (Eq. 13-14), after Agrawal, Srikant and Thomas (2005): with ``M[i, j]``
the probability that a row in true state i is published in state j and ``y`` the observed
counts, iterate ``x_i <- sum_j y_j * M[i, j] x_i / sum_r M[r, j] x_r`` from ``x = y`` until the
counts stop moving. The transition matrix may depend on the current counts (it does in
SPLU-Gen, through the frequencies of the sensitive values). Many independent problems are
solved at once, vectorised over the first axis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Transition = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Reconstruction:
    """Reconstructed counts (rows x states), iterations used, and whether each converged."""

    counts: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray


def iterative_bayesian(observed: np.ndarray, transition: Transition, *,
                       tolerance: float = 1e-6, max_iterations: int = 10_000,
                       feasible: Callable[[np.ndarray], np.ndarray] | None = None
                       ) -> Reconstruction:
    """Solve many reconstruction problems at once (Eq. 13-14).

    ``observed`` has shape (R, K); ``transition(x, rows)`` returns the (len(rows), K, K)
    matrices for current estimates ``x`` of the problems ``rows``. A problem has converged
    when one more update moves no state by more than ``tolerance`` times max(its count, 1)
    (the paper stops at a relative change of 0.01; counts near zero are compared in units of
    rows). ``max_iterations`` caps the number of updates (Eq. 13 evaluations) per problem,
    rounded up to a whole accelerated step of three updates.

    The updates are accelerated with SQUAREM (Varadhan and Roland 2008): two updates give a
    direction, the iterate is extrapolated along it (step length per problem; where that would
    leave the non-negative counts the plain second update is kept) and one more update
    stabilises it. ``feasible(x)`` (optional) marks the counts at which the transition model is
    valid; extrapolations outside are not taken. The fixed points are those of
    Eq. 13; only the path is shorter, which matters where the solution lies on the boundary
    (a count of 0), where plain updates converge sublinearly.
    """
    if tolerance <= 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance}")
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    observed = np.asarray(observed, dtype=np.float64)
    counts = observed.copy()
    iterations = np.zeros(len(observed), dtype=np.int64)
    converged = np.zeros(len(observed), dtype=bool)
    active = np.arange(len(observed))

    def update(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        matrix = transition(x, rows)
        published = np.einsum("rk,rkj->rj", x, matrix)
        y = observed[rows]
        ratio = np.divide(y, published, out=np.zeros_like(y), where=published > 0)
        return x * np.einsum("rij,rj->ri", matrix, ratio)

    def settled(before: np.ndarray, after: np.ndarray) -> np.ndarray:
        return np.all(np.abs(after - before) <= tolerance * np.maximum(before, 1.0), axis=1)

    while active.size and iterations[active[0]] < max_iterations:
        x0 = counts[active]
        x1 = update(x0, active)
        done = settled(x0, x1)
        x2 = update(x1, active)
        r, v = x1 - x0, x2 - 2 * x1 + x0
        norm_v = np.sqrt((v * v).sum(axis=1))
        alpha = -np.sqrt((r * r).sum(axis=1)) / np.where(norm_v > 0, norm_v, 1.0)
        alpha = np.minimum(alpha, -1.0)[:, None]
        jumped = x0 - 2 * alpha * r + alpha * alpha * v
        # A zero count is absorbing under Eq. 13, so an extrapolation that leaves the
        # non-negative orthant falls back to the plain second update.
        inside = (np.isfinite(jumped) & (jumped > 0) | (x2 == 0)).all(axis=1)
        if feasible is not None:
            inside &= feasible(np.where(np.isfinite(jumped), jumped, 0.0))
        inside = inside[:, None]
        jumped = np.where(inside, np.maximum(jumped, 0.0), x2)
        x3 = update(jumped, active)
        counts[active] = np.where(done[:, None], x1, x3)
        iterations[active] += np.where(done, 1, 3)
        done |= settled(jumped, x3)
        converged[active[done]] = True
        active = active[~done]
    return Reconstruction(counts, iterations, converged)


def delta_method_variance(jacobian: np.ndarray, observed_covariance: np.ndarray,
                          state: int) -> np.ndarray:
    """Variance of one reconstructed state by the delta method.

    At the fixed point the estimate solves ``g(x) = y`` with ``g(x) = M(x)^T x``; to first
    order ``Var(x) = J^-1 Cov(y) J^-T`` with ``J = dg/dx``. Returns NaN where J is singular
    (the state is not identifiable, e.g. a value present in every decoy group).
    """
    n, k = jacobian.shape[:2]
    variance = np.full(n, np.nan)
    well_posed = np.linalg.cond(jacobian) < 1e12
    if well_posed.any():
        unit = np.zeros((int(well_posed.sum()), k, 1))
        unit[:, state, 0] = 1.0
        # The row of J^-1 for `state` is the solution u of J^T u = e_state.
        u = np.linalg.solve(np.swapaxes(jacobian[well_posed], 1, 2), unit)[..., 0]
        variance[well_posed] = np.einsum("ri,rij,rj->r", u, observed_covariance[well_posed], u)
    return np.maximum(variance, 0.0)
