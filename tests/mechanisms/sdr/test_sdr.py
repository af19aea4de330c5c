"""Perturbation Partitioning (Small Domain Randomization, Section 5 and Appendix 10.5-10.7):
the worked Examples 1, 2 and 4, the properties of balancing, merging and the partition
(Lemma 1, Lemma 2, Theorems 3 and 5), the row assignment, and the published release.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ppdp
import ppdp.query.row_counts
from ppdp import PerturbationPartitioning, UniformPerturbation
from ppdp.data.schema import Role
from ppdp.errors import InfeasibleError, ReleaseError
from ppdp.mechanisms.sdr import partition as sdr
from ppdp.mechanisms.sdr.formulas import amplification_gamma, error_bound, uniform_probabilities
from ppdp.mechanisms.sdr.partition import (
    balance,
    balance_with_unprotected,
    balancing_level,
    best_grouping,
    candidate_orders,
    cuthill_mckee,
    merge,
    perturbation_partition,
    rearrange,
    run_costs,
    sharing_graph,
    subtable_statistics,
)
from ppdp.table.table import table_from_arrow
from tests.release.test_release import edit_metadata, rewrite_file

# The running example of Sections 4-5: counts of x1..x10, |T| = 42, (1/3, 2/3)-privacy.
EXAMPLE_T = np.array([12, 8, 6, 5, 4, 3, 1, 1, 1, 1])
EXAMPLE1_T1 = [12, 8, 6, 4, 4, 2, 0, 0, 0, 0]
EXAMPLE1_T2 = [0, 0, 0, 1, 0, 1, 1, 1, 1, 1]
EXAMPLE2_GROUPS = [
    [6, 6, 6, 0, 0, 0, 0, 0, 0, 0],
    [4, 0, 0, 4, 4, 0, 0, 0, 0, 0],
    [2, 2, 0, 0, 0, 2, 0, 0, 0, 0],
    [0, 0, 0, 1, 0, 1, 1, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 0, 1, 1, 1],
]
ALL_PROTECTED = np.ones(10, dtype=bool)

# See test_perturbation.py: a whole-domain count, conditions on non-sensitive columns, and an
# OR mixing sensitive and non-sensitive conditions.
QUERIES = [
    "occupation = 'Sales'",
    "sex = 'Female' AND occupation = 'Sales'",
    "age > 40 AND occupation IN ('Sales', 'Tech-support')",
    "(occupation = 'Sales' AND age > 40) OR (occupation = 'Tech-support' AND sex = 'Male')",
]


@pytest.fixture(scope="module")
def adult() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation")


def occupation_frequencies(table: ppdp.Table) -> np.ndarray:
    return np.bincount(table.codes["occupation"], minlength=table.schema["occupation"].size)


# -- golden values from the paper -------------------------------------------------------------


def test_example1_subtable_statistics():
    """Example 1: rho1_1 = 12/36 = 1/3, rho1_2 = 1/6, gamma 4 and 10, m = 6 each."""
    stats = subtable_statistics(np.array([EXAMPLE1_T1, EXAMPLE1_T2]), ALL_PROTECTED, 2 / 3,
                                0.05)
    assert stats["rows"].tolist() == [36, 6]
    assert stats["m"].tolist() == [6, 6]
    assert np.allclose(stats["rho1"], [1 / 3, 1 / 6], rtol=1e-12)
    assert np.allclose(stats["gamma"], [4, 10], rtol=1e-12)
    # eps_i of Eq. 12: a/sqrt(|T_i|) (m_i/(gamma_i - 1) + 1), a = 2 sqrt(ln 40).
    a = 2 * math.sqrt(math.log(40))
    assert np.allclose(stats["epsilon"], [a / 6 * (6 / 3 + 1), a / math.sqrt(6) * (6 / 9 + 1)])
    # Main diagonal p + q of P_1 and P_2: 4/9 and 2/3; unpartitioned T (gamma 4, m 10): 4/13.
    p, q = uniform_probabilities(stats["gamma"], stats["m"])
    assert np.allclose(p + q, [4 / 9, 2 / 3])
    assert np.allclose(q, [1 / 9, 1 / 15])
    whole = subtable_statistics(EXAMPLE_T, ALL_PROTECTED, 2 / 3, 0.05)
    assert whole["m"].tolist() == [10]
    # 12/42 = 2/7 < 1/3, so the whole table's own rho1 would allow more than gamma = 4; the
    # paper's unpartitioned figure uses the publisher's rho1 = 1/3.
    p, q = uniform_probabilities(amplification_gamma(1 / 3, 2 / 3), 10)
    assert float(p + q) == pytest.approx(4 / 13)


def test_subtable_statistics_marks_infeasible_subtables():
    protected = np.array([True, True, False])
    stats = subtable_statistics(np.array([[5, 5, 0], [9, 1, 0], [0, 0, 7], [1, 1, 8]]),
                                protected, 0.6, 0.05)
    # rho1_i = 1/2 and 9/10 (>= rho2: no gamma > 1), none protected (rho1_i = 0), 1/10.
    assert np.allclose(stats["rho1"], [0.5, 0.9, 0.0, 0.1])
    assert np.isfinite(stats["epsilon"][[0, 3]]).all()
    assert np.isinf(stats["epsilon"][[1, 2]]).all()


def test_example2_balancing():
    assert balancing_level(EXAMPLE_T) == 3  # floor(42 / 12)
    groups = balance(EXAMPLE_T)
    assert groups.tolist() == EXAMPLE2_GROUPS
    # With every value protected the Appendix 10.7 variant is the same.
    assert balance_with_unprotected(EXAMPLE_T, ALL_PROTECTED).tolist() == EXAMPLE2_GROUPS


def test_balance_rejects_an_unbalanced_level():
    with pytest.raises(ValueError, match="4-balanced"):
        balance(EXAMPLE_T, theta=4)  # 12 * 4 > 42


def test_example4_merging_gives_example1():
    groups = np.array(EXAMPLE2_GROUPS)
    ordered = groups[[0, 2, 1, 3, 4]]  # Example 3's order g1, g3, g2, g4, g5
    ends = merge(ordered, ALL_PROTECTED, 2 / 3, 0.05)
    assert ends == [3, 5]
    t1 = ordered[:3].sum(axis=0)
    t2 = ordered[3:].sum(axis=0)
    assert t1.tolist() == EXAMPLE1_T1 and t2.tolist() == EXAMPLE1_T2


def brute_force_best(ordered, protected, rho2, delta):
    """eps(Part) of Eq. 12 minimised over all 2^(t-1) mergings of consecutive groups."""
    t = len(ordered)
    total = ordered.sum()
    best = math.inf
    for cuts in itertools.product([False, True], repeat=t - 1):
        ends = [i + 1 for i, cut in enumerate(cuts) if cut] + [t]
        starts = [0, *ends[:-1]]
        counts = np.array([ordered[s:e].sum(axis=0) for s, e in zip(starts, ends, strict=True)])
        stats = subtable_statistics(counts, protected, rho2, delta)
        best = min(best, float((stats["rows"] / total * stats["epsilon"]).sum()))
    return best


def merged_cost(ordered, ends, protected, rho2, delta):
    starts = [0, *ends[:-1]]
    counts = np.array([ordered[s:e].sum(axis=0) for s, e in zip(starts, ends, strict=True)])
    stats = subtable_statistics(counts, protected, rho2, delta)
    return float((stats["rows"] / ordered.sum() * stats["epsilon"]).sum())


def test_merge_without_a_feasible_run_names_the_rho2_needed():
    # Both groups are 5/6 value x0: no run has rho1_i < rho2 = 1/2.
    with pytest.raises(InfeasibleError, match=r"raise rho2 above 0\.8333"):
        merge(np.array([[5, 1], [5, 1]]), np.array([True, True]), 0.5, 0.05)


def test_example4_merging_is_optimal_over_all_mergings():
    ordered = np.array(EXAMPLE2_GROUPS)[[0, 2, 1, 3, 4]]
    best = brute_force_best(ordered, ALL_PROTECTED, 2 / 3, 0.05)
    assert merged_cost(ordered, [3, 5], ALL_PROTECTED, 2 / 3, 0.05) == pytest.approx(best)


# eps(Part) of Eq. 12 for Example 1's partition: (36/42) eps_1 + (6/42) eps_2, with
# eps_i = a/sqrt(|T_i|) (m_i/(gamma_i - 1) + 1) and a = 2 sqrt(ln(2/0.05)); about 2.0196.
EXAMPLE1_EPSILON = 2 * math.sqrt(math.log(40)) * (36 / 42 / 6 * (6 / 3 + 1)
                                                  + 6 / 42 / math.sqrt(6) * (6 / 9 + 1))


def subtables(partition):
    """The partition as a mapping from each sub-table's counts to its gamma_i."""
    return {tuple(c): float(g) for c, g in zip(partition.counts.tolist(), partition.gammas,
                                               strict=True)}


def test_whole_algorithm_on_the_running_example():
    """Without forcing an order, PP gives Example 1's partition: T1 = g1 g2 g3 with gamma 4 and
    T2 = g4 g5 with gamma 10 (Examples 2-4), whose eps(Part) by Eq. 12 (the paper prints none)
    is 2.0196, the best of all 120 orders; scipy's RCM order alone merges to {g1..g4}, {g5}
    with 2.0303."""
    partition = perturbation_partition(EXAMPLE_T, rho1=1 / 3, rho2=2 / 3)
    assert partition.groups.tolist() == EXAMPLE2_GROUPS
    assert subtables(partition) == pytest.approx({tuple(EXAMPLE1_T1): 4.0,
                                                  tuple(EXAMPLE1_T2): 10.0})
    assert round(partition.epsilon, 4) == 2.0196
    assert partition.epsilon == pytest.approx(EXAMPLE1_EPSILON, rel=1e-12)
    # The order reported is the one whose merging gave the sub-tables.
    ordered = partition.groups[partition.order]
    ends = merge(ordered, ALL_PROTECTED, 2 / 3, 0.05)
    assert [ordered[s:e].sum(axis=0).tolist() for s, e in zip([0, *ends[:-1]], ends,
                                                              strict=True)] \
        == partition.counts.tolist()
    assert merged_cost(ordered, ends, ALL_PROTECTED, 2 / 3, 0.05) \
        == pytest.approx(partition.epsilon, rel=1e-12)
    groups = np.array(EXAMPLE2_GROUPS)
    best = min(merged_cost(groups[list(p)], merge(groups[list(p)], ALL_PROTECTED, 2 / 3, 0.05),
                           ALL_PROTECTED, 2 / 3, 0.05)
               for p in itertools.permutations(range(5)))
    assert partition.epsilon == pytest.approx(best, rel=1e-12)
    scipy_order = groups[rearrange(groups)]
    scipy_ends = merge(scipy_order, ALL_PROTECTED, 2 / 3, 0.05)
    assert round(merged_cost(scipy_order, scipy_ends, ALL_PROTECTED, 2 / 3, 0.05), 4) == 2.0303
    unpartitioned = float(error_bound(42, 10, amplification_gamma(1 / 3, 2 / 3), 0.05))
    assert partition.epsilon < unpartitioned


def test_running_example_without_the_search_over_all_orders(monkeypatch):
    """RCM started from g1 alone finds Example 1's partition: Cuthill-McKee from g1 gives
    g1 g2 g3 g4 g5 (RCM is its reverse), whose merging is Example 4's."""
    monkeypatch.setattr(sdr, "EXHAUSTIVE_GROUPS", 0)
    groups = np.array(EXAMPLE2_GROUPS)
    assert cuthill_mckee(sharing_graph(groups), 0).tolist() == [0, 1, 2, 3, 4]
    # scipy's order and one from each of the 5 starts, of which g5's is scipy's again.
    assert len(candidate_orders(groups, ALL_PROTECTED, 2 / 3, 0.05)) == 5
    partition = perturbation_partition(EXAMPLE_T, rho1=1 / 3, rho2=2 / 3)
    assert subtables(partition) == pytest.approx({tuple(EXAMPLE1_T1): 4.0,
                                                  tuple(EXAMPLE1_T2): 10.0})


# -- property tests -----------------------------------------------------------------------------


@st.composite
def frequency_vectors(draw, min_values=2, max_values=30, max_count=200):
    counts = draw(st.lists(st.integers(0, max_count), min_size=min_values,
                           max_size=max_values))
    assume(sum(c > 0 for c in counts) >= min(3, len(counts)))
    return np.array(counts, dtype=np.int64)


def off_the_boundary(frequencies: np.ndarray, rho1: float) -> bool:
    """rho1 not (numerically) equal to a relative frequency: the boundary Pr[X = x] = rho1
    has its own test (test_value_at_exactly_rho1_is_protected)."""
    return bool(np.all(np.abs(frequencies / frequencies.sum() - rho1) > 1e-9))


def privacy_between(frequencies: np.ndarray, u: float, v: float) -> tuple[float, float]:
    """(rho1, rho2) drawn from u, v in [0, 1]: rho1 between the smallest and largest relative
    frequency, rho2 a share v of the way from rho1 to 1 (cases hypothesis cannot use are
    rejected)."""
    rel = frequencies[frequencies > 0] / int(frequencies.sum())
    rho1 = rel.min() + u * (rel.max() - rel.min())
    rho2 = rho1 + v * (1 - rho1)
    assume(0 < rho1 < rho2 < 1 and off_the_boundary(frequencies, rho1))
    return rho1, rho2


def is_balanced(counts: np.ndarray, theta: int) -> bool:
    """Definition 3: f/|R| <= 1/theta for every value, in integers."""
    return int(counts.max()) * theta <= int(counts.sum())


@settings(max_examples=60, deadline=None)
@given(frequencies=frequency_vectors(), data=st.data())
def test_balancing_lemma1(frequencies, data):
    level = balancing_level(frequencies)
    theta = data.draw(st.integers(1, level), label="theta")
    groups = balance(frequencies, theta)
    assert groups.shape[1] == len(frequencies)
    assert np.all(groups >= 0)
    assert np.array_equal(groups.sum(axis=0), frequencies)  # every row in one group
    remaining = frequencies.copy()
    for j, group in enumerate(groups):
        assert group.sum() > 0
        assert is_balanced(group, theta)  # Lemma 1(i)
        if j < len(groups) - 1 or np.count_nonzero(group) == theta:
            # Figure 1: h rows of each of the theta most frequent remaining values.
            taken = np.flatnonzero(group)
            assert len(taken) == theta and len(set(group[taken].tolist())) == 1
            rest = np.delete(remaining, taken)
            assert rest.size == 0 or remaining[taken].min() >= rest.max()
        remaining = remaining - group
        if remaining.any():
            assert is_balanced(remaining, theta)  # Lemma 1(ii)
    assert not remaining.any()


@settings(max_examples=60, deadline=None)
@given(frequencies=frequency_vectors(),
       u=st.floats(1e-6, 0.9), v=st.floats(0.01, 0.99))
def test_partition_when_every_value_is_protected(frequencies, u, v):
    """SA' = SA (rho1 >= every relative frequency): Theorem 3 and Definition 2."""
    n = int(frequencies.sum())
    top = frequencies.max() / n
    rho1 = top + u * (1 - top)
    rho2 = rho1 + v * (1 - rho1)
    assume(rho1 < rho2 < 1 and off_the_boundary(frequencies, rho1))
    partition = perturbation_partition(frequencies, rho1=rho1, rho2=rho2)
    present = frequencies > 0
    assert np.array_equal(partition.protected, present)
    check_partition(partition, frequencies, rho1, rho2)
    theta = n // int(frequencies.max())
    for counts in partition.counts:
        assert is_balanced(counts, theta)  # Theorem 3(i)
    assert np.all(partition.rho1s <= 1 / theta + 1e-12)


@settings(max_examples=60, deadline=None)
@given(frequencies=frequency_vectors(), u=st.floats(0, 0.999), v=st.floats(0.01, 0.99))
def test_partition_when_some_values_are_unprotected(frequencies, u, v):
    """SA' a proper subset of SA (rho1 below the largest relative frequency): Lemma 2 on the
    initial groups, Theorem 5 on the sub-tables."""
    n = int(frequencies.sum())
    rel = frequencies[frequencies > 0] / n
    assume(rel.min() < rel.max())
    rho1 = rel.min() + u * (rel.max() - rel.min())
    rho2 = rho1 + v * (1 - rho1)
    assume(rho1 < rel.max() and rho1 < rho2 < 1 and off_the_boundary(frequencies, rho1))
    partition = perturbation_partition(frequencies, rho1=rho1, rho2=rho2)
    protected = partition.protected
    assert np.array_equal(protected, (frequencies > 0) & (frequencies / n <= rho1))
    assert protected.any() and not protected[frequencies > 0].all()
    check_partition(partition, frequencies, rho1, rho2)

    top = int(frequencies[protected].max())  # f^m
    theta = n // top
    theta_prime = int(frequencies[protected].sum()) // top
    if theta_prime < 2:
        return  # alpha = 1/(1 - 1/theta') is unbounded
    alpha = 1 / (1 - 1 / theta_prime)
    if theta <= alpha:
        return
    bound = alpha / (theta - alpha)
    for group in partition.groups:  # Lemma 2 (the looser of its two cases)
        assert group[protected].max() / group.sum() <= bound + 1e-12
    assert np.all(partition.rho1s <= bound + 1e-12)  # Theorem 5(i)


def check_partition(partition, frequencies, rho1, rho2):
    counts = partition.counts
    # Every row is in exactly one sub-table (and in exactly one initial group).
    assert np.all(counts >= 0) and np.all(counts.sum(axis=1) > 0)
    assert np.array_equal(counts.sum(axis=0), frequencies)
    assert np.array_equal(partition.groups.sum(axis=0), frequencies)
    assert sorted(partition.order.tolist()) == list(range(len(partition.groups)))
    # Definition 2(i) / Corollary 1: rho1_i < rho2, hence gamma_i > 1.
    assert np.all(partition.rho1s < rho2) and np.all(partition.gammas > 1)
    # rho1_i is the largest relative frequency of a protected value in T_i (Eq. 9).
    sizes = counts.sum(axis=1)
    expected = np.where(partition.protected, counts, 0).max(axis=1) / sizes
    assert np.allclose(partition.rho1s, expected)
    assert np.array_equal(partition.domains, counts > 0)
    # eps(Part) of Eq. 12 is the size-weighted mean of the eps_i, and never worse than one
    # sub-table over the whole domain with the publisher's gamma (a merging the DP considers
    # is the whole table, whose rho1_i is at most rho1).
    assert partition.epsilon == pytest.approx(float((sizes / sizes.sum()
                                                     * partition.epsilons).sum()))
    n = int(frequencies.sum())
    uniform = float(error_bound(n, len(frequencies), amplification_gamma(rho1, rho2), 0.05))
    assert partition.epsilon <= uniform * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(frequencies=frequency_vectors(max_values=12), u=st.floats(0, 1), v=st.floats(0.01, 0.99))
def test_merge_is_optimal_for_the_order(frequencies, u, v):
    """Eq. 14's dynamic programme finds the minimum of eps(Part) over all mergings of the
    rearranged groups (checked by enumeration when there are few groups)."""
    rho1, rho2 = privacy_between(frequencies, u, v)
    partition = perturbation_partition(frequencies, rho1=rho1, rho2=rho2)
    ordered = partition.groups[partition.order]
    assume(len(ordered) <= 10)
    best = brute_force_best(ordered, partition.protected, rho2, 0.05)
    assert partition.epsilon == pytest.approx(best, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), rho2=st.floats(0.05, 0.95))
def test_run_costs_are_those_of_the_merged_counts(data, rho2):
    """Every run's cost, found from where the values occur, is that of the run's summed
    counts (Eq. 12), exactly; empty and reversed runs cost infinity."""
    t = data.draw(st.integers(1, 12), label="t")
    m = data.draw(st.integers(1, 10), label="m")
    groups = np.array(data.draw(st.lists(st.lists(st.integers(0, 9), min_size=m, max_size=m),
                                         min_size=t, max_size=t), label="groups"))
    assume(np.all(groups.sum(axis=1) > 0))
    protected = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    costs = run_costs(groups, protected, rho2, 0.05)
    assert np.all(np.isinf(costs[np.tril_indices(t + 1)]))
    for r in range(t):
        for e in range(r + 1, t + 1):
            stats = subtable_statistics(groups[r:e].sum(axis=0), protected, rho2, 0.05)
            expected = stats["rows"][0] / groups.sum() * stats["epsilon"][0]
            assert costs[r, e] == expected


@settings(max_examples=40, deadline=None)
@given(frequencies=frequency_vectors(max_values=16), u=st.floats(0, 1), v=st.floats(0.01, 0.99))
def test_partition_is_the_best_of_the_orders(frequencies, u, v):
    """The partition kept is at least as good as the merging of scipy's RCM order and of every
    candidate order; with few groups it is the best over all t! orders (enumerated here)."""
    rho1, rho2 = privacy_between(frequencies, u, v)
    partition = perturbation_partition(frequencies, rho1=rho1, rho2=rho2)
    groups, protected = partition.groups, partition.protected
    t = len(groups)

    def eps_of(order):
        ordered = groups[order]
        return merged_cost(ordered, merge(ordered, protected, rho2, 0.05), protected, rho2, 0.05)

    orders = candidate_orders(groups, protected, rho2, 0.05)
    assert np.array_equal(orders[0], rearrange(groups))
    assert any(np.array_equal(order, partition.order) for order in orders)
    assert partition.epsilon == pytest.approx(eps_of(partition.order), rel=1e-12)
    for order in orders:
        assert partition.epsilon <= eps_of(order) * (1 + 1e-12)
    if t <= 6:
        best = min(eps_of(list(order)) for order in itertools.permutations(range(t)))
        assert partition.epsilon == pytest.approx(best, rel=1e-12)
        assert eps_of(best_grouping(groups, protected, rho2, 0.05)) == pytest.approx(best,
                                                                                    rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), rho2=st.floats(0.05, 0.95))
def test_merging_an_order_and_its_reverse_is_as_good(data, rho2):
    """candidate_orders leaves out reversed orders: a merging of consecutive groups is one of
    the reversed order too, so Eq. 14 finds the same minimum."""
    t = data.draw(st.integers(1, 10), label="t")
    groups = np.array(data.draw(st.lists(st.lists(st.integers(0, 9), min_size=6, max_size=6),
                                         min_size=t, max_size=t), label="groups"))
    assume(np.all(groups.sum(axis=1) > 0))
    protected = np.ones(6, dtype=bool)
    try:
        ends = merge(groups, protected, rho2, 0.05)
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            merge(groups[::-1], protected, rho2, 0.05)
        return
    reverse_ends = merge(groups[::-1], protected, rho2, 0.05)
    assert merged_cost(groups[::-1], reverse_ends, protected, rho2, 0.05) \
        == pytest.approx(merged_cost(groups, ends, protected, rho2, 0.05), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_cuthill_mckee_is_breadth_first_by_degree(data):
    """From the start, each node's unvisited neighbours follow it in order of degree (then
    index); a component once exhausted, the next starts at its node of least degree."""
    t = data.draw(st.integers(1, 12), label="t")
    upper = np.triu(np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=t,
                                                          max_size=t),
                                                 min_size=t, max_size=t))), 1)
    adjacency = upper | upper.T
    start = data.draw(st.integers(0, t - 1), label="start")
    order = cuthill_mckee(adjacency, start)
    assert sorted(order.tolist()) == list(range(t)) and order[0] == start
    degree = adjacency.sum(axis=1)
    position = np.empty(t, dtype=np.int64)
    position[order] = np.arange(t)
    parents = []
    for k, node in enumerate(order[1:], start=1):
        earlier = np.flatnonzero(adjacency[node] & (position < k))
        if earlier.size:
            parents.append((int(position[earlier].min()), int(degree[node]), int(node)))
        else:  # a new component: no unplaced node of lower (degree, index)
            rest = order[k:]
            assert (degree[node], node) == min(zip(degree[rest].tolist(), rest.tolist(),
                                                       strict=True))
            parents.append((k, -1, -1))
    assert parents == sorted(parents)


def test_value_at_exactly_rho1_is_protected():
    """Eq. 9: SA' holds the values with Pr[X = x] <= rho1, equality included. Leaving such a
    value unprotected lets the partition concentrate it in one sub-table, where the posterior
    is no longer bounded by rho2 (Corollary 1 no longer applies to it)."""
    frequencies = np.array([1, 50, 52, 29, 27])
    rho1, rho2 = 29 / 159, 1 / 3  # x4 has relative frequency exactly 29/159 = rho1
    partition = perturbation_partition(frequencies, rho1=rho1, rho2=rho2)
    assert partition.protected.tolist() == [True, False, False, True, True]
    share = partition.counts[:, 3] / partition.counts.sum(axis=1)
    assert np.all(share < rho2)


def test_rearrange_is_a_permutation_keeping_neighbours_close():
    groups = np.array(EXAMPLE2_GROUPS)
    order = rearrange(groups)
    assert sorted(order.tolist()) == [0, 1, 2, 3, 4]
    # g5 shares no value with any other group; RCM puts the connected groups g1..g4 together.
    assert order.tolist().index(4) in (0, 4)


# -- the mechanism on Adult --------------------------------------------------------------------


def test_release_follows_the_partition(adult):
    mechanism = PerturbationPartitioning(rho1=0.077, rho2=0.2)
    partition = mechanism.partition(adult)
    release = mechanism.publish(adult, random_state=5)
    assert release.n_subtables == len(partition.counts) > 1
    assert np.array_equal(release.domains, partition.domains)
    assert np.allclose(release.gammas, partition.gammas)
    # Sub-table sizes are those of the partition; every published value is within SA_i.
    assert np.array_equal(np.bincount(release.subtable, minlength=release.n_subtables),
                          partition.counts.sum(axis=1))
    assert release.domains[release.subtable, release.codes["occupation"]].all()
    # Non-sensitive columns are published unchanged (up to the shuffle).
    assert np.array_equal(np.sort(release.codes["age"]), np.sort(adult.codes["age"]))


def test_estimator_sums_eq7_over_subtables(adult):
    release = PerturbationPartitioning(rho1=0.077, rho2=0.2).publish(adult, random_state=6)
    domain = release.schema["occupation"].domain
    female = release.codes["sex"] == release.schema["sex"].domain.index("Female")
    for rows, values, query in (
        (np.ones(release.n_rows, dtype=bool), ["Sales"], "occupation = 'Sales'"),
        (female, ["Other-service", "Sales"],
         "sex = 'Female' AND occupation IN ('Other-service', 'Sales')"),
    ):
        codes = [domain.index(v) for v in values]
        total = variance = 0.0
        for i, gamma in enumerate(release.gammas):
            m_i = int(release.domains[i].sum())
            p, q = (gamma - 1) / (m_i - 1 + gamma), 1 / (m_i - 1 + gamma)  # Eq. 4 with m_i
            res = rows & (release.subtable == i)
            size = int(res.sum())
            o = int(np.isin(release.codes["occupation"][res], codes).sum())
            s = int(release.domains[i, codes].sum())  # |S ∩ SA_i|
            total += (o - s * q * size) / p
            # The observed share, clipped to [s q, p + s q], the range a true share allows.
            share = min(max(o / size, s * q), p + s * q)
            variance += size * share * (1 - share) / p ** 2
        estimate = release.count(query)
        assert estimate.value == pytest.approx(total, rel=1e-10)
        assert estimate.stderr == pytest.approx(math.sqrt(variance), rel=1e-10)


@pytest.mark.parametrize(("rho1", "rho2"), [(0.077, 0.2), (0.14, 0.3)])
def test_protected_values_on_adult(adult, rho1, rho2):
    # (0.077, 0.2) leaves the six occupations above 7.7 % unprotected; (0.14, 0.3) protects all
    # (the largest relative frequency is 13.4 %). Both settings are used by the statistical
    # tests in test_perturbation.py.
    protected = PerturbationPartitioning(rho1=rho1, rho2=rho2).partition(adult).protected
    frequencies = occupation_frequencies(adult)
    assert protected.tolist() == (frequencies / frequencies.sum() <= rho1).tolist()
    assert protected.all() == (rho1 == 0.14)
    assert protected.sum() == (8 if rho1 == 0.077 else 14)


def test_partitioning_beats_uniform_on_spread(adult):
    """The point of the paper: at the same privacy, smaller domains give smaller errors. The
    reported standard error of a whole-domain count is smaller for PP than for UP."""
    query = "occupation = 'Sales'"
    up = [UniformPerturbation(rho1=0.077, rho2=0.2).publish(adult, random_state=s).count(query)
          for s in range(5)]
    pp = [PerturbationPartitioning(rho1=0.077, rho2=0.2).publish(adult, random_state=s)
          .count(query) for s in range(5)]
    assert max(e.stderr for e in pp) < min(e.stderr for e in up)


# -- release files ----------------------------------------------------------------------------


def test_release_round_trip_and_file_contents(adult, tmp_path):
    release = PerturbationPartitioning(rho1=0.077, rho2=0.2).publish(adult,
                                                                     random_state=8675309)
    path = release.save(tmp_path / "sdr")
    assert sorted(p.name for p in path.iterdir()) == ["release.json", "row_counts.parquet",
                                                      "rows.parquet", "subtables.parquet"]
    rows = pq.read_table(path / "rows.parquet")
    assert rows.column_names == [*adult.schema.names, "subtable"]  # several sub-tables
    metadata = json.loads((path / "release.json").read_text())
    assert metadata["mechanism"] == "sdr"
    parameters = metadata["parameters"]
    assert set(parameters) == {"rho1", "rho2", "delta", "gamma"}
    assert (parameters["rho1"], parameters["rho2"], parameters["delta"]) == (0.077, 0.2, 0.05)
    assert parameters["gamma"] == pytest.approx(release.gammas.tolist())
    # Nothing else: no seed, no partition counts (only the row total n_rows is public).
    assert set(metadata) == {"format", "format_version", "mechanism", "parameters", "n_rows",
                             "schema", "files", "digests", "metadata_digest"}
    text = (path / "release.json").read_text().lower()
    assert "seed" not in text and "8675309" not in text and "\"counts\"" not in text
    # The sub-table domains SA_i are published, and only them.
    listing = pq.read_table(path / "subtables.parquet")
    domain = adult.schema["occupation"].domain
    published = np.zeros_like(release.domains)
    for i, value in zip(listing.column("subtable").to_pylist(),
                        listing.column("occupation").to_pylist(), strict=True):
        published[i, domain.index(value)] = True
    assert np.array_equal(published, release.domains)

    loaded = ppdp.load_release(path)
    assert type(loaded) is type(release) and loaded.n_subtables == release.n_subtables
    queries = [*QUERIES, "sex = 'Female'"]
    for a, b in zip(loaded.count_all(queries), release.count_all(queries), strict=True):
        np.testing.assert_array_equal(a, b)
    query = "SELECT COUNT(*) FROM t WHERE age > 50 GROUP BY sex, occupation"
    assert loaded.count(query) == release.count(query)


def test_single_subtable_release_has_no_subtable_column(tmp_path):
    # Three equally frequent values: one balanced initial group, so one sub-table.
    data = pa.table({"a": list(range(30)), "s": ["x", "y", "z"] * 10})
    table = table_from_arrow(data, roles={"s": Role.SENSITIVE}, domains={"s": ["x", "y", "z"]})
    release = PerturbationPartitioning(rho1=0.4, rho2=0.6).publish(table, random_state=0)
    assert release.n_subtables == 1
    path = release.save(tmp_path / "one")
    assert pq.read_table(path / "rows.parquet").column_names == ["a", "s"]
    loaded = ppdp.load_release(path)
    assert loaded.count("s = 'x'") == release.count("s = 'x'")


@pytest.mark.parametrize("stored", ["rows", "row_counts"])
def test_tampered_rows_fail_to_load(adult, tmp_path, stored):
    """In the rows (of a release saved without row counts, as when they are too many: loading
    reads the rows), or in the counts of the distinct rows that loading counts from."""
    release = PerturbationPartitioning(rho1=0.077, rho2=0.2).publish(adult, random_state=1)
    with pytest.MonkeyPatch.context() as patch:
        if stored == "rows":
            patch.setattr(ppdp.query.row_counts, "MAX_COUNTED_ROWS", 0)
        path = release.save(tmp_path / "sdr")
    assert (path / "row_counts.parquet").exists() == (stored == "row_counts")
    file = f"{stored}.parquet"
    domain = adult.schema["occupation"].domain
    rows = pq.read_table(path / file)
    subtable = rows.column("subtable").to_numpy()
    occupation = rows.column("occupation").combine_chunks().dictionary_decode().to_pylist()
    # A row of a sub-table whose SA_i lacks some value: give it that value.
    i = next(i for i in range(release.n_subtables) if not release.domains[i].all())
    row = int(np.flatnonzero(subtable == i)[0])
    inside = domain[int(np.flatnonzero(release.domains[i])[0])]
    outside = domain[int(np.flatnonzero(~release.domains[i])[0])]

    def write(value):
        changed = list(occupation)
        changed[row] = value
        column = rows.column_names.index("occupation")
        # Digests recomputed: a crafted release that passes the integrity check.
        rewrite_file(path, file, rows.set_column(column, "occupation", pa.array(changed)))

    write(inside)  # a control: a value within SA_i still loads
    assert ppdp.load_release(path).n_rows == adult.n_rows
    write(outside)
    with pytest.raises(ReleaseError, match="outside its sub-table"):
        ppdp.load_release(path)
    # A published gamma_i <= 1 (no privacy from Eq. 10) is refused as well.
    write(inside)
    edit_metadata(path, lambda metadata: metadata["parameters"]["gamma"].__setitem__(0, 1.0))
    with pytest.raises(ReleaseError, match="gamma > 1"):
        ppdp.load_release(path)


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"rho1": 0.3, "rho2": 0.2}, "rho1 < rho2"),
    ({"rho1": 0.2, "rho2": 0.2}, "rho1 < rho2"),
    ({"rho1": 0.0, "rho2": 0.2}, "rho1 must be"),
    ({"rho1": 1.2, "rho2": 0.2}, "rho1 must be"),
    ({"rho1": 0.1, "rho2": 1.0}, "rho2 must be"),
    ({"rho1": 0.1, "rho2": -0.2}, "rho2 must be"),
    ({"rho1": 0.1, "rho2": 0.2, "delta": 0.0}, "delta"),
    ({"rho1": 0.1, "rho2": 0.2, "delta": 1.0}, "delta"),
    ({"rho1": 0.1, "rho2": 0.2, "delta": float("inf")}, "delta"),
])
def test_invalid_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PerturbationPartitioning(**kwargs)
    with pytest.raises(ValueError, match=message):
        perturbation_partition(EXAMPLE_T, **kwargs)


# -- guarantee --------------------------------------------------------------------------------


@pytest.mark.parametrize(("rho1", "rho2"), [(0.077, 0.2), (0.14, 0.3)])
def test_guarantee_on_adult(adult, rho1, rho2):
    guarantee = PerturbationPartitioning(rho1=rho1, rho2=rho2).guarantee(adult)
    uniform = UniformPerturbation(rho1=rho1, rho2=rho2).guarantee(adult)
    data = guarantee.to_dict()
    assert data["mechanism"] == "sdr"
    assert data["subtables"] >= 1 and data["subtables"] == len(guarantee.subtables)
    # The top-level probabilities are Uniform Perturbation's, kept for comparison.
    assert data["uniform_retention"] == pytest.approx(uniform.retention)
    assert data["uniform_diagonal"] == pytest.approx(uniform.diagonal)
    # Smaller domains, larger retention (Section 1.2).
    assert data["row_weighted_retention"] > uniform.retention
    assert data["mean_retention"] > uniform.retention
    # Eq. 12 is the size-weighted mean of the eps_i, never above the uniform Eq. 11 bound.
    details = data["subtable_details"]
    assert sum(d["rows"] for d in details) == adult.n_rows
    weighted = sum(d["rows"] / adult.n_rows * d["epsilon"] for d in details)
    assert guarantee.epsilon == pytest.approx(weighted)
    assert guarantee.epsilon <= uniform.epsilon
    for d in details:
        # Each sub-table: rho1_i < rho2, gamma_i from Eq. 10, p_i from Eq. 4 with m_i.
        assert d["rho1"] < rho2
        assert d["gamma"] == pytest.approx(float(amplification_gamma(d["rho1"], rho2)))
        p, q = uniform_probabilities(d["gamma"], d["m"])
        assert d["retention"] == pytest.approx(float(p))
        assert d["diagonal"] == pytest.approx(float(p + q))
        assert d["epsilon"] == pytest.approx(float(error_bound(d["rows"], d["m"], d["gamma"],
                                                               0.05)))
