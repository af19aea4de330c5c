"""Decoy / anatomized groups: invariants of the shared construction (SPLU-Gen Section 3.1)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.grouping import _draw_slots, distinct_value_groups, largest_feasible_size


@st.composite
def eligible_columns(draw):
    size = draw(st.integers(2, 6))
    domain = draw(st.integers(size, 12))
    n_rows = draw(st.integers(size, 400))
    weights = np.asarray(draw(st.lists(st.integers(5, 20), min_size=domain, max_size=domain)))
    seed = draw(st.integers(0, 2**31))
    values = np.random.default_rng(seed).choice(domain, size=n_rows, p=weights / weights.sum())
    values = values.astype(np.uint8)
    # Ineligible draws are covered by the error tests.
    assume(np.bincount(values, minlength=domain).max() <= n_rows // size)
    return values, size, domain


def partition(values, size, domain, **kwargs):
    return distinct_value_groups(values, size, domain_size=domain, column="s", symbol="gamma",
                                 **kwargs)


@settings(max_examples=150, deadline=None)
@given(eligible_columns())
def test_groups_hold_distinct_values_and_every_row_once(case):
    values, size, domain = case
    groups = partition(values, size, domain)
    members = groups.members
    assert groups.n_groups == len(values) // size
    rows = members[members >= 0]
    assert np.array_equal(np.sort(rows), np.arange(len(values)))  # every row exactly once
    for g in range(groups.n_groups):
        group_values = values[members[g, : groups.sizes[g]]]
        assert len(set(group_values.tolist())) == len(group_values)
    assert groups.sizes.min() >= size
    if len(values) >= size * (size - 1):
        # N = r*gamma + rem with rem < gamma <= r + 1: at most one extra row per group.
        assert set(np.unique(groups.sizes).tolist()) <= {size, size + 1}
    assert np.array_equal(groups.group_of_rows()[members[0, : groups.sizes[0]]],
                          np.zeros(groups.sizes[0]))
    # The values beside the members, padding (the domain size) where there is no row.
    held = np.where(members >= 0, values[np.maximum(members, 0)], domain)
    assert np.array_equal(groups.values, held)
    labels = np.arange(groups.n_groups)[::-1]
    assert np.array_equal(groups.group_of_rows(labels), labels[groups.group_of_rows()])


@settings(max_examples=30, deadline=None)
@given(eligible_columns())
def test_partition_is_deterministic(case):
    values, size, domain = case
    first, second = partition(values, size, domain), partition(values, size, domain)
    assert np.array_equal(first.members, second.members)


def test_infeasible_size_names_the_largest_feasible():
    values = np.array([0] * 5 + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 1, dtype=np.uint8)  # N=15
    assert largest_feasible_size(values, 11) == 3
    with pytest.raises(InfeasibleError, match="largest feasible gamma is 3"):
        partition(values, 4, 11)
    with pytest.raises(InfeasibleError, match="no gamma >= 2 is feasible"):
        partition(np.zeros(10, dtype=np.uint8), 2, 3)


def test_mixing_spreads_co_occurrence():
    """Without mixing a value shares groups with a few neighbours only; after it, every value
    meets every other in roughly the proportion f_s (gamma-1)/(N-f_s) (Section 5.1's model)."""
    rng = np.random.default_rng(3)
    domain, size = 12, 4
    values = rng.choice(domain, size=12_000, p=np.linspace(1, 3, domain) / np.linspace(
        1, 3, domain).sum()).astype(np.uint8)
    frequencies = np.bincount(values, minlength=domain)

    def worst_deviation(groups):
        group = groups.group_of_rows()
        worst = 0.0
        for s in range(domain):
            holds = np.zeros(groups.n_groups, dtype=bool)
            holds[group[values == s]] = True
            rate = np.bincount(values, weights=holds[group], minlength=domain) / frequencies
            expected = frequencies[s] * (size - 1) / (len(values) - frequencies[s])
            worst = max(worst, float(np.abs(np.delete(rate, s) - expected).max()))
        return worst

    # A uniformly random valid partition has binomial-like spread: a rate estimated from
    # ~1000 rows has standard deviation about sqrt(0.3*0.7/1000) ~ 0.015; 0.08 is > 5 of them.
    assert worst_deviation(partition(values, size, domain, mixing_rounds=0)) > 0.3
    assert worst_deviation(partition(values, size, domain)) < 0.08


def test_membership_carries_no_trace_of_the_row_order():
    """Rows given sorted by value and, within a value, in an order that means something (here:
    their ids): group mates' ids say nothing about a row's id beyond its value."""
    domain, size = 10, 5
    values = np.repeat(np.arange(domain, dtype=np.uint8), 2_000)
    groups = partition(values, size, domain)
    group = groups.group_of_rows()
    ids = np.arange(len(values), dtype=float)
    mates = (np.bincount(group, weights=ids)[group] - ids) / (groups.sizes[group] - 1)
    # Within a value, 2000 rows: a correlation of about +-0.022 by chance; 0.1 is > 4 of them.
    for s in range(domain):
        rows = values == s
        assert abs(np.corrcoef(ids[rows], mates[rows])[0, 1]) < 0.1


@pytest.mark.parametrize("widths", [[5], [4, 5]])
def test_members_drawn_for_a_swap_are_uniform_over_each_group(widths):
    """The mixing draws one member per group, uniformly among its 4 or 5 members."""
    sizes = np.resize(np.asarray(widths), 120_000)
    slots = _draw_slots(np.random.default_rng(1), sizes, 5)
    for size in widths:
        shares = np.bincount(slots[sizes == size], minlength=5) / np.sum(sizes == size)
        # Each share has sd at most sqrt(0.25 * 0.75 / 60000) < 0.002; 0.01 is 5 of them.
        assert np.all(np.abs(shares[:size] - 1 / size) < 0.01) and shares[size:].sum() == 0
