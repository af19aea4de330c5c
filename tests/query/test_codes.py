"""Distinct values of integer arrays (`ppdp.query.codes.sorted_distinct`): numpy's unique,
found by a sort."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.query.codes import sorted_distinct


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.uint64])
@pytest.mark.parametrize("size", [0, 1, 2, 1000])
@pytest.mark.parametrize("high", [1, 7, 1 << 30])
def test_sorted_distinct_is_numpys_unique(dtype: type, size: int, high: int) -> None:
    rng = np.random.default_rng(size * 31 + high)
    values = rng.integers(0, min(high, np.iinfo(dtype).max), size).astype(dtype)
    got = sorted_distinct(values)
    want = np.unique(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_sorted_distinct_flattens_as_unique_does() -> None:
    values = np.array([[3, 1], [3, 2]])
    np.testing.assert_array_equal(sorted_distinct(values), [1, 2, 3])
