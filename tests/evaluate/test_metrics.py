"""Tests of the relative-error measures in ppdp.evaluate.metrics (SPLU-Gen Section 6.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.evaluate.metrics import (
    average_relative_error,
    by_band,
    error_above_selectivity,
    relative_errors,
)


def test_relative_errors_by_hand() -> None:
    # |10 - 12| / 10 = 0.2, |4 - 4| / 4 = 0, |2 - 1| / 2 = 0.5, |5 - (-5)| / 5 = 2
    errors = relative_errors([10, 4, 2, 5], [12, 4, 1, -5])
    np.testing.assert_allclose(errors, [0.2, 0.0, 0.5, 2.0])


def test_average_relative_error_by_hand() -> None:
    # (0.2 + 0 + 0.5) / 3
    assert average_relative_error([10, 4, 2], [12.0, 4.0, 1.0]) == pytest.approx(0.7 / 3)
    assert average_relative_error(np.array([100.0]), np.array([90.0])) == pytest.approx(0.1)
    assert math.isnan(average_relative_error([], []))


@pytest.mark.parametrize("truth", [[0, 3], [-1, 3], [float("nan"), 3]])
def test_truth_must_be_positive(truth: list[float]) -> None:
    with pytest.raises(ValueError, match="> 0"):
        relative_errors(truth, [1, 1])


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="length"):
        average_relative_error([1, 2, 3], [1, 2])


def test_by_band_by_hand() -> None:
    n_rows = 1000
    # selectivities: 0.005 (below the bands), 0.01 and 0.015 (band 0), 0.02 and 0.025 (band 1),
    # 0.03 (band 2: bands are [lo, hi), so a selectivity on an edge belongs to the upper band).
    truth = [5, 10, 15, 20, 25, 30]
    estimate = [0, 11, 12, 20, 30, 0]
    # relative errors: band 0: 0.1 and 0.2; band 1: 0 and 0.2; band 2: 1.
    bands = by_band(truth, estimate, n_rows, [0.01, 0.02, 0.03, 0.04])
    assert [(lo, hi, n) for lo, hi, n, _ in bands] == [(0.01, 0.02, 2), (0.02, 0.03, 2),
                                                       (0.03, 0.04, 1)]
    assert bands[0][3] == pytest.approx(0.15)
    assert bands[1][3] == pytest.approx(0.1)
    assert bands[2][3] == pytest.approx(1.0)
    empty = by_band(truth, estimate, n_rows, [0.5, 0.6])
    assert empty[0][2] == 0 and math.isnan(empty[0][3])


def test_by_band_rejects_bad_edges() -> None:
    with pytest.raises(ValueError, match="increasing"):
        by_band([1], [1], 10, [0.2, 0.1])
    with pytest.raises(ValueError, match="n_rows"):
        by_band([1], [1], 0, [0.1, 0.2])


def test_error_above_selectivity_by_hand() -> None:
    # n = 1000 rows: selectivity 0.1 % is a true count of 1, 1 % a count of 10.
    truth = [0, 1, 5, 10, 20]
    estimate = [3, 2, 5, 15, 10]
    assert error_above_selectivity(truth, estimate, 1000, 0.001) == (4, (1 + 0 + 0.5 + 0.5) / 4)
    assert error_above_selectivity(truth, estimate, 1000, 0.01) == (2, (0.5 + 0.5) / 2)
    count, value = error_above_selectivity(truth, estimate, 1000, 0.5)
    assert count == 0 and np.isnan(value)
    with pytest.raises(ValueError, match="length"):
        error_above_selectivity([1, 2], [1], 1000, 0.001)
