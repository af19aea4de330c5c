"""Posterior checks of uniform perturbation and Perturbation Partitioning
(ppdp.attack.posterior; Small Domain Randomization Theorem 1, Eq. 6 and 10)."""

from __future__ import annotations

import numpy as np

import ppdp
from ppdp.attack.posterior import prior_bounds
from ppdp.mechanisms.sdr.release import PerturbationRelease


def posterior_stderr(rho1: float, kept: float, m: int, n: int) -> float:
    """Standard error of the posterior at prior rho1 measured from n linked rows, by the delta
    method. The share k of rows published as themselves is binomial (sd sqrt(k (1 - k)/n));
    gamma = k (m - 1)/(1 - k) and the posterior rho1 gamma/(rho1 gamma + 1 - rho1) are
    smooth in it: d posterior/dk = rho1 (1 - rho1)/(rho1 gamma + 1 - rho1)^2 (m - 1)/(1 - k)^2."""
    gamma = kept * (m - 1) / (1 - kept)
    slope = rho1 * (1 - rho1) / (rho1 * gamma + 1 - rho1) ** 2 * (m - 1) / (1 - kept) ** 2
    return slope * np.sqrt(kept * (1 - kept) / n)


def test_uniform_posterior_at_rho1_is_rho2(adult: ppdp.Table) -> None:
    """Theorem 1 at equality: with gamma from Eq. 6, an adversary whose prior is rho1 ends at
    rho2 after seeing the value, never above. Measured on the 8,841 rows linked by their
    unique quasi-identifiers, the posterior lies within three standard errors of rho2 (so at
    most three above the bound)."""
    release = ppdp.UniformPerturbation(rho1=1 / 13, rho2=0.2).publish(adult, random_state=1)
    result = ppdp.attack(release, adult, attacks=["posterior"], random_state=1)["posterior"]
    (table,) = result.details["subtables"]
    kept = float(release.retention[0] + release.replacement[0])
    stderr = posterior_stderr(1 / 13, kept, adult.schema["occupation"].size,
                              table["linked_rows"])
    assert result.bound == 0.2 and abs(result.baseline - 1 / 13) < 1e-12
    assert abs(result.success - 0.2) <= 3 * stderr
    assert abs(result.details["stderr"] - stderr) < 0.1 * stderr


def test_partition_posterior_per_subtable(adult: ppdp.Table) -> None:
    """Eq. 10: each sub-table's gamma_i comes from its rho1_i, so at prior rho1_i the
    posterior is rho2 in every sub-table; each measured one lies within three of its
    standard errors."""
    release = ppdp.PerturbationPartitioning(rho1=1 / 13, rho2=0.2).publish(adult,
                                                                          random_state=2)
    result = ppdp.attack(release, adult, attacks=["posterior"], random_state=2)["posterior"]
    rho1 = prior_bounds(release.gammas, 0.2)
    sizes = release.domains.sum(axis=1)
    assert len(result.details["subtables"]) == len(release.gammas) > 1
    for table in result.details["subtables"]:
        i = table["subtable"]
        kept = float(release.retention[i] + release.replacement[i])
        stderr = posterior_stderr(rho1[i], kept, int(sizes[i]), table["linked_rows"])
        assert abs(table["posterior_at_rho1_i"] - 0.2) <= 3 * stderr, table
    assert abs(result.details["model_posterior_max"] - 0.2) < 1e-9


def test_weak_and_identity(adult: ppdp.Table) -> None:
    """rho2 = 0.99: the posterior reaches about 0.99 from the prior 1/13; a release of the
    true values (gamma claimed, nothing perturbed) gives certainty."""
    weak = ppdp.UniformPerturbation(rho1=1 / 13, rho2=0.99).publish(adult, random_state=1)
    result = ppdp.attack(weak, adult, attacks=["posterior"], random_state=1)["posterior"]
    assert result.success > result.baseline + 0.8
    identity = PerturbationRelease(adult.schema, weak.parameters, adult.n_rows,
                                   dict(adult.codes), np.zeros(adult.n_rows, dtype=np.uint8),
                                   weak.domains)
    exact = ppdp.attack(identity, adult, attacks=["posterior"], random_state=1)["posterior"]
    assert exact.success == 1.0


def test_individual_posterior_by_hand(adult: ppdp.Table) -> None:
    """Each individual's posterior of its own value is the mean, over the published rows with
    its quasi-identifiers, of prior(x) P(y | x) / sum_s prior(s) P(y | s), with each value's
    frequency in the row's sub-table as the prior: computed here row by row."""
    sample = adult.take(np.arange(600))
    mechanism = ppdp.PerturbationPartitioning(rho1=0.2, rho2=0.5)
    release = mechanism.publish(sample, random_state=3)
    result = ppdp.attack(release, sample, attacks=["posterior"], random_state=3)["posterior"]
    quasi = sample.schema.quasi_identifiers
    counts = mechanism.partition(sample).counts
    prior = counts / counts.sum(axis=1, keepdims=True)
    published = np.stack([release.codes[q] for q in quasi], axis=1)
    values = release.codes["occupation"]
    for row in range(0, 600, 37):
        own = sample.codes["occupation"][row]
        same = np.flatnonzero(np.all(published == [sample.codes[q][row] for q in quasi],
                                     axis=1))
        posteriors = []
        for r in same:
            i = release.subtable[r]
            p, q = release.retention[i], release.replacement[i]
            likelihood = np.where(release.domains[i], q, 0.0)
            likelihood[values[r]] += p
            joint = prior[i] * likelihood
            posteriors.append(joint[own] / joint.sum())
        assert abs(result.risk[row] - np.mean(posteriors)) < 1e-12
