"""Measured privacy: the measure each guarantee bounds, checked by hand and on Adult."""

import numpy as np
import pytest

import ppdp
from ppdp.mechanisms.sdr.formulas import amplification_gamma
from ppdp.risk.measured import (
    group_association,
    measured_privacy,
    perturbation_posterior,
    small_count_recovery,
    tuple_posterior,
)


@pytest.fixture(scope="module")
def adult() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation")


def test_group_association_by_hand():
    # Group 0: 3 of 4 rows hold one value (0.75); group 1: 2 of 2 (1.0).
    measured = group_association(np.array([0, 0, 1]), np.array([3, 1, 2]), 0.8)
    assert measured.largest == 1.0 and measured.share_over == 0.5
    assert group_association(np.array([0, 0, 1, 1]), np.ones(4), 0.5).share_over == 0.0


def test_uniform_posterior_is_the_amplified_largest_protected_frequency(adult):
    """With the table's frequencies as the prior, the posterior of x given y = x is
    f gamma / (f gamma + 1 - f) (Eq. 6), largest for the most frequent protected value."""
    mechanism = ppdp.UniformPerturbation(rho1=1 / 13, rho2=1 / 5)
    shares = np.bincount(adult.codes["occupation"]) / adult.n_rows
    f = shares[shares <= 1 / 13].max()
    gamma = float(amplification_gamma(1 / 13, 1 / 5))
    measured = perturbation_posterior(mechanism, adult)
    assert measured.largest == pytest.approx(f * gamma / (f * gamma + 1 - f))
    assert measured.bound == 1 / 5 and measured.largest <= 1 / 5


@pytest.mark.parametrize("mechanism", [
    ppdp.UniformPerturbation(rho1=1 / 13, rho2=1 / 5),
    ppdp.PerturbationPartitioning(rho1=1 / 13, rho2=1 / 5),
    ppdp.Anatomy(l=5),
    ppdp.Ambiguity(alpha=0.1, beta=0.2),
], ids=["uniform", "sdr", "anatomy", "ambiguity"])
def test_every_release_meets_its_bound(adult, mechanism):
    release = mechanism.publish(adult, random_state=3)
    measured = measured_privacy(mechanism, release, adult)
    assert measured
    for value in measured:
        assert value.largest <= value.bound + 1e-12 and value.share_over == 0.0


def test_anatomy_association_is_read_from_its_groups(adult):
    release = ppdp.Anatomy(l=5).publish(adult, random_state=4)
    (measured,) = measured_privacy(ppdp.Anatomy(l=5), release, adult)
    group, _, count = release.st
    sizes = np.bincount(group, weights=count)
    assert measured.largest == pytest.approx(max(c / sizes[g] for g, c in zip(group, count,
                                                                              strict=True)))


def test_no_measure_for_other_kinds_of_guarantee(adult):
    assert measured_privacy(ppdp.DBR(), ppdp.DBR().publish(adult, random_state=1), adult) == []


def test_alpha_beta_tuple_posterior_is_theorem_4_3s_at_the_views_rates(adult):
    """With alpha + beta = 1/2 and beta = d'/gamma (Section 4.2), a tuple of prior d seen in
    the view has posterior d (1/2) / (d (1/2) + (1 - d) beta)."""
    mechanism = ppdp.AlphaBeta(k=10, gamma=0.2)
    release = mechanism.publish(adult, random_state=1)
    beta = release.parameters["beta"]
    d = 10 * adult.n_rows / mechanism.guarantee(adult).m
    measured = tuple_posterior(mechanism, release, adult)
    assert measured.largest == pytest.approx(d / 2 / (d / 2 + (1 - d) * beta))
    assert measured.bound == 0.2 and measured.largest <= 0.2
    assert measured_privacy(mechanism, release, adult) == [measured]


def test_frapp_tuple_posterior_reaches_gamma_at_its_retention(adult):
    """FRAPP's retention is the largest whose likelihood ratio meets Theorem 4.3's condition:
    the posterior of a tuple of prior d seen in the view is gamma, up to the root's tolerance."""
    mechanism = ppdp.FRAPP(k=10, gamma=0.2)
    measured = tuple_posterior(mechanism, mechanism.publish(adult, random_state=1), adult)
    assert measured.largest == pytest.approx(0.2, rel=1e-9)


def test_small_count_recovery_by_hand():
    truth = np.array([1.0, 2.0, 3.0, 10.0])
    # Within 30 %: 1 -> 1.3 (yes), 2 -> 3 (no), 3 -> 2.1 (yes, the boundary), 10 -> 20 (no).
    measured = small_count_recovery(truth, np.array([1.3, 3.0, 2.1, 20.0]), epsilon=0.3,
                                    bound=0.4)
    assert measured.largest == 0.5 and measured.bound == 0.4
    assert measured.margin == pytest.approx(3 * np.sqrt(0.4 * 0.6 / 4))
