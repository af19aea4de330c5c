"""Parameter advice: the privacy forms, each mechanism's parameters against the papers' bounds,
and the reasons given when no parameter meets a target."""

import math

import pytest

import ppdp
from ppdp.evaluate.advice import (
    MECHANISMS,
    AssociationPrivacy,
    PosteriorPrivacy,
    SmallCountPrivacy,
    TuplePrivacy,
    advise,
    parse_privacy,
    splu_gamma_for,
)
from ppdp.mechanisms.alphabeta.privacy import usefulness_rho
from ppdp.mechanisms.splu.guarantee import (
    splu_chebyshev_utility_threshold,
    splu_privacy_threshold,
)


@pytest.fixture(scope="module")
def adult() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation")


def by_name(advice):
    return {item.mechanism: item for item in advice}


@pytest.mark.parametrize(("text", "expected"), [
    ("small-count:a=3,eps=0.3", SmallCountPrivacy(a=3, epsilon=0.3, t_p=0.5)),
    ("a=5, eps=0.2, tp=0.6", SmallCountPrivacy(a=5, epsilon=0.2, t_p=0.6)),
    ("beta=0.2", AssociationPrivacy(beta=0.2)),
    ("association:beta=1/4,alpha=0.1", AssociationPrivacy(beta=0.25, alpha=0.1)),
    ("rho1=1/13,rho2=0.2", PosteriorPrivacy(rho1=1 / 13, rho2=0.2)),
    ("k=10,gamma=0.2", TuplePrivacy(gamma=0.2, k=10.0)),
    ("tuple:d=0.001,gamma=0.2", TuplePrivacy(gamma=0.2, d=0.001)),
])
def test_parse_privacy_reads_every_form(text, expected):
    assert parse_privacy(text) == expected
    assert parse_privacy(expected.text()) == parse_privacy(text)


@pytest.mark.parametrize(("text", "match"), [
    ("beta=2", "beta must lie in (0, 1)"),
    ("rho1=0.3,rho2=0.2", "rho1 < rho2"),
    ("a=3", "names none of the forms"),
    ("foo=1", "names none of the forms"),
    ("small-count:beta=0.2", "names none of the forms"),
    ("k=10,d=0.001,gamma=0.2", "not both"),
    ("beta=1/0", "a number or a fraction"),
    ("beta", "is not key=value"),
    ("a=2.5,eps=0.3", "whole count"),
    ("shape:beta=0.2", "unknown form"),
])
def test_parse_privacy_refuses_what_it_cannot_read(text, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        parse_privacy(text)


def test_splu_gamma_is_the_smallest_whose_t_p_reaches_the_target():
    """Example 2 (Section 4.2): a = 3, eps = 0.3, T_P = 0.6 holds at gamma = 10; the smallest
    gamma that gives it is the advice."""
    gamma = splu_gamma_for(a=3, epsilon=0.3, t_p=0.6, largest=20)
    assert splu_privacy_threshold(gamma=gamma, epsilon=0.3, a=3) >= 0.6
    assert splu_privacy_threshold(gamma=gamma - 1, epsilon=0.3, a=3) < 0.6
    assert gamma <= 10
    assert splu_gamma_for(a=3, epsilon=0.3, t_p=0.6, largest=gamma - 1) is None


def test_small_count_privacy_configures_splu_only(adult):
    advice = by_name(advise(adult, "small-count:a=3,eps=0.3,tp=0.6"))
    assert list(advice) == list(MECHANISMS)
    splu = advice["splu"]
    assert splu.parameters == {"gamma": 7}
    assert splu.extra["T_P"] >= 0.6
    assert splu.extra["T_f"] == pytest.approx(
        splu_chebyshev_utility_threshold(gamma=7, epsilon=0.3, T_E=0.05))
    # The Chebyshev bound at 95 %: sqrt(f (1 - 1/gamma) / 0.05) for a count f.
    assert splu.predicted.absolute(100.0) == pytest.approx(math.sqrt(100 * (6 / 7) / 0.05))
    assert all(not a.eligible for name, a in advice.items() if name != "splu")
    assert "publish nothing" in advice["laplace"].reason


def test_splu_says_why_no_gamma_reaches_a_target_beyond_the_data(adult):
    """Prof-specialty (13.4 % of Adult) allows gamma up to 7, whose T_P is 0.6034."""
    splu = by_name(advise(adult, "small-count:a=3,eps=0.3,tp=0.61"))["splu"]
    assert not splu.eligible
    assert "0.603 < 0.61" in splu.reason and "gamma = 7" in splu.reason


def test_association_configures_the_group_mechanisms(adult):
    advice = by_name(advise(adult, "beta=0.2"))
    assert advice["anatomy"].parameters == {"l": 5}
    assert advice["ambiguity"].parameters == {"alpha": 1.0, "beta": 0.2}
    assert advice["mondrian"].parameters == {"k": 5, "l": 5, "diversity": "frequency"}
    assert {n for n, a in advice.items() if a.eligible} == {"anatomy", "ambiguity", "mondrian"}


def test_presence_rules_out_mechanisms_that_publish_quasi_identifiers_as_they_are(adult):
    advice = by_name(advise(adult, "beta=0.2,alpha=0.1"))
    assert advice["ambiguity"].parameters == {"alpha": 0.1, "beta": 0.2}
    assert not advice["anatomy"].eligible and "presence" in advice["anatomy"].reason
    assert not advice["mondrian"].eligible and "presence" in advice["mondrian"].reason


def test_a_beta_below_the_most_frequent_share_is_infeasible_with_its_reason(adult):
    advice = by_name(advise(adult, "beta=0.1"))
    for name in ("anatomy", "ambiguity", "mondrian"):
        assert not advice[name].eligible
        assert "'Prof-specialty' makes up 13.4%" in advice[name].reason
        assert "largest feasible is 7" in advice[name].reason


def test_rho_privacy_predicts_the_papers_bounds(adult):
    advice = by_name(advise(adult, "rho1=1/13,rho2=0.2"))
    assert {n for n, a in advice.items() if a.eligible} == {
        "anatomy", "uniform", "sdr", "ambiguity", "mondrian"}
    for name, mechanism in (("uniform", ppdp.UniformPerturbation(rho1=1 / 13, rho2=0.2)),
                            ("sdr", ppdp.PerturbationPartitioning(rho1=1 / 13, rho2=0.2))):
        predicted = advice[name].predicted
        assert predicted.scope == "values" and predicted.confidence == 0.95
        assert predicted.constant == pytest.approx(
            mechanism.guarantee(adult).epsilon * adult.n_rows)
    assert not advice["splu"].eligible and "small-sum" in advice["splu"].reason


def test_tuple_privacy_configures_alpha_beta_and_frapp(adult):
    advice = by_name(advise(adult, "k=10,gamma=0.2"))
    assert advice["alphabeta"].parameters == {"k": 10.0, "gamma": 0.2}
    # Theorem 4.4's rho for the view's r (Section 4.2's printed closed form is smaller).
    rho = ppdp.AlphaBeta(k=10, gamma=0.2).guarantee(adult).rho
    assert rho is not None and rho > usefulness_rho(k=10, gamma=0.2)
    assert advice["alphabeta"].predicted.constant == pytest.approx(rho * math.sqrt(adult.n_rows))
    assert advice["frapp"].parameters == {"k": 10.0, "gamma": 0.2}
    assert advice["frapp"].predicted is None
    # d given instead of k: the same k for this table.
    m = ppdp.AlphaBeta(k=10, gamma=0.2).guarantee(adult).m
    same = by_name(advise(adult, f"d={10 * adult.n_rows / m!r},gamma=0.2"))["alphabeta"]
    assert same.parameters["k"] == pytest.approx(10)


def test_advice_needs_one_sensitive_column(adult):
    with pytest.raises(ValueError, match="exactly one sensitive column"):
        advise(adult.with_roles(sensitive=["occupation", "sex"]), "beta=0.2")
