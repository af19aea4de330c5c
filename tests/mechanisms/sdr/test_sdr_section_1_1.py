"""Small Domain Randomization, Section 1.1: the retention of uniform perturbation over large
domains, ICD-9 codes and a compound attribute, at gamma = 5 (Eq. 4)."""

from __future__ import annotations

import pytest

from ppdp.mechanisms.sdr.formulas import uniform_probabilities


def test_icd9_codes():
    """m = 15,000: q = 1/(m - 1 + gamma) = 6.7e-5 and p + q = gamma q = 3.3e-4, as printed."""
    p, q = uniform_probabilities(5, 15_000)
    assert float(q) == pytest.approx(6.7e-5, rel=0.01)
    assert float(p + q) == pytest.approx(3.3e-4, rel=0.01)


def test_age_and_country_as_one_compound_attribute():
    """m = 77 x 70 = 5,390: q = 1.9e-4 as printed; the printed "(p + q) = 7.4e-4" is p,
    (gamma - 1) q = 4/5394, while p + q = 5/5394 = 9.3e-4."""
    p, q = uniform_probabilities(5, 77 * 70)
    assert float(q) == pytest.approx(1.9e-4, rel=0.03)
    assert float(p) == pytest.approx(7.4e-4, rel=0.01)
    assert float(p + q) == pytest.approx(9.3e-4, rel=0.01)
