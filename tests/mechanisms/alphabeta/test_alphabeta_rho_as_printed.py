"""The usefulness rho of the alpha-beta paper's Section 4.2 parameters and the ratio of error
bounds Section 5 sets against FRAPP, computed from the printed formulas."""

from __future__ import annotations

import math

import pytest

from ppdp.mechanisms.alphabeta.privacy import usefulness_rho


def test_section_4_2_rho_by_hand():
    """Section 4.2, "Choice of parameters": alpha + beta = 1/2 and beta = d/gamma give
    (rho, epsilon)-usefulness with rho = 2 sqrt(2 k (1 - gamma)/gamma ln(2/epsilon)). Section
    5's k = 10, gamma = 0.2, epsilon = 0.05: 2 sqrt(80 ln 40) = 34.358."""
    by_hand = 2 * math.sqrt(2 * 10 * 0.8 / 0.2 * math.log(40))
    assert by_hand == pytest.approx(34.358, abs=1e-3)
    assert usefulness_rho(k=10, gamma=0.2) == pytest.approx(by_hand, rel=1e-12)
    assert usefulness_rho(k=10, gamma=0.2, epsilon=0.01) == pytest.approx(
        2 * math.sqrt(80 * math.log(200)), rel=1e-12)
    # rho grows like sqrt(k/gamma) for small gamma (the paper's rho ~ sqrt(k/gamma)).
    assert usefulness_rho(k=40, gamma=0.2) == pytest.approx(2 * usefulness_rho(k=10, gamma=0.2))


def test_section_5_ratio_of_the_bounds():
    """Section 5: FRAPP's bound is rho2 = 2 (k (1 - gamma)/gamma) sqrt(ln(2/epsilon)), so
    rho1/rho2 = sqrt(2 gamma/(k (1 - gamma))) = 1/sqrt(20) at k = 10, gamma = 0.2: the
    paper's "about 4.5" is this ratio of bounds, 4.47 (the measured ratio of errors is in the
    errata)."""
    k, gamma, epsilon = 10, 0.2, 0.05
    frapp = 2 * (k * (1 - gamma) / gamma) * math.sqrt(math.log(2 / epsilon))
    ratio = usefulness_rho(k=k, gamma=gamma, epsilon=epsilon) / frapp
    assert ratio == pytest.approx(math.sqrt(2 * gamma / (k * (1 - gamma))), rel=1e-12)
    assert 1 / ratio == pytest.approx(math.sqrt(20), rel=1e-12)
    assert round(1 / ratio, 2) == 4.47
