"""Tests of Ambiguity (alpha-presence, beta-association): the Figure 2 scheme of the ambiguity
paper, Algorithm 2's groups, the published tables and the Section 6 estimator.

Expected estimates are recomputed in plain Python from the published auxiliary tables and the
sensitive table only, so they do not depend on how the groups were formed.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import ppdp
from ppdp import Estimate, GroupedEstimate, InfeasibleError, QueryError, SchemaError
from ppdp.data.schema import Column, Role, Schema
from ppdp.mechanisms import Ambiguity, AmbiguityRelease
from ppdp.mechanisms.ambiguity import mechanism as ambiguity_module
from ppdp.mechanisms.ambiguity.groups import (
    ambiguity_groups,
    association_group_size,
    presence_probability,
)
from ppdp.table.table import Table, table_from_arrow

# -- Figure 1 (a): the microdata of 8 people ----------------------------------------------------

NAMES = ["Alan", "Charles", "George", "Henry", "Alice", "Carol", "Grace", "Helen"]
AGE = [45, 20, 50, 60, 20, 50, 60, 60]
GENDER = ["M", "M", "M", "M", "F", "F", "F", "F"]
ZIPCODE = [11000, 12000, 23000, 12000, 54000, 23000, 23000, 21000]
DISEASE = ["diabetes", "flu", "diarrhea", "stroke", "leukemia", "diabetes", "leukemia",
           "dyspepsia"]
QUASI = ("Age", "Gender", "Zipcode")


def figure_1a() -> Table:
    # The paper's example: the values present are its intended (public) domains.
    return table_from_arrow(pa.table({"Age": AGE, "Gender": GENDER, "Zipcode": ZIPCODE,
                                      "Disease": DISEASE}),
                            roles={"Disease": Role.SENSITIVE}).declare_observed_domains(
        warn=False)


def figure_2() -> AmbiguityRelease:
    """The ambiguity scheme of Figure 2, written down directly (group 1 -> id 0, 2 -> id 1)."""
    schema = Schema((
        Column("Age", Role.QUASI_IDENTIFIER, (20, 45, 50, 60)),
        Column("Gender", Role.QUASI_IDENTIFIER, ("F", "M")),
        Column("Zipcode", Role.QUASI_IDENTIFIER, (11000, 12000, 21000, 23000, 54000)),
        Column("Disease", Role.SENSITIVE,
               ("diabetes", "diarrhea", "dyspepsia", "flu", "leukemia", "stroke")),
    ))

    def encode(column: str, groups: list[tuple[int, list[Any]]]
               ) -> tuple[np.ndarray, np.ndarray]:
        domain = schema[column].domain
        pairs = [(g, domain.index(v)) for g, values in groups for v in values]
        return np.array([g for g, _ in pairs]), np.array([c for _, c in pairs])

    auxiliary = {
        "Age": encode("Age", [(0, [45, 20, 50, 60]), (1, [20, 50, 60])]),
        "Gender": encode("Gender", [(0, ["M"]), (1, ["F"])]),
        "Zipcode": encode("Zipcode", [(0, [11000, 12000, 23000]), (1, [54000, 23000, 21000])]),
    }
    lines = [(0, "diabetes", 1), (0, "flu", 1), (0, "diarrhea", 1), (0, "stroke", 1),
             (1, "leukemia", 2), (1, "diabetes", 1), (1, "dyspepsia", 1)]
    domain = schema["Disease"].domain
    st_table = (np.array([g for g, _, _ in lines]),
                np.array([domain.index(s) for _, s, _ in lines]),
                np.array([c for _, _, c in lines]))
    return AmbiguityRelease(schema, {"alpha": 0.5, "beta": 0.5, "n_groups": 2}, 8, auxiliary,
                            st_table)


def st_line(release: AmbiguityRelease, group: int, value: Any) -> int:
    code = release.schema[release.sensitive].domain.index(value)
    (index,) = np.flatnonzero((release.st[0] == group) & (release.st[1] == code))
    return int(index)


def test_figure_2_presence_and_association() -> None:
    """Section 1 and Section 5: Pr(Alan in T) = 1/3, Pr(Alice in T) = 4/9 (Theorem 5.1), and
    Pr((Alan, diabetes) | Alan) = 1/4, Pr((Alice, leukemia) | Alice) = 1/2 (Theorem 5.2)."""
    release = figure_2()
    np.testing.assert_array_equal(release.group_sizes(), [4, 4])
    np.testing.assert_array_equal(release.distinct_counts(), [[4, 1, 3], [3, 1, 3]])
    presence = release.presence()
    assert presence[0] == pytest.approx(1 / 3, rel=1e-12)
    assert presence[1] == pytest.approx(4 / 9, rel=1e-12)
    association = release.association()
    assert association[st_line(release, 0, "diabetes")] == pytest.approx(1 / 4, rel=1e-12)
    assert association[st_line(release, 1, "leukemia")] == pytest.approx(1 / 2, rel=1e-12)
    assert association[st_line(release, 1, "dyspepsia")] == pytest.approx(1 / 4, rel=1e-12)


def test_figure_2_combinatorial_derivations_match_the_closed_forms() -> None:
    """The paper's counting arguments (choose |G| of the prod |G_ATi| joined tuples) give the
    closed forms of Theorems 5.1 and 5.2: C(11,3)/C(12,4) = 1/3, C(8,3)/C(9,4) = 4/9, and
    (C(2,1) C(35,3) / C(36,4)) / (4/9) = 1/2 (Lemma 5.2 divided by the presence)."""
    release = figure_2()
    alan = math.comb(11, 3) / math.comb(12, 4)
    alice = math.comb(8, 3) / math.comb(9, 4)
    alice_leukemia = math.comb(2, 1) * math.comb(35, 3) / math.comb(36, 4)
    assert alan == pytest.approx(1 / 3, rel=1e-12)
    assert alice == pytest.approx(4 / 9, rel=1e-12)
    assert alice_leukemia / alice == pytest.approx(1 / 2, rel=1e-12)
    # Alan and diabetes: C(1,1) C(47,3) / C(48,4) = 1/12, then 1/12 / (1/3) = 1/4.
    alan_diabetes = math.comb(47, 3) / math.comb(48, 4)
    assert alan_diabetes / alan == pytest.approx(1 / 4, rel=1e-12)
    presence = release.presence()
    association = release.association()
    assert presence[0] == pytest.approx(alan, rel=1e-12)
    assert presence[1] == pytest.approx(alice, rel=1e-12)
    assert association[st_line(release, 1, "leukemia")] == pytest.approx(
        alice_leukemia / alice, rel=1e-12)
    assert association[st_line(release, 0, "diabetes")] == pytest.approx(
        alan_diabetes / alan, rel=1e-12)


def test_figure_2_count_estimates() -> None:
    """Example 6.1: Age>=50 AND Zipcode=23000 AND Disease=diabetes is 1*2/4*1/3 + 1*2/3*1/3 =
    7/18; Section 1: Disease=stroke AND Age>=45 is 3/4 (three of group 1's four ages)."""
    release = figure_2()
    example = release.count("Age>=50 AND Zipcode=23000 AND Disease='diabetes'")
    assert isinstance(example, Estimate)
    assert example.value == pytest.approx(7 / 18, rel=1e-12)
    assert example.stderr is None
    assert release.count("SELECT COUNT(*) FROM t WHERE Disease = 'stroke' AND Age >= 45"
                         ).value == pytest.approx(3 / 4, rel=1e-12)
    assert release.count("Age >= 0").value == pytest.approx(8, rel=1e-12)
    grouped = release.count("SELECT COUNT(*) FROM t GROUP BY Disease")
    assert isinstance(grouped, GroupedEstimate)
    assert grouped["leukemia"].value == pytest.approx(2, rel=1e-12)
    assert grouped["diabetes"].value == pytest.approx(2, rel=1e-12)


def test_figure_2_round_trip(tmp_path: Path) -> None:
    """The Figure 2 scheme saved and loaded keeps its measurements and estimates."""
    release = figure_2()
    loaded = ppdp.load_release(release.save(tmp_path / "figure2"))
    assert isinstance(loaded, AmbiguityRelease)
    np.testing.assert_allclose(loaded.presence(), release.presence(), rtol=1e-12)
    assert loaded.count("Age>=50 AND Zipcode=23000 AND Disease='diabetes'").value == \
        pytest.approx(7 / 18, rel=1e-12)


# -- Algorithm 2 on Figure 1 (a) ------------------------------------------------------------------


def check_release(release: AmbiguityRelease, table: Table, alpha: float, beta: float) -> None:
    """Definition 3.3 and Theorems 5.1, 5.2, 7.1, 7.2 on a published release."""
    assert release.n_rows == table.n_rows
    sizes = release.group_sizes()
    assert sizes.sum() == table.n_rows
    assert (sizes >= association_group_size(beta)).all()
    assert (release.presence() <= alpha + 1e-12).all()
    assert (release.association() <= beta + 1e-12).all()
    # Each sensitive value at most once per group: every frequency is 1.
    assert (release.st[2] == 1).all()
    assert sorted(Counter(release.st[1].tolist()).items()) == sorted(
        Counter(table.codes[release.sensitive].tolist()).items())
    for q in release.quasi_identifiers:
        groups, codes = release.auxiliary[q]
        keys = groups.astype(np.int64) * release.schema[q].size + codes
        assert len(np.unique(keys)) == len(keys)  # duplicate-free
        assert set(groups.tolist()) == set(range(release.n_groups))


def partitions_of_figure_1a(size: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every split of the 8 rows into two groups of ``size`` rows of distinct diseases."""
    result = []
    for first in itertools.combinations(range(8), size):
        second = tuple(r for r in range(8) if r not in first)
        if all(len({DISEASE[r] for r in g}) == len(g) for g in (first, second)):
            result.append((first, second))
    return result


def presence_of_rows(rows: tuple[int, ...]) -> float:
    distinct = [len({column[r] for r in rows}) for column in (AGE, GENDER, ZIPCODE)]
    return len(rows) / math.prod(distinct)


def test_figure_1a_bounds_by_enumeration() -> None:
    """Every split of Figure 1 (a) into two 4-diversity groups has presence between 1/8 and
    1/2 in each group (the thresholds the next tests rely on). Figure 2's split is not one of
    them: its group 2 holds leukemia twice."""
    splits = partitions_of_figure_1a(4)
    worst = max(max(presence_of_rows(g) for g in pair) for pair in splits)
    best = min(presence_of_rows(g) for pair in splits for g in pair)
    assert worst == pytest.approx(1 / 2)
    assert best == pytest.approx(1 / 8)
    assert ((0, 1, 2, 3), (4, 5, 6, 7)) not in splits
    # Ordered pairs: which diabetes row and which leukemia row go first, 4 others split 2 + 2.
    assert len(splits) == 2 * 2 * math.comb(4, 2)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_algorithm_2_on_figure_1a(seed: int) -> None:
    """With beta = 1/4 every group takes 4 distinct diseases; diabetes and leukemia occur
    twice in 8 rows, so Algorithm 2 makes exactly two groups of 4, and any such split has
    presence <= 1/2, so alpha = 1/2 always publishes (Theorems 7.1, 7.2)."""
    table = figure_1a()
    release = Ambiguity(alpha=0.5, beta=0.25).publish(table, random_state=seed)
    check_release(release, table, 0.5, 0.25)
    assert release.n_groups == 2
    np.testing.assert_array_equal(release.group_sizes(), [4, 4])
    np.testing.assert_allclose(release.association(), 0.25)
    assert release.parameters == {"alpha": 0.5, "beta": 0.25, "n_groups": 2}
    assert release.count("Age >= 0").value == pytest.approx(8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_algorithm_2_on_figure_1a_with_residue(seed: int) -> None:
    """beta = 1/3 (groups of >= 3 distinct diseases) and alpha = 1/2 on Figure 1 (a):
    any result meets both bounds, or the construction reports InfeasibleError."""
    table = figure_1a()
    try:
        release = Ambiguity(alpha=0.5, beta=1 / 3).publish(table, random_state=seed)
    except InfeasibleError as error:
        assert "fits no group" in str(error) or "reaches presence" in str(error)
    else:
        check_release(release, table, 0.5, 1 / 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_algorithm_2_on_figure_1a_alpha_below_every_split(seed: int) -> None:
    """alpha = 0.1 is below the presence 1/8 of every 4-row group of distinct diseases, so no
    group closes and Algorithm 2 cannot publish."""
    with pytest.raises(InfeasibleError, match=r"alpha=0\.1"):
        Ambiguity(alpha=0.1, beta=0.25).publish(figure_1a(), random_state=seed)


def test_figure_1a_too_frequent_value() -> None:
    """beta = 1/5 needs 5 distinct diseases per group, so at most 8 // 5 = 1 group, but
    diabetes occurs twice: infeasible, and the smallest feasible beta is 1/4 (8 // 2)."""
    with pytest.raises(InfeasibleError, match=r"smallest feasible beta is 1/4\b"):
        Ambiguity(alpha=1.0, beta=0.2).publish(figure_1a(), random_state=0)


SUGGESTED = re.compile(r"smallest feasible beta is 1/(\d+)")


@pytest.mark.parametrize("beta", [0.1, 0.15])
def test_figure_1a_suggested_beta_is_feasible(beta: float) -> None:
    """Figure 1 (a) has 6 distinct diseases but diabetes occurs twice in 8 rows, so the
    smallest feasible beta is 1/4, whichever rule the requested beta breaks first."""
    with pytest.raises(InfeasibleError) as caught:
        Ambiguity(alpha=1.0, beta=beta).publish(figure_1a(), random_state=0)
    match = SUGGESTED.search(str(caught.value))
    assert match is not None
    assert int(match.group(1)) == 4


# -- Algorithm 2 on random tables -------------------------------------------------------------


@st.composite
def random_tables(draw):
    # Half of the draws are roomy (several quasi-identifiers with larger domains, balanced
    # sensitive values), where Algorithm 2 usually succeeds; the others are arbitrary and
    # mostly exercise the InfeasibleError paths.
    roomy = draw(st.booleans())
    n_quasi = draw(st.integers(3, 4) if roomy else st.integers(1, 4))
    quasi_sizes = [draw(st.integers(4, 6) if roomy else st.integers(1, 6))
                   for _ in range(n_quasi)]
    sensitive_size = draw(st.integers(4, 8) if roomy else st.integers(2, 8))
    n_rows = draw(st.integers(20, 200) if roomy else st.integers(1, 200))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    quasi = [rng.integers(0, size, n_rows) for size in quasi_sizes]
    if roomy:
        sensitive = rng.permutation(np.arange(n_rows) % sensitive_size)
    else:
        skew = rng.dirichlet(np.full(sensitive_size, draw(st.sampled_from([0.3, 1.0, 10.0]))))
        sensitive = rng.choice(sensitive_size, size=n_rows, p=skew)
    alpha = draw(st.sampled_from([0.05, 0.1, 0.3, 0.5, 1.0]))
    beta = draw(st.sampled_from([1.0, 0.5, 1 / 3, 0.25, 0.2]))
    return quasi, quasi_sizes, sensitive, sensitive_size, alpha, beta, seed


def necessary_conditions_fail(sensitive: np.ndarray, beta: float) -> bool:
    size = association_group_size(beta)
    counts = np.bincount(sensitive)
    return np.count_nonzero(counts) < size or int(counts.max()) * size > len(sensitive)


def check_groups(groups: Any, quasi: list[np.ndarray], sensitive: np.ndarray, alpha: float,
                 beta: float) -> None:
    """Every row in exactly one group (ids 0..n_groups-1, all used), distinct sensitive values
    in a group, |G| >= ceil(1/beta) and |G| / prod_i m_i <= alpha."""
    size = association_group_size(beta)
    of_rows = groups.group_of_rows
    assert of_rows.shape == (len(sensitive),)
    assert set(of_rows.tolist()) == set(range(groups.n_groups))
    assert 0 <= groups.residue_rows <= len(sensitive)
    for g in range(groups.n_groups):
        rows = np.flatnonzero(of_rows == g)
        assert len(np.unique(sensitive[rows])) == len(rows)
        assert len(rows) >= size
        assert 1 / len(rows) <= beta + 1e-12
        distinct = [len(np.unique(q[rows])) for q in quasi]
        # A probability: capped at 1 (repeated tuples make some combination certain).
        assert min(1.0, len(rows) / math.prod(distinct)) <= alpha + 1e-12
        assert presence_probability(np.array([len(rows)]), np.array([distinct]))[0] == \
            pytest.approx(min(1.0, len(rows) / math.prod(distinct)))


@settings(max_examples=300, deadline=None)
@given(random_tables())
def test_groups_are_safe_or_infeasible(case) -> None:
    """Algorithm 2's output (Theorems 7.1-7.2): every row in exactly one group, each group of
    at least ceil(1/beta) rows with distinct sensitive values (so association 1/|G| <= beta
    and ceil(1/beta)-diversity) and presence |G| / prod_i m_i <= alpha; InfeasibleError when
    there are fewer than ceil(1/beta) distinct values or one value is in more than
    N / ceil(1/beta) rows."""
    quasi, quasi_sizes, sensitive, sensitive_size, alpha, beta, seed = case

    def run() -> Any:
        return ambiguity_groups(quasi, quasi_sizes, sensitive, sensitive_size, alpha=alpha,
                                beta=beta, rng=np.random.default_rng(seed))

    if necessary_conditions_fail(sensitive, beta):
        event("infeasible beta")
        with pytest.raises(InfeasibleError, match=r"feasible beta|no beta"):
            run()
        return
    try:
        groups = run()
    except InfeasibleError as error:
        event("infeasible alpha")
        assert f"alpha={alpha:g}" in str(error)
        return
    event("published")
    check_groups(groups, quasi, sensitive, alpha, beta)


@pytest.mark.parametrize(("seed", "alpha", "beta"), [(0, 0.3, 0.25), (1, 0.05, 0.25),
                                                     (2, 0.5, 1 / 3), (3, 0.1, 0.2),
                                                     (4, 1.0, 1.0)])
def test_groups_on_a_roomy_table_publish(seed: int, alpha: float, beta: float) -> None:
    """With 4 quasi-identifiers of 6 values, 8 balanced sensitive values and 200 rows the
    bounds are met (so the random-table test's success branch is not the only check)."""
    rng = np.random.default_rng(seed)
    quasi = [rng.integers(0, 6, 200) for _ in range(4)]
    sensitive = rng.permutation(np.repeat(np.arange(8), 25))
    groups = ambiguity_groups(quasi, [6] * 4, sensitive, 8, alpha=alpha, beta=beta,
                              rng=np.random.default_rng(seed))
    assert groups.n_groups >= 2
    check_groups(groups, quasi, sensitive, alpha, beta)


@pytest.mark.parametrize("seed", [0, 1])
def test_groups_grow_beyond_one_over_beta_to_reach_alpha(seed: int) -> None:
    """Six rows, distinct on both quasi-identifiers, diseases 0, 1, 2 twice: with beta = 1/2
    every pair has presence 2/4 > alpha = 0.4 and every triple of distinct diseases 3/9 <=
    0.4, so Algorithm 2 closes two groups of three (Lines 10-15) and must publish."""
    quasi = [np.arange(6), np.arange(6)]
    sensitive = np.array([0, 1, 2, 0, 1, 2])
    for pair in itertools.combinations(range(6), 2):
        assert 2 / math.prod(len({int(q[r]) for r in pair}) for q in quasi) > 0.4
    triples = [t for t in itertools.combinations(range(6), 3)
               if len({int(sensitive[r]) for r in t}) == 3]
    assert all(3 / math.prod(len({int(q[r]) for r in t}) for q in quasi) <= 0.4
               for t in triples)
    groups = ambiguity_groups(quasi, [6, 6], sensitive, 3, alpha=0.4, beta=0.5,
                              rng=np.random.default_rng(seed))
    assert groups.n_groups == 2
    check_groups(groups, quasi, sensitive, 0.4, 0.5)


@pytest.mark.parametrize("beta", [1.0, 0.5, 1 / 3, 0.3, 0.25, 0.2, 1 / 7, 0.1, 1 / 9, 0.01])
def test_association_group_size_is_ceil_of_one_over_beta(beta: float) -> None:
    """The smallest k with 1/k <= beta (despite 1/beta rounding up past an integer)."""
    k = association_group_size(beta)
    assert 1 / k <= beta
    assert k == 1 or 1 / (k - 1) > beta


def test_too_few_distinct_sensitive_values_is_infeasible() -> None:
    """3 distinct values cannot fill groups of ceil(1/0.25) = 4 distinct values."""
    sensitive = np.array([0, 1, 2] * 10)
    with pytest.raises(InfeasibleError, match=r"only 3 distinct"):
        ambiguity_groups([np.arange(30) % 5], [5], sensitive, 4, alpha=1.0, beta=0.25,
                         rng=np.random.default_rng(0))


def test_too_frequent_sensitive_value_is_infeasible() -> None:
    """A value in 10 of 18 rows: groups of >= 2 rows hold it once, so at most 9 groups."""
    sensitive = np.array([0] * 10 + [1, 2, 3, 4] * 2)
    with pytest.raises(InfeasibleError, match=r"occurs 10 times in 18 rows"):
        ambiguity_groups([np.arange(18) % 6], [6], sensitive, 5, alpha=1.0, beta=0.5,
                         rng=np.random.default_rng(0))


def test_a_stranded_top_value_row_is_repaired_for_every_seed() -> None:
    """Nine rows, three of each disease, beta = 1/3: the only safe partitions are three groups
    of one row of each disease, and Step 2 may close two groups whose complement exceeds
    alpha = 1/2 (Algorithm 2 then stops: before the repair seeds 9 and 10 failed). Trading
    rows of equal disease between groups, or trying fresh picks, finds a safe partition for
    every seed."""
    quasi = [np.array([1, 2, 1, 2, 1, 1, 0, 0, 1]), np.array([0, 1, 0, 1, 0, 2, 1, 3, 0]),
             np.array([2, 0, 2, 1, 0, 1, 2, 1, 2])]
    sensitive = np.array([1, 2, 1, 0, 2, 0, 1, 0, 2])
    for seed in range(12):
        groups = ambiguity_groups(quasi, [4, 5, 4], sensitive, 3, alpha=0.5, beta=1 / 3,
                                  rng=np.random.default_rng(seed))
        assert groups.n_groups == 3
        check_groups(groups, quasi, sensitive, 0.5, 1 / 3)


def test_alpha_infeasible_from_the_counts_for_every_seed() -> None:
    """Quasi-identifiers taking 2 and 3 values: a group of s rows has presence at least
    s / (min(s, 2) min(s, 3)), which is 1/2 at best (s = 3); with alpha = 0.4 no group
    qualifies, whatever the seed."""
    quasi = [np.arange(60) % 2, np.arange(60) % 3]
    sensitive = np.arange(60) % 6
    for seed in range(12):
        with pytest.raises(InfeasibleError, match=r"presence <= alpha=0\.4.*at least 0\.5; "
                                                  r"raise alpha to at least 0\.5"):
            ambiguity_groups(quasi, [2, 3], sensitive, 6, alpha=0.4, beta=1 / 3,
                             rng=np.random.default_rng(seed))


# -- Release level on real data -----------------------------------------------------------------

ADULT_ALPHA, ADULT_BETA = 0.1, 1 / 7


@pytest.fixture(scope="module")
def adult() -> Table:
    return ppdp.datasets.adult(sensitive="occupation")


@pytest.fixture(scope="module")
def adult_release(adult: Table) -> AmbiguityRelease:
    return Ambiguity(alpha=ADULT_ALPHA, beta=ADULT_BETA).publish(adult, random_state=11)


def test_adult_release_meets_alpha_and_beta(adult: Table, adult_release: AmbiguityRelease
                                            ) -> None:
    """On Adult (30,162 rows), alpha = 0.1 and beta = 1/7: every group's presence is at most
    alpha (Theorem 5.1) and every association at most beta (Theorem 5.2); ST frequencies are
    all 1 and add up to N; the auxiliary tables are duplicate-free."""
    release = adult_release
    assert adult.n_rows == 30162
    assert release.presence().max() <= ADULT_ALPHA
    assert release.association().max() <= ADULT_BETA
    assert int(release.st[2].sum()) == adult.n_rows
    check_release(release, adult, ADULT_ALPHA, ADULT_BETA)
    assert release.quasi_identifiers == tuple(n for n in adult.schema.names if n != "occupation")


def test_adult_counts_on_the_sensitive_column_are_exact(adult: Table,
                                                        adult_release: AmbiguityRelease) -> None:
    """Conditions on the sensitive column only (or none at all) are answered exactly: each
    quasi-identifier factor of a group sums to 1 and ST holds the true counts."""
    release = adult_release
    assert release.count("age >= 0").value == pytest.approx(adult.n_rows, rel=1e-12)
    assert release.count("SELECT COUNT(*) FROM t").value == pytest.approx(adult.n_rows,
                                                                             rel=1e-12)
    for text in ("occupation = 'Sales'", "occupation IN ('Sales', 'Tech-support')",
                 "occupation != 'Armed-Forces'"):
        assert release.count(text).value == pytest.approx(adult.count(text).value, rel=1e-12)
    estimated = release.count("SELECT occupation, COUNT(*) FROM t GROUP BY occupation")
    truth = adult.count("SELECT occupation, COUNT(*) FROM t GROUP BY occupation")
    assert isinstance(estimated, GroupedEstimate)
    assert isinstance(truth, GroupedEstimate)
    assert len(estimated) == len(truth) == 14
    for key, value in truth.groups:
        assert estimated[key].value == pytest.approx(value.value, rel=1e-12)


ADULT_QUERIES = [
    "age >= 40 AND sex = 'Female' AND occupation = 'Sales'",
    "race = 'White' OR occupation = 'Craft-repair'",
    "NOT (age BETWEEN 25 AND 35) AND workclass != 'Private'",
    "SELECT sex, COUNT(*) FROM t WHERE age < 30 GROUP BY sex",
    "SELECT race, occupation, COUNT(*) FROM t WHERE education = 'Bachelors' "
    "GROUP BY race, occupation",
]


def test_adult_round_trip_and_published_files(tmp_path: Path,
                                              adult_release: AmbiguityRelease) -> None:
    """Definition 3.3: the release is AT_1..AT_8 = (QI_i, GroupID) and ST = (GroupID, S,
    Frequency) and nothing row-level; loading it back gives identical estimates."""
    release = adult_release
    target = release.save(tmp_path / "adult")
    names = {p.name for p in target.iterdir()}
    assert names == {f"at_{i}.parquet" for i in range(1, 9)} | {"st.parquet", "release.json"}
    metadata = json.loads((target / "release.json").read_text())
    assert metadata["mechanism"] == "ambiguity"
    assert metadata["parameters"] == {"alpha": ADULT_ALPHA, "beta": ADULT_BETA,
                                      "n_groups": release.n_groups}
    for index, q in enumerate(release.quasi_identifiers, start=1):
        table = pq.read_table(target / f"at_{index}.parquet")
        assert table.column_names == [q, "GroupID"]
        assert table.num_rows <= release.n_groups * release.schema[q].size
        assert table.num_rows < release.n_rows
        pairs = list(zip(table.column(q).to_pylist(), table.column("GroupID").to_pylist(),
                         strict=True))
        assert len(set(pairs)) == len(pairs)
    st_table = pq.read_table(target / "st.parquet")
    assert st_table.column_names == ["GroupID", "occupation", "Frequency"]
    loaded = ppdp.load_release(target)
    assert isinstance(loaded, AmbiguityRelease)
    np.testing.assert_array_equal(loaded.presence(), release.presence())
    np.testing.assert_array_equal(loaded.association(), release.association())
    for text in ADULT_QUERIES:
        before, after = release.count(text), loaded.count(text)
        if isinstance(before, GroupedEstimate):
            assert isinstance(after, GroupedEstimate)
            assert after.groups == before.groups
        else:
            assert after == before


def test_adult_group_ids_depend_on_the_seed(adult: Table,
                                            adult_release: AmbiguityRelease) -> None:
    """Two publications with different seeds give different groups (ids are random too), and
    the same seed gives the same release."""
    again = Ambiguity(alpha=ADULT_ALPHA, beta=ADULT_BETA).publish(adult, random_state=11)
    other = Ambiguity(alpha=ADULT_ALPHA, beta=ADULT_BETA).publish(adult, random_state=12)
    for q in adult_release.quasi_identifiers:
        np.testing.assert_array_equal(again.auxiliary[q][0], adult_release.auxiliary[q][0])
        np.testing.assert_array_equal(again.auxiliary[q][1], adult_release.auxiliary[q][1])
    pairs = {(int(g), int(v)) for g, v in zip(*adult_release.st[:2], strict=True)}
    other_pairs = {(int(g), int(v)) for g, v in zip(*other.st[:2], strict=True)}
    assert pairs != other_pairs
    check_release(other, adult, ADULT_ALPHA, ADULT_BETA)


@pytest.fixture(scope="module")
def adult_education() -> Table:
    return ppdp.datasets.adult(sensitive="education")


def test_adult_education_at_the_edge_publishes_for_every_seed(adult_education: Table) -> None:
    """Adult with sensitive education: HS-grad is in 9,840 of 30,162 rows, so every group of
    beta = 1/2 holds it and the groups that grow past 2 rows to reach alpha = 0.06 use up the
    rows it needs as partners. Algorithm 2 then leaves HS-grad rows that fit no group; before
    the repair that happened for 7 of seeds 0-11 (published: 0, 1, 3, 4, 7, 9). Now every seed
    publishes, meeting both bounds."""
    for seed in range(12):
        release = Ambiguity(alpha=0.06, beta=0.5).publish(adult_education, random_state=seed)
        check_release(release, adult_education, 0.06, 0.5)
        assert release.n_groups >= 9840


def test_adult_education_alpha_infeasible_from_the_counts_for_every_seed() -> None:
    """With quasi-identifiers sex (2 values), race (5) and workclass (7), a group of 3 rows
    has presence at least 3/(2*3*3) = 1/6 > alpha = 0.15, so groups need 4 rows; HS-grad's
    9,840 rows need 9,840 groups, 39,360 rows > 30,162: infeasible for every seed, with
    advice in the right direction (a larger alpha allows smaller groups)."""
    table = ppdp.datasets.adult(sensitive="education",
                                quasi_identifiers=["sex", "race", "workclass"])
    for seed in range(12):
        with pytest.raises(InfeasibleError) as caught:
            Ambiguity(alpha=0.15, beta=1 / 3).publish(table, random_state=seed)
        message = str(caught.value)
        assert "alpha=0.15 is infeasible" in message
        assert "needs at least 4 rows" in message
        assert "raise alpha (allows smaller groups)" in message


def test_residue_advice_names_the_right_direction_for_beta() -> None:
    """Association is c/|G| <= beta, so a larger beta allows smaller groups (and more of
    them). Adult with sensitive marital-status (Married-civ-spouse in 46.6 % of the rows) at
    alpha = 0.05, beta = 1/2 leaves married rows that no group can take: the advice says to
    raise beta because it allows smaller groups, never that beta means larger groups."""
    table = ppdp.datasets.adult(sensitive="marital-status")
    with pytest.raises(InfeasibleError) as caught:
        Ambiguity(alpha=0.05, beta=0.5).publish(table, random_state=0)
    message = str(caught.value)
    assert "'Married-civ-spouse' fits no group" in message
    assert "raise beta (allows smaller groups" in message
    assert "larger groups" not in message
    assert "raise alpha" in message


def test_fars_beta_too_small_is_infeasible(fars: Table) -> None:
    """FARS iinjury takes 8 values, one of them in 43,185 of 100,937 rows: beta = 0.1 is
    infeasible (and so is 1/8, by the frequency rule: at most 100,937 // 43,185 = 2 groups
    per... value, i.e. beta >= 1/2)."""
    with pytest.raises(InfeasibleError):
        Ambiguity(alpha=0.5, beta=0.1).publish(fars, random_state=0)
    with pytest.raises(InfeasibleError, match=r"smallest feasible beta is 1/2\b"):
        Ambiguity(alpha=0.5, beta=1 / 8).publish(fars, random_state=0)


def test_fars_infeasible_message_names_the_smallest_feasible_beta(fars: Table) -> None:
    """The InfeasibleError for beta = 0.1 on FARS names 1/2 as the smallest feasible beta."""
    with pytest.raises(InfeasibleError) as caught:
        Ambiguity(alpha=0.5, beta=0.1).publish(fars, random_state=0)
    match = SUGGESTED.search(str(caught.value))
    assert match is not None
    assert int(match.group(1)) == 2


def test_fars_publishes_with_beta_one_half(fars: Table) -> None:
    """FARS with alpha = beta = 1/2 publishes, meeting both bounds."""
    release = Ambiguity(alpha=0.5, beta=0.5).publish(fars, random_state=3)
    check_release(release, fars, 0.5, 0.5)
    assert release.presence().max() <= 0.5
    assert release.association().max() <= 0.5
    assert release.count("iinjury = 1").value == pytest.approx(
        fars.count("iinjury = 1").value, rel=1e-12)


# -- the estimator against a brute force -------------------------------------------------------

SMALL_DOMAINS = {"a": list(range(6)), "b": list(range(5)), "c": list(range(4))}
SMALL_SENSITIVE = ["s0", "s1", "s2", "s3", "s4", "s5"]


def small_release(seed: int) -> tuple[Table, AmbiguityRelease]:
    rng = np.random.default_rng(seed)
    n_rows = 120
    data = {name: rng.choice(domain, n_rows).tolist() for name, domain in SMALL_DOMAINS.items()}
    data["s"] = [SMALL_SENSITIVE[i] for i in np.repeat(np.arange(6), 20)[rng.permutation(120)]]
    table = table_from_arrow(pa.table(data), roles={"s": Role.SENSITIVE},
                             domains={**SMALL_DOMAINS, "s": SMALL_SENSITIVE})
    return table, Ambiguity(alpha=0.5, beta=0.25).publish(table, random_state=seed)


def published(release: AmbiguityRelease) -> tuple[dict[str, dict[int, list[Any]]],
                                                  dict[int, dict[Any, int]]]:
    """AT_i as {group: [values]} and ST as {group: {value: frequency}}, decoded."""
    auxiliary: dict[str, dict[int, list[Any]]] = {}
    for q in release.quasi_identifiers:
        groups, codes = release.auxiliary[q]
        domain = release.schema[q].domain
        per_group: dict[int, list[Any]] = defaultdict(list)
        for g, c in zip(groups.tolist(), codes.tolist(), strict=True):
            per_group[g].append(domain[c])
        auxiliary[q] = per_group
    st_table: dict[int, dict[Any, int]] = defaultdict(dict)
    domain = release.schema[release.sensitive].domain
    for g, v, c in zip(*(a.tolist() for a in release.st), strict=True):
        st_table[g][domain[v]] = c
    return auxiliary, st_table


def paper_estimate(release: AmbiguityRelease, conditions: dict[str, Callable[[Any], bool]]
                   ) -> float:
    """Section 6: sum over groups j of c_j(C_S) * prod_i l_ij / m_ij."""
    auxiliary, st_table = published(release)
    total = 0.0
    for j in range(release.n_groups):
        sensitive = conditions.get(release.sensitive, lambda _: True)
        c = sum(f for v, f in st_table[j].items() if sensitive(v))
        for q in release.quasi_identifiers:
            values = auxiliary[q][j]
            condition = conditions.get(q, lambda _: True)
            c *= sum(1 for v in values if condition(v)) / len(values)
        total += c
    return total


def joined_estimate(release: AmbiguityRelease, condition: Callable[[dict[str, Any]], bool],
                    group_by: tuple[str, ...] = ()) -> dict[tuple[Any, ...], float]:
    """The lossy join of the ATs and ST of each group (Section 5.2): every combination of one
    value per AT and one ST line, weighted frequency / prod_i m_ij; summed where the
    condition holds, per GROUP BY key."""
    auxiliary, st_table = published(release)
    result: dict[tuple[Any, ...], float] = defaultdict(float)
    for j in range(release.n_groups):
        lists = [auxiliary[q][j] for q in release.quasi_identifiers]
        scale = 1.0 / math.prod(len(values) for values in lists)
        for combination in itertools.product(*lists):
            row = dict(zip(release.quasi_identifiers, combination, strict=True))
            for value, frequency in st_table[j].items():
                row[release.sensitive] = value
                if condition(row):
                    result[tuple(row[c] for c in group_by)] += frequency * scale
    return result


def random_box(rng: np.random.Generator) -> tuple[str, dict[str, Callable[[Any], bool]]]:
    """A conjunction of a range or IN list on 1-3 quasi-identifiers, and maybe a condition on
    the sensitive column; as SQL and as Python predicates per column."""
    parts, conditions = [], {}
    columns = rng.permutation(list(SMALL_DOMAINS))[:rng.integers(1, 4)]
    for name in columns:
        domain = SMALL_DOMAINS[name]
        if rng.random() < 0.5:
            low, high = sorted(int(v) for v in rng.choice(domain, 2))
            parts.append(f"{name} BETWEEN {low} AND {high}")
            conditions[name] = lambda v, lo=low, hi=high: lo <= v <= hi
        else:
            chosen = sorted({int(v) for v in rng.choice(domain, int(rng.integers(1, 4)))})
            parts.append(f"{name} IN ({', '.join(map(str, chosen))})")
            conditions[name] = lambda v, values=tuple(chosen): v in values
    if rng.random() < 0.6:
        chosen = sorted({str(v) for v in rng.choice(SMALL_SENSITIVE, int(rng.integers(1, 3)))})
        parts.append("s IN (" + ", ".join(f"'{v}'" for v in chosen) + ")")
        conditions["s"] = lambda v, values=tuple(chosen): v in values
    return " AND ".join(parts), conditions


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_estimator_matches_the_paper_formula(seed: int) -> None:
    """Section 6 / Example 6.1: for conjunctions, count = sum_j c_j * prod_i l_ij / m_ij,
    computed here from the published AT_i and ST by plain loops."""
    table, release = small_release(seed)
    check_release(release, table, 0.5, 0.25)
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        text, conditions = random_box(rng)
        expected = paper_estimate(release, conditions)
        assert release.count(text).value == pytest.approx(expected, rel=1e-9, abs=1e-9), text
        joined = joined_estimate(
            release, lambda row, cs=conditions: all(f(row[c]) for c, f in cs.items()))
        assert expected == pytest.approx(sum(joined.values()), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_estimates_match_the_join_and_sum_to_the_total(seed: int) -> None:
    """GROUP BY one or two columns (quasi-identifier or sensitive) splits the ungrouped
    estimate, each cell equal to the lossy-join weight of its key."""
    _, release = small_release(seed)
    rng = np.random.default_rng(200 + seed)
    for group_by in (("a",), ("s",), ("b", "c"), ("c", "s")):
        text, conditions = random_box(rng)
        total = release.count(text).value
        grouped = release.count(f"SELECT COUNT(*) FROM t WHERE {text} "
                                f"GROUP BY {', '.join(group_by)}")
        assert isinstance(grouped, GroupedEstimate)
        assert sum(e.value for _, e in grouped.groups) == pytest.approx(total, rel=1e-9,
                                                                        abs=1e-9)
        joined = joined_estimate(
            release, lambda row, cs=conditions: all(f(row[c]) for c, f in cs.items()), group_by)
        for key, value in joined.items():
            assert grouped[key].value == pytest.approx(value, rel=1e-9, abs=1e-9)
        for key, estimate in grouped.groups:
            assert joined[tuple(key[c] for c in group_by)] == pytest.approx(
                estimate.value, rel=1e-9, abs=1e-9)


def holds(row: dict[str, Any], conditions: dict[str, Callable[[Any], bool]]) -> bool:
    return all(f(row[c]) for c, f in conditions.items())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_or_and_not_follow_inclusion_exclusion(seed: int) -> None:
    """NOT A = all - A and A OR B = A + B - (A AND B) under the product model, and both equal
    the lossy-join weight of the rows meeting the condition."""
    table, release = small_release(seed)
    rng = np.random.default_rng(300 + seed)
    total = release.count("a >= 0").value
    assert total == pytest.approx(table.n_rows)
    for _ in range(10):
        first, first_conditions = random_box(rng)
        second, second_conditions = random_box(rng)
        a = release.count(first).value
        b = release.count(second).value
        both = release.count(f"({first}) AND ({second})").value
        either = release.count(f"({first}) OR ({second})").value
        negated = release.count(f"NOT ({first})").value
        assert either == pytest.approx(a + b - both, rel=1e-9, abs=1e-9)
        assert negated == pytest.approx(total - a, rel=1e-9, abs=1e-9)

        joined = joined_estimate(
            release, lambda row, one=first_conditions, two=second_conditions:
            holds(row, one) or holds(row, two))
        assert either == pytest.approx(sum(joined.values()), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_scheme_tables_are_the_same_when_pairs_are_sorted(seed: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The (group, value) pairs of AT_i and ST and the frequencies, found by marking a table
    of the cells, are those found by sorting (the way for large domains): same values, same
    order, same types."""
    table, release = small_release(seed)
    monkeypatch.setattr(ambiguity_module, "_DENSE_BYTES", 0)
    sorted_release = Ambiguity(alpha=0.5, beta=0.25).publish(table, random_state=seed)
    for q in release.quasi_identifiers:
        for dense, by_sorting in zip(release.auxiliary[q], sorted_release.auxiliary[q],
                                     strict=True):
            np.testing.assert_array_equal(dense, by_sorting, strict=True)
    for dense, by_sorting in zip(release.st, sorted_release.st, strict=True):
        np.testing.assert_array_equal(dense, by_sorting, strict=True)


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 1.5, -0.1, float("nan"), True, "0.5", None])
@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_parameters_outside_the_unit_interval_are_refused(name: str, bad: Any) -> None:
    """alpha and beta are probabilities in (0, 1] (Definitions 4.1, 4.2)."""
    arguments = {"alpha": 0.5, "beta": 0.5, name: bad}
    with pytest.raises(ValueError, match=rf"{name} must be in the interval \(0, 1\]"):
        Ambiguity(**arguments)


def test_parameters_at_one_are_accepted() -> None:
    """alpha = beta = 1 (no constraint) is allowed; integers are taken as floats."""
    mechanism = Ambiguity(alpha=1, beta=1)
    assert (mechanism.alpha, mechanism.beta) == (1.0, 1.0)
    release = mechanism.publish(figure_1a(), random_state=0)
    check_release(release, figure_1a(), 1.0, 1.0)


def test_table_without_quasi_identifier_is_refused() -> None:
    """Ambiguity publishes one AT per quasi-identifier; a table with none is a SchemaError."""
    table = table_from_arrow(pa.table({"note": ["x", "y", "z"], "s": ["a", "b", "c"]}),
                             roles={"note": Role.IGNORED, "s": Role.SENSITIVE},
                             domains={"s": ["a", "b", "c"]})
    with pytest.raises(SchemaError, match="quasi-identifier"):
        Ambiguity(alpha=1.0, beta=0.5).publish(table)


def test_two_sensitive_columns_are_refused() -> None:
    """The scheme protects one sensitive attribute (Section 3)."""
    table = figure_1a().with_roles(sensitive=["Disease", "Zipcode"])
    with pytest.raises(SchemaError, match="one sensitive column"):
        Ambiguity(alpha=1.0, beta=0.5).publish(table)


def test_no_sensitive_column_is_refused() -> None:
    """Without a sensitive column there is no ST to publish."""
    table = table_from_arrow(pa.table({"a": [1, 2, 3]}))
    with pytest.raises(SchemaError, match="sensitive"):
        Ambiguity(alpha=1.0, beta=0.5).publish(table)


def test_condition_comparing_two_columns_is_refused() -> None:
    """Within a group each quasi-identifier is published alone, so Age < Zipcode (a relation
    between columns) has no estimate: QueryError."""
    release = figure_2()
    with pytest.raises(QueryError, match="relates columns"):
        release.count("Age < Zipcode")
    with pytest.raises(QueryError, match="relates columns"):
        release.count("Disease = 'flu' AND Age * 1000 > Zipcode")
    with pytest.raises(QueryError):
        release.count("nosuch = 1")
