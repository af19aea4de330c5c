"""Fixtures of the alpha-beta tests: Adult with observed domains, a small table of distinct tuples
and a table on Example 4.1's domain whose tuples repeat (a module that defines a fixture of
the same name uses its own).
"""

from __future__ import annotations

import numpy as np
import pytest

import ppdp
from ppdp.table.table import Table
from tests.mechanisms.alphabeta.alphabeta_helpers import SMALL_SIZES, example_schema, int_table


@pytest.fixture(scope="module")
def adult() -> Table:
    # The paper's setting (m = 648,023,040): the domains are the values present.
    return ppdp.datasets.adult(observed_domains=True)


@pytest.fixture(scope="module")
def small_table() -> Table:
    """10 distinct tuples of the 5 x 4 x 6 domain, one row each."""
    keys = np.random.default_rng(11).choice(120, size=10, replace=False)
    return int_table(SMALL_SIZES, np.stack(np.unravel_index(keys, (5, 4, 6)), axis=1))


@pytest.fixture(scope="module")
def example_table() -> Table:
    """600 rows on the Example 4.1 domain (m = 1200), so many tuples repeat."""
    rng = np.random.default_rng(5)
    schema = example_schema()
    codes = {"age": rng.integers(0, 20, 600), "nationality": rng.choice(3, 600, p=[.5, .3, .2]),
             "score": np.minimum(rng.poisson(8, 600), 19)}
    return Table(schema, codes)
