"""Tests of Laplace counts: discrete Laplace noise, its 95 % interval, and the privacy budget.

The discrete Laplace with alpha = exp(-epsilon / sensitivity) has
``P(X = k) = (1 - alpha) / (1 + alpha) * alpha^|k|``, mean 0 and variance
``sigma^2 = 2 alpha / (1 - alpha)^2``. Tolerances:

* sample mean of n draws: standard deviation sigma / sqrt(n);
* sample variance of n draws: standard deviation sqrt((mu_4 - sigma^4) / n) to leading order,
  with the fourth moment mu_4 summed from the probability mass function;
* a frequency (of X = 0, or of intervals covering the truth) with probability p over n
  trials: standard deviation sqrt(p (1 - p) / n).

Seeded checks allow 5 standard deviations; the unseeded (OS entropy) check allows 6, so that it
fails spuriously with probability about 1e-9.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ppdp import Estimate, GroupedEstimate, LaplaceCounts, parse_query
from ppdp.errors import QueryError, ReleaseError
from ppdp.mechanisms import LaplaceSession
from ppdp.table.table import Table, table_from_arrow


def people(n_rows: int = 500, seed: int = 0) -> Table:
    rng = np.random.default_rng(seed)
    return table_from_arrow(pa.table({
        "age": rng.integers(18, 80, n_rows),
        "sex": rng.choice(["F", "M"], n_rows),
    }))


def moments(alpha: float) -> tuple[float, float, float]:
    """P(X = 0), the variance and the fourth moment of the discrete Laplace, from its pmf."""
    k = np.arange(-2000, 2001)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(k)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    return float(pmf[k == 0][0]), float((pmf * k**2).sum()), float((pmf * k**4).sum())


def session(epsilon: float, sensitivity: float = 1.0, seed: Any = 1) -> LaplaceSession:
    return LaplaceCounts(epsilon=epsilon, sensitivity=sensitivity).publish(
        people(), random_state=seed)


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1.0), (0.5, 2.0), (3.0, 1.0)])
def test_seeded_noise_is_discrete_laplace(epsilon: float, sensitivity: float) -> None:
    alpha = math.exp(-epsilon / sensitivity)
    p_zero, variance, fourth = moments(alpha)
    assert variance == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=1e-9)
    n = 200_000
    noise = session(epsilon, sensitivity, seed=17).noise(n)
    assert noise.shape == (n,)
    assert np.issubdtype(noise.dtype, np.integer)
    assert abs(noise.mean()) <= 5 * math.sqrt(variance / n)
    assert abs(noise.var() - variance) <= 5 * math.sqrt((fourth - variance**2) / n)
    assert abs(np.mean(noise == 0) - p_zero) <= 5 * math.sqrt(p_zero * (1 - p_zero) / n)


def test_seeded_noise_is_reproducible() -> None:
    a = session(1.0, seed=5)
    b = session(1.0, seed=5)
    assert a.count("age > 40") == b.count("age > 40")
    np.testing.assert_array_equal(a.noise(50), b.noise(50))


def test_answers_are_truth_plus_integer_noise_with_the_stated_stderr() -> None:
    laplace = session(1.0)
    alpha = math.exp(-1.0)
    truth = people().count("age > 40").value  # type: ignore[union-attr]
    estimate = laplace.count("age > 40")
    assert isinstance(estimate, Estimate)
    assert float(estimate.value - truth).is_integer()
    assert estimate.stderr == pytest.approx(math.sqrt(2 * alpha) / (1 - alpha))


@pytest.mark.parametrize("epsilon", [1.0, 0.3])
def test_interval_covers_the_truth_in_about_95_percent_of_answers(epsilon: float) -> None:
    alpha = math.exp(-epsilon)
    laplace = session(epsilon, seed=23)
    query = parse_query("age >= 40 AND sex = 'F'")
    truth = people().count(query).value  # type: ignore[union-attr]
    m = 3000
    covered = 0
    widths = set()
    for _ in range(m):
        estimate = laplace.count(query)
        assert estimate.ci95 is not None
        low, high = estimate.ci95
        widths.add(high - estimate.value)
        assert estimate.value - low == high - estimate.value
        covered += low <= truth <= high
    (half,) = widths
    # The half width k is the smallest with P(|X| > k) = 2 alpha^(k+1) / (1 + alpha) <= 0.05.
    k = int(half)
    assert 2 * alpha ** (k + 1) / (1 + alpha) <= 0.05 < 2 * alpha**k / (1 + alpha)
    coverage = 1 - 2 * alpha ** (k + 1) / (1 + alpha)
    assert coverage >= 0.95
    assert abs(covered / m - coverage) <= 5 * math.sqrt(coverage * (1 - coverage) / m)


def test_spent_epsilon_grows_per_answered_query() -> None:
    laplace = session(0.25)
    assert laplace.spent_epsilon == 0.0
    laplace.count("age > 30")
    assert laplace.spent_epsilon == pytest.approx(0.25)
    values, stderr = laplace.count_all(["age > 30", "sex = 'F'", "age < 20"])
    assert values.shape == stderr.shape == (3,)
    assert laplace.spent_epsilon == pytest.approx(1.0)
    laplace.count("SELECT sex, COUNT(*) FROM t GROUP BY sex")  # disjoint cells: one epsilon
    assert laplace.spent_epsilon == pytest.approx(1.25)
    with pytest.raises(QueryError):
        laplace.count("height > 3")
    assert laplace.spent_epsilon == pytest.approx(1.25)


def sparse_table() -> Table:
    """The column ``k`` has 100 possible values but only 5 of them occur."""
    rng = np.random.default_rng(3)
    return table_from_arrow(pa.table({
        "k": rng.choice([3, 14, 15, 92, 65], 400),
        "sex": rng.choice(["F", "M"], 400),
    }), domains={"k": range(100)})


def test_group_by_adds_noise_to_each_answered_key() -> None:
    table = sparse_table()
    laplace = LaplaceCounts(epsilon=1.0).publish(table, random_state=2)
    grouped = laplace.count("SELECT k, sex, COUNT(*) FROM t GROUP BY k, sex")
    assert isinstance(grouped, GroupedEstimate)
    assert grouped.columns == ("k", "sex")
    assert laplace.spent_epsilon == pytest.approx(1.0)
    truth = table.count("SELECT k, sex, COUNT(*) FROM t GROUP BY k, sex")
    noise = []
    for key, estimate in grouped.groups:
        difference = estimate.value - truth[key].value  # type: ignore[index]
        assert float(difference).is_integer()
        assert estimate.ci95 is not None
        noise.append(difference)
    # Keys that do not occur in the data are answered too (with pure noise).
    assert any(key["k"] not in (3, 14, 15, 92, 65) for key, _ in grouped.groups)
    assert np.count_nonzero(noise) > len(noise) / 3


def test_group_by_answers_every_key_of_the_domain_product() -> None:
    laplace = LaplaceCounts(epsilon=1.0).publish(sparse_table(), random_state=2)
    grouped = laplace.count("SELECT k, sex, COUNT(*) FROM t GROUP BY k, sex")
    assert len(grouped) == 100 * 2
    assert all(e.ci95 is not None for _, e in grouped.groups)


def test_save_is_refused(tmp_path: Path) -> None:
    laplace = session(1.0)
    with pytest.raises(ReleaseError, match="no data release to write"):
        laplace.save(tmp_path / "laplace")
    assert not (tmp_path / "laplace").exists()
    assert list(tmp_path.iterdir()) == []


def test_unseeded_noise_uses_opendp_with_the_right_spread() -> None:
    alpha = math.exp(-1.0)
    _, variance, fourth = moments(alpha)
    laplace = LaplaceCounts(epsilon=1.0).publish(people())
    assert laplace._noise is None
    n = 5000
    noise = laplace.noise(n)
    assert noise.shape == (n,)
    assert np.issubdtype(noise.dtype, np.integer)
    assert len(np.unique(noise)) > 3
    assert abs(noise.mean()) <= 6 * math.sqrt(variance / n)
    assert abs(noise.var() - variance) <= 6 * math.sqrt((fourth - variance**2) / n)
    estimate = laplace.count("sex = 'F'")
    assert float(estimate.value).is_integer()


@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, math.nan, math.inf, "1"])
def test_epsilon_must_be_positive(epsilon: Any) -> None:
    with pytest.raises(ValueError, match="epsilon must be a positive number"):
        LaplaceCounts(epsilon=epsilon)


@pytest.mark.parametrize("sensitivity", [0, -2.0, math.nan])
def test_sensitivity_must_be_positive(sensitivity: Any) -> None:
    with pytest.raises(ValueError, match="sensitivity must be a positive number"):
        LaplaceCounts(epsilon=1.0, sensitivity=sensitivity)


# -- extreme parameters ---------------------------------------------------------------------------


def declared_people(n_rows: int = 200) -> Table:
    rng = np.random.default_rng(3)
    return table_from_arrow(pa.table({"age": rng.integers(18, 80, n_rows),
                                      "sex": rng.choice(["F", "M"], n_rows)}),
                            domains={"age": list(range(18, 80)), "sex": ["F", "M"]})


@pytest.mark.parametrize("seed", [None, 3])
@pytest.mark.parametrize("params", [{"epsilon": "1e300"}, {"epsilon": "1e308"},
                                    {"epsilon": "800"},
                                    {"epsilon": "1", "sensitivity": "1e-320"}])
def test_a_huge_epsilon_answers_the_true_count(params, seed):
    """exp(-epsilon/sensitivity) underflows to 0: the noise is 0 in every draw, its interval
    is the answer itself."""
    table = declared_people()
    truth = table.count("age > 40").value  # type: ignore[union-attr]
    mechanism = LaplaceCounts.from_params(params)
    assert mechanism.guarantee().to_dict()["noise_variance"] == 0
    estimate = mechanism.publish(table, random_state=seed).count("age > 40")
    assert isinstance(estimate, Estimate)
    assert estimate.value == truth and estimate.stderr == 0
    assert estimate.ci95 == (truth, truth)


@pytest.mark.parametrize(("params", "match"), [
    ({"epsilon": "1e-320"}, r"epsilon must be at least 1e-12 for sensitivity 1, got 1e-320"),
    ({"epsilon": "1e-15"}, r"noise scale sensitivity/epsilon must be at most 1e\+12"),
    ({"epsilon": "1", "sensitivity": "1e308"},
     r"epsilon must be at least 1e\+296 for sensitivity 1e\+308"),
    ({"epsilon": "inf"}, r"epsilon must be a positive number, got inf"),
    ({"epsilon": "nan"}, r"epsilon must be a positive number, got nan"),
    ({"epsilon": "-1"}, r"epsilon must be a positive number"),
    ({"epsilon": "1", "sensitivity": "nan"}, r"sensitivity must be a positive number"),
])
def test_extreme_parameters_give_a_value_error_naming_them(params, match):
    with pytest.raises(ValueError, match=match):
        LaplaceCounts.from_params(params)


def test_noise_of_a_large_scale_is_not_clipped_at_32_bits():
    """At scale 10^10 (epsilon = 10^-10) a draw falls below 2^31 in magnitude with probability
    1 - e^-0.21 = 0.19, so 50 draws all do with probability 1e-36; a 32-bit sampler saturates
    at 2^31 and never exceeds it."""
    session = LaplaceCounts(epsilon=1e-10).publish(declared_people())
    assert np.abs(session.noise(50)).max() > 2**31


@pytest.mark.parametrize(("epsilon", "sensitivity"), [
    (0, 1.0), (-1.0, 1.0), (float("nan"), 1.0), (1.0, float("inf")), (1e-13, 1.0), (1, None)])
def test_session_parameters_are_checked_as_the_mechanism_checks_them(
        epsilon: Any, sensitivity: Any) -> None:
    schema = table_from_arrow(pa.table({"a": [1, 2]})).schema
    with pytest.raises(ValueError) as built:
        LaplaceCounts(epsilon=epsilon, sensitivity=sensitivity)
    with pytest.raises(ValueError) as checked:
        LaplaceSession.check_parameters(schema, {"epsilon": epsilon, "sensitivity": sensitivity})
    assert str(checked.value) == str(built.value)
