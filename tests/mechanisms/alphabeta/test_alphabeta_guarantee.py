"""alpha-beta's guarantee beyond Theorem 4.3: Theorem 4.4 for any r, the rho of each view of a
sequence (Section 4.4.1), and Theorem 6.3 against d-exclusive adversaries (Section 6.2).

Monte-Carlo checks run over fixed seeds on a small table (100 distinct tuples of a domain of
8,000), with the tolerances of `alphabeta_helpers`: an empirical sd within 5 relative sds
(1/sqrt(2(R - 1)) for R draws) of its expectation.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from ppdp import AlphaBeta, InfeasibleError
from ppdp.cli import app
from ppdp.mechanisms.alphabeta.draws import view_rates
from ppdp.mechanisms.alphabeta.exclusive import (
    exclusive_posterior,
    theorem_6_3_beta,
    theorem_6_3_violations,
)
from ppdp.mechanisms.alphabeta.privacy import (
    noise_scale,
    public_row_count,
    theorem_4_3_violations,
    usefulness_rho,
)
from ppdp.mechanisms.alphabeta.usefulness import (
    theorem_4_4_r,
    theorem_4_4_rho,
    view_variances,
)
from ppdp.release.load import load_release
from ppdp.table.table import Table
from tests.mechanisms.alphabeta.alphabeta_helpers import ADULT_M, ADULT_N, int_table

SIZES = {"a": 20, "b": 20, "c": 20}  # m = 8,000
EVERYTHING = "a >= 0"  # the count of all of D: the largest variance of any count
SELECTIVE = "a < 5 AND b < 10"


@pytest.fixture(scope="module")
def sparse_table() -> Table:
    """100 distinct tuples of the 20 x 20 x 20 domain, one row each."""
    keys = np.random.default_rng(3).choice(8000, size=100, replace=False)
    return int_table(SIZES, np.stack(np.unravel_index(keys, (20, 20, 20)), axis=1))


# -- Theorem 4.4 for any r ---------------------------------------------------------------------


def test_theorem_4_4_general_form():
    """rho = sqrt(2 (r + 1) ln(2/epsilon)) for the smallest r with beta <= r alpha^2 n/m."""
    assert theorem_4_4_r(alpha=0.4, beta=0.1, n=100, m=1000) == pytest.approx(6.25)
    assert theorem_4_4_rho(6.25) == pytest.approx(math.sqrt(2 * 7.25 * math.log(40)))
    assert theorem_4_4_rho(6.25, epsilon=0.01) == pytest.approx(
        math.sqrt(2 * 7.25 * math.log(200)))
    # Section 4.2: beta = k n/(gamma m) with alpha = 1/2 meets Theorem 4.4 for r = 4k/gamma.
    k, gamma, n, m = 10, 0.2, ADULT_N, ADULT_M
    assert theorem_4_4_r(alpha=0.5, beta=k * n / (gamma * m), n=n, m=m) == pytest.approx(
        4 * k / gamma)
    # Explicit alpha and beta had no rho; now Theorem 4.4's, with its r.
    guarantee = AlphaBeta(alpha=0.4, beta=0.1).guarantee(n=100, m=1000)
    assert guarantee.r == pytest.approx(6.25)
    assert guarantee.rho == pytest.approx(theorem_4_4_rho(6.25))
    assert "Theorem 4.4" in guarantee.statement()
    assert AlphaBeta(alpha=0.4, beta=0.1).guarantee().rho is None  # no n and m, no r
    assert AlphaBeta(alpha=0.4, beta=0.1).guarantee(n=0, m=10).r is None


def test_section_4_2s_printed_rho_is_kept_apart():
    """With k and gamma, rho is Theorem 4.4's for the view's r; Section 4.2's printed closed
    form 2 sqrt(2 k (1 - gamma)/gamma ln(2/epsilon)) is kept as rho_as_printed. It is not
    Theorem 4.4's for r = 4k/gamma, sqrt(2 (4k/gamma + 1) ln(2/epsilon)), which the section
    says its parameters meet: 34.36 against 38.50 at (10 n/m, 0.2)."""
    guarantee = AlphaBeta(k=10, gamma=0.2).guarantee(n=ADULT_N, m=ADULT_M)
    assert guarantee.rho_as_printed == usefulness_rho(k=10, gamma=0.2)
    assert guarantee.rho_as_printed == pytest.approx(34.36, abs=0.01)
    assert theorem_4_4_rho(4 * 10 / 0.2) == pytest.approx(38.50, abs=0.01)
    assert guarantee.r is not None and guarantee.rho == theorem_4_4_rho(guarantee.r)
    assert guarantee.rhos == (guarantee.rho,) and guarantee.view is None
    assert "Section 4.2 prints rho = 34.36" in guarantee.statement()
    explicit = AlphaBeta(k=10, gamma=0.2, alpha=guarantee.alpha, beta=guarantee.beta)
    assert explicit.guarantee(n=ADULT_N, m=ADULT_M).rho_as_printed is None


# -- rho for each view (Section 4.4.1) ---------------------------------------------------------


def test_view_variances_follow_the_rates():
    """Each view's variance from the rates of `view_rates`, one view at a time."""
    alpha, beta, v, n, m = 0.3, 0.05, 4, 50, 2000
    keep = alpha + beta
    variances = view_variances(alpha=alpha, beta=beta, v=v, n=n, m=m)
    outside = 1.0  # probability that a tuple of D - I is not in V'
    for view in range(1, v + 1):
        rates = view_rates(alpha, beta, v, view)
        inside = 1 - (1 - keep) ** (view - 1)  # probability that a tuple of I is in V'
        expected = (n * keep * (1 - keep) * (inside / rates.seen**2
                                             + (1 - inside) / rates.unseen**2)
                    + (m - n) * ((1 - outside) * rates.earlier * (1 - rates.earlier)
                                 / rates.seen**2
                                 + outside * rates.other * (1 - rates.other)
                                 / rates.unseen**2))
        assert variances[view - 1] == pytest.approx(expected, rel=1e-12)
        outside *= 1 - rates.other
    # View 1 is Algorithm 3's estimator.
    assert variances[0] == pytest.approx((n * keep * (1 - keep) + (m - n) * beta * (1 - beta))
                                         / alpha**2, rel=1e-12)


def test_each_view_has_its_rho():
    """v = 3 on Adult at (10 n/m, 0.2): the first view keeps Section 4.2's rho, later views
    are noisier in the ratio of their standard errors; rho without a view holds for all."""
    mechanism = AlphaBeta(k=10, gamma=0.2, v=3)
    every = mechanism.guarantee(n=ADULT_N, m=ADULT_M)
    first = mechanism.guarantee(n=ADULT_N, m=ADULT_M, view=1)
    assert first.r is not None and first.rho == theorem_4_4_rho(first.r)
    assert every.rhos is not None and every.rhos[0] == first.rho
    variances = view_variances(alpha=every.alpha, beta=every.beta, v=3, n=ADULT_N, m=ADULT_M)
    for view in (2, 3):
        rho = mechanism.guarantee(n=ADULT_N, m=ADULT_M, view=view).rho
        assert rho == every.rhos[view - 1] == pytest.approx(
            first.rho * math.sqrt(variances[view - 1] / variances[0]))
    assert every.rhos[0] < every.rhos[1] < every.rhos[2] == every.rho
    assert every.rho / first.rho == pytest.approx(2.13, abs=0.01)
    assert "of every view" in every.statement() and "views 1..3" in every.statement()
    with pytest.raises(ValueError, match=r"1\.\.v = 3"):
        mechanism.guarantee(n=ADULT_N, m=ADULT_M, view=4)


def test_rho_grows_like_v():
    """Section 4.4.1 gives view i's tradeoff as v sqrt(k/gamma): the last view's rho over the
    first's is about 0.7 v for v from 10 to 10^6 (not sqrt(v))."""
    for v in (10, 1000, 10**6):
        mechanism = AlphaBeta(k=10, gamma=0.2, v=v)
        guarantee = mechanism.guarantee(n=ADULT_N, m=ADULT_M)
        first = mechanism.guarantee(n=ADULT_N, m=ADULT_M, view=1).rho
        assert guarantee.rho is not None and first is not None
        assert 0.65 < guarantee.rho / first / v < 0.75
        assert (guarantee.rhos is None) == (v > 100)


def test_later_views_by_monte_carlo(sparse_table):
    """R = 300 sequences of v = 3 views at (1 n/m, 0.5) on 100 tuples of a domain of 8,000.
    Per view, the sd of the count of all of D is within 5 relative sds (0.2) of the standard
    error the per-view rho is scaled by (the views' sds grow about 1.8-fold from view 1 to 2,
    where the one-view rho claimed none); a selective count's sd stays below it; at most a
    share epsilon = 0.05 of the estimates (plus 5 binomial sds) is further than rho_i sqrt(n)
    from the truth. Section 4.2's printed rho, at gamma = 0.5, is below the normal 95 %
    quantile of the first view's error (1.96 sd): it does not bound the error as stated."""
    runs, v = 300, 3
    mechanism = AlphaBeta(k=1, gamma=0.5, v=v)
    values = np.empty((v, runs, 2))
    for seed in range(runs):
        sequence = mechanism.views(sparse_table)
        for view in range(v):
            release = sequence.publish(random_state=7 * seed + view)
            values[view, seed], _ = release.count_all([EVERYTHING, SELECTIVE])
    n, m = sparse_table.n_rows, 8000
    guarantee = mechanism.guarantee(sparse_table)
    assert guarantee.rhos is not None
    variances = view_variances(alpha=guarantee.alpha, beta=guarantee.beta, v=v, n=n, m=m)
    tolerance = 5 / math.sqrt(2 * (runs - 1))
    truth = [n, sparse_table.count(SELECTIVE).value]
    sds = values.std(axis=1, ddof=1)
    for view in range(v):
        expected = math.sqrt(variances[view])
        assert abs(sds[view, 0] / expected - 1) <= tolerance, (view, sds[view], expected)
        assert sds[view, 1] <= expected * (1 + tolerance)
        bound = guarantee.rhos[view] * math.sqrt(n)
        beyond = int(np.sum(np.abs(values[view] - truth) > bound))
        assert beyond <= 0.05 * runs * 2 + 5 * math.sqrt(runs * 2 * 0.05 * 0.95), view
        assert guarantee.rhos[view] / guarantee.rhos[0] == pytest.approx(
            math.sqrt(variances[view] / variances[0]))
    assert sds[1, 0] / sds[0, 0] > 1.5
    assert guarantee.rho_as_printed is not None
    assert guarantee.rho_as_printed * math.sqrt(n) < 1.96 * min(sds[0, 0],
                                                                 math.sqrt(variances[0]))


def test_theorem_4_4_by_monte_carlo(sparse_table):
    """Explicit alpha = 0.4, beta = 0.02 (r = 10): over R = 200 views the share of counts of all
    of D further than Theorem 4.4's rho sqrt(n) (2.7 sds) from the truth is at most
    epsilon = 0.05 plus 5 binomial sds."""
    mechanism = AlphaBeta(alpha=0.4, beta=0.02)
    guarantee = mechanism.guarantee(sparse_table)
    assert guarantee.r == pytest.approx(0.02 * 8000 / (0.16 * 100))
    assert guarantee.rho is not None
    estimates = np.array([mechanism.publish(sparse_table, random_state=seed).count(
        EVERYTHING).value for seed in range(200)])
    beyond = int(np.sum(np.abs(estimates - 100) > guarantee.rho * 10))
    assert beyond <= 0.05 * 200 + 5 * math.sqrt(200 * 0.05 * 0.95)


def test_a_sequence_states_the_guarantee_of_its_last_view(sparse_table):
    mechanism = AlphaBeta(k=1, gamma=0.5, v=3)
    sequence = mechanism.views(sparse_table)
    assert sequence.guarantee().view == 1  # before any view: the first
    rhos = mechanism.guarantee(sparse_table).rhos
    assert rhos is not None
    for view in (1, 2):
        sequence.publish(random_state=view)
        assert sequence.guarantee().view == view
        assert sequence.guarantee().rho == rhos[view - 1]


# -- Theorem 6.3: d-exclusive adversaries -------------------------------------------------------


def test_theorem_6_3_condition():
    """beta >= 2 (d/gamma)(1 - gamma)/(1 - d) with alpha + beta = 1/2: 1.6/(1 - d) times
    Section 4.2's d/gamma at gamma = 0.2."""
    d, gamma = 0.01, 0.2
    assert theorem_6_3_beta(d, gamma) == pytest.approx(2 * (d / gamma) * (1 - gamma) / (1 - d))
    assert theorem_6_3_beta(d, gamma) / (d / gamma) == pytest.approx(1.6 / (1 - d))
    assert theorem_6_3_violations(alpha=0.5 - 0.081, beta=0.081, d=d, gamma=gamma) == []
    failed = theorem_6_3_violations(alpha=0.45, beta=0.05, d=d, gamma=gamma)
    assert len(failed) == 1 and "0.08081" in failed[0]
    assert "1/2" in theorem_6_3_violations(alpha=0.3, beta=0.1, d=d, gamma=gamma)[0]


def test_section_4_2s_beta_misses_theorem_6_3():
    """The paper's Section 5 setting (10 n/m, 0.2) on Adult: the default beta = d/gamma is
    1/1.6 of what Theorem 6.3 needs; adversary="exclusive" chooses that beta, keeps
    alpha + beta = 1/2 and still meets Theorem 4.3."""
    default = AlphaBeta(k=10, gamma=0.2).guarantee(n=ADULT_N, m=ADULT_M)
    assert default.theorem_6_3 is False and default.exclusive_beta is not None
    assert default.exclusive_beta / default.beta == pytest.approx(1.6, rel=1e-3)
    assert "adversary=exclusive" in default.statement()
    chosen = AlphaBeta(k=10, gamma=0.2, adversary="exclusive").guarantee(n=ADULT_N, m=ADULT_M)
    assert chosen.d is not None
    assert chosen.theorem_6_3 is True and chosen.adversary == "exclusive"
    assert chosen.alpha + chosen.beta == pytest.approx(0.5)
    assert chosen.beta == chosen.exclusive_beta == theorem_6_3_beta(chosen.d, 0.2)
    assert theorem_4_3_violations(alpha=chosen.alpha, beta=chosen.beta, d=chosen.d,
                                  gamma=0.2) == []
    # n is rounded up for the larger beta's spread (beta reveals n no better than the view).
    scale = noise_scale("exclusive", k=10, gamma=0.2, n=ADULT_N, m=ADULT_M)
    assert chosen.d == pytest.approx(
        10 * public_row_count(ADULT_N, k=10, gamma=0.2, scale=scale) / ADULT_M)
    assert "no positive leakage" in chosen.statement()
    # Theorem 4.4's rho for that beta (Section 4.2's closed form assumes beta = d/gamma).
    assert chosen.r is not None and chosen.rho == pytest.approx(theorem_4_4_rho(chosen.r))


def brute_force_posterior(alpha: float, beta: float, priors: list[float]) -> float:
    """The largest posterior of tuple 0 of an exclusive set (exactly one of its tuples is in I,
    tuple j with probability priors[j]) over every subset of the set a view can hold."""
    largest = 0.0
    for shown in itertools.product((False, True), repeat=len(priors)):
        joint = []
        for present in range(len(priors)):
            likelihood = 1.0
            for j, held in enumerate(shown):
                rate = alpha + beta if j == present else beta
                likelihood *= rate if held else 1 - rate
            joint.append(priors[present] * likelihood)
        largest = max(largest, joint[0] / sum(joint))
    return largest


@pytest.mark.parametrize("d", [0.05, 0.1, 0.2])
def test_exclusive_posterior_by_enumeration(d):
    """Every view of a set of 6 tuples (tuple 0 of prior d, the others sharing 1 - d):
    the largest posterior of tuple 0 is `exclusive_posterior`; at Theorem 6.3's beta it is at
    most gamma (no positive leakage), at a beta far below it is not."""
    gamma = 0.5
    priors = [d] + [(1 - d) / 5] * 5
    beta = theorem_6_3_beta(d, gamma)
    for b in (beta, beta / 10):
        exact = brute_force_posterior(0.5 - b, b, priors)
        assert exclusive_posterior(alpha=0.5 - b, beta=b, d=d) == pytest.approx(exact, rel=1e-9)
    assert brute_force_posterior(0.5 - beta, beta, priors) <= gamma
    assert brute_force_posterior(0.45, beta / 10, priors) > gamma


def test_exclusive_views(sparse_table, tmp_path):
    """A view for d-exclusive adversaries records the adversary and loads back; the option
    needs k and gamma and one view of uniform noise, and says when no beta meets it."""
    mechanism = AlphaBeta(k=1, gamma=0.5, adversary="exclusive")
    release = mechanism.publish(sparse_table, random_state=1)
    guarantee = mechanism.guarantee(sparse_table)
    assert release.parameters["adversary"] == "exclusive"
    assert release.parameters["beta"] == guarantee.beta == guarantee.exclusive_beta
    loaded = load_release(release.save(tmp_path / "view"))
    assert loaded.parameters["adversary"] == "exclusive"
    assert "adversary" not in AlphaBeta(k=1, gamma=0.5).parameter_values
    assert mechanism.parameter_values["adversary"] == "exclusive"
    for options, match in (({"alpha": 0.3, "beta": 0.2}, "needs k and gamma"),
                           ({"k": 1, "gamma": 0.5, "v": 2}, "single view"),
                           ({"k": 1, "gamma": 0.5, "noise": "marginal"}, "uniform noise")):
        with pytest.raises(ValueError, match=match):
            AlphaBeta(adversary="exclusive", **options)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'independent' or 'exclusive'"):
        AlphaBeta(k=1, gamma=0.5, adversary="correlated")
    with pytest.raises(InfeasibleError, match=r"Theorem 6\.3.*raise gamma") as error:
        AlphaBeta(k=30, gamma=0.2, adversary="exclusive").guarantee(n=100, m=8000)
    assert "\n" not in str(error.value)
    with pytest.raises(InfeasibleError, match=r"needs beta >= 2 \(d/gamma\)"):
        AlphaBeta(k=1, gamma=0.5, alpha=0.45, beta=0.05, adversary="exclusive").guarantee(
            n=100, m=1000)


def test_cli_guarantee_reports_theorem_6_3():
    runner = CliRunner()
    common = ["guarantee", "alphabeta", "-p", "k=10", "-p", "gamma=0.2", "-p", f"n={ADULT_N}",
              "-p", f"m={ADULT_M}"]
    default = json.loads(runner.invoke(app, [*common, "--json"]).stdout)
    assert default["theorem_6_3"] is False
    assert default["exclusive_beta"] == pytest.approx(1.6 * default["beta"], rel=1e-3)
    chosen = json.loads(runner.invoke(app, [*common, "-p", "adversary=exclusive",
                                            "--json"]).stdout)
    assert chosen["theorem_6_3"] is True and chosen["beta"] == chosen["exclusive_beta"]
    text = runner.invoke(app, [*common, "-p", "adversary=exclusive"]).stdout
    assert "theorem_6_3" in text and "Theorem 6.3" in text
    views = json.loads(runner.invoke(app, [*common, "-p", "v=3", "--json"]).stdout)
    assert len(views["rhos"]) == 3 and views["rho"] == views["rhos"][2]
    one = json.loads(runner.invoke(app, [*common, "-p", "v=3", "-p", "view=2", "--json"]).stdout)
    assert one["view"] == 2 and one["rho"] == views["rhos"][1]
    table = runner.invoke(app, [*common, "-p", "v=3"]).stdout
    assert "rhos" in table and "40.333, 73.8394, 85.8083" in table
    failed = runner.invoke(app, ["guarantee", "alphabeta", "-p", "k=30", "-p", "gamma=0.2",
                                 "-p", "n=100", "-p", "m=8000", "-p", "adversary=exclusive"])
    assert failed.exit_code == 3 and "Theorem 6.3" in failed.output
    assert len(failed.output.strip().splitlines()) == 1
