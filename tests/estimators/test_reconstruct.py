"""Iterative Bayesian reconstruction (SPLU-Gen Eq. 13-14) and its delta-method variance."""

import numpy as np
import pytest

from ppdp.estimators.reconstruct import delta_method_variance, iterative_bayesian


def test_recovers_counts_when_observations_are_their_expectation():
    rng = np.random.default_rng(0)
    k = 4
    matrices = rng.dirichlet(np.ones(k) * 0.5, size=(50, k)) * 0.5 + np.eye(k) * 0.5
    truth = rng.integers(10, 1000, size=(50, k)).astype(float)
    observed = np.einsum("rk,rkj->rj", truth, matrices)
    result = iterative_bayesian(observed, lambda x, rows: matrices[rows], tolerance=1e-10,
                                max_iterations=100_000)
    assert result.converged.all()
    np.testing.assert_allclose(result.counts, truth, rtol=1e-5)
    # Counts are preserved at every step (sum of y).
    np.testing.assert_allclose(result.counts.sum(axis=1), observed.sum(axis=1))


def test_identity_transition_returns_observations_in_one_step():
    observed = np.array([[3.0, 0.0, 7.0]])
    result = iterative_bayesian(observed, lambda x, rows: np.eye(3)[None].repeat(len(rows), 0))
    assert result.iterations[0] == 1
    np.testing.assert_allclose(result.counts, observed)


def test_delta_method_matches_simulation():
    """Randomized response on 2 states: the simulated spread of the fixed point matches."""
    rng = np.random.default_rng(1)
    keep = 0.7
    matrix = np.array([[keep, 1 - keep], [1 - keep, keep]])
    truth = np.array([3000.0, 1000.0])
    draws = 400
    flips = [rng.binomial(int(t), keep) for t in truth for _ in range(draws)]
    flips = np.array(flips).reshape(2, draws)
    observed = np.stack([flips[0] + (truth[1] - flips[1]), (truth[0] - flips[0]) + flips[1]],
                        axis=1)
    result = iterative_bayesian(observed, lambda x, rows: np.repeat(matrix[None], len(rows), 0),
                                tolerance=1e-10, max_iterations=100_000)
    covariance = np.diag(truth @ matrix) - np.einsum("k,ki,kj->ij", truth, matrix, matrix)
    variance = delta_method_variance(matrix.T[None], covariance[None], 1)[0]
    spread = result.counts[:, 1].var(ddof=1)
    # A sample variance from 400 draws has relative sd sqrt(2/399) ~ 0.07; allow 5 of them.
    assert spread / variance == pytest.approx(1.0, abs=5 * 0.071)


def test_singular_jacobian_gives_nan():
    singular = np.array([[[0.5, 0.5], [0.5, 0.5]]])
    assert np.isnan(delta_method_variance(singular, np.eye(2)[None], 0)[0])


@pytest.mark.parametrize("kwargs", [{"tolerance": 0}, {"max_iterations": 0}])
def test_parameters_are_checked(kwargs):
    with pytest.raises(ValueError):
        iterative_bayesian(np.ones((1, 2)), lambda x, rows: np.eye(2)[None], **kwargs)
