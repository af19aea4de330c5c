"""SPLU-Gen's transition per sensitive value, and the unbiased estimates it gives.

Section 5.1 models a row without value s as publishing s at one common rate. In a partition into
groups of distinct values that rate depends on the row's own value: a group holding a rare value
has spent one of its gamma places on it, a group holding a frequent value hardly has (on Adult
with gamma = 5, rows of the rarest occupations publish Sales at 0.087-0.10, rows of the most
frequent at 0.112, against the model's 0.108). Wherever a condition correlates with the sensitive
value, the common rate biases the reconstruction, by an amount that grows like N while the
standard error grows like sqrt(N).

This module models each value separately: ``R[v, u]``, the probability that a row holding v
publishes u, is the chance that v's group holds u times 1/gamma. The decoy layout
(``grouping.distinct_value_groups``) mixes its partition towards a uniformly random one, whose
groups follow the maximum-entropy design of groups of gamma distinct values with the values'
shares of the groups as inclusion probabilities (conditional Poisson sampling). So R is a known,
smooth function of the frequencies, evaluated at the published ones: only gamma and the release
are used, never the partition. With several sensitive attributes, each randomized through its
own partition, the transition is the Kronecker product of theirs (Section 5.2).

Estimates. A condition P on published-as-is columns selects rows whose published values y have
expectation ``R^T x_P``; the estimate ``x_P = R^-T y`` is unbiased (the paper's iterative
Bayesian update, Eq. 13, converges to the same point wherever that point is non-negative; this
estimate may go below zero, which keeps it unbiased for small counts). Its variance is the delta
method over every row's published value, including R's dependence on the published frequencies:
see ``Linearisation``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def inclusion_probabilities(frequencies: np.ndarray, gamma: int, *,
                            tolerance: float = 1e-10, max_iterations: int = 100
                            ) -> tuple[np.ndarray, np.ndarray]:
    """Single and joint inclusion probabilities (pi_v, pi_vu) of the maximum-entropy design.

    Groups of gamma distinct values drawn with probability proportional to prod_{v in g} w_v
    (conditional Poisson sampling), the odds w fitted so that value v is in a share
    pi_v = f_v / (N / gamma) of the groups. ``e_k`` are the elementary symmetric polynomials
    of w; ``pi_v = w_v e_(gamma-1)(w without v) / e_gamma(w)`` and
    ``pi_vu = w_v w_u e_(gamma-2)(w without v, u) / e_gamma(w)``. The log-odds are fitted by
    Newton's method: d pi / d log w is the covariance of the inclusion indicators.
    """
    target = feasible_shares(frequencies, gamma)
    log_odds = np.log(target / (1 - target))
    for _ in range(max_iterations):
        single, joint = _design(np.exp(log_odds - log_odds.max()), gamma)
        gap = target - single
        # Relative to each share, down to shares of 1e-9 (far below one group in 10^8).
        if np.max(np.abs(gap) / np.maximum(target, 1e-9)) < tolerance:
            break
        covariance = joint - np.outer(single, single)
        np.fill_diagonal(covariance, single * (1 - single))
        # The indicators add up to gamma: the covariance is singular along (1, .., 1), which
        # does not change the design; the least-squares step ignores it.
        step = np.linalg.lstsq(covariance, gap, rcond=None)[0]
        log_odds = log_odds + np.clip(step, -2.0, 2.0)
    return single, joint


def _design(odds: np.ndarray, gamma: int) -> tuple[np.ndarray, np.ndarray]:
    """(pi_v, pi_vu) of the conditional Poisson design with these odds."""
    total = _symmetric(odds, gamma)[gamma]
    without = _leave_one_out(odds, gamma)
    # e_k(w without v, u) from e_k(w without v), one order at a time; each step subtracts
    # u's terms, which is exact only when they are small, so start from the larger odds.
    pair = np.ones((len(odds), len(odds)))
    for k in range(1, gamma - 1):
        pair = without[:, k][:, None] - odds[None, :] * pair
    pair = np.where(odds[:, None] >= odds[None, :], pair, pair.T)
    joint = np.outer(odds, odds) * pair / total
    single = odds * without[:, gamma - 1] / total
    joint = np.clip(joint, 0.0, np.minimum.outer(single, single))
    np.fill_diagonal(joint, 0.0)
    return single, joint


MAX_SHARE = 1 - 1e-6
"""Largest share of groups a value is modelled to hold (a share of 1 is not identifiable)."""


def feasible_shares(frequencies: np.ndarray, gamma: int) -> np.ndarray:
    """pi_v = f_v / (N / gamma), moved into [1e-12, MAX_SHARE] keeping their sum gamma.

    Published counts scatter around the true ones, so a value near N / gamma may be published
    above it; its surplus goes to the other values in proportion to their shares.
    """
    frequencies = np.asarray(frequencies, dtype=np.float64)
    if len(frequencies) <= gamma:
        raise ValueError(f"gamma={gamma} needs more than {gamma} sensitive values, got "
                         f"{len(frequencies)}")
    shares = np.maximum(frequencies, 0.0)
    shares = np.maximum(shares * gamma / max(shares.sum(), 1e-300), 1e-12)
    for _ in range(len(shares)):
        capped = shares >= MAX_SHARE
        shares = np.where(capped, MAX_SHARE, shares)
        free = gamma - shares[capped].sum()
        shares[~capped] *= free / shares[~capped].sum()
        if shares.max() <= MAX_SHARE:
            break
    return shares


def _symmetric(odds: np.ndarray, order: int) -> np.ndarray:
    """e_0 .. e_order of the odds."""
    e = np.zeros(order + 1)
    e[0] = 1.0
    for w in odds:
        e[1:] = e[1:] + w * e[:-1]
    return e


def _leave_one_out(odds: np.ndarray, order: int) -> np.ndarray:
    """``[v, k]``: e_k of the odds without v (added one value at a time: no cancellation)."""
    e = np.zeros((len(odds), order + 1))
    e[:, 0] = 1.0
    for i, w in enumerate(odds):
        weight = np.full(len(odds), w)
        weight[i] = 0.0
        e[:, 1:] = e[:, 1:] + weight[:, None] * e[:, :-1]
    return e


def value_transition(frequencies: np.ndarray, gamma: int) -> np.ndarray:
    """``R[v, u]``: probability that a row holding v publishes u (v != u: pi_vu / (gamma pi_v)).

    On Adult at 10^6 rows the layout's realised rates are within 0.00014 (occupation,
    gamma = 5) and 0.00013 (education, gamma = 3) of these on average, against 0.0023 and 0.0069
    for Section 5.1's common rate (``tests/mechanisms/test_decoy_transition.py``).
    """
    single, joint = inclusion_probabilities(frequencies, gamma)
    transition = joint / (gamma * np.maximum(single, 1e-300)[:, None])
    np.fill_diagonal(transition, 1.0 / gamma)
    return transition


MAX_JACOBIAN_VALUES = 64
"""Largest domain whose transition is differentiated numerically (d^3 numbers are kept)."""


def transition_slope(frequencies: np.ndarray, gamma: int) -> np.ndarray:
    """``[w, v, u]``: d R[v, u] / d f_w by central differences of ``value_transition``."""
    frequencies = np.asarray(frequencies, dtype=np.float64)
    slope = np.empty((len(frequencies),) * 3)
    for w in range(len(frequencies)):
        step = max(1.0, 1e-3 * frequencies[w])
        up, down = frequencies.copy(), frequencies.copy()
        up[w] += step
        down[w] = max(down[w] - step, 0.5)
        slope[w] = (value_transition(up, gamma) - value_transition(down, gamma)) / (
            up[w] - down[w])
    return slope


def _along(tensor: np.ndarray, matrices: Sequence[np.ndarray], contract: int) -> np.ndarray:
    """Contract each of the last len(matrices) axes with axis ``contract`` of its matrix."""
    width = len(matrices)
    for j, matrix in enumerate(matrices):
        if contract:
            matrix = matrix.T
        if j == width - 1:
            # The last axis is a plain matrix product: with one sensitive attribute, the only
            # one, and a query's answer then costs a product rather than moved axes.
            tensor = tensor @ matrix
        else:
            axis = tensor.ndim - width + j
            tensor = np.moveaxis(np.moveaxis(tensor, axis, -1) @ matrix, -1, axis)
    return tensor


def _sensitivity(z: np.ndarray, b: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """``c[g, o, w] = sum_{m, v, u} z[g, m, v] b[g, o, m, u] slope[w, v, u]`` as two matrix
    products (what einsum's optimiser finds, without its search at every query)."""
    weights = np.matmul(np.swapaxes(z, 1, 2)[:, None], b)               # W: (G, O, v, u)
    return weights.reshape(*weights.shape[:2], -1) @ slope.reshape(len(slope), -1).T


@dataclass(frozen=True)
class ValueModel:
    """Per-attribute transitions R_j with their inverses, the published marginals and N."""

    transitions: tuple[np.ndarray, ...]
    inverses: tuple[np.ndarray, ...]
    marginals: tuple[np.ndarray, ...]
    slopes: tuple[np.ndarray | None, ...]
    n_rows: int
    gamma: int
    identifiable: bool

    @classmethod
    def from_published(cls, marginals: Sequence[np.ndarray], gamma: int) -> ValueModel:
        """The model at the published frequencies of each sensitive attribute."""
        transitions, inverses, slopes, identifiable = [], [], [], True
        for published in marginals:
            published = np.asarray(published, dtype=np.float64)
            matrix = value_transition(published, gamma)
            # A value held by every group publishes like any other row: R is then singular
            # and counts with that value cannot be told apart (Section 5.2's caveat).
            if np.linalg.cond(matrix) > 1e10:
                identifiable = False
            transitions.append(matrix)
            inverses.append(np.linalg.pinv(matrix))
            slopes.append(transition_slope(published, gamma)
                          if len(published) <= MAX_JACOBIAN_VALUES else None)
        n_rows = round(float(np.sum(marginals[0])))
        return cls(tuple(transitions), tuple(inverses),
                   tuple(np.asarray(m, dtype=np.float64) for m in marginals), tuple(slopes),
                   n_rows, gamma, identifiable)

    def unmix(self, published: np.ndarray) -> np.ndarray:
        """True counts from published counts on the last axes: ``x = R^-T y``."""
        return _along(published, self.inverses, 0)

    def spread(self, values: np.ndarray) -> np.ndarray:
        """``R h``: the expected value, per true value, of a function h of the published one."""
        return _along(values, self.transitions, 1)

    def pull_back(self, weights: np.ndarray) -> np.ndarray:
        """``b = R^-1 a``: the function of published values whose mean is a (``R b = a``)."""
        return _along(weights, self.inverses, 1)


def _hajek_sensitivity(pushed: np.ndarray, pulled: np.ndarray, published: np.ndarray,
                       gamma: int) -> np.ndarray:
    """``c(w) = sum_{v != u} W[v, u] dR[v, u] / df_w`` from Hajek's approximation, where
    ``W[g, o, v, u] = sum_m pushed[g, m, v] pulled[g, o, m, u]`` (never built: d^3 numbers).

    For domains too large to differentiate the exact design numerically, the slope is that of
    Hajek's (1964) approximation of its joint inclusion probabilities: with pi = f / G
    (G = N / gamma groups) and s = sum pi (1 - pi),
    ``gamma R[v, u] = pi_u (1 - (1 - pi_v)(1 - pi_u) / s)`` for v != u.
    """
    n_groups = published.sum() / gamma
    pi = np.clip(published / n_groups, 0.0, 1.0)
    spread = max(float((pi * (1 - pi)).sum()), 1e-12)
    apart = np.outer(1 - pi, 1 - pi)
    share = 1 - apart / spread
    same = np.einsum("gmv,gomv->gov", pushed, pulled)           # W[v, v], left out below

    def total(matrix: np.ndarray) -> np.ndarray:
        """sum_v W[v, w] matrix[v, w] over v != w."""
        return (np.einsum("gmv,gomw,vw->gow", pushed, pulled, matrix, optimize=True)
                - same * np.diag(matrix))

    into = total(share) + total(np.broadcast_to((1 - pi)[:, None], share.shape)) * pi / spread
    variance = pi * (1 - pi)
    out_of = (np.einsum("gmw,gomu,u->gow", pushed, pulled, variance, optimize=True)
              - same * variance) / spread
    weight = pi[None, :] * apart
    overall = (np.einsum("gmv,gomu,vu->go", pushed, pulled, weight, optimize=True)
               - np.einsum("gov,v->go", same, np.diag(weight)))[..., None]
    overall = overall * (1 - 2 * pi) / spread ** 2
    return (into + out_of + overall) / (gamma * n_groups)


def _inner(counts: np.ndarray, values: np.ndarray, width: int) -> np.ndarray:
    """``sum_v counts[.., v] values[.., v]`` over the last ``width`` axes."""
    axes = tuple(range(-width, 0))
    return (counts * values).sum(axis=axes)


def estimate_variance(model: ValueModel, weights: Sequence[np.ndarray],
                      overlaps: dict[tuple[int, int], np.ndarray],
                      everything: np.ndarray) -> np.ndarray:
    """Delta-method variance of ``sum_t <a_t, x_t>`` with ``x_t = R(f)^-T y_t``.

    ``weights[t]`` (a_t) has shape (O, *D), or (G, O, *D) when it differs between the G rows of
    the counts (several queries answered at once): per output cell, the weight of every
    combination of sensitive values in term t. ``overlaps[(t, t')]`` (t <= t') are the
    estimated true counts, shape (G, *D), of the rows satisfying the conditions of both terms
    (``overlaps[(t, t)]`` those of term t); ``everything`` (shape D) those of all rows.
    Returns shape (G, O).

    Linearisation. With f the published marginals (R is a function of them) and b_t = R^-1 a_t,
    ``d<a_t, x_t> = <b_t, dy_t> - <b_t, dR^T x_t>``; per attribute j the second term is
    ``<c_tj, df_j>`` with ``c_tj(w) = sum_{v, u} W(v, u) dR_j[v, u] / df_j(w)`` and
    ``W(v, u) = sum_{m} z(m, v) b_t(m, u)``, z being x_t pushed through R_k^T on every other
    attribute k (m ranges over their published values).

    A row in pattern pi (the set of terms whose conditions it meets) that publishes w adds
    ``phi_pi(w) = sum_{t in pi} b_t(w) - C(w)`` with ``C(w) = sum_t sum_j c_tj(w_j)``. Rows
    publish independently; a row holding v publishes w with probability R[v, w] (averaging
    over which of v's groups it sits in), so the variance is
    ``sum_pi sum_v X_pi(v) ((R phi^2)(v) - (R phi)(v)^2)``, which expands into the pairwise
    overlaps above.
    """
    width = len(model.transitions)
    terms = len(weights)
    weights = [a if a.ndim == width + 2 else a[None] for a in weights]  # (G or 1, O, *D)
    pulled = [model.pull_back(a) for a in weights]
    groups = overlaps[(0, 0)].shape[0]
    correction = None
    for t in range(terms):
        counts = overlaps[(t, t)]                                        # (G, *D)
        for j in range(width):
            others = [m if k != j else np.eye(len(m)) for k, m in enumerate(model.transitions)]
            pushed = _along(counts, others, 0)                           # (G, *D)
            # W[g, o, v, u] = sum_m z[g, m, v] b[g, o, m, u] weighs d R_j[v, u] in
            # <b_t, dR^T x_t>.
            b_moved = np.moveaxis(pulled[t], 2 + j, -1)
            z_moved = np.moveaxis(pushed, 1 + j, -1)
            size = model.transitions[j].shape[0]
            flat_b = b_moved.reshape(*b_moved.shape[:2], -1, size)
            flat_b = np.broadcast_to(flat_b, (groups, *flat_b.shape[1:]))
            flat_z = z_moved.reshape(len(z_moved), -1, size)
            slope = model.slopes[j]
            c = (_sensitivity(flat_z, flat_b, slope) if slope is not None
                 else _hajek_sensitivity(flat_z, flat_b, model.marginals[j], model.gamma))
            shape = [1] * width
            shape[j] = len(model.transitions[j])
            part = c.reshape(c.shape[:2] + tuple(shape))
            correction = part if correction is None else correction + part
    assert correction is not None
    full = (groups, *weights[0].shape[1:])
    correction = np.broadcast_to(correction, full)                       # C: (G, O, *D)
    spread_correction = model.spread(correction)                         # R C
    second = np.zeros(full[:2])
    first = np.zeros(full[:2])
    expand = (slice(None), None)  # counts (G, *D) -> (G, 1, *D)
    for (t, u), counts in overlaps.items():
        factor = 1.0 if t == u else 2.0
        c = counts[expand]
        second += factor * _inner(c, model.spread(pulled[t] * pulled[u]), width)
        first += factor * _inner(c, weights[t] * weights[u], width)
    for t in range(terms):
        c = overlaps[(t, t)][expand]
        second -= 2 * _inner(c, model.spread(correction * pulled[t]), width)
        first -= 2 * _inner(c, spread_correction * weights[t], width)
    whole = everything[None, None]
    second += _inner(whole, model.spread(correction ** 2), width)
    first += _inner(whole, spread_correction ** 2, width)
    return np.maximum(second - first, 0.0)
