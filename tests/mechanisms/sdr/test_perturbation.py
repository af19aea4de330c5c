"""Uniform Perturbation under (rho1, rho2)-privacy (Small Domain Randomization, Sections 3-4 and
Appendix 10.2): the paper's formulas and worked numbers, the perturbation itself, the
estimator of Eq. 7 (by hand and over many publications), the release files and the errors.

The estimator and release are shared with Perturbation Partitioning, so the statistical and
query tests here run for both mechanisms; tests/mechanisms/test_sdr.py covers the partitioning.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppdp
from ppdp import PerturbationPartitioning, UniformPerturbation
from ppdp.data.schema import Role
from ppdp.errors import InfeasibleError, ReleaseError, SchemaError
from ppdp.mechanisms.sdr.compound import PerturbWithin
from ppdp.mechanisms.sdr.formulas import (
    amplification_gamma,
    error_bound,
    perturbation_matrix,
    uniform_probabilities,
)
from ppdp.plan.keyed import KeyedStream
from ppdp.table.table import table_from_arrow
from tests.release.test_release import rewrite_file

# The four shapes of count query the estimator must handle: a whole-domain count, counts under
# conditions on non-sensitive columns (one with a set of sensitive values) and an OR that mixes
# sensitive and non-sensitive conditions across its branches.
QUERIES = [
    "occupation = 'Sales'",
    "sex = 'Female' AND occupation = 'Sales'",
    "age > 40 AND occupation IN ('Sales', 'Tech-support')",
    "(occupation = 'Sales' AND age > 40) OR (occupation = 'Tech-support' AND sex = 'Male')",
]


BOTH = pytest.mark.parametrize("mechanism_class", [UniformPerturbation, PerturbationPartitioning],
                               ids=["uniform", "sdr"])


@pytest.fixture(scope="module")
def adult() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation")


# -- golden values from the paper -------------------------------------------------------------


def test_example1_gammas_and_main_diagonal():
    """Example 1: (1/3, 2/3)-privacy; rho1_1 = 1/3 gives gamma 4, rho1_2 = 1/6 gives gamma 10;
    with m = 6 the main diagonal is 4/9 and 2/3, against 4/13 unpartitioned (m = 10)."""
    assert amplification_gamma(1 / 3, 2 / 3) == pytest.approx(4.0, rel=1e-12)
    assert amplification_gamma(1 / 6, 2 / 3) == pytest.approx(10.0, rel=1e-12)
    # Vectorised over sub-tables, as the partitioning uses it.
    assert np.allclose(amplification_gamma(np.array([1 / 3, 1 / 6]), 2 / 3), [4.0, 10.0])

    for gamma, m, diagonal, off in ((4, 6, 4 / 9, 1 / 9), (10, 6, 2 / 3, 1 / 15),
                                    (4, 10, 4 / 13, 1 / 13)):
        p, q = uniform_probabilities(gamma, m)
        assert float(p + q) == pytest.approx(diagonal, rel=1e-12)
        assert float(q) == pytest.approx(off, rel=1e-12)
        matrix = perturbation_matrix(gamma, m)
        assert matrix.shape == (m, m)
        assert np.allclose(np.diag(matrix), diagonal)
        assert np.allclose(matrix[~np.eye(m, dtype=bool)], off)


def test_eq4_closed_forms():
    # p = (gamma - 1)/(m - 1 + gamma), q = 1/(m - 1 + gamma): gamma = 3, m = 5 -> 2/7, 1/7.
    p, q = uniform_probabilities(3, 5)
    assert float(p) == pytest.approx(2 / 7) and float(q) == pytest.approx(1 / 7)
    # q = (1 - p)/m (Eq. 1) and (p + q)/q = gamma.
    assert float(q) == pytest.approx((1 - float(p)) / 5)
    assert float((p + q) / q) == pytest.approx(3)
    # Eq. 6: gamma = rho2 (1 - rho1) / (rho1 (1 - rho2)); rho1 = 0.2, rho2 = 0.5 -> 4.
    assert float(amplification_gamma(0.2, 0.5)) == pytest.approx(0.5 * 0.8 / (0.2 * 0.5))


def test_theorem2_eq11_by_hand():
    n, m, gamma, delta = 10_000, 10, 4, 0.05
    # a = 2 sqrt(ln(2/0.05)) = 2 sqrt(ln 40) = 2 * 1.9206455... = 3.8412911...
    # eps = a / sqrt(10000) * (10/(4-1) + 1) = 0.038412911 * 4.3333333 = 0.16645595...
    by_hand = 2 * math.sqrt(math.log(40)) / 100 * (10 / 3 + 1)
    assert by_hand == pytest.approx(0.166455951, abs=1e-8)
    eps = float(error_bound(n, m, gamma, delta))
    assert eps == pytest.approx(by_hand, rel=1e-12)
    # Theorem 2 at equality: |T| = 4 ln(2/delta) / (p^2 eps^2) with p from Eq. 4 (p = 3/13).
    p, _ = uniform_probabilities(gamma, m)
    assert float(p) == pytest.approx(3 / 13)
    assert 4 * math.log(2 / delta) / (float(p) ** 2 * eps ** 2) == pytest.approx(n, rel=1e-9)
    # Vectorised form used for sub-tables.
    both = error_bound(np.array([n, 4 * n]), np.array([m, m]), np.array([gamma, gamma]), delta)
    assert np.allclose(both, [by_hand, by_hand / 2])


def test_table1_census_probabilities_at_gamma_5():
    """Section 1.1, Table 1: p and q in percent for the CENSUS domain sizes with gamma = 5."""
    sizes = [77, 70, 50, 14, 9, 7, 6, 2]
    printed_p = [5, 5, 7, 22, 31, 36, 40, 67]
    printed_q = [1, 1, 2, 6, 8, 9, 10, 17]
    p, q = uniform_probabilities(5, np.array(sizes))
    assert [round(100 * float(v)) for v in p] == printed_p
    assert [round(100 * float(v)) for v in q] == printed_q


# -- the perturbation matrix and the perturbation itself --------------------------------------


@settings(max_examples=60, deadline=None)
@given(gamma=st.floats(min_value=1.0001, max_value=200, allow_nan=False),
       m=st.integers(min_value=1, max_value=60))
def test_perturbation_matrix_is_stochastic_and_gamma_amplifying(gamma, m):
    matrix = perturbation_matrix(gamma, m)
    assert matrix.shape == (m, m)
    assert np.all(matrix > 0)
    # P[j][i] = Pr[x_i -> y_j]: each input x_i goes somewhere, so every column sums to 1.
    assert np.allclose(matrix.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    # Eq. 2: for every output y_j, max_i Pr[x_i -> y_j] / min_i Pr[x_i -> y_j] <= gamma, and
    # the optimal matrix uses the whole allowance (equality) once there are two values.
    ratios = matrix.max(axis=1) / matrix.min(axis=1)
    assert np.all(ratios <= gamma * (1 + 1e-12))
    if m >= 2:
        assert np.allclose(ratios, gamma, rtol=1e-12)


def test_perturb_within_follows_eq1_in_each_subtable_domain():
    """Empirical transition frequencies match Pr[x -> x] = p_i + q_i, Pr[x -> y] = q_i within
    SA_i and 0 outside it; tolerance 5 binomial standard errors sqrt(pi (1 - pi)/N)."""
    domains = np.array([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1]], dtype=bool)
    gammas = np.array([3.0, 5.0])
    n = 40_000
    values = np.concatenate([np.zeros(n, dtype=np.int64), np.full(n, 2, dtype=np.int64)])
    subtable = np.repeat(np.array([0, 1], dtype=np.uint8), n)
    out = PerturbWithin(domains, gammas)(values, subtable,
                                         KeyedStream(7, "perturb").raw(0, len(values)))
    # Sub-table 0: m = 3, gamma = 3 -> q = 1/5, p + q = 3/5. Sub-table 1: m = 3, gamma = 5 ->
    # q = 1/7, p + q = 5/7.
    expected = [np.array([3 / 5, 1 / 5, 1 / 5, 0, 0]), np.array([0, 0, 5 / 7, 1 / 7, 1 / 7])]
    for i in range(2):
        freq = np.bincount(out[subtable == i], minlength=5) / n
        tolerance = 5 * np.sqrt(expected[i] * (1 - expected[i]) / n)
        assert np.all(np.abs(freq - expected[i]) <= tolerance)
        assert np.all(freq[~domains[i]] == 0)  # never leaves SA_i


def test_perturb_within_cuts_the_draws_at_its_thresholds():
    """u < T_0 = floor(p 2^64) keeps the value; T_k <= u < T_(k+1) publishes the k-th value of
    SA_i, T_k = T_0 + floor(k (2^64 - T_0)/m_i): checked on both sides of every threshold."""
    domains = np.array([[1, 0, 1, 1, 0], [0, 1, 0, 0, 1]], dtype=bool)
    gammas = np.array([3.0, 2.0])
    perturb = PerturbWithin(domains, gammas)
    whole = 1 << 64
    for index, members in enumerate(domains):
        size = int(members.sum())
        p = (gammas[index] - 1) / (size - 1 + gammas[index])
        kept = int(p * whole)
        edges = [kept] + [kept + (whole - kept) * k // size for k in range(1, size)]
        draws = [0, kept - 1] + [e + d for e in edges for d in (0, 1)] + \
            [e - 1 for e in edges[1:]] + [whole - 1]
        expected = [-1, -1] + [k for k in range(size) for _ in (0, 1)] + \
            list(range(size - 1)) + [size - 1]
        values = np.full(len(draws), 9, dtype=np.int64)
        out = perturb(values, np.full(len(draws), index, dtype=np.uint8),
                      np.array(draws, dtype=np.uint64))
        published = np.flatnonzero(members)
        assert out.tolist() == [9 if k < 0 else int(published[k]) for k in expected]


# -- the estimator (Eq. 7) by hand ------------------------------------------------------------


def hand_estimate(release, rows: np.ndarray, values: list[int]) -> tuple[float, float]:
    """Appendix 10.10 in plain Python: per sub-table i, on the rows Res of the condition,
    (o_S - s q_i |Res|)/p_i with variance |Res| pi (1 - pi)/p_i^2, pi = o_S/|Res|."""
    occupation = release.codes["occupation"]
    total = variance = 0.0
    for i, gamma in enumerate(release.gammas):
        m_i = int(release.domains[i].sum())
        p = (gamma - 1) / (m_i - 1 + gamma)
        q = 1 / (m_i - 1 + gamma)
        res = rows & (release.subtable == i)
        size = int(res.sum())
        observed = int(np.isin(occupation[res], values).sum())
        s = sum(bool(release.domains[i, v]) for v in values)
        total += (observed - s * q * size) / p
        if size:
            share = observed / size
            variance += size * share * (1 - share) / p ** 2
    return total, math.sqrt(variance)


def test_whole_domain_estimate_is_eq7(adult):
    release = UniformPerturbation(rho1=0.077, rho2=0.2).publish(adult, random_state=3)
    gamma = release.gammas[0]
    m, n = 14, adult.n_rows
    sales = adult.schema["occupation"].domain.index("Sales")
    o = int((release.codes["occupation"] == sales).sum())
    # Eq. 7: f* = ((m - 1 + gamma) o - |T*|)/(gamma - 1).
    estimate = release.count("occupation = 'Sales'")
    assert estimate.value == pytest.approx(((m - 1 + gamma) * o - n) / (gamma - 1), rel=1e-10)
    p = (gamma - 1) / (m - 1 + gamma)
    assert estimate.stderr == pytest.approx(math.sqrt(n * (o / n) * (1 - o / n)) / p, rel=1e-10)


def test_conditional_estimate_matches_hand_computation(adult):
    release = UniformPerturbation(rho1=0.14, rho2=0.3).publish(adult, random_state=4)
    domain = release.schema["occupation"].domain
    female = release.codes["sex"] == release.schema["sex"].domain.index("Female")
    values = [domain.index("Sales"), domain.index("Tech-support")]
    value, stderr = hand_estimate(release, female, values)
    estimate = release.count("sex = 'Female' AND occupation IN ('Sales', 'Tech-support')")
    assert estimate.value == pytest.approx(value, rel=1e-10)
    assert estimate.stderr == pytest.approx(stderr, rel=1e-10)


# -- statistics over many publications ---------------------------------------------------------


def publications(mechanism, table, queries, runs, first_seed):
    """Estimates and reported standard errors of ``queries`` over ``runs`` seeded releases."""
    pairs = [mechanism.publish(table, random_state=first_seed + s).count_all(queries)
             for s in range(runs)]
    values = np.array([v for v, _ in pairs])
    stderr = np.array([e for _, e in pairs])
    return values, stderr


@BOTH
@pytest.mark.parametrize(("rho1", "rho2"), [(0.077, 0.2), (0.14, 0.3)],
                         ids=["proper-subset-protected", "all-protected"])
def test_estimates_are_unbiased_and_stderr_calibrated(adult, mechanism_class, rho1, rho2):
    runs = 200
    truth = np.array([adult.count(q).value for q in QUERIES])
    values, stderr = publications(mechanism_class(rho1=rho1, rho2=rho2), adult, QUERIES,
                                  runs, first_seed=1000)
    assert np.all(np.isfinite(stderr)) and np.all(stderr > 0)
    spread = values.std(axis=0, ddof=1)
    # Unbiasedness: the mean of R independent estimates has standard error sd/sqrt(R); it must
    # lie within 5 of them of the exact count.
    assert np.all(np.abs(values.mean(axis=0) - truth) < 5 * spread / np.sqrt(runs))
    # The same check with the reported standard error in place of the empirical one.
    assert np.all(np.abs(values.mean(axis=0) - truth) < 5 * stderr.mean(axis=0) / np.sqrt(runs))
    # Calibration: the sd of R draws estimates the true sd with relative sd ~ 1/sqrt(2(R-1))
    # (= 0.050 at R = 200); the ratio of the empirical sd to the mean reported stderr must be
    # within 5 of those of 1. (The binomial model slightly overstates the variance for a fixed
    # table, by a few percent here, well inside the tolerance.)
    tolerance = 5 / np.sqrt(2 * (runs - 1))
    assert np.all(np.abs(spread / stderr.mean(axis=0) - 1) < tolerance)


@BOTH
def test_compound_sensitive_attribute_is_unbiased(mechanism_class):
    table = ppdp.datasets.adult(sensitive=["occupation", "sex"])
    query = "occupation = 'Sales' AND sex = 'Female'"
    truth = table.count(query).value
    mechanism = mechanism_class(rho1=0.077, rho2=0.2)
    release = mechanism.publish(table, random_state=0)
    # One attribute over the product of the domains: 14 x 2 values; UP perturbs over all of
    # it with gamma from Eq. 6.
    assert release.domains.shape[1] == 28
    if mechanism_class is UniformPerturbation:
        assert release.domains.all()
        assert release.gammas[0] == pytest.approx(float(amplification_gamma(0.077, 0.2)))
    # Both columns are perturbed now: a count over sex alone is an estimate, not exact.
    assert release.count("sex = 'Female'").stderr > 0
    runs = 120
    values, stderr = publications(mechanism, table, [query], runs, first_seed=500)
    # Mean of R estimates within 5 standard errors (empirical sd / sqrt(R)) of the truth.
    assert abs(values.mean() - truth) < 5 * values.std(ddof=1) / np.sqrt(runs)
    assert abs(values.std(ddof=1) / stderr.mean() - 1) < 5 / np.sqrt(2 * (runs - 1))


@BOTH
def test_group_by_is_linear_and_matches_ungrouped_queries(adult, mechanism_class):
    release = mechanism_class(rho1=0.077, rho2=0.2).publish(adult, random_state=11)
    grouped = release.count("SELECT COUNT(*) FROM t WHERE age > 50 GROUP BY sex, occupation")
    assert grouped.columns == ("sex", "occupation")
    # Summing Eq. 7 over a (sub-table's) whole domain gives back |Res| (1 - m q)/p = |Res|:
    # the grouped estimates add up to the exact count of the condition on the other columns.
    total = sum(e.value for _, e in grouped.groups)
    assert total == pytest.approx(adult.count("age > 50").value, rel=1e-9)
    for sex in ("Female", "Male"):
        part = sum(e.value for key, e in grouped.groups if key["sex"] == sex)
        assert part == pytest.approx(adult.count(f"age > 50 AND sex = '{sex}'").value,
                                     rel=1e-9)
    # A grouped cell equals the matching ungrouped query on the same release.
    for sex, occupation in (("Female", "Sales"), ("Male", "Tech-support"),
                            ("Male", "Armed-Forces")):
        single = release.count(f"age > 50 AND sex = '{sex}' AND occupation = '{occupation}'")
        cell = grouped[(sex, occupation)]
        assert cell.value == pytest.approx(single.value, rel=1e-12, abs=1e-9)
        assert cell.stderr == pytest.approx(single.stderr, rel=1e-12, abs=1e-9)
    # Group columns in the other order give the same numbers.
    swapped = release.count("SELECT COUNT(*) FROM t WHERE age > 50 GROUP BY occupation, sex")
    assert swapped[("Sales", "Female")].value == pytest.approx(grouped[("Female", "Sales")].value)
    # And an IN list is the sum of its single-value estimates (Eq. 7 is linear in o_S).
    pair = release.count("age > 50 AND occupation IN ('Sales', 'Tech-support')")
    singles = [release.count(f"age > 50 AND occupation = '{v}'").value
               for v in ("Sales", "Tech-support")]
    assert pair.value == pytest.approx(sum(singles), rel=1e-9)
    # Complements and unions follow from linearity: est(NOT S) = n - est(S), and an OR of a
    # sensitive and a non-sensitive condition obeys inclusion-exclusion.
    sales = release.count("occupation = 'Sales'").value
    assert release.count("NOT occupation = 'Sales'").value == pytest.approx(
        adult.n_rows - sales, rel=1e-9)
    union = release.count("occupation = 'Sales' OR age > 60").value
    both = release.count("occupation = 'Sales' AND age > 60").value
    assert union == pytest.approx(sales + adult.count("age > 60").value - both, rel=1e-9)


@BOTH
def test_queries_without_a_sensitive_column_are_exact(adult, mechanism_class):
    release = mechanism_class(rho1=0.077, rho2=0.2).publish(adult, random_state=2)
    for query in ("sex = 'Female'", "age > 40 AND sex = 'Male'", "education = 'Bachelors'"):
        estimate = release.count(query)
        assert estimate.value == adult.count(query).value
        assert estimate.stderr == 0
    grouped = release.count("SELECT COUNT(*) FROM t WHERE age > 60 GROUP BY sex")
    exact = adult.count("SELECT COUNT(*) FROM t WHERE age > 60 GROUP BY sex")
    for key, estimate in grouped.groups:
        assert estimate.stderr == 0 and estimate.value == exact[key].value


def test_publish_keeps_non_sensitive_columns_and_input(adult):
    before = {k: v.copy() for k, v in adult.codes.items()}
    release = UniformPerturbation(rho1=0.077, rho2=0.2).publish(adult, random_state=9)
    assert all(np.array_equal(before[k], adult.codes[k]) for k in before)
    assert release.n_rows == adult.n_rows
    # Non-sensitive rows are published unchanged (up to the shuffle): the joint distribution
    # of (sex, age) is identical.
    pairs = release.codes["sex"].astype(np.int64) * 1000 + release.codes["age"]
    original = adult.codes["sex"].astype(np.int64) * 1000 + adult.codes["age"]
    assert np.array_equal(np.sort(pairs), np.sort(original))
    # The sensitive values were perturbed (retention ~ 12 %, so many rows changed).
    changed = np.bincount(release.codes["occupation"], minlength=14) != np.bincount(
        adult.codes["occupation"], minlength=14)
    assert changed.any()
    # Same seed, same release; different seed, different release.
    again = UniformPerturbation(rho1=0.077, rho2=0.2).publish(adult, random_state=9)
    other = UniformPerturbation(rho1=0.077, rho2=0.2).publish(adult, random_state=10)
    assert np.array_equal(again.codes["occupation"], release.codes["occupation"])
    assert not np.array_equal(other.codes["occupation"], release.codes["occupation"])


# -- release files ----------------------------------------------------------------------------


def test_release_round_trip_and_file_contents(adult, tmp_path):
    release = UniformPerturbation(rho1=0.077, rho2=0.2).publish(adult, random_state=8675309)
    path = release.save(tmp_path / "up")
    assert sorted(p.name for p in path.iterdir()) == ["release.json", "row_counts.parquet",
                                                      "rows.parquet", "subtables.parquet"]
    # One sub-table: the rows carry no sub-table column.
    assert pq.read_table(path / "rows.parquet").column_names == list(adult.schema.names)
    # The single sub-table's domain is the whole occupation domain.
    listing = pq.read_table(path / "subtables.parquet")
    assert sorted(listing.column("occupation").to_pylist()) == sorted(
        adult.schema["occupation"].domain)
    assert set(listing.column("subtable").to_pylist()) == {0}
    metadata = json.loads((path / "release.json").read_text())
    assert metadata["mechanism"] == "uniform"
    assert set(metadata["parameters"]) == {"rho1", "rho2", "gamma"}
    assert metadata["parameters"]["rho1"] == 0.077 and metadata["parameters"]["rho2"] == 0.2
    assert metadata["parameters"]["gamma"] == pytest.approx([release.gammas[0]])
    text = (path / "release.json").read_text().lower()
    assert "seed" not in text and "8675309" not in text

    loaded = ppdp.load_release(path)
    assert type(loaded) is type(release)
    queries = [*QUERIES, "sex = 'Female'"]
    for a, b in zip(loaded.count_all(queries), release.count_all(queries), strict=True):
        np.testing.assert_array_equal(a, b)


def test_rows_outside_the_published_domain_fail_to_load(tmp_path):
    """A published value outside its sub-table's domain cannot come from the mechanism."""
    data = pa.table({"a": [0, 1, 0, 1, 0, 1, 0, 1] * 5,
                     "s": ["x", "y", "z", "x", "y", "z", "x", "w"] * 5})
    table = table_from_arrow(data, roles={"s": Role.SENSITIVE},
                             domains={"s": ["w", "x", "y", "z"]})
    release = UniformPerturbation(rho1=0.4, rho2=0.6).publish(table, random_state=1)
    path = release.save(tmp_path / "up")
    # Rewrite the rows with plain strings and the first row published as 'w': still valid.
    rows = pq.read_table(path / "rows.parquet")
    s = rows.column("s").combine_chunks().dictionary_decode().to_pylist()
    s[0] = "w"
    # Digests recomputed: a crafted release that passes the integrity check.
    rewrite_file(path, "rows.parquet",
                 rows.set_column(rows.column_names.index("s"), "s", pa.array(s)))
    assert ppdp.load_release(path).n_rows == 40
    # Drop 'w' from the single sub-table's published domain: that row now lies outside it.
    listing = pq.read_table(path / "subtables.parquet")
    values = listing.column("s").combine_chunks().dictionary_decode().to_pylist()
    rewrite_file(path, "subtables.parquet",
                 listing.filter(pa.array([v != "w" for v in values])))
    with pytest.raises(ReleaseError, match="outside its sub-table"):
        ppdp.load_release(path)


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("rho1", "rho2", "message"), [
    (0.3, 0.2, "rho1 < rho2"),
    (0.2, 0.2, "rho1 < rho2"),
    (0.0, 0.2, "rho1 must be"),
    (-0.1, 0.2, "rho1 must be"),
    (float("nan"), 0.2, "rho1 must be"),
    (0.1, 1.0, "rho2 must be"),
    (0.1, 1.5, "rho2 must be"),
])
def test_invalid_privacy_parameters(rho1, rho2, message):
    with pytest.raises(ValueError, match=message):
        UniformPerturbation(rho1=rho1, rho2=rho2)


def test_invalid_delta_in_guarantee():
    mechanism = UniformPerturbation(rho1=0.1, rho2=0.3)
    for delta in (0.0, 1.0, -0.5, 2.0):
        with pytest.raises(ValueError, match="delta"):
            mechanism.guarantee(m=10, n=1000, delta=delta)


def test_rho1_equal_to_the_rarest_frequency_is_feasible():
    """Section 4.1: a value with Pr[X = x] <= rho1 is protected, equality included."""
    data = pa.table({"s": ["a"] + ["b"] + ["c"] * 159})
    table = table_from_arrow(data, roles={"s": Role.SENSITIVE}, domains={"s": ["a", "b", "c"]})
    release = UniformPerturbation(rho1=1 / 161, rho2=0.5).publish(table, random_state=0)
    assert release.n_rows == 161


@BOTH
def test_infeasible_and_schema_errors(adult, mechanism_class):
    # Every occupation is more frequent than rho1 = 0.0002 (the rarest, Armed-Forces, is
    # 9/30162 = 0.0003): (rho1, rho2)-privacy would protect nothing.
    with pytest.raises(InfeasibleError, match="raise rho1"):
        mechanism_class(rho1=0.0002, rho2=0.5).publish(adult, random_state=0)
    with pytest.raises(InfeasibleError, match="raise rho1"):
        mechanism_class(rho1=0.0002, rho2=0.5).guarantee(adult)
    with pytest.raises(SchemaError):
        mechanism_class(rho1=0.1, rho2=0.3).publish(ppdp.datasets.adult())
    clash = table_from_arrow(pa.table({"subtable": [1, 2, 3, 4] * 5,
                                       "s": ["a", "b", "c", "d", "e"] * 4}),
                             roles={"s": Role.SENSITIVE},
                             domains={"s": ["a", "b", "c", "d", "e"]})
    with pytest.raises(SchemaError, match="subtable"):
        mechanism_class(rho1=0.3, rho2=0.5).publish(clash, random_state=0)


# -- guarantee --------------------------------------------------------------------------------


def test_guarantee_matches_the_formulas(adult):
    rho1, rho2, m, n = 0.077, 0.2, 14, 30162
    guarantee = UniformPerturbation(rho1=rho1, rho2=rho2).guarantee(m=m, n=n)
    gamma = rho2 * (1 - rho1) / (rho1 * (1 - rho2))  # Eq. 6: 2.99675...
    p, q = (gamma - 1) / (m - 1 + gamma), 1 / (m - 1 + gamma)  # Eq. 4
    eps = 2 * math.sqrt(math.log(2 / 0.05)) / math.sqrt(n) * (m / (gamma - 1) + 1)  # Eq. 11
    assert guarantee.gamma == pytest.approx(gamma)
    assert guarantee.retention == pytest.approx(p)
    assert guarantee.replacement == pytest.approx(q)
    assert guarantee.diagonal == pytest.approx(p + q) and guarantee.diagonal == pytest.approx(
        gamma * q)
    assert guarantee.epsilon == pytest.approx(eps)
    assert not guarantee.partitioned
    data = guarantee.to_dict()
    assert data["mechanism"] == "uniform" and data["epsilon"] == pytest.approx(eps)
    # From the table: m = 14 occupations, n = 30162 rows, the same numbers.
    assert UniformPerturbation(rho1=rho1, rho2=rho2).guarantee(adult) == guarantee
    # Without n there is no error bound; without m there are no probabilities.
    assert UniformPerturbation(rho1=rho1, rho2=rho2).guarantee(m=m).epsilon is None
    assert UniformPerturbation(rho1=rho1, rho2=rho2).guarantee().retention is None


def test_partition_statistics_of_uniform_perturbation_are_one_subtable(adult):
    """Uniform Perturbation is Perturbation Partitioning with a single sub-table over the whole
    domain (SDR Section 4.1), so its Table 2-3 statistics are those of that sub-table: 1 sub-table,
    m = 14, gamma of Eq. 6 and retention p of Eq. 4; computed without a 'Mean of empty slice'
    warning or NaN."""
    mechanism = UniformPerturbation(rho1=1 / 13, rho2=1 / 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        guarantee = mechanism.guarantee(adult)
        stats = guarantee.partition_statistics()
        unknown_m = mechanism.guarantee().partition_statistics()
    assert stats == {"subtables": 1, "mean_m": 14.0, "mean_gamma": guarantee.gamma,
                     "mean_retention": guarantee.retention,
                     "row_weighted_retention": guarantee.retention}
    assert not any(math.isnan(v) for v in stats.values())
    # Without a domain size there is no retention probability (Eq. 4 needs m): None, not NaN.
    assert unknown_m == {"subtables": 1, "mean_m": None, "mean_gamma": mechanism.gamma,
                         "mean_retention": None, "row_weighted_retention": None}


def test_partition_statistics_of_sdr_on_adult_have_no_warning(adult):
    """Perturbation Partitioning on Adult: the statistics average the sub-tables' m_i, gamma_i
    and p_i (Tables 2-3) without warnings, and the row-weighted retention lies between the
    smallest and the largest p_i."""
    mechanism = PerturbationPartitioning(rho1=1 / 13, rho2=1 / 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        guarantee = mechanism.guarantee(adult)
        stats = guarantee.partition_statistics()
        without_table = mechanism.guarantee(m=14, n=adult.n_rows).partition_statistics()
    parts = guarantee.subtables
    assert stats["subtables"] == len(parts) >= 2
    assert stats["mean_m"] == pytest.approx(np.mean([s.m for s in parts]))
    assert stats["mean_gamma"] == pytest.approx(np.mean([s.gamma for s in parts]))
    retention = [s.retention for s in parts]
    assert stats["mean_retention"] == pytest.approx(np.mean(retention))
    assert min(retention) <= stats["row_weighted_retention"] <= max(retention)
    assert sum(s.rows for s in parts) == adult.n_rows
    # Asked without the table, the partition is unknown: the whole-domain perturbation.
    assert without_table["subtables"] == 1 and without_table["mean_m"] == 14.0
