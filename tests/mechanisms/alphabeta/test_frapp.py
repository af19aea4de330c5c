"""FRAPP's gamma-diagonal randomization of whole tuples, the comparator of the alpha-beta paper
(Section 4.3 and Section 5): the retention p for (k n/m, gamma)-privacy (derivation in the
module docstring of ppdp.mechanisms.frapp), the randomization and the estimator over seeds.

Statistical checks run over fixed seeds: means within 5 standard errors, empirical sds within
5 relative sds (1/sqrt(2(R - 1))) of the reported stderr, chi-square p-values above 1e-4.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy import stats

import ppdp
from ppdp import FRAPP, InfeasibleError
from ppdp.data.schema import Column, Role, Schema
from ppdp.mechanisms.alphabeta.frapp import FrappRelease, _column_groups, frapp_retention
from ppdp.table.table import Table

ADULT_N = 30162
ADULT_M = 648023040

getcontext().prec = 60


def likelihood_ratio(p: float, n: int, m: int) -> Decimal:
    """P_out/P_in of the module docstring in 60-digit decimals: t in I is in V unless its row
    moves away and no other row lands on it, t not in I is in V when some row lands on it."""
    p = Decimal(p)
    q = (1 - p) / m
    inside = 1 - (1 - p - q) * (1 - q) ** (n - 1)
    outside = 1 - (1 - q) ** n
    return outside / inside


def conditions(p: float, *, k: float, gamma: float, n: int, m: int) -> tuple[bool, bool]:
    """(positive, negative): P_out/P_in >= lambda = d(1 - gamma)/(gamma(1 - d)) (up to 1e-9
    relative), and (1 - p - q)/(1 - q) >= d/gamma."""
    d = Decimal(k) * n / m
    g = Decimal(gamma)
    needed = d * (1 - g) / (g * (1 - d))
    q = (1 - Decimal(p)) / m
    positive = likelihood_ratio(p, n, m) >= needed * (1 - Decimal("1e-9"))
    negative = (1 - Decimal(p) - q) / (1 - q) >= d / g
    return positive, negative


@pytest.fixture(scope="module")
def adult() -> Table:
    # The alpha-beta paper's setting (m = 648,023,040): the domains are the values present.
    return ppdp.datasets.adult(observed_domains=True)


# -- the retention -----------------------------------------------------------------------------


def test_retention_for_the_paper_parameters(adult):
    """k = 10, gamma = 0.2 on Adult. With small q = (1 - p)/m, P_out ~ n q and P_in ~ p + n q,
    so P_out/P_in = lambda gives p = c/(1 + c), c = (n/m)(1 - lambda)/lambda (within 0.01 %),
    and with lambda ~ d/gamma, p ~ gamma/(k(1 - gamma)) = 0.025 (within 5 %: 2.7 % off, the
    neglected (1 - p) and (1 - lambda) factors)."""
    p = frapp_retention(k=10, gamma=0.2, n=ADULT_N, m=ADULT_M)
    assert p == pytest.approx(0.2 / (10 * 0.8), rel=0.05)
    d = 10 * ADULT_N / ADULT_M
    lam = d * 0.8 / (0.2 * (1 - d))
    c = ADULT_N / ADULT_M * (1 - lam) / lam
    assert p == pytest.approx(c / (1 + c), rel=1e-4)
    assert conditions(p, k=10, gamma=0.2, n=ADULT_N, m=ADULT_M) == (True, True)
    # The largest such p: the likelihood-ratio condition binds.
    assert conditions(p * (1 + 1e-6), k=10, gamma=0.2, n=ADULT_N, m=ADULT_M)[0] is False
    guarantee = FRAPP(k=10, gamma=0.2).guarantee(adult)
    assert guarantee.retention == p and guarantee.m == ADULT_M and guarantee.n == ADULT_N
    assert guarantee.diagonal == pytest.approx(p + (1 - p) / ADULT_M, rel=1e-15)


@pytest.mark.parametrize(("k", "gamma", "n", "m"),
                         [(10, 0.2, ADULT_N, ADULT_M), (1, 0.05, ADULT_N, ADULT_M),
                          (100, 0.5, ADULT_N, ADULT_M), (2, 0.5, ADULT_N, ADULT_M),
                          (0.01, 0.9, ADULT_N, ADULT_M), (0.6, 0.5, 20, 240)])
def test_retention_is_the_largest_private_p(k, gamma, n, m):
    """Both conditions hold at the returned p and one of them fails at p (1 + 1e-6)."""
    p = frapp_retention(k=k, gamma=gamma, n=n, m=m)
    assert 0 < p < 1
    assert conditions(p, k=k, gamma=gamma, n=n, m=m) == (True, True)
    assert conditions(p * (1 + 1e-6), k=k, gamma=gamma, n=n, m=m) != (True, True)


@pytest.mark.parametrize("k", [4298, 5000, 21485])
def test_retention_infeasible_when_d_reaches_gamma(k):
    """d = k n/m >= gamma = 0.2 from k = 0.2 m/n = 4297.0 on; the error names the k to stay
    below."""
    with pytest.raises(InfeasibleError, match="lower k below 4297"):
        frapp_retention(k=k, gamma=0.2, n=ADULT_N, m=ADULT_M)


def test_bad_parameters():
    for kwargs in ({"k": 0, "gamma": 0.2}, {"k": 10, "gamma": 1.0}, {"k": 10, "gamma": 0.0}):
        with pytest.raises(ValueError):
            FRAPP(**kwargs)


# -- the randomization -------------------------------------------------------------------------


def test_rows_kept_and_replaced_uniformly():
    """20 copies of one tuple t0 over a 6 x 5 x 8 domain (m = 240), k = 0.6, gamma = 0.5
    (d = 0.05, p = 0.604), R = 2000 views. A view row equals t0 when its row is kept or its
    replacement lands on t0: Binomial(20 R, p + (1 - p)/m) in all, checked within 5 sds. Per
    column, the replaced values other than t0's are uniform: chi-square over the other
    size - 1 values with p-value > 1e-4, and t0's value shows up with probability
    p + (1 - p)/size (within 5 sds)."""
    sizes = {"a": 6, "b": 5, "c": 8}
    t0 = (2, 4, 0)
    schema = Schema(tuple(Column(c, Role.QUASI_IDENTIFIER, tuple(range(s)))
                          for c, s in sizes.items()))
    table = Table(schema, {c: np.full(20, t0[i]) for i, c in enumerate(sizes)})
    mechanism = FRAPP(k=0.6, gamma=0.5)
    p = frapp_retention(k=0.6, gamma=0.5, n=20, m=240)
    runs = 2000
    views = [mechanism.publish(table, random_state=seed) for seed in range(runs)]
    assert all(v.n_rows == 20 and len(v.codes["a"]) == 20 for v in views)
    assert all(v.parameters["retention"] == p for v in views)
    codes = {c: np.concatenate([v.codes[c] for v in views]) for c in sizes}
    trials = 20 * runs
    equal = np.all([codes[c] == t0[i] for i, c in enumerate(sizes)], axis=0).sum()
    expected = p + (1 - p) / 240
    assert abs(equal / trials - expected) <= 5 * math.sqrt(expected * (1 - expected) / trials)
    for i, (column, size) in enumerate(sizes.items()):
        counts = np.bincount(codes[column], minlength=size)
        share = p + (1 - p) / size
        assert abs(counts[t0[i]] / trials - share) <= 5 * math.sqrt(share * (1 - share) / trials)
        others = np.delete(counts, t0[i])
        assert stats.chisquare(others).pvalue > 1e-4, (column, others)
    # Jointly, the replacing tuples are uniform over D (one draw for all three columns).
    tuples = np.ravel_multi_index([codes[c] for c in sizes], tuple(sizes.values()))
    joint = np.delete(np.bincount(tuples, minlength=240),
                      np.ravel_multi_index(t0, tuple(sizes.values())))
    assert stats.chisquare(joint).pvalue > 1e-4


def test_replacing_tuples_take_a_draw_a_group_of_columns():
    """Columns are grouped, in order, into products of at most 2^21 tuples; a column
    larger than that stands alone."""
    assert _column_groups([74, 8, 16, 7, 14, 5, 2, 41, 2]) == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]
    assert _column_groups([3_000_000, 2, 5]) == [[0], [1, 2]]
    assert _column_groups([2, 3_000_000]) == [[0], [1]]
    assert _column_groups([]) == []


def test_adult_view_marginals(adult):
    """A view of Adult has n rows; pooled over 20 views each column's counts follow
    p * (true counts) + (1 - p) n/size. Each view row is an independent draw (kept value with
    probability p, else uniform), so Pearson's chi-square against these expectations is at most
    as dispersed as a multinomial one: p-value > 1e-4."""
    mechanism = FRAPP(k=10, gamma=0.2)
    runs = 20
    views = [mechanism.publish(adult, random_state=seed) for seed in range(runs)]
    p = views[0].parameters["retention"]
    assert p == frapp_retention(k=10, gamma=0.2, n=ADULT_N, m=ADULT_M)
    assert all(v.n_rows == ADULT_N for v in views)
    assert views[0].parameters["d"] == pytest.approx(10 * ADULT_N / ADULT_M)
    for column in adult.schema.names:
        size = adult.schema[column].size
        truth = np.bincount(adult.codes[column], minlength=size)
        observed = sum(np.bincount(v.codes[column], minlength=size) for v in views)
        expected = runs * (p * truth + (1 - p) * ADULT_N / size)
        assert stats.chisquare(observed, expected).pvalue > 1e-4, column


QUERIES = [
    "age < 30",
    "sex = 'Female' OR race = 'Black'",
    "NOT (education IN ('Bachelors', 'Masters', 'Doctorate'))",
    "occupation IN ('Sales', 'Tech-support') AND age >= 40",
    "2 * age + 1 < 61",
    "race = 'Other'",
    "age = 30 AND sex = 'Female' AND race = 'White' AND education = 'Bachelors'",
]


def test_estimates_are_unbiased_on_adult(adult):
    """R = 500 views at (10 n/m, 0.2) (a FRAPP view takes milliseconds): each estimate's mean
    within 5 standard errors of the truth, its empirical sd within 5 relative sds (0.16) of the
    mean reported stderr (the Bernoulli variances with the clipped estimate in place of the
    truth; the variance is linear in it, so the plug-in is unbiased up to clipping)."""
    runs = 500
    mechanism = FRAPP(k=10, gamma=0.2)
    truths = [adult.count(q).value for q in QUERIES]
    group_query = "SELECT COUNT(*) WHERE age < 25 GROUP BY race"
    groups = adult.count(group_query)
    keys = [key for key, _ in groups.groups if groups[key].value > 100]
    values = np.empty((runs, len(QUERIES)))
    errors = np.empty_like(values)
    grouped = np.empty((runs, len(keys), 2))
    for seed in range(runs):
        release = mechanism.publish(adult, random_state=seed)
        values[seed], errors[seed] = release.count_all(QUERIES)
        answer = release.count(group_query)
        grouped[seed] = [(answer[key].value, answer[key].stderr) for key in keys]
    tolerance = 5 / math.sqrt(2 * (runs - 1))
    checks = [(q, values[:, j], errors[:, j], truths[j]) for j, q in enumerate(QUERIES)]
    checks += [(str(key), grouped[:, j, 0], grouped[:, j, 1], groups[key].value)
               for j, key in enumerate(keys)]
    for label, estimates, stderrs, truth in checks:
        se = estimates.std(ddof=1) / math.sqrt(runs)
        assert abs(estimates.mean() - truth) <= 5 * se, (label, estimates.mean(), truth, se)
        ratio = estimates.std(ddof=1) / stderrs.mean()
        assert abs(ratio - 1) <= tolerance, (label, ratio)


def test_release_save_load_round_trip(adult, tmp_path):
    release = FRAPP(k=10, gamma=0.2).publish(adult, random_state=3)
    loaded = ppdp.load_release(release.save(tmp_path / "frapp"))
    assert isinstance(loaded, FrappRelease) and loaded.parameters == release.parameters
    for query in [*QUERIES, "SELECT COUNT(*) GROUP BY sex"]:
        assert loaded.count(query) == release.count(query)


# -- sizes and extreme parameters -----------------------------------------------------------------


def int_table(sizes: dict[str, int], rows: np.ndarray) -> Table:
    """A table of integer columns with domains 0..size-1, rows given as codes (one per line)."""
    schema = Schema(tuple(Column(c, Role.QUASI_IDENTIFIER, tuple(range(s)))
                          for c, s in sizes.items()))
    return Table(schema, {c: np.asarray(rows)[:, i] for i, c in enumerate(sizes)})


def sparse_table() -> Table:
    """200 rows over a domain of m = 50 * 50 * 40 = 100,000 tuples."""
    rng = np.random.default_rng(7)
    return int_table({"a": 50, "b": 50, "c": 40}, rng.integers(0, 40, size=(200, 3)))


def test_a_thousand_columns_give_a_schema_error_not_an_overflow():
    table = int_table({f"c{i}": 2 for i in range(1000)}, np.zeros((5, 1000), dtype=np.int64))
    mechanism = FRAPP(k=1, gamma=0.5)
    with pytest.raises(ppdp.SchemaError, match=r"1000 columns has 10\^301 tuples"):
        mechanism.publish(table, random_state=0)
    with pytest.raises(ppdp.SchemaError, match=r"10\^301"):
        mechanism.guarantee(table)


@pytest.mark.parametrize(("params", "match"), [
    ({"k": "1e308", "gamma": "0.2"}, r"d = k n/m = inf below gamma = 0\.2; lower k"),
    ({"k": "1", "gamma": "1e308"}, r"gamma must be in the open interval \(0, 1\)"),
    ({"k": "1", "gamma": "1e-320"}, r"lower k"),
    ({"k": "inf", "gamma": "0.2"}, r"k must be a positive number"),
    ({"k": "nan", "gamma": "0.2"}, r"k must be a positive number"),
    ({"k": "1", "gamma": "nan"}, r"gamma must be in the open interval"),
])
def test_extreme_parameters_give_a_value_error_naming_them(params, match):
    table = sparse_table()
    with pytest.raises(ValueError, match=match):
        mechanism = FRAPP.from_params(params)
        mechanism.guarantee(table)
        mechanism.publish(table, random_state=0)


@pytest.mark.parametrize("k", ["1e-320", "1e-300", "1e-12"])
def test_tiny_k_gives_a_valid_view(k):
    table = sparse_table()
    release = FRAPP.from_params({"k": k, "gamma": "0.5"}).publish(table, random_state=0)
    assert release.n_rows == table.n_rows
    estimate = release.count("a = 1")
    assert math.isfinite(estimate.value) and math.isfinite(estimate.stderr)


@pytest.mark.parametrize(("options", "match"), [
    ({"n": 10, "m": 0}, r"m \(domain size\) must be an integer in 1\.\.2\^62 - 1, got 0"),
    ({"n": -1, "m": 10}, r"n \(number of rows\) must be an integer >= 0"),
    ({"n": 10, "m": 10**400}, r"got 10\^400"),
    ({"n": 1, "m": 1}, r"the domain holds a single tuple \(m = 1\)"),
])
def test_guarantee_checks_n_and_m(options, match):
    with pytest.raises(ValueError, match=match):
        FRAPP(k=0.1, gamma=0.5).guarantee(**options)


def test_a_vanishing_retention_is_refused():
    # k = 10^12 over m = 2^62 - 1 gives p of about gamma/(k (1 - gamma)) = 10^-12.
    with pytest.raises(InfeasibleError, match=r"retention p = 1e-12, too small to estimate"):
        FRAPP(k=1e12, gamma=0.5).guarantee(n=1, m=2**62 - 1)
