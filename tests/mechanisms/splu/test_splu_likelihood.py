"""SPLU-Gen's Theorem 2: the published count of a sensitive value is the maximum-likelihood
estimate of its true count, and it is what a release answers for that value alone."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from ppdp.mechanisms.splu.mechanism import SPLUGen
from tests.mechanisms.splu.test_splu import fig3_table


def test_published_count_maximises_the_likelihood():
    """A value of true count f is published Binomial(gamma f, 1/gamma) times (Section 4), so
    seeing it x times the likelihood of f is binom.pmf(x, gamma f, 1/gamma). Over the integers
    f >= 0 it is largest at f = x (ties allowed), for gamma = 2..20 and x = 0..60."""
    for gamma in range(2, 21):
        counts = np.arange(0, 400)
        for x in range(0, 61):
            likelihood = binom.pmf(x, gamma * counts, 1 / gamma)
            best = counts[likelihood >= likelihood.max() * (1 - 1e-12)]
            assert x in best, (gamma, x, best)


def test_a_value_alone_is_estimated_by_its_published_count():
    table = fig3_table()
    domain = table.schema["disease"].domain
    for seed in range(5):
        release = SPLUGen(gamma=3).publish(table, random_state=seed)
        published = np.bincount(release.codes["disease"], minlength=len(domain))
        for code, value in enumerate(domain):
            estimate = release.count(f"disease = '{value}'")
            assert estimate.value == published[code]
            # Binomial variance f (1 - 1/gamma) at the estimate.
            assert estimate.stderr == pytest.approx(np.sqrt(published[code] * (1 - 1 / 3)))
