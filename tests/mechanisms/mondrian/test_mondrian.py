"""Tests of Mondrian (LeFevre et al. 2006, strict median partitioning, optional distinct or
frequency l-diversity): invariants of the partition and of the published generalization on
random tables, an independent k-anonymity / l-diversity / (alpha, k)-anonymity check with
pycanon on Adult, the ambiguity paper's presence and association measured on the published rows,
and the estimator (values uniform over each generalized value) against numbers worked out by
hand.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

import ppdp
from ppdp.data.hierarchy import Hierarchy, read_hierarchies
from ppdp.data.schema import Role
from ppdp.errors import InfeasibleError, ReleaseError, SchemaError
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.mechanisms.mondrian import covers, partition
from ppdp.mechanisms.mondrian.guarantee import mondrian_guarantee
from ppdp.mechanisms.mondrian.mechanism import STREAM, Mondrian
from ppdp.mechanisms.mondrian.partition import mondrian_partition
from ppdp.mechanisms.mondrian.release import MondrianRelease
from ppdp.plan.keyed import KeyedStream, make_key
from ppdp.release.load import load_release
from ppdp.table.table import Table, table_from_arrow
from tests.release.test_release import edit_metadata, rewrite_file

# -- a table small enough to follow by hand -------------------------------------------------
#
# age domain {20, 45, 50, 60, 70, 75, 80, 90} (50 does not occur), zip domain {130, 140, 150}.
# With k = 4, the age span (7/7) beats the zip span (1/2); the median rank of the 8 ages is 70:
# cut A (<= 70 | > 70) leaves 3 rows on the right, cut B (< 70 | >= 70) gives 4 | 4. Neither
# half can be cut again, so the classes are rows 0-3 and rows 4-7.
AGE = [20, 20, 45, 60, 70, 75, 80, 90]
ZIP = ["130", "140", "130", "140", "130", "130", "130", "130"]
DISEASE = ["flu", "flu", "cold", "hiv", "flu", "cold", "cold", "cold"]
AGE_DOMAIN = [20, 45, 50, 60, 70, 75, 80, 90]
ZIP_DOMAIN = ["130", "140", "150"]


def hand_table() -> Table:
    # The diseases present are the example's intended (public) sensitive domain.
    table = table_from_arrow(pa.table({"age": AGE, "zip": ZIP, "disease": DISEASE}),
                             roles={"disease": Role.SENSITIVE},
                             domains={"age": AGE_DOMAIN, "zip": ZIP_DOMAIN})
    return table.declare_observed_domains(["disease"], warn=False)


def zip_hierarchy() -> Hierarchy:
    return Hierarchy(("130", "140", "150"), (("north", "south", "south"), ("*", "*", "*")))


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


def test_hand_table_classes_labels_and_covers() -> None:
    mechanism = Mondrian(k=4)
    table = hand_table()
    assert mechanism.partition(table).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    release = mechanism.publish(table, random_state=0)
    assert Counter(rows_of(release.generalized_rows())) == Counter(
        [("[20, 60]", "{130, 140}", d) for d in DISEASE[:4]]
        + [("[70, 90]", "130", d) for d in DISEASE[4:]])
    assert release.covers("age") == {"[20, 60]": (20, 45, 50, 60), "[70, 90]": (70, 75, 80, 90)}
    assert release.covers("zip") == {"{130, 140}": ("130", "140"), "130": ("130",)}
    assert release.k_anonymity() == 4
    assert release.l_diversity() == 2
    # NCP: age (40/70 and 20/70 over the 70-year domain), zip (2 of 3 values, then one value).
    assert release.ncp() == pytest.approx(((40 / 70 + 20 / 70) / 2 + (2 / 3 + 0) / 2) / 2)
    # Presence |G| / prod |cover|: 4 / (4 ages * 2 zips), then 4 / (4 * 1). Association: flu
    # in 2 of 4 rows, then cold in 3 of 4.
    np.testing.assert_allclose(release.presence(), [0.5, 1.0])
    np.testing.assert_allclose(release.association(), [0.5, 0.75])
    assert release.risk() == {"k": 4, "l": 2, "ncp": pytest.approx(8 / 21), "classes": 2,
                              "presence_max": 1.0, "presence_certain_share": 0.5,
                              "association_max": 0.75}
    # A class exactly at a bound is within it.
    bounded = release.risk(alpha=0.5, beta=0.5)
    assert bounded["presence_over_alpha_share"] == 0.5
    assert bounded["association_over_beta_share"] == 0.5
    assert release.risk(beta=0.75)["association_over_beta_share"] == 0.0
    assert release.parameters == {"k": 4, "l": 1, "diversity": "distinct", "hierarchies": []}


@pytest.mark.parametrize(("query", "expected"), [
    # Class [20, 60] covers 4 ages, 3 of them >= 45: each of its 4 rows counts 3/4.
    ("age >= 45", 4 * 3 / 4 + 4),
    ("age >= 45 AND disease = 'flu'", 2 * 3 / 4 + 1),
    # 50 and 60 of the first class's 4 ages, 70 of the second's.
    ("age BETWEEN 46 AND 72", 4 * 2 / 4 + 4 * 1 / 4),
    ("zip = '140'", 4 * 1 / 2),
    ("zip = '140' AND age >= 45", 4 * 1 / 2 * 3 / 4),
    ("zip = '150'", 0.0),
    ("disease = 'cold'", 4.0),
    ("age < 45 OR disease = 'hiv'", (4 * 1 / 4) + 1 - (1 * 1 / 4)),
])
def test_hand_estimates(query: str, expected: float) -> None:
    release = Mondrian(k=4).publish(hand_table(), random_state=1)
    estimate = release.count(query)
    assert isinstance(estimate, Estimate)
    assert estimate.value == pytest.approx(expected)
    assert estimate.stderr is None


def test_hand_estimates_with_a_hierarchy() -> None:
    release = Mondrian(k=4, hierarchies={"zip": zip_hierarchy()}).publish(hand_table(),
                                                                          random_state=2)
    # {130, 140} generalizes to the root, which covers all three zips; 130 stays itself.
    assert release.covers("zip") == {"*": ("130", "140", "150"), "130": ("130",)}
    assert release.parameters["hierarchies"] == ["zip"]
    assert release.count("zip = '140'").value == pytest.approx(4 / 3)
    assert release.count("zip IN ('140', '150')").value == pytest.approx(8 / 3)
    assert release.count("zip = '130'").value == pytest.approx(4 / 3 + 4)
    grouped = release.count("SELECT zip, COUNT(*) FROM t GROUP BY zip")
    assert isinstance(grouped, GroupedEstimate)
    assert grouped["150"].value == pytest.approx(4 / 3)
    # The hierarchy's NCP is |cover| / |domain|.
    assert release.ncp() == pytest.approx(((40 / 70 + 20 / 70) / 2 + (1 + 0) / 2) / 2)


def test_a_label_that_would_mean_two_covers_is_renamed() -> None:
    # Level-1 node "a" covers {a, b}; the leaf a alone is also labelled "a".
    hierarchy = Hierarchy(("a", "b", "c"), (("a", "a", "c"), ("*", "*", "*")))
    table = table_from_arrow(pa.table({"x": ["a", "a", "a", "b"], "y": [1, 1, 2, 2],
                                       "s": ["p", "q", "p", "q"]}),
                             roles={"s": Role.SENSITIVE},
                             domains={"x": ["a", "b", "c"], "y": [1, 2], "s": ["p", "q"]})
    release = Mondrian(k=2, hierarchies={"x": hierarchy}).publish(table, random_state=0)
    assert release.covers("x") == {"a": ("a",), "a (level 1)": ("a", "b")}
    assert release.count("x = 'b'").value == pytest.approx(1.0)


@pytest.mark.parametrize(("name", "hierarchy"), [("age", None), ("zip", None),
                                                ("zip", zip_hierarchy())])
def test_generalized_values_do_not_depend_on_the_order_of_classes(
        name: str, hierarchy: Hierarchy | None) -> None:
    # A source larger than memory finds its classes partition by partition: the labels, their
    # numbering and each class's label must come out as when all classes are found at once.
    column = hand_table().schema[name]
    bound = hierarchy.bind(column) if hierarchy is not None else None
    rng = np.random.default_rng(len(name))
    n_classes = 12
    low = rng.integers(0, column.size, n_classes)
    high = np.maximum(low, rng.integers(0, column.size, n_classes))
    values = [np.unique(rng.integers(0, column.size, 2)) for _ in range(n_classes)]

    def add(covers: covers.Covers, classes: list[int]) -> np.ndarray:
        pairs = np.concatenate([j * column.size + values[c] for j, c in enumerate(classes)])
        return covers.add(low[classes], high[classes], pairs)

    at_once = covers.Covers(column, bound)
    keys = add(at_once, list(range(n_classes)))
    by_parts = covers.Covers(column, bound)
    late, early = list(range(7, n_classes)), list(range(7))
    parts_keys = np.concatenate([add(by_parts, late), add(by_parts, early)])
    first, second = at_once.finish(), by_parts.finish()
    assert first.labels == second.labels
    np.testing.assert_array_equal(first.indptr, second.indptr)
    np.testing.assert_array_equal(first.codes, second.codes)
    np.testing.assert_array_equal(at_once.nodes(keys)[late + early], by_parts.nodes(parts_keys))


def test_the_release_order_is_keyed_by_row() -> None:
    table = hand_table()
    release = Mondrian(k=2).publish(table, random_state=3)
    draws = KeyedStream(make_key(3), STREAM).raw(0, table.n_rows)
    order = np.argsort(draws, kind="stable")
    assert release.sensitive_codes.tolist() == table.codes["disease"][order].tolist()
    assert release.part_rows == (table.n_rows,)


# -- invariants on random tables ------------------------------------------------------------


@st.composite
def random_tables(draw: st.DrawFn) -> tuple[Table, dict[str, Hierarchy]]:
    """2-4 quasi-identifiers (ints, floats, strings, strings with a hierarchy) over small
    domains, some domain values unused, 1-300 rows, a sensitive column of 1-5 values, evenly
    spread or skewed."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_rows = draw(st.integers(1, 300))
    data: dict[str, Any] = {}
    domains: dict[str, list[Any]] = {}
    hierarchies: dict[str, Hierarchy] = {}
    for i in range(draw(st.integers(2, 4))):
        kind = draw(st.sampled_from(["int", "float", "string", "hierarchy"]))
        size = draw(st.integers(1, 8))
        name = f"q{i}"
        if kind == "int":
            domain: list[Any] = sorted(rng.choice(100, size=size, replace=False).tolist())
        elif kind == "float":
            domain = [0.5 * v for v in sorted(rng.choice(40, size=size, replace=False).tolist())]
        else:
            domain = [f"v{j}" for j in range(size)]
        if kind == "hierarchy":
            group = rng.integers(0, 3, size=size)
            hierarchies[name] = Hierarchy(
                tuple(domain), (tuple(f"g{g}" for g in group),
                                tuple(f"h{g % 2}" for g in group), tuple("*" for _ in group)))
        used = rng.integers(0, size, size=n_rows)
        data[name] = [domain[j] for j in used]
        domains[name] = domain
    n_values = draw(st.integers(1, 5))
    # Even or skewed sensitive values (a skew makes the frequency bound refuse cuts).
    shares = rng.dirichlet(np.full(n_values, draw(st.sampled_from([0.5, 2.0, 1000.0]))))
    data["s"] = [f"s{j}" for j in rng.choice(n_values, size=n_rows, p=shares)]
    domains["s"] = [f"s{j}" for j in range(n_values)]
    table = table_from_arrow(pa.table(data), roles={"s": Role.SENSITIVE}, domains=domains)
    return table, hierarchies


def feasible(sensitive: np.ndarray, k: int, l: int, diversity: str) -> bool:  # noqa: E741
    """Whether the whole table is one k-anonymous, l-diverse class."""
    counts = np.bincount(sensitive)
    if diversity == "frequency":
        return k <= len(sensitive) and counts.max() * l <= len(sensitive)
    return k <= len(sensitive) and l <= np.count_nonzero(counts)


def assert_diverse(classes: np.ndarray, sensitive: np.ndarray, l: int,  # noqa: E741
                   diversity: str) -> None:
    """Every class holds l distinct sensitive values, or none in more than 1/l of its rows."""
    n_values = int(sensitive.max()) + 1
    counts = np.bincount(classes.astype(np.int64) * n_values + sensitive,
                         minlength=(int(classes.max()) + 1) * n_values).reshape(-1, n_values)
    if diversity == "frequency":
        assert np.all(counts.max(axis=1) * l <= counts.sum(axis=1))
    else:
        assert np.count_nonzero(counts, axis=1).min() >= l


@settings(max_examples=150, deadline=None)
@given(case=random_tables(), k=st.integers(1, 5), l=st.integers(1, 3),
       diversity=st.sampled_from(partition.DIVERSITIES))
def test_partition_and_release_invariants(case: tuple[Table, dict[str, Hierarchy]], k: int,
                                          l: int, diversity: str) -> None:  # noqa: E741
    table, hierarchies = case
    mechanism = Mondrian(k=k, l=l, diversity=diversity, hierarchies=hierarchies)
    n_rows = table.n_rows
    sensitive = table.codes["s"]
    if not feasible(sensitive, k, l, diversity):
        event("infeasible")
        with pytest.raises(InfeasibleError):
            mechanism.publish(table, random_state=0)
        return
    quasi = table.schema.quasi_identifiers
    classes = mechanism.partition(table)
    n_classes = int(classes.max()) + 1
    # Every row in exactly one class, every class non-empty, sizes add up to N.
    assert classes.shape == (n_rows,)
    sizes = np.bincount(classes, minlength=n_classes)
    assert sizes.min() >= k and sizes.sum() == n_rows
    assert_diverse(classes, sensitive, l, diversity)
    # The pure function gives the same classes.
    ranks = mechanism.ranks(table)
    np.testing.assert_array_equal(
        mondrian_partition(ranks, sensitive, k=k, l=l, diversity=diversity,
                           n_ranks=[table.schema[q].size for q in quasi]), classes)
    # Strict partitioning: the classes' boxes in rank space are pairwise disjoint.
    low = np.stack([np.full(n_classes, 10**6) for _ in ranks])
    high = np.stack([np.full(n_classes, -1) for _ in ranks])
    for d, rank in enumerate(ranks):
        np.minimum.at(low[d], classes, rank)
        np.maximum.at(high[d], classes, rank)
    apart = (high[:, :, None] < low[:, None, :]) | (high[:, None, :] < low[:, :, None])
    overlap = ~apart.any(axis=0)
    assert np.array_equal(overlap, np.eye(n_classes, dtype=bool))

    release = mechanism.publish(table, random_state=1)
    generalized = mechanism.generalize(table)
    # Rows of one class share their labels, and every original value is in its label's cover.
    labels = rows_of(generalized.select(list(quasi)))
    for c in range(n_classes):
        assert len({labels[i] for i in np.flatnonzero(classes == c)}) == 1
    for name in quasi:
        covers = release.covers(name)
        for value, label in zip(table.values(name).tolist(),
                                generalized.column(name).to_pylist(), strict=True):
            assert value in covers[label]
    # The release holds the same rows (labels and sensitive values), shuffled.
    assert release.n_rows == n_rows
    assert Counter(rows_of(release.generalized_rows())) == Counter(rows_of(generalized))
    assert release.k_anonymity() >= k
    if diversity == "frequency":
        assert release.association().max() * l <= 1 + 1e-12
    else:
        assert release.l_diversity() >= l
    assert release.parameters["diversity"] == diversity
    assert 0.0 <= release.ncp() <= 1.0
    value = table.schema["s"].domain[0]
    assert release.count(f"s = '{value}'").value == pytest.approx(
        float(np.count_nonzero(table.values("s") == value)))


def allowable(side: np.ndarray, k: int, l: int, diversity: str) -> bool:  # noqa: E741
    """Whether one side of a cut (its rows' sensitive values) may become a partition."""
    return len(side) >= k and (l == 1 or bool(feasible(side, k, l, diversity)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 2000), k=st.integers(1, 20),
       l=st.integers(1, 4), dims=st.integers(1, 5),
       diversity=st.sampled_from(partition.DIVERSITIES))
def test_the_pure_partition_on_random_ranks(seed: int, n_rows: int, k: int, l: int,  # noqa: E741
                                            dims: int, diversity: str) -> None:
    rng = np.random.default_rng(seed)
    widths = rng.integers(1, 60, size=dims)
    ranks = [rng.integers(0, w, size=n_rows) for w in widths]
    # Skewed sensitive values, so that frequency l-diversity refuses some cuts.
    sensitive = rng.choice(6, size=n_rows, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    if not feasible(sensitive, k, l, diversity):
        with pytest.raises(InfeasibleError):
            mondrian_partition(ranks, sensitive, k=k, l=l, diversity=diversity)
        return
    classes = mondrian_partition(ranks, sensitive, k=k, l=l, diversity=diversity)
    sizes = np.bincount(classes)
    assert sizes.min() >= k and sizes.sum() == n_rows
    assert_diverse(classes, sensitive, l, diversity)
    # No class could have been cut further at its median on any attribute: checked row by row
    # here, against the vectorised counts of the partitioning.
    for c in range(len(sizes)):
        members = classes == c
        values = sensitive[members]
        for rank in ranks:
            member_ranks = rank[members]
            median = np.sort(member_ranks)[len(member_ranks) // 2]
            for left in (member_ranks <= median, member_ranks < median):
                assert not (allowable(values[left], k, l, diversity)
                            and allowable(values[~left], k, l, diversity))


@pytest.mark.parametrize("diversity", partition.DIVERSITIES)
@pytest.mark.parametrize("l", [2, 3, 5])
def test_counts_agree_for_wide_sensitive_domains(l: int, diversity: str) -> None:  # noqa: E741
    # Codes spread over 60,000 values count values by sorting (many partitions times many
    # values); the same values renumbered 0..n-1 count them with bincount. A few values
    # repeated often make the frequency bound refuse some cuts.
    rng = np.random.default_rng(l)
    ranks = [rng.integers(0, 30, size=3000), rng.integers(0, 12, size=3000)]
    wide = np.where(rng.random(3000) < 0.4, rng.integers(0, 3, size=3000) * 20_000,
                    rng.integers(0, 60_000, size=3000))
    narrow = np.unique(wide, return_inverse=True)[1]
    classes = mondrian_partition(ranks, wide, k=3, l=l, diversity=diversity)
    np.testing.assert_array_equal(classes, mondrian_partition(ranks, narrow, k=3, l=l,
                                                              diversity=diversity))
    assert_diverse(classes, narrow, l, diversity)
    assert len(np.unique(classes)) > 100


@pytest.mark.parametrize(("l", "diversity"), [(1, "distinct"), (3, "distinct"),
                                              (3, "frequency")])
def test_histogram_and_sorted_medians_agree(monkeypatch: pytest.MonkeyPatch, l: int,  # noqa: E741
                                            diversity: str) -> None:
    rng = np.random.default_rng(10 + l)
    ranks = [rng.integers(0, w, size=5000) for w in (7, 40, 90)]
    sensitive = rng.integers(0, 8, size=5000)
    monkeypatch.setattr(partition, "HISTOGRAM_CELLS_PER_ROW", 0)
    by_sorting = mondrian_partition(ranks, sensitive, k=4, l=l, diversity=diversity)
    monkeypatch.setattr(partition, "HISTOGRAM_CELLS_PER_ROW", 10**9)
    by_histogram = mondrian_partition(ranks, sensitive, k=4, l=l, diversity=diversity)
    np.testing.assert_array_equal(by_sorting, by_histogram)


# -- pycanon on Adult ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult() -> Table:
    # The values present are public here (the UCI codebook lists every occupation present).
    return ppdp.datasets.adult(sensitive="occupation", observed_domains=True)


@pytest.fixture(scope="module")
def adult_hierarchies() -> dict[str, Hierarchy]:
    return read_hierarchies("adult")


@pytest.mark.parametrize(("k", "l", "diversity"), [
    (5, 1, "distinct"), (10, 1, "distinct"), (50, 1, "distinct"), (10, 2, "distinct"),
    (5, 5, "frequency")])
def test_pycanon_confirms_k_and_l_on_adult(adult: Table,
                                           adult_hierarchies: dict[str, Hierarchy], k: int,
                                           l: int, diversity: str) -> None:  # noqa: E741
    release = Mondrian(k=k, l=l, diversity=diversity,
                       hierarchies=adult_hierarchies).publish(adult, random_state=k)
    frame = release.generalized_rows().to_pandas()
    quasi = list(adult.schema.quasi_identifiers)
    assert len(quasi) == 8 and "occupation" not in quasi
    measured_k = anonymity.k_anonymity(frame, quasi)
    assert measured_k >= k
    assert measured_k == release.k_anonymity()
    # No value above 1/l of a class also leaves at least l distinct values in it.
    measured_l = anonymity.l_diversity(frame, quasi, ["occupation"])
    assert measured_l >= l
    assert measured_l == release.l_diversity()
    if diversity == "frequency":
        # pycanon's (alpha, k)-anonymity (Wong et al. 2006) measures alpha as the largest share
        # of one sensitive value in a class: the frequency bound is alpha <= 1/l. (It loops
        # over the classes in Python, too slowly to run on every case.)
        alpha, _ = anonymity.alpha_k_anonymity(frame, quasi, ["occupation"])
        assert alpha <= 1 / l
        assert alpha == pytest.approx(release.risk()["association_max"])
    assert release.parameters["hierarchies"] == quasi
    assert 0 < release.ncp() < 1


@pytest.fixture(scope="module")
def bundled_adult() -> Table:
    return ppdp.datasets.adult(sensitive="occupation")


@pytest.mark.parametrize("diversity", partition.DIVERSITIES)
def test_association_and_presence_measured_on_the_published_rows(
        bundled_adult: Table, adult_hierarchies: dict[str, Hierarchy], diversity: str) -> None:
    # The ambiguity paper's baseline at beta = 0.2 bounds association by 1/l with l = 5.
    release = Mondrian(k=5, l=5, diversity=diversity,
                       hierarchies=adult_hierarchies).publish(bundled_adult, random_state=5)
    rows = release.generalized_rows().to_pandas()
    quasi = list(bundled_adult.schema.quasi_identifiers)
    sizes = rows.value_counts(quasi)
    largest = rows.value_counts([*quasi, "occupation"]).groupby(level=quasi).max()
    largest = largest.reindex(sizes.index)
    association = largest / sizes
    if diversity == "frequency":
        # Every class at c / |G| <= beta = 1/5, in integers: 5c <= |G|.
        assert (largest * 5 <= sizes).all()
    else:
        # Distinct values alone leave classes where one value dominates.
        assert association.max() > 0.5
    # Presence |G| / prod_i |cover_i| from the published covers, capped at 1 (Theorem 5.1).
    cover_sizes = {name: {label: len(values) for label, values in release.covers(name).items()}
                   for name in quasi}
    combinations = np.asarray([np.prod([cover_sizes[name][label]
                                        for name, label in zip(quasi, labels, strict=True)],
                                       dtype=np.float64)
                               for labels in sizes.index])
    presence = np.minimum(1.0, sizes.to_numpy() / combinations)
    measured = release.risk(alpha=0.5, beta=0.2)
    assert measured["classes"] == len(sizes)
    assert measured["k"] == sizes.min() >= 5
    assert measured["association_max"] == pytest.approx(association.max())
    assert measured["association_over_beta_share"] == pytest.approx(
        np.mean(association.to_numpy() > 0.2 + 1e-9))
    assert measured["presence_max"] == pytest.approx(presence.max())
    assert measured["presence_certain_share"] == pytest.approx(np.mean(presence >= 1))
    assert measured["presence_over_alpha_share"] == pytest.approx(np.mean(presence > 0.5))
    assert sorted(release.association()) == pytest.approx(sorted(association))
    assert sorted(release.presence()) == pytest.approx(sorted(presence))
    if diversity == "frequency":
        assert measured["association_over_beta_share"] == 0.0


def test_frequency_l_beyond_the_data_is_refused(bundled_adult: Table) -> None:
    # Prof-specialty holds 4,038 of the 30,162 rows (13.4 %): no class can keep it under 1/8.
    with pytest.raises(InfeasibleError, match=(
            r"^l = 8 \(frequency\) allows each value of 'occupation' in at most 1/8 = 0\.125 "
            r"of a class, but 'Prof-specialty' makes up 0\.1339 of the table \(4038 of 30162 "
            r"rows\); l must be at most 7$")):
        Mondrian(k=5, l=8, diversity="frequency").publish(bundled_adult)
    assert Mondrian(k=5, l=7, diversity="frequency").publish(
        bundled_adult, random_state=0).association().max() <= 1 / 7


def test_adult_estimates_are_consistent(adult: Table,
                                        adult_hierarchies: dict[str, Hierarchy]) -> None:
    release = Mondrian(k=10, hierarchies=adult_hierarchies).publish(adult, random_state=3)
    n_rows = adult.n_rows
    assert release.count("SELECT COUNT(*) FROM t").value == pytest.approx(n_rows)
    # Conditions on the sensitive column alone are exact: its values are published as is.
    for text in ("occupation = 'Sales'", "occupation IN ('Sales', 'Tech-support')",
                 "occupation != 'Craft-repair'"):
        assert release.count(text).value == pytest.approx(adult.count(text).value)
    by_value = release.count("SELECT occupation, COUNT(*) FROM t GROUP BY occupation")
    truth = adult.count("SELECT occupation, COUNT(*) FROM t GROUP BY occupation")
    assert isinstance(by_value, GroupedEstimate) and isinstance(truth, GroupedEstimate)
    for key, estimate in truth.groups:
        assert by_value[key].value == pytest.approx(estimate.value)
    # GROUP BY totals equal the ungrouped count.
    condition = "age >= 40 AND sex = 'Female'"
    total = release.count(condition).value
    for group in ("education", "occupation", "race, occupation"):
        grouped = release.count(f"SELECT {group}, COUNT(*) FROM t WHERE {condition} "
                                f"GROUP BY {group}")
        assert isinstance(grouped, GroupedEstimate)
        assert sum(e.value for _, e in grouped.groups) == pytest.approx(total)
    # OR and NOT agree with inclusion-exclusion of the ungrouped conjunctions.
    a, b = "age < 30", "occupation = 'Sales'"
    both = release.count(f"{a} AND {b}").value
    assert release.count(f"{a} OR {b}").value == pytest.approx(
        release.count(a).value + release.count(b).value - both)
    assert release.count(f"NOT ({a})").value == pytest.approx(n_rows - release.count(a).value)
    assert release.count(f"NOT ({a} AND {b})").value == pytest.approx(n_rows - both)
    # Estimates stay near the truth for a broad condition.
    assert release.count(a).value == pytest.approx(adult.count(a).value, rel=0.1)


# -- files ----------------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path: Path, adult: Table,
                                  adult_hierarchies: dict[str, Hierarchy]) -> None:
    hierarchies = {n: h for n, h in adult_hierarchies.items() if n != "age"}
    release = Mondrian(k=20, l=2, hierarchies=hierarchies).publish(adult, random_state=4)
    release.save(tmp_path / "release")
    loaded = load_release(tmp_path / "release")
    assert isinstance(loaded, MondrianRelease)
    assert loaded.parameters == release.parameters
    assert loaded.generalized_rows().equals(release.generalized_rows())
    for name in adult.schema.quasi_identifiers:
        assert loaded.covers(name) == release.covers(name)
    assert loaded.risk() == release.risk()
    assert loaded.parameters["diversity"] == "distinct"
    queries = ["age BETWEEN 30 AND 45 AND occupation = 'Sales'",
               "education = 'Bachelors' OR sex = 'Male'", "NOT (race = 'White')"]
    np.testing.assert_allclose(loaded.count_all(queries)[0], release.count_all(queries)[0])
    grouped = "SELECT sex, COUNT(*) FROM t WHERE age > 50 GROUP BY sex"
    assert loaded.count(grouped) == release.count(grouped)


def test_the_kind_of_diversity_is_saved(tmp_path: Path) -> None:
    release = Mondrian(k=2, l=2, diversity="frequency").publish(hand_table(), random_state=4)
    root = release.save(tmp_path / "frequency")
    metadata = json.loads((root / "release.json").read_text())
    assert metadata["parameters"]["diversity"] == "frequency"
    loaded = load_release(root)
    assert loaded.parameters == release.parameters
    assert loaded.risk(beta=0.5) == release.risk(beta=0.5)


def test_a_release_without_the_kind_of_diversity_loads_as_distinct(tmp_path: Path) -> None:
    # Releases written before the frequency kind existed record k, l and hierarchies only.
    root = Mondrian(k=2, l=2).publish(hand_table(), random_state=4).save(tmp_path / "old")
    edit_metadata(root, lambda metadata: metadata["parameters"].pop("diversity"))
    assert json.loads((root / "release.json").read_text())["parameters"] == {
        "k": 2, "l": 2, "hierarchies": []}
    loaded = load_release(root)
    assert loaded.parameters == {"k": 2, "l": 2, "diversity": "distinct", "hierarchies": []}
    edit_metadata(root, lambda metadata: metadata["parameters"].update(diversity="entropy"))
    with pytest.raises(ReleaseError, match="diversity must be 'distinct' or 'frequency'"):
        load_release(root)


def test_published_files_hold_nothing_else(tmp_path: Path) -> None:
    release = Mondrian(k=4, hierarchies={"zip": zip_hierarchy()}).publish(hand_table(),
                                                                          random_state=5)
    root = release.save(tmp_path / "release")
    assert sorted(p.name for p in root.iterdir()) == [
        "cover_1.parquet", "cover_2.parquet", "release.json", "rows.parquet"]
    rows = pq.read_table(root / "rows.parquet")
    assert rows.column_names == ["age", "zip", "disease"]
    assert all(pa.types.is_dictionary(rows.column(n).type) for n in rows.column_names)
    for name, values in (("cover_1", pa.int64()), ("cover_2", pa.string())):
        cover = pq.read_table(root / f"{name}.parquet")
        assert cover.column_names == ["label", "value"]
        assert cover.schema.field("label").type == pa.string()
        assert cover.schema.field("value").type == values
    metadata = json.loads((root / "release.json").read_text())
    assert metadata["parameters"] == {"k": 4, "l": 1, "diversity": "distinct",
                                      "hierarchies": ["zip"]}
    assert [c["name"] for c in metadata["schema"]] == ["age", "zip", "disease"]


def test_loading_rejects_inconsistent_files(tmp_path: Path) -> None:
    release = Mondrian(k=4).publish(hand_table(), random_state=6)
    root = release.save(tmp_path / "release")
    cover = pq.read_table(root / "cover_1.parquet")
    # A label of the rows without a cover.
    rewrite_file(root, "cover_1.parquet",
                 cover.filter(pc.equal(cover.column("label"), "[20, 60]")))
    with pytest.raises(ReleaseError, match="without a cover"):
        load_release(root)
    # A cover value outside the column's domain.
    values = cover.column("value").to_pylist()
    values[0] = 21
    rewrite_file(root, "cover_1.parquet", cover.set_column(1, "value", pa.array(values)))
    with pytest.raises(ReleaseError, match="outside its domain"):
        load_release(root)


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_k_must_be_a_positive_integer(k: Any) -> None:
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        Mondrian(k=k)


@pytest.mark.parametrize("l", [0, -2, 1.5, False, "2"])
def test_l_must_be_a_positive_integer(l: Any) -> None:  # noqa: E741
    with pytest.raises(ValueError, match="l must be an integer >= 1"):
        Mondrian(k=2, l=l)


@pytest.mark.parametrize("diversity", ["entropy", "Frequency", None, 1])
def test_diversity_must_be_a_known_kind(diversity: Any) -> None:
    with pytest.raises(ValueError, match="diversity must be 'distinct' or 'frequency'"):
        Mondrian(k=2, l=2, diversity=diversity)
    with pytest.raises(ValueError, match="diversity must be 'distinct' or 'frequency'"):
        mondrian_partition([np.arange(4)], np.arange(4), k=1, l=2, diversity=diversity)


def test_infeasible_parameters() -> None:
    with pytest.raises(InfeasibleError, match=r"k = 9 exceeds the number of rows \(8\); k must "
                                              r"be at most 8"):
        Mondrian(k=9).publish(hand_table())
    with pytest.raises(InfeasibleError, match=r"the table holds 3; l must be at most 3"):
        Mondrian(k=1, l=4).publish(hand_table())
    with pytest.raises(InfeasibleError):
        mondrian_partition([np.arange(5)], np.zeros(5, dtype=np.int64), k=1, l=2)
    # Cold is in 4 of the 8 rows: frequency l = 3 would keep it in at most 1/3 of a class.
    with pytest.raises(InfeasibleError, match=r"'cold' makes up 0\.5 of the table \(4 of 8 "
                                              r"rows\); l must be at most 2"):
        Mondrian(k=1, l=3, diversity="frequency").publish(hand_table())
    with pytest.raises(InfeasibleError, match=r"the most frequent is in 4 of 8; l must be at "
                                              r"most 2"):
        mondrian_partition([np.arange(8)], hand_table().codes["disease"], k=1, l=3,
                           diversity="frequency")


def test_hierarchy_errors() -> None:
    incomplete = Hierarchy(("20", "45", "60"), (("*", "*", "*"),))
    with pytest.raises(SchemaError, match=r"hierarchy for 'age' misses 5 values of the column: "
                                          r"\[50, 70, 75, 80, 90\]"):
        Mondrian(k=2, hierarchies={"age": incomplete}).publish(hand_table())
    with pytest.raises(SchemaError, match=r"not in the table: \['postcode'\]"):
        Mondrian(k=2, hierarchies={"postcode": zip_hierarchy()}).publish(hand_table())
    with pytest.raises(ValueError, match="must be a Hierarchy"):
        Mondrian(k=2, hierarchies={"zip": {"130": "*"}})  # type: ignore[dict-item]
    # A hierarchy of a column that is not a quasi-identifier is ignored.
    sensitive = Hierarchy(("cold", "flu", "hiv"), (("*", "*", "*"),))
    release = Mondrian(k=4, hierarchies={"disease": sensitive}).publish(hand_table())
    assert release.parameters["hierarchies"] == []


def test_schema_errors() -> None:
    two = table_from_arrow(pa.table({"a": [1, 2], "b": ["x", "y"], "c": ["p", "q"]}),
                           roles={"b": Role.SENSITIVE, "c": Role.SENSITIVE})
    with pytest.raises(SchemaError, match="one sensitive column"):
        Mondrian(k=1).publish(two)
    none = table_from_arrow(pa.table({"a": [1, 2], "b": ["x", "y"]}))
    with pytest.raises(SchemaError, match="needs a sensitive column"):
        Mondrian(k=1).publish(none)
    alone = hand_table().with_roles(sensitive="disease", quasi_identifiers=[])
    with pytest.raises(SchemaError, match="at least one quasi-identifier"):
        Mondrian(k=1).publish(alone)


def test_ignored_columns_are_not_published() -> None:
    table = hand_table().with_roles(sensitive="disease", quasi_identifiers=["age"])
    release = Mondrian(k=4).publish(table, random_state=0)
    assert release.schema.names == ("age", "disease")
    assert release.generalized_rows().column_names == ["age", "disease"]


def test_parameters_and_guarantee() -> None:
    mechanism = Mondrian.from_params({"k": "5"})
    assert isinstance(mechanism, Mondrian)
    assert (mechanism.k, mechanism.l, mechanism.diversity) == (5, 1, "distinct")
    assert Mondrian(k=5, l=2).guarantee() == mondrian_guarantee(k=5, l=2)
    assert Mondrian.name == "mondrian"
    assert [p.name for p in Mondrian.parameters] == ["k", "l", "diversity"]
    frequency = Mondrian.from_params({"k": "5", "l": "5", "diversity": "frequency"})
    assert isinstance(frequency, Mondrian)
    assert frequency.parameter_values == {"k": 5, "l": 5, "diversity": "frequency"}
    stated = frequency.guarantee().to_dict()
    assert stated["diversity"] == "frequency"
    assert "no sensitive value makes up more than 1/5" in stated["statement"]
    assert "at most 0.2" in stated["statement"]


def test_seeds_only_change_the_row_order() -> None:
    table = hand_table()
    first = Mondrian(k=2).publish(table, random_state=7)
    second = Mondrian(k=2).publish(table, random_state=8)
    assert Counter(rows_of(first.generalized_rows())) == Counter(
        rows_of(second.generalized_rows()))
    again = Mondrian(k=2).publish(table, random_state=7)
    assert again.generalized_rows().equals(first.generalized_rows())
