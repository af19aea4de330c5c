"""Presence attacks on alpha-beta views and FRAPP (ppdp.attack.presence; alpha-beta paper
Theorem 4.3 and Section 6.1)."""

from __future__ import annotations

import numpy as np
import pytest

import ppdp
from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease


@pytest.fixture(scope="module")
def sample() -> ppdp.Table:
    """8,000 rows of Adult, every column a tuple attribute, the values present as domains."""
    return ppdp.datasets.adult().take(np.arange(8000)).declare_observed_domains(warn=False)


def presence_stderr(d: float, inside: float, outside: float, n: int) -> float:
    """Standard error of the posterior d a/(d a + (1 - d) b) measured with a the share of n
    once-occurring tuples kept (binomial) and b the insertion rate over the rest of the
    domain (millions of tuples: its error is negligible); delta method in a."""
    slope = d * (1 - d) * outside / (d * inside + (1 - d) * outside) ** 2
    return slope * np.sqrt(inside * (1 - inside) / n)


@pytest.mark.parametrize("mechanism", ["alphabeta", "frapp"])
def test_posterior_of_presence_stays_within_gamma(sample: ppdp.Table, mechanism: str) -> None:
    """Theorem 4.3: a tuple-independent adversary with prior d ends at most at gamma after
    seeing a tuple that occurs once. The measured posterior lies within three standard
    errors of the posterior the parameters give (FRAPP's p is chosen to reach gamma), and
    so at most three above gamma."""
    chosen = {"alphabeta": ppdp.AlphaBeta(k=10, gamma=0.2),
              "frapp": ppdp.FRAPP(k=10, gamma=0.2)}[mechanism]
    release = chosen.publish(sample, random_state=1)
    result = ppdp.attack(release, sample, attacks=["presence"], random_state=1)["presence"]
    details = result.details
    if mechanism == "alphabeta":
        inside = release.parameters["alpha"] + release.parameters["beta"]
        outside = release.parameters["beta"]
    else:
        p = release.parameters["retention"]
        q = (1 - p) / TupleDomain.of(release.schema).size
        n = release.n_rows
        inside, outside = 1 - (1 - p - q) * (1 - q) ** (n - 1), 1 - (1 - q) ** n
    d = result.baseline
    model = d * inside / (d * inside + (1 - d) * outside)
    stderr = presence_stderr(d, inside, outside, details["tuples_once"])
    assert abs(details["model_posterior"] - model) < 1e-6 * model
    assert abs(result.success - model) <= 3 * stderr
    assert result.success <= result.bound + 3 * stderr and model <= result.bound + 1e-9


def test_weak_view_and_identity(sample: ppdp.Table) -> None:
    """gamma = 0.9 lets a seen tuple's posterior rise far above the prior d; a view that is
    the table itself makes every once-occurring tuple certain."""
    weak = ppdp.AlphaBeta(k=10, gamma=0.9).publish(sample, random_state=2)
    result = ppdp.attack(weak, sample, attacks=["presence"], random_state=2)["presence"]
    assert result.success > result.baseline + 0.2
    identity = AlphaBetaRelease(weak.schema, weak.parameters, sample.n_rows,
                                dict(sample.codes))
    exact = ppdp.attack(identity, sample, attacks=["presence"], random_state=2)
    assert exact["presence"].success == 1.0
    assert exact["repeated"].success > 0


def test_repeated_tuples_were_certainly_present(sample: ppdp.Table) -> None:
    """A tuple seen twice in an alpha-beta view is in the table (inserted tuples are
    distinct and never in it): every such tuple is, and the attack counts exactly the rows
    whose tuple the view repeats, each with posterior 1."""
    release = ppdp.AlphaBeta(k=10, gamma=0.2).publish(sample, random_state=3)
    result = ppdp.attack(release, sample, attacks=["presence"], random_state=3)["repeated"]
    domain = TupleDomain.of(release.schema)
    view, copies = np.unique(domain.keys(release.codes), return_counts=True)
    rows = domain.keys(sample.codes)
    assert np.isin(view[copies >= 2], rows).all()
    exposed = np.isin(rows, view[copies >= 2])
    assert result.details["individuals"] == exposed.sum() > 0
    assert np.array_equal(result.risk == 1.0, exposed)
    assert result.details["posterior_seen_twice"] == 1.0 and result.bound is None


def test_a_view_set_by_alpha_and_beta_alone_is_not_attacked_for_presence(
        sample: ppdp.Table) -> None:
    """Without (d, gamma) a view states no prior and no bound: the presence attack says it
    does not apply, and the other attacks still run."""
    release = ppdp.AlphaBeta(alpha=0.3, beta=1e-6).publish(sample, random_state=4)
    report = ppdp.attack(release, sample, random_state=4)
    assert "alpha and beta" in report.not_applicable["presence"]
    assert "presence" not in [result.attack for result in report.results]
