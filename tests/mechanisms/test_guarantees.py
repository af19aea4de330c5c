"""Tests of ppdp.guarantees against the worked examples of the SPLU-Gen paper and direct sums."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.mechanisms.anatomy.guarantee import anatomy_guarantee
from ppdp.mechanisms.dbr.guarantee import dbr_guarantee
from ppdp.mechanisms.laplace.guarantee import laplace_guarantee
from ppdp.mechanisms.splu.guarantee import (
    splu_accuracy_interval,
    splu_chebyshev_error_bound,
    splu_chebyshev_utility_threshold,
    splu_error_bound,
    splu_guarantee,
    splu_privacy_probability,
    splu_privacy_threshold,
    splu_utility_threshold,
)


def binomial_mass(gamma: int, f: int, lo: int, hi: int) -> float:
    """Σ_{x=lo}^{hi} C(γf, x) (1/γ)^x (1 − 1/γ)^(γf − x), summed exactly with math.comb."""
    n = gamma * f
    total = sum(
        Fraction(math.comb(n, x) * (gamma - 1) ** (n - x), gamma**n)
        for x in range(max(lo, 0), min(hi, n) + 1)
    )
    return float(total)


def percent_interval(k: int, f: int) -> tuple[int, int]:
    """⌈(1 − k/100)·f⌉ and ⌊(1 + k/100)·f⌋ in integer arithmetic only."""
    return -((-(100 - k) * f) // 100), ((100 + k) * f) // 100


# --------------------------------------------------------------------------------------------
# Example 1 (Section 4.2): f_s = 5, γ = 10, ε = 0.3


def test_example_1_printed_digits() -> None:
    privacy = splu_privacy_probability(gamma=10, epsilon=0.3, f=5)
    inside = 1.0 - privacy
    assert isinstance(privacy, float)
    assert round(inside, 2) == 0.52
    assert round(privacy, 2) == 0.48


def test_example_1_against_direct_sum() -> None:
    assert splu_accuracy_interval(epsilon=0.3, f=5) == (4, 6)
    # Σ_{x=4}^{6} C(50, x) 0.1^x 0.9^(50−x), written out as in the paper
    direct = sum(math.comb(50, x) * 0.1**x * 0.9 ** (50 - x) for x in range(4, 7))
    assert round(direct, 2) == 0.52
    privacy = splu_privacy_probability(gamma=10, epsilon=0.3, f=5)
    assert privacy == pytest.approx(1.0 - direct, rel=1e-12)


# --------------------------------------------------------------------------------------------
# Example 2 (Sections 4.2 / 5.3): a = 3, ε = 0.3, T_P = 0.6 holds for γ = 10


def test_example_2_threshold_holds() -> None:
    t_p = splu_privacy_threshold(gamma=10, epsilon=0.3, a=3)
    assert t_p >= 0.6
    # the minimum over f_s = 1..3 of the direct sums
    expected = min(
        1.0 - binomial_mass(10, f, *percent_interval(30, f)) for f in (1, 2, 3)
    )
    assert t_p == pytest.approx(expected, rel=1e-12)


def test_example_2_per_count_values() -> None:
    # for f_s = 1, 2, 3 the interval ⌈0.7 f_s⌉..⌊1.3 f_s⌋ holds f_s alone
    for f in (1, 2, 3):
        assert splu_accuracy_interval(epsilon=0.3, f=f) == (f, f)
    got = splu_privacy_probability(gamma=10, epsilon=0.3, f=np.array([1, 2, 3]))
    assert isinstance(got, np.ndarray)
    assert got.shape == (3,)
    for f, value in zip((1, 2, 3), got, strict=True):
        n = 10 * f
        direct = math.comb(n, f) * 0.1**f * 0.9 ** (n - f)
        assert value == pytest.approx(1.0 - direct, rel=1e-12)


def test_example_2_guarantee_object() -> None:
    g = splu_guarantee(gamma=10, epsilon=0.3, a=3)
    assert g.T_f is None and g.T_E is None
    assert g.T_P is not None and g.T_P >= 0.6
    assert g.privacy_by_count is not None
    assert [f for f, _ in g.privacy_by_count] == [1, 2, 3]
    for f, p in g.privacy_by_count:
        assert p == pytest.approx(1.0 - binomial_mass(10, f, f, f), rel=1e-12)
    assert min(p for _, p in g.privacy_by_count) == g.T_P
    d = json.loads(json.dumps(g.to_dict()))
    assert d["gamma"] == 10 and d["a"] == 3 and d["T_P"] == g.T_P
    assert [row["f"] for row in d["privacy_by_count"]] == [1, 2, 3]


def test_threshold_is_not_met_for_a_larger_count_range() -> None:
    # a stricter requirement fails: with a large enough the minimum falls below 0.6
    probs = [1.0 - binomial_mass(10, f, *percent_interval(30, f)) for f in range(1, 21)]
    assert min(probs) < 0.6
    assert splu_privacy_threshold(gamma=10, epsilon=0.3, a=20) == pytest.approx(min(probs))
    assert splu_privacy_threshold(gamma=10, epsilon=0.3, a=20) < 0.6


# --------------------------------------------------------------------------------------------
# exact interval limits


def test_fraction_edge_case_interval() -> None:
    # f = 10, ε = 0.3: the limits 7 and 13 are hit exactly and both belong to the interval
    assert splu_accuracy_interval(epsilon=0.3, f=10) == (7, 13)
    got = splu_privacy_probability(gamma=10, epsilon=0.3, f=10)
    right = 1.0 - binomial_mass(10, 10, 7, 13)
    assert got == pytest.approx(right, rel=1e-12)
    for narrower in [(8, 13), (7, 12)]:
        assert abs(got - (1.0 - binomial_mass(10, 10, *narrower))) > 1e-3


@pytest.mark.parametrize(
    ("epsilon", "f", "exact", "naive"),
    [
        (0.7, 10, (3, 17), (4, 17)),  # (1 − 0.7)·10 = 3.0000000000000004 in floating point
        (0.44, 25, (14, 36), (15, 36)),  # (1 − 0.44)·25 = 14.000000000000002
        (0.16, 25, (21, 29), (21, 28)),  # (1 + 0.16)·25 = 28.999999999999996
    ],
)
def test_interval_immune_to_float_rounding(
    epsilon: float, f: int, exact: tuple[int, int], naive: tuple[int, int]
) -> None:
    # the trap is real: plain floating point gives the wrong limits
    assert (math.ceil((1 - epsilon) * f), math.floor((1 + epsilon) * f)) == naive
    assert splu_accuracy_interval(epsilon=epsilon, f=f) == exact
    got = splu_privacy_probability(gamma=10, epsilon=epsilon, f=f)
    assert got == pytest.approx(1.0 - binomial_mass(10, f, *exact), rel=1e-12)
    assert abs(got - (1.0 - binomial_mass(10, f, *naive))) > 1e-4


def test_interval_limits_included_when_exact() -> None:
    # ε = 0.5, f = 4: (1−ε)f = 2 and (1+ε)f = 6 exactly, both limits belong to the interval
    assert splu_accuracy_interval(epsilon=0.5, f=4) == (2, 6)
    assert splu_privacy_probability(gamma=5, epsilon=0.5, f=4) == pytest.approx(
        1.0 - binomial_mass(5, 4, 2, 6), rel=1e-12
    )


# --------------------------------------------------------------------------------------------
# Lemma 1 and Theorem 3 (Section 4.1)


def test_lemma_1_by_hand() -> None:
    # T_f = sqrt(1 / (10 · 0.05² · 0.1)) = sqrt(400) = 20
    assert splu_utility_threshold(gamma=10, epsilon=0.05, T_E=0.1) == pytest.approx(20.0)
    # γ = 4, ε = 0.5, T_E = 0.25: 1 / (4 · 0.25 · 0.25) = 4, T_f = 2
    assert splu_utility_threshold(gamma=4, epsilon=0.5, T_E=0.25) == pytest.approx(2.0)


def test_theorem_3_by_hand() -> None:
    # 1 / (10 · 0.3² · 5²) = 1 / 22.5
    assert splu_error_bound(gamma=10, epsilon=0.3, f=5) == pytest.approx(1 / 22.5)
    # 1 / (10 · 0.1² · 2²) = 2.5, clipped to 1
    assert splu_error_bound(gamma=10, epsilon=0.1, f=2) == 1.0


def exact_error_probability(gamma: int, f: int, k: int) -> float:
    """Pr(|f' − f| ≥ (k/100)·f) for f' ~ Binomial(γf, 1/γ), summed exactly with math.comb."""
    n = gamma * f
    return float(
        sum(
            Fraction(math.comb(n, x) * (gamma - 1) ** (n - x), gamma**n)
            for x in range(n + 1)
            if 100 * abs(x - f) >= k * f
        )
    )


def test_printed_theorem_3_is_exceeded_by_the_exact_probability() -> None:
    # γ = 10, ε = 0.05, f = 20 (the Lemma 1 example): the printed bound is 0.1, but f' = 20
    # (the only value within 5 %) has probability C(200, 20) 0.1^20 0.9^180 ≈ 0.094
    exact = exact_error_probability(10, 20, 5)
    assert exact == pytest.approx(1.0 - math.comb(200, 20) * 0.1**20 * 0.9**180, rel=1e-12)
    assert splu_error_bound(gamma=10, epsilon=0.05, f=20) == pytest.approx(0.1)
    assert exact > 0.9
    assert exact <= splu_chebyshev_error_bound(gamma=10, epsilon=0.05, f=20)


def test_chebyshev_bound_holds() -> None:
    # the corrected bound (1 − 1/γ)/(ε² f) is never below the exact probability
    for gamma in (2, 5, 10):
        for f in (5, 20, 60):
            for k in (10, 30, 60):
                exact = exact_error_probability(gamma, f, k)
                bound = splu_chebyshev_error_bound(gamma=gamma, epsilon=k / 100, f=f)
                assert exact <= bound + 1e-12


def test_chebyshev_by_hand() -> None:
    # (1 − 1/10) / (0.3² · 5) = 0.9 / 0.45 = 2, clipped to 1; (1 − 1/4)/(0.5² · 12) = 0.25
    assert splu_chebyshev_error_bound(gamma=10, epsilon=0.3, f=5) == 1.0
    assert splu_chebyshev_error_bound(gamma=4, epsilon=0.5, f=12) == pytest.approx(0.25)
    # T_f = 0.9 / (0.05² · 0.1) = 3600
    assert splu_chebyshev_utility_threshold(gamma=10, epsilon=0.05, T_E=0.1) == pytest.approx(
        3600.0
    )
    t_f = splu_chebyshev_utility_threshold(gamma=10, epsilon=0.3, T_E=0.2)
    f = math.ceil(t_f)
    assert splu_chebyshev_error_bound(gamma=10, epsilon=0.3, f=f) <= 0.2
    assert exact_error_probability(10, f, 30) <= 0.2


def test_lemma_1_threshold_meets_error_target() -> None:
    for gamma, eps, t_e in [(10, 0.05, 0.1), (5, 0.2, 0.05), (20, 0.1, 0.3)]:
        # every count at or above T_f has error bound at most T_E; counts below T_f exceed it
        t_f = splu_utility_threshold(gamma=gamma, epsilon=eps, T_E=t_e)
        first = math.ceil(t_f * (1 - 1e-12))
        for f in range(first, first + 50):
            assert splu_error_bound(gamma=gamma, epsilon=eps, f=f) <= t_e * (1 + 1e-12)
        for f in range(1, first):
            if f < t_f * (1 - 1e-9):
                assert splu_error_bound(gamma=gamma, epsilon=eps, f=f) > t_e


def test_utility_threshold_decreases_as_T_E_grows() -> None:
    values = [splu_utility_threshold(gamma=10, epsilon=0.1, T_E=t) for t in (0.01, 0.05, 0.2, 0.5)]
    assert all(a > b for a, b in itertools.pairwise(values))


def test_utility_threshold_decreases_as_gamma_and_epsilon_grow() -> None:
    by_gamma = [splu_utility_threshold(gamma=g, epsilon=0.1, T_E=0.1) for g in (2, 5, 10, 50)]
    assert all(a > b for a, b in itertools.pairwise(by_gamma))
    by_eps = [splu_utility_threshold(gamma=10, epsilon=e, T_E=0.1) for e in (0.05, 0.1, 0.5)]
    assert all(a > b for a, b in itertools.pairwise(by_eps))


def test_error_bound_decreases_with_count() -> None:
    values = [splu_error_bound(gamma=10, epsilon=0.2, f=f) for f in (3, 5, 10, 100)]
    assert all(a > b for a, b in itertools.pairwise(values))


def test_privacy_threshold_never_increases_with_a() -> None:
    values = [splu_privacy_threshold(gamma=10, epsilon=0.3, a=a) for a in range(1, 30)]
    assert all(a >= b for a, b in itertools.pairwise(values))
    assert values[0] > values[-1]


def test_guarantee_with_both_parameters() -> None:
    g = splu_guarantee(gamma=10, epsilon=0.05, T_E=0.1, a=2)
    # The threshold that holds (Chebyshev on the binomial count), and Lemma 1 as printed.
    assert g.T_f == pytest.approx(0.9 / (0.05**2 * 0.1))
    assert g.T_f_as_printed == pytest.approx(20.0)
    expected = min(1.0 - binomial_mass(10, f, *percent_interval(5, f)) for f in (1, 2))
    t_p = g.T_P
    assert t_p == pytest.approx(expected, rel=1e-12)
    only_utility = splu_guarantee(gamma=10, epsilon=2.0, T_E=0.1)  # ε ≥ 1 allowed for utility
    assert only_utility.T_P is None and only_utility.privacy_by_count is None
    assert only_utility.T_f == pytest.approx(0.9 / (4 * 0.1))
    assert only_utility.T_f_as_printed == pytest.approx(math.sqrt(1 / (10 * 4 * 0.1)))
    json.dumps(only_utility.to_dict())


def test_guarantee_is_frozen() -> None:
    g = splu_guarantee(gamma=10, epsilon=0.3, a=3)
    with pytest.raises(AttributeError):
        g.gamma = 5  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# property: privacy probability equals 1 − binomial mass in the interval


@settings(max_examples=150, deadline=None)
@given(
    gamma=st.integers(min_value=2, max_value=20),
    f=st.integers(min_value=1, max_value=30),
    k=st.integers(min_value=1, max_value=99),
)
def test_privacy_probability_matches_direct_sum(gamma: int, f: int, k: int) -> None:
    eps = float(f"0.{k:02d}")
    lo, hi = percent_interval(k, f)
    assert splu_accuracy_interval(epsilon=eps, f=f) == (lo, hi)
    got = splu_privacy_probability(gamma=gamma, epsilon=eps, f=f)
    assert 0.0 <= got <= 1.0
    assert got == pytest.approx(1.0 - binomial_mass(gamma, f, lo, hi), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    gamma=st.integers(min_value=2, max_value=12),
    counts=st.lists(st.integers(min_value=1, max_value=25), min_size=1, max_size=8),
)
def test_vector_matches_scalar(gamma: int, counts: list[int]) -> None:
    arr = np.array(counts)
    got = splu_privacy_probability(gamma=gamma, epsilon=0.3, f=arr)
    assert isinstance(got, np.ndarray) and got.shape == arr.shape
    for f, value in zip(counts, got, strict=True):
        assert value == splu_privacy_probability(gamma=gamma, epsilon=0.3, f=f)


# --------------------------------------------------------------------------------------------
# comparators


def test_anatomy_guarantee() -> None:
    g = anatomy_guarantee(l=4)
    assert g.l == 4
    assert g.max_inference_probability == 0.25
    d = json.loads(json.dumps(g.to_dict()))
    assert d["l"] == 4 and d["max_inference_probability"] == 0.25


def test_laplace_guarantee_scale_and_composition() -> None:
    g = laplace_guarantee(epsilon=math.log(2))
    assert g.scale == pytest.approx(1 / math.log(2))
    assert g.composed_epsilon(3) == pytest.approx(3 * math.log(2))
    g2 = laplace_guarantee(epsilon=0.5, sensitivity=2.0)
    assert g2.scale == pytest.approx(4.0)
    json.dumps(g.to_dict())


@pytest.mark.parametrize("epsilon", [math.log(2), math.log(3), 0.1, 2.0])
def test_laplace_variance_matches_series(epsilon: float) -> None:
    # discrete Laplace with scale b: Pr(x) = (1 − α)/(1 + α) · α^|x|, α = exp(−1/b)
    g = laplace_guarantee(epsilon=epsilon)
    alpha = math.exp(-epsilon)
    norm = (1 - alpha) / (1 + alpha)
    xs = np.arange(-5000, 5001)
    series = float(np.sum(norm * alpha ** np.abs(xs) * xs.astype(float) ** 2))
    assert g.noise_variance == pytest.approx(series, rel=1e-9)


def test_dbr_guarantee() -> None:
    g = dbr_guarantee()
    d = json.loads(json.dumps(g.to_dict()))
    assert d["formal_guarantee"] is None
    assert d["discloses_marginal"] is True
    assert "marginal" in d["statement"]


# --------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize("gamma", [1, 0, -3, 2.5, 10.0, True, "10", None])
def test_bad_gamma(gamma: object) -> None:
    with pytest.raises(ValueError, match=r"gamma.*integer >= 2"):
        splu_privacy_probability(gamma=gamma, epsilon=0.3, f=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"gamma.*integer >= 2"):
        splu_utility_threshold(gamma=gamma, epsilon=0.3, T_E=0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"gamma.*integer >= 2"):
        splu_error_bound(gamma=gamma, epsilon=0.3, f=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("epsilon", [0, 0.0, -0.1, 1, 1.0, 1.5, math.nan, math.inf, "0.3"])
def test_bad_privacy_epsilon(epsilon: object) -> None:
    with pytest.raises(ValueError, match=r"epsilon.*0 < epsilon < 1"):
        splu_privacy_probability(gamma=10, epsilon=epsilon, f=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"epsilon.*0 < epsilon < 1"):
        splu_privacy_threshold(gamma=10, epsilon=epsilon, a=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"epsilon.*0 < epsilon < 1"):
        splu_guarantee(gamma=10, epsilon=epsilon, a=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("epsilon", [0, -0.5, math.nan, math.inf])
def test_bad_utility_epsilon(epsilon: float) -> None:
    with pytest.raises(ValueError, match=r"epsilon.*epsilon > 0"):
        splu_utility_threshold(gamma=10, epsilon=epsilon, T_E=0.1)
    with pytest.raises(ValueError, match=r"epsilon.*epsilon > 0"):
        splu_error_bound(gamma=10, epsilon=epsilon, f=5)


def test_utility_allows_epsilon_at_least_one() -> None:
    assert splu_utility_threshold(gamma=10, epsilon=1.0, T_E=0.1) == pytest.approx(1.0)


@pytest.mark.parametrize("t_e", [0, 0.0, 1, 1.0, -0.2, 1.5, math.nan, None, "0.1"])
def test_bad_T_E(t_e: object) -> None:
    with pytest.raises(ValueError, match=r"T_E.*0 < T_E < 1"):
        splu_utility_threshold(gamma=10, epsilon=0.1, T_E=t_e)  # type: ignore[arg-type]
    if t_e is not None:
        with pytest.raises(ValueError, match=r"T_E.*0 < T_E < 1"):
            splu_guarantee(gamma=10, epsilon=0.1, T_E=t_e)  # type: ignore[arg-type]


@pytest.mark.parametrize("a", [0, -1, 2.0, True, "3"])
def test_bad_a(a: object) -> None:
    with pytest.raises(ValueError, match=r"a \(largest protected count\).*integer >= 1"):
        splu_privacy_threshold(gamma=10, epsilon=0.3, a=a)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"a \(largest protected count\).*integer >= 1"):
        splu_guarantee(gamma=10, epsilon=0.3, a=a)  # type: ignore[arg-type]


@pytest.mark.parametrize("f", [0, -2, 2.5, 5.0, True, [1, 0], [1.0, 2.0], np.array([3, -1])])
def test_bad_f(f: object) -> None:
    with pytest.raises(ValueError, match=r"f \(true count\).*(integer|integers) \(?>= 1"):
        splu_privacy_probability(gamma=10, epsilon=0.3, f=f)  # type: ignore[arg-type]


@pytest.mark.parametrize("f", [0, -2, 2.5, True])
def test_bad_f_scalar_only(f: object) -> None:
    with pytest.raises(ValueError, match=r"f \(true count\).*integer >= 1"):
        splu_error_bound(gamma=10, epsilon=0.3, f=f)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"f \(true count\).*integer >= 1"):
        splu_accuracy_interval(epsilon=0.3, f=f)  # type: ignore[arg-type]


def test_guarantee_needs_T_E_or_a() -> None:
    with pytest.raises(ValueError, match=r"T_E.*a.*neither"):
        splu_guarantee(gamma=10, epsilon=0.3)


@pytest.mark.parametrize("l", [1, 0, 2.0, True])
def test_bad_l(l: object) -> None:  # noqa: E741
    with pytest.raises(ValueError, match=r"l \(diversity\).*integer >= 2"):
        anatomy_guarantee(l=l)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [
    {"epsilon": 0}, {"epsilon": -1.0}, {"epsilon": math.inf}, {"epsilon": math.nan},
])
def test_bad_laplace_epsilon(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"epsilon.*epsilon > 0"):
        laplace_guarantee(**kwargs)


@pytest.mark.parametrize("sensitivity", [0, -1.0, math.inf, math.nan])
def test_bad_laplace_sensitivity(sensitivity: float) -> None:
    with pytest.raises(ValueError, match=r"sensitivity.*sensitivity > 0"):
        laplace_guarantee(epsilon=1.0, sensitivity=sensitivity)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_composition_count(k: object) -> None:
    with pytest.raises(ValueError, match=r"k \(number of answered queries\).*integer >= 1"):
        laplace_guarantee(epsilon=1.0).composed_epsilon(k)  # type: ignore[arg-type]
