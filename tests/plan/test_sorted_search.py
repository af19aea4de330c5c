"""The table-driven search answers exactly as numpy's searchsorted."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.plan.sorted_search import GroupedSortedSearch, SortedSearch


@pytest.mark.parametrize("side", ["left", "right"])
@given(edges=st.lists(st.floats(-0.5, 1.5, allow_nan=False), max_size=40),
       values=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=200),
       seed=st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_floats_as_numpy(side, edges, values, seed):
    rng = np.random.default_rng(seed)
    # Edges that are bin boundaries, values next to them, and uniform draws.
    edges = np.sort(np.concatenate([edges, rng.integers(0, 1 << 16, 5) / 2.0**16]))
    values = np.concatenate([values, edges, np.nextafter(edges, -np.inf),
                             np.nextafter(edges, np.inf), rng.random(1000)])
    np.testing.assert_array_equal(SortedSearch(edges, side)(values),
                                  np.searchsorted(edges, values, side=side))
    assert_equal_values_searched(SortedSearch(edges, side), edges, values)


def assert_equal_values_searched(search, edges, values):
    """Every value equal to an edge is among those `search` reports it looked up."""
    answers, searched = search.search(values)
    np.testing.assert_array_equal(answers, np.searchsorted(edges, values, side=search.side))
    assert set(np.flatnonzero(np.isin(values, edges)).tolist()) <= set(searched.tolist())


@pytest.mark.parametrize("side", ["left", "right"])
@given(edges=st.lists(st.integers(0, 2**64 - 1), max_size=40),
       seed=st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_unsigned_words_as_numpy(side, edges, seed):
    rng = np.random.default_rng(seed)
    edges = np.sort(np.array(edges, dtype=np.uint64))
    values = np.concatenate([edges, edges - np.uint64(1), edges + np.uint64(1),
                             np.array([0, 2**64 - 1], dtype=np.uint64),
                             rng.integers(0, 2**64 - 1, 1000, dtype=np.uint64)])
    np.testing.assert_array_equal(SortedSearch(edges, side)(values),
                                  np.searchsorted(edges, values, side=side))
    assert_equal_values_searched(SortedSearch(edges, side), edges, values)


def test_other_types_are_refused_or_converted():
    with pytest.raises(TypeError, match="uint64 or float64"):
        SortedSearch(np.array([1, 2, 3], dtype=np.int32))
    search = SortedSearch(np.array([0.25, 0.5]), "right")
    assert search(np.array([0, 1], dtype=np.int64)).tolist() == [0, 2]


@pytest.mark.parametrize("side", ["left", "right"])
@given(edges=st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=30), max_size=6),
       crowded=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_grouped_words_as_numpy_in_each_group(side, edges, crowded, seed):
    """Each group answers as numpy's searchsorted on its own edges, in slots ``base[g] + j``;
    a group whose edges crowd into one bin (``crowded`` equal leading bits) is searched within
    that bin."""
    rng = np.random.default_rng(seed)
    groups = [np.sort(np.array(e, dtype=np.uint64)) for e in edges]
    groups.append(np.sort(np.uint64(7 << 56)
                          + rng.integers(0, 1 << 20, crowded, dtype=np.uint64)))
    search = GroupedSortedSearch(groups, side)
    group = rng.integers(0, len(groups), 3000)
    values = rng.integers(0, 2**64 - 1, 3000, dtype=np.uint64)
    for g, e in enumerate(groups):
        # Values equal to each edge, next to it, and at the ends, in the edge's group.
        near = np.concatenate([e, e - np.uint64(1), e + np.uint64(1),
                               np.array([0, 2**64 - 1], dtype=np.uint64)])
        group = np.concatenate([group, np.full(len(near), g)])
        values = np.concatenate([values, near])
    answers, searched = search.search(group, values)
    expected = np.array([np.searchsorted(groups[g], v, side=side)
                         for g, v in zip(group, values, strict=True)])
    np.testing.assert_array_equal(answers - search.base[group], expected)
    np.testing.assert_array_equal(search.position[answers], expected)
    on_edge = [v in set(groups[g].tolist()) for g, v in zip(group, values.tolist(), strict=True)]
    assert set(np.flatnonzero(on_edge).tolist()) <= set(searched.tolist())


def test_grouped_edges_must_be_sorted():
    with pytest.raises(ValueError, match="sorted"):
        GroupedSortedSearch([np.array([1, 2], dtype=np.uint64),
                             np.array([5, 3], dtype=np.uint64)])
