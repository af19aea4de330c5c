"""Tests of Ambiguity (alpha-presence, beta-association): the Figure 2 scheme of the ambiguity
paper, Algorithm 2 on Figure 1 (a), and bad input.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ppdp
from ppdp import Estimate, GroupedEstimate, InfeasibleError, QueryError, SchemaError
from ppdp.data.schema import Column, Role, Schema
from ppdp.mechanisms import Ambiguity, AmbiguityRelease
from ppdp.mechanisms.presence import association_group_size, presence_probability
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


def test_section_7_presence_example_is_two_quarters_not_one_quarter() -> None:
    """Erratum, Section 7 after Figure 4: the group of tuples 1 and 2 covers 2 Age buckets, 1
    Gender, 2 Zipcode and 2 Disease buckets (diabetes and flu), so its presence n / prod m_i is
    2/(2*1*2) = 1/2 (Theorem 5.1: |G| / prod |G_ATi| = 2/4), not the printed 1/(2*1*2) = 1/4,
    which counts 1 Disease bucket. The paper's counting argument agrees: of the C(4, 2) ways to
    pick the group's 2 rows from its 4 joined tuples, C(3, 1) hold Alan's."""
    group = [0, 1]
    rows = {"Age": AGE, "Gender": GENDER, "Zipcode": ZIPCODE, "Disease": DISEASE}
    buckets = {name: len({values[i] for i in group}) for name, values in rows.items()}
    assert buckets == {"Age": 2, "Gender": 1, "Zipcode": 2, "Disease": 2}
    quasi = [buckets[name] for name in QUASI]
    presence = float(presence_probability(np.array(len(group)), np.array(quasi)))
    assert presence == buckets["Disease"] / math.prod(quasi) == 2 / 4
    assert presence == math.comb(3, 1) / math.comb(4, 2)
    assert presence != 1 / (2 * 1 * 2)


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
