"""Tests of distribution-based randomization (DBR).

Each published sensitive value is an independent draw from the column's marginal p, so the
published count of a value v over N rows is Binomial(N, p_v): mean N p_v, standard deviation
sqrt(N p_v (1 - p_v)). Tolerances below are 5 of those standard deviations (a false failure
has probability below 1e-6 per check, and the seeds are fixed anyway).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from ppdp import DBR, Estimate, GroupedEstimate
from ppdp.data.schema import Role
from ppdp.errors import SchemaError
from ppdp.mechanisms import DbrRelease
from ppdp.table.table import Table, table_from_arrow

COUNTS = {"a": 2000, "b": 1000, "c": 600, "d": 400}
N = sum(COUNTS.values())


def marginal_table(seed: int) -> Table:
    """A synthetic table whose values present are its intended (public) domains."""
    rng = np.random.default_rng(seed)
    sensitive = [v for v, n in COUNTS.items() for _ in range(n)]
    return table_from_arrow(pa.table({
        "age": rng.integers(20, 70, N),
        "sex": rng.choice(["F", "M"], N),
        "disease": sensitive,
    }), roles={"disease": Role.SENSITIVE}).declare_observed_domains(warn=False)


def binomial_tolerance(n: int, p: float) -> float:
    return 5 * math.sqrt(n * p * (1 - p))


def published_values(release: DbrRelease, name: str) -> list:
    domain = release.schema[name].domain
    return [domain[int(c)] for c in release.codes[name]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_published_marginal_is_close_to_the_original(seed: int) -> None:
    release = DBR().publish(marginal_table(seed), random_state=seed)
    published = Counter(published_values(release, "disease"))
    assert sum(published.values()) == N
    for value, n in COUNTS.items():
        p = n / N
        assert abs(published[value] - N * p) <= binomial_tolerance(N, p), value
    # The values really are redrawn: the published column is not the original one.
    assert published != Counter(COUNTS)


def test_non_sensitive_columns_keep_their_multiset() -> None:
    table = marginal_table(4)
    release = DBR().publish(table, random_state=4)
    for name in ("age", "sex"):
        np.testing.assert_array_equal(np.sort(release.codes[name]), np.sort(table.codes[name]))
    # Rows are shuffled together: each published (age, sex) pair is an input pair.
    pairs = Counter(zip(table.values("age").tolist(), table.values("sex").tolist(),
                        strict=True))
    published = Counter(zip(published_values(release, "age"), published_values(release, "sex"),
                            strict=True))
    assert published == pairs


def test_estimates_are_the_published_counts() -> None:
    release = DBR().publish(marginal_table(5), random_state=5)
    ages = published_values(release, "age")
    sexes = published_values(release, "sex")
    diseases = published_values(release, "disease")
    rows = list(zip(ages, sexes, diseases, strict=True))
    estimate = release.count("age < 40 AND disease IN ('b', 'c')")
    assert isinstance(estimate, Estimate)
    assert estimate.value == sum(a < 40 and d in ("b", "c") for a, _, d in rows)
    assert estimate.stderr is None and estimate.ci95 is None
    assert release.count("sex = 'F'").value == float(sexes.count("F"))
    grouped = release.count("SELECT sex, disease, COUNT(*) FROM t WHERE age >= 50 "
                            "GROUP BY sex, disease")
    assert isinstance(grouped, GroupedEstimate)
    for (s, d), n in Counter((s, d) for a, s, d in rows if a >= 50).items():
        assert grouped[(s, d)].value == n
    values, stderr = release.count_all(["disease = 'a'", "disease = 'd' OR age = 20"])
    assert values.tolist() == [diseases.count("a"),
                               sum(d == "d" or a == 20 for a, _, d in rows)]
    assert np.isnan(stderr).all()


def test_quasi_identifier_only_counts_are_exact_with_stderr_zero() -> None:
    """Only the sensitive values are redrawn: a count on the other columns is the table's
    own, reported with standard error 0 (as Anatomy, SPLU-Gen, uniform and sdr report it);
    one that mentions the sensitive column keeps no standard error."""
    table = marginal_table(6)
    release = DBR().publish(table, random_state=6)
    exact = release.count("sex = 'F' AND age < 40")
    assert exact == Estimate.with_stderr(table.count("sex = 'F' AND age < 40").value, 0.0)
    grouped = release.count("SELECT sex, COUNT(*) FROM t GROUP BY sex")
    assert isinstance(grouped, GroupedEstimate)
    assert {grouped[s].stderr for s in ("F", "M")} == {0.0}
    values, stderr = release.count_all(["age >= 50", "disease = 'a' AND age >= 50"])
    assert values[0] == table.count("age >= 50").value
    assert stderr[0] == 0.0 and np.isnan(stderr[1])


def test_correlation_with_other_attributes_is_lost() -> None:
    # The sensitive value equals the quasi-identifier in every row.
    sizes = {"a": 1600, "b": 1200, "c": 800, "d": 400}
    values = [v for v, n in sizes.items() for _ in range(n)]
    n_rows = len(values)
    table = table_from_arrow(pa.table({"qi": values, "s": values}),
                             roles={"s": Role.SENSITIVE}).declare_observed_domains(warn=False)
    assert table.count("qi = 'a' AND s = 'a'").value == 1600
    release = DBR().publish(table, random_state=13)
    # Rows with qi = 'a' publish s = 'a' independently with p_a: Binomial(N_a, p_a).
    n_a, p_a = sizes["a"], sizes["a"] / n_rows
    estimate = release.count("qi = 'a' AND s = 'a'").value
    tolerance = binomial_tolerance(n_a, p_a)
    assert abs(estimate - n_a * p_a) <= tolerance
    assert estimate < n_a - tolerance
    # And rows with qi = 'a' now publish other values: Binomial(N_a, p_b), truth 0.
    p_b = sizes["b"] / n_rows
    other = release.count("qi = 'a' AND s = 'b'").value
    assert abs(other - n_a * p_b) <= binomial_tolerance(n_a, p_b)
    assert other > 0


def test_every_sensitive_column_is_redrawn() -> None:
    rng = np.random.default_rng(8)
    n_rows = 3000
    table = table_from_arrow(pa.table({
        "qi": rng.integers(0, 3, n_rows),
        "s1": np.repeat(["x", "y"], [2000, 1000]),
        "s2": np.repeat([1, 2, 3], 1000),
        "dropped": np.zeros(n_rows, dtype=np.int64),
    }), roles={"s1": Role.SENSITIVE, "s2": Role.SENSITIVE}).declare_observed_domains(
        warn=False).with_roles(sensitive=["s1", "s2"], quasi_identifiers=["qi"])
    release = DBR().publish(table, random_state=8)
    assert release.schema.names == ("qi", "s1", "s2")
    p_x = 2000 / n_rows
    assert abs(release.count("s1 = 'x'").value - n_rows * p_x) <= binomial_tolerance(
        n_rows, p_x)
    # Originally s1 = 'x' exactly when s2 is 1 or 2; after DBR they are independent:
    # Binomial(N, p_x * p_{1 or 2}).
    joint = release.count("s1 = 'x' AND s2 IN (1, 2)").value
    p = p_x * (2 / 3)
    assert abs(joint - n_rows * p) <= binomial_tolerance(n_rows, p)
    assert joint < 2000 - binomial_tolerance(n_rows, p)


def test_seed_reproducible_and_needs_a_sensitive_column() -> None:
    table = marginal_table(6)
    a = DBR().publish(table, random_state=21)
    b = DBR().publish(table, random_state=21)
    for name in a.schema.names:
        np.testing.assert_array_equal(a.codes[name], b.codes[name])
    with pytest.raises(SchemaError, match="needs a sensitive column"):
        DBR().publish(table.with_roles())
