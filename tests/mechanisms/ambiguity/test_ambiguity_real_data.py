"""Ambiguity releases of real data (Adult, FARS): alpha and beta met, exact counts on the
sensitive column, the published files, and the advice when a table is infeasible.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import ppdp
from ppdp import GroupedEstimate, InfeasibleError
from ppdp.mechanisms import Ambiguity, AmbiguityRelease
from ppdp.table.table import Table
from tests.mechanisms.ambiguity.test_ambiguity import SUGGESTED, check_release

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
