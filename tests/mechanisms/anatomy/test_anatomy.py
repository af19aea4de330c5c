"""Tests of Anatomy: the published QIT/ST and the estimator of Appendix 10.10 of Small Domain
Randomization, ``est = sum_g c(g, QI condition) * c(g, x) / |g|``.

Expected values are recomputed in plain Python from the published QIT and ST only, so they do
not depend on how the groups were formed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp import Anatomy, Estimate, GroupedEstimate
from ppdp.data.schema import Role
from ppdp.errors import InfeasibleError, SchemaError
from ppdp.mechanisms import AnatomyRelease
from ppdp.table.table import Table, table_from_arrow

# A hand-written table: 10 patients, quasi-identifiers age and zip, sensitive disease.
AGE = [22, 25, 28, 31, 35, 24, 45, 52, 29, 60]
ZIP = ["130", "130", "140", "140", "150", "150", "130", "140", "150", "130"]
DISEASE = ["flu", "flu", "flu", "cold", "cold", "cold", "hiv", "hiv", "ulcer", "ulcer"]


def hand_table() -> Table:
    # A synthetic table: the values present are its intended (public) domains.
    return table_from_arrow(pa.table({"age": AGE, "zip": ZIP, "disease": DISEASE}),
                            roles={"disease": Role.SENSITIVE}).declare_observed_domains(
        warn=False)


def published(release: AnatomyRelease) -> tuple[list[dict[str, Any]], list[int],
                                                 dict[int, Counter[str]]]:
    """The QIT as decoded rows with their group ids, and the ST as value counts per group."""
    schema = release.schema
    qit_names = list(release.qit)
    decoded = {n: [schema[n].domain[int(c)] for c in release.qit[n]] for n in qit_names}
    rows = [{n: decoded[n][i] for n in qit_names} for i in range(release.n_rows)]
    groups = [int(g) for g in release.qit_groups]
    st_groups, st_values, st_counts = release.st
    domain = schema[release.sensitive].domain
    st_table: dict[int, Counter[str]] = defaultdict(Counter)
    for g, v, c in zip(st_groups.tolist(), st_values.tolist(), st_counts.tolist(), strict=True):
        st_table[g][domain[v]] += c
    return rows, groups, st_table


def paper_estimate(release: AnatomyRelease, qi: Callable[[dict[str, Any]], bool],
                   value: str) -> float:
    """sum over groups g of c(g, QI condition) * c(g, SA = value) / |g|."""
    rows, groups, st_table = published(release)
    size = Counter(groups)
    matching = Counter(g for row, g in zip(rows, groups, strict=True) if qi(row))
    return sum(matching[g] * st_table[g][value] / size[g] for g in size)


def general_estimate(release: AnatomyRelease,
                     condition: Callable[[dict[str, Any], str], bool]) -> float:
    """Every QIT row counts towards each sensitive value x of its group with weight
    c(g, x) / |g| (for conjunctions this is the paper's formula)."""
    rows, groups, st_table = published(release)
    size = Counter(groups)
    return sum(count / size[g] for row, g in zip(rows, groups, strict=True)
               for value, count in st_table[g].items() if condition(row, value))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_golden_estimate_from_the_published_tables(seed: int) -> None:
    release = Anatomy(l=2).publish(hand_table(), random_state=seed)
    expected = paper_estimate(release, lambda r: r["age"] < 30, "flu")
    estimate = release.count("age < 30 AND disease = 'flu'")
    assert isinstance(estimate, Estimate)
    assert estimate.value == pytest.approx(expected, abs=1e-9)
    assert estimate.stderr is None
    # Five rows are younger than 30; every group holds at most one flu row.
    assert 0 < estimate.value <= 5
    for value in ("cold", "hiv", "ulcer"):
        assert release.count(f"age < 30 AND disease = '{value}'").value == pytest.approx(
            paper_estimate(release, lambda r: r["age"] < 30, value), abs=1e-9)


GENERAL_QUERIES: list[tuple[str, Callable[[dict[str, Any], str], bool]]] = [
    ("zip = '130' AND disease IN ('flu', 'hiv')",
     lambda r, s: r["zip"] == "130" and s in ("flu", "hiv")),
    ("age >= 30 AND zip != '150' AND disease != 'cold'",
     lambda r, s: r["age"] >= 30 and r["zip"] != "150" and s != "cold"),
    ("age < 30 OR disease = 'hiv'", lambda r, s: r["age"] < 30 or s == "hiv"),
    ("NOT (age BETWEEN 25 AND 45 AND disease = 'flu')",
     lambda r, s: not (25 <= r["age"] <= 45 and s == "flu")),
    ("(zip = '140' AND disease = 'cold') OR (zip = '150' AND disease = 'ulcer')",
     lambda r, s: (r["zip"] == "140" and s == "cold") or (r["zip"] == "150" and s == "ulcer")),
]


@pytest.mark.parametrize(("text", "condition"), GENERAL_QUERIES)
def test_mixed_conditions_follow_the_group_shares(
        text: str, condition: Callable[[dict[str, Any], str], bool]) -> None:
    release = Anatomy(l=2).publish(hand_table(), random_state=7)
    assert release.count(text).value == pytest.approx(general_estimate(release, condition),
                                                      abs=1e-9)


def test_groups_hold_l_distinct_values() -> None:
    table = hand_table()
    for l in (2, 3):  # noqa: E741 - the paper's symbol
        release = Anatomy(l=l).publish(table, random_state=l)
        rows, groups, st_table = published(release)
        size = Counter(groups)
        assert release.parameters == {"l": l, "n_groups": 10 // l}
        assert sorted(size) == list(range(10 // l))
        for g, n in size.items():
            assert n >= l
            # ST counts add up to the QIT group size; values in a group are distinct.
            assert sum(st_table[g].values()) == n
            assert all(c == 1 for c in st_table[g].values())
            assert len(st_table[g]) == n
        # The QIT is the table's quasi-identifiers, the ST its sensitive values.
        assert Counter((r["age"], r["zip"]) for r in rows) == Counter(zip(AGE, ZIP,
                                                                          strict=True))
        assert sum(st_table.values(), Counter()) == Counter(DISEASE)


@pytest.mark.parametrize(("n_rows", "l", "seed"), [(23, 3, 0), (40, 4, 1), (57, 5, 2)])
def test_group_sizes_on_random_tables(n_rows: int, l: int, seed: int) -> None:  # noqa: E741
    rng = np.random.default_rng(seed)
    # Values cycle through 2l of them, so no value exceeds N / l.
    disease = [f"d{k % (2 * l)}" for k in rng.permutation(n_rows)]
    table = table_from_arrow(pa.table({"qi": rng.integers(0, 5, n_rows), "disease": disease}),
                             roles={"disease": Role.SENSITIVE}).declare_observed_domains(
        warn=False)
    release = Anatomy(l=l).publish(table, random_state=seed)
    _, groups, st_table = published(release)
    size = Counter(groups)
    assert len(size) == n_rows // l
    assert min(size.values()) >= l
    for g, n in size.items():
        assert len(st_table[g]) == n == sum(st_table[g].values())


def test_group_by_sensitive_sums_to_the_qi_only_count() -> None:
    release = Anatomy(l=2).publish(hand_table(), random_state=3)
    grouped = release.count("SELECT disease, COUNT(*) FROM t WHERE age < 30 GROUP BY disease")
    assert isinstance(grouped, GroupedEstimate)
    total = sum(e.value for _, e in grouped.groups)
    qi_only = release.count("age < 30")
    assert qi_only == Estimate.exact(5)
    assert total == pytest.approx(5)
    for key, estimate in grouped.groups:
        assert estimate.value == pytest.approx(
            paper_estimate(release, lambda r: r["age"] < 30, key["disease"]))


def test_group_by_a_quasi_identifier_and_the_sensitive_column_in_either_order() -> None:
    release = Anatomy(l=2).publish(hand_table(), random_state=4)
    forward = release.count("SELECT zip, disease, COUNT(*) FROM t WHERE age > 24 "
                            "GROUP BY zip, disease")
    backward = release.count("SELECT disease, zip, COUNT(*) FROM t WHERE age > 24 "
                             "GROUP BY disease, zip")
    assert isinstance(forward, GroupedEstimate) and isinstance(backward, GroupedEstimate)
    for z in ("130", "140", "150"):
        for d in ("cold", "flu", "hiv", "ulcer"):
            expected = paper_estimate(release, lambda r, z=z: r["age"] > 24 and r["zip"] == z,
                                      d)
            assert forward[(z, d)].value == pytest.approx(expected, abs=1e-9)
            assert backward[(d, z)].value == pytest.approx(expected, abs=1e-9)


def test_whole_domain_counts_are_exact() -> None:
    release = Anatomy(l=2).publish(hand_table(), random_state=5)
    assert release.count("disease = 'flu'").value == pytest.approx(3)
    assert release.count("disease IN ('flu', 'hiv')").value == pytest.approx(5)
    assert release.count("disease != 'ulcer'").value == pytest.approx(8)
    grouped = release.count("SELECT disease, COUNT(*) FROM t GROUP BY disease")
    for value, n in Counter(DISEASE).items():
        assert grouped[value].value == pytest.approx(n)  # type: ignore[index]
    # Conditions on quasi-identifiers only are exact (the QIT is published as is).
    assert release.count("zip = '130' AND age > 24") == Estimate.exact(3)


def test_infeasible_l_names_the_largest_feasible_l() -> None:
    # flu occurs 3 times in 10 rows: l = 3 is the largest feasible (3 groups of >= 3).
    with pytest.raises(InfeasibleError, match="largest feasible l is 3"):
        Anatomy(l=4).publish(hand_table())
    dominated = table_from_arrow(pa.table({"qi": [1, 2, 3, 4], "s": ["a", "a", "a", "b"]}),
                                 roles={"s": Role.SENSITIVE}).declare_observed_domains(
        warn=False)
    with pytest.raises(InfeasibleError, match="no l >= 2 is feasible"):
        Anatomy(l=2).publish(dominated)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(0, 5), min_size=2, max_size=40))
def test_the_named_largest_l_is_feasible_and_the_next_is_not(values: list[int]) -> None:
    table = table_from_arrow(pa.table({"qi": list(range(len(values))),
                                       "s": [f"v{v}" for v in values]}),
                             roles={"s": Role.SENSITIVE}).declare_observed_domains(warn=False)
    largest = len(values) // max(Counter(values).values())
    with pytest.raises(InfeasibleError) as info:
        Anatomy(l=max(largest + 1, 2)).publish(table)
    if largest >= 2:
        assert f"largest feasible l is {largest}" in str(info.value)
        release = Anatomy(l=largest).publish(table, random_state=0)
        assert min(Counter(release.qit_groups.tolist()).values()) >= largest
    else:
        assert "no l >= 2 is feasible" in str(info.value)


def test_schema_errors() -> None:
    two = table_from_arrow(pa.table({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "y"],
                                     "c": ["p", "q", "r", "s"]}),
                           roles={"b": Role.SENSITIVE, "c": Role.SENSITIVE})
    with pytest.raises(SchemaError, match="one sensitive column"):
        Anatomy(l=2).publish(two)
    none = table_from_arrow(pa.table({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "y"]}))
    with pytest.raises(SchemaError, match="needs a sensitive column"):
        Anatomy(l=2).publish(none)


@pytest.mark.parametrize("l", [1, 0, -3, 2.5, True, "2"])
def test_l_must_be_an_integer_of_at_least_two(l: Any) -> None:  # noqa: E741
    with pytest.raises(ValueError, match="l must be an integer >= 2"):
        Anatomy(l=l)


def test_ignored_columns_are_not_published() -> None:
    table = hand_table().with_roles(sensitive="disease", quasi_identifiers=["age"])
    release = Anatomy(l=2).publish(table, random_state=0)
    assert release.schema.names == ("age", "disease")
    assert set(release.qit) == {"age"}


def test_seed_reproducible() -> None:
    a = Anatomy(l=2).publish(hand_table(), random_state=9)
    b = Anatomy(l=2).publish(hand_table(), random_state=9)
    np.testing.assert_array_equal(a.qit_groups, b.qit_groups)
    for x, y in zip(a.st, b.st, strict=True):
        np.testing.assert_array_equal(x, y)


def test_every_qit_row_is_a_table_row_in_a_group_holding_its_value() -> None:
    """Quasi-identifiers of one and two bytes (the QIT's columns are shuffled together): each
    QIT row, found by its unique id, keeps its other columns and sits in a group whose ST lines
    hold its sensitive value."""
    rng = np.random.default_rng(4)
    n_rows = 1_000
    table = table_from_arrow(pa.table({
        "id": rng.permutation(n_rows) + 10_000, "sex": rng.integers(0, 2, n_rows),
        "disease": rng.integers(0, 5, n_rows)}), roles={"disease": Role.SENSITIVE}
    ).declare_observed_domains(warn=False)
    assert table.codes["id"].itemsize == 2 and table.codes["sex"].itemsize == 1
    release = Anatomy(l=3).publish(table, random_state=1)
    row_of = np.argsort(table.codes["id"])[release.qit["id"]]
    np.testing.assert_array_equal(release.qit["sex"], table.codes["sex"][row_of])
    groups, values, _ = release.st
    held = set(zip(groups.tolist(), values.tolist(), strict=True))
    assert all((g, v) in held for g, v in zip(release.qit_groups.tolist(),
                                              table.codes["disease"][row_of].tolist(),
                                              strict=True))


# -- the expected cube against a straightforward computation ------------------------------------


def reference_cube(release: AnatomyRelease, columns: tuple[str, ...],
                   mask: np.ndarray | None) -> np.ndarray:
    """The contingency table over ``columns`` in which every (masked) QIT row adds
    c(g, x) / |g| at its own cells and each value x of its group g, one row at a time."""
    sizes = release.schema.sizes()
    shares: dict[int, list[tuple[int, float]]] = defaultdict(list)
    group_size = Counter(release.qit_groups.tolist())
    for g, v, c in zip(*(a.tolist() for a in release.st), strict=True):
        shares[g].append((v, c / group_size[g]))
    counts = np.zeros(tuple(sizes[c] for c in columns))
    for row, g in enumerate(release.qit_groups.tolist()):
        if mask is not None and not mask[row]:
            continue
        for value, share in shares[g]:
            cell = tuple(value if c == release.sensitive else int(release.qit[c][row])
                         for c in columns)
            counts[cell] += share
    return counts


def random_release(seed: int, st_counts: bool) -> AnatomyRelease:
    """A published Anatomy release of a random 3-quasi-identifier table, or (``st_counts``)
    one written down directly whose ST lines have counts above 1 (the format allows any)."""
    rng = np.random.default_rng(seed)
    n_rows = 240
    data = {"a": rng.integers(0, 7, n_rows), "b": rng.integers(0, 4, n_rows),
            "c": rng.integers(0, 3, n_rows),
            "s": [f"v{k % 9}" for k in rng.permutation(n_rows)]}
    table = table_from_arrow(pa.table(data), roles={"s": Role.SENSITIVE}
                             ).declare_observed_domains(warn=False)
    release = Anatomy(l=4).publish(table, random_state=seed)
    if not st_counts:
        return release
    # Groups of 6 rows holding 3 values twice each: ST counts 2, shares 1/3.
    qit_groups = np.arange(n_rows) % 40
    st_groups = np.repeat(np.arange(40), 3)
    st_values = (np.arange(120) * 5) % 9
    return AnatomyRelease(release.schema, {"l": 3, "n_groups": 40}, n_rows, release.qit,
                          qit_groups, (st_groups, st_values, np.full(120, 2)))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("st_counts", [False, True], ids=["published", "counts-above-1"])
def test_expected_cube_matches_the_row_by_row_reference(seed: int, st_counts: bool) -> None:
    """The pair counts behind Anatomy's estimates (Appendix 10.10) give what adding each QIT
    row's shares c(g, x)/|g| one at a time gives, to 1e-9, for any columns in any order, with
    and without a condition on the rows, and for ST lines with counts above 1; and the
    quasi-identifier counts exactly."""
    release = random_release(seed, st_counts)
    plain, cube = release._cubes

    def rows_where(codes: dict[str, np.ndarray], kind: str) -> np.ndarray | None:
        if kind == "all":
            return None
        where = (codes["a"] < 3) | (codes["b"] == 2)
        return where if kind == "some" else np.zeros(len(where), dtype=bool)

    for columns in [("s",), ("a", "s"), ("s", "b"), ("c", "s", "a"), ("a", "b", "c", "s")]:
        for kind in ("all", "some", "none"):
            expected = reference_cube(release, columns, rows_where(release.qit, kind))
            got = cube.histogram(columns, rows_where(dict(cube.codes), kind))
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    sizes = release.schema.sizes()
    for columns in [("a",), ("c", "a"), ("a", "b", "c")]:
        key = np.ravel_multi_index([release.qit[c] for c in columns],
                                   tuple(sizes[c] for c in columns))
        want = np.bincount(key, minlength=int(np.prod([sizes[c] for c in columns])))
        assert np.array_equal(plain.histogram(columns).reshape(-1), want)
    # And through the estimator: a box query, a disjunction (a row mask), a group-by.
    text = "SELECT s, COUNT(*) FROM t WHERE (a < 3 OR b = 2) AND c != 1 GROUP BY s"
    grouped = release.count(text)
    assert isinstance(grouped, GroupedEstimate)
    a, b, c = (np.asarray(release.schema[n].domain)[release.qit[n]] for n in "abc")
    in_condition = ((a < 3) | (b == 2)) & (c != 1)
    by_value = reference_cube(release, ("s",), in_condition)
    domain = release.schema["s"].domain
    for key, estimate in grouped.groups:
        assert estimate.value == pytest.approx(by_value[domain.index(key["s"])], abs=1e-9)
