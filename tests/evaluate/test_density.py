"""Tests of the density construction for the ambiguity paper's Figures 9 (2) and 10
(``ppdp.evaluate.density``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ppdp
from ppdp.evaluate.density import density_hosts, with_density
from ppdp.table.table import Table


@pytest.fixture(scope="module")
def adult() -> Table:
    return ppdp.datasets.adult(observed_domains=True, sensitive="occupation")


def _tuples(table: Table) -> np.ndarray:
    return np.stack([table.codes[q] for q in table.schema.quasi_identifiers], axis=1)


@pytest.mark.parametrize("d", [2, 5, 1000])
def test_quasi_identifiers_sit_on_one_row_in_d(adult: Table, d: int) -> None:
    """(100/d) % of the rows host the quasi-identifier values of all: ceil(N/d) hosts, each
    its own, every row holding its host's values; the sensitive values stay in place."""
    hosts = density_hosts(adult, d, random_state=3)
    assert len(np.unique(hosts)) == math.ceil(adult.n_rows / d)
    np.testing.assert_array_equal(hosts[hosts], hosts)
    assert np.bincount(hosts).max() == d
    dense = with_density(adult, d, random_state=3)
    np.testing.assert_array_equal(_tuples(dense), _tuples(adult)[hosts])
    np.testing.assert_array_equal(dense.codes["occupation"], adult.codes["occupation"])
    assert dense.schema == adult.schema
    assert len(np.unique(_tuples(dense), axis=0)) <= math.ceil(adult.n_rows / d)


def test_hosts_are_neighbours_in_the_sort_order(adult: Table) -> None:
    """A row's host shares its first quasi-identifier except where a block of d rows in the
    order of the values crosses from one value to the next."""
    hosts = density_hosts(adult, 5, random_state=3)
    first = adult.codes[adult.schema.quasi_identifiers[0]]
    changed = first != first[hosts]
    # sex has two values: one block at most straddles them.
    assert changed.sum() <= 4


def test_seeded(adult: Table) -> None:
    first = with_density(adult, 3, random_state=7)
    again = with_density(adult, 3, random_state=7)
    other = with_density(adult, 3, random_state=8)
    for name in adult.schema.names:
        np.testing.assert_array_equal(first.codes[name], again.codes[name])
    assert any((first.codes[q] != other.codes[q]).any()
               for q in adult.schema.quasi_identifiers)


def test_density_one_is_the_table(adult: Table) -> None:
    np.testing.assert_array_equal(density_hosts(adult, 1, random_state=0),
                                  np.arange(adult.n_rows))


@pytest.mark.parametrize("bad", [0, -2, 2.5, True])
def test_rejects_bad_d(adult: Table, bad: object) -> None:
    with pytest.raises(ValueError, match="d must be a positive integer"):
        density_hosts(adult, bad)  # type: ignore[arg-type]
