"""What the alpha-beta tests share: Adult's sizes, Example 4.1's domains and view, small integer
tables, tuple keys, the query lists, and the checks of unbiasedness and calibration.
"""

from __future__ import annotations

import math

import numpy as np

from ppdp.data.schema import Column, Role, Schema
from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.mechanisms.alphabeta.privacy import public_row_count
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease
from ppdp.table.table import Table

ADULT_N = 30162
ADULT_M = 648023040
# The row count beta is computed from at (k, gamma) = (10, 0.2): 30,162 rounded up to 4 * 8192,
# so that beta = k n'/(gamma m) does not give n away.
ADULT_PUBLIC_N = public_row_count(ADULT_N, k=10, gamma=0.2)

# Example 4.1: domains age 20..39, nationality {American, British, Indian}, score 81..100
# (m = 20 * 3 * 20 = 1200) and the 12 rows of the view of Table 1(d).
EXAMPLE_VIEW = [(25, "British", 99), (21, "British", 99), (22, "Indian", 89), (32, "Indian", 90),
                (28, "Indian", 99), (29, "American", 81), (33, "American", 94),
                (27, "American", 94), (32, "British", 83), (36, "American", 94),
                (26, "American", 99), (39, "Indian", 94)]
EXAMPLE_PARAMETERS = {"alpha": 2 / 3, "beta": 1 / 150}


def example_schema(columns: tuple[str, ...] = ("age", "nationality", "score")) -> Schema:
    domains = {"age": tuple(range(20, 40)), "nationality": ("American", "British", "Indian"),
               "score": tuple(range(81, 101))}
    return Schema(tuple(Column(c, Role.QUASI_IDENTIFIER, domains[c]) for c in columns))


def example_codes(schema: Schema, rows: list[tuple[int, str, int]]) -> dict[str, np.ndarray]:
    values = {"age": [r[0] for r in rows], "nationality": [r[1] for r in rows],
              "score": [r[2] for r in rows]}
    return {c: np.array([schema[c].domain.index(v) for v in values[c]], dtype=schema[c].dtype)
            for c in schema.names}


def int_table(sizes: dict[str, int], rows: np.ndarray) -> Table:
    """A table of integer columns with domains 0..size-1, rows given as codes (one per line)."""
    schema = Schema(tuple(Column(c, Role.QUASI_IDENTIFIER, tuple(range(s)))
                          for c, s in sizes.items()))
    return Table(schema, {c: np.asarray(rows)[:, i] for i, c in enumerate(sizes)})


def view_keys(release: AlphaBetaRelease) -> np.ndarray:
    return release.domain.keys(release.codes)


def table_keys(table: Table) -> np.ndarray:
    return TupleDomain.of(table.schema).keys(table.codes)


def assert_unbiased(estimates: np.ndarray, truth: float, label: str) -> None:
    """The mean of R independent estimates within 5 standard errors of the truth."""
    estimates = np.asarray(estimates, dtype=float)
    se = estimates.std(ddof=1) / math.sqrt(len(estimates))
    assert abs(estimates.mean() - truth) <= 5 * se, (label, estimates.mean(), truth, se)


def assert_calibrated(estimates: np.ndarray, stderrs: np.ndarray, label: str) -> None:
    """The empirical sd of R estimates over the mean reported stderr within 5 relative sds of 1
    (the sd of a sample sd is about sd/sqrt(2(R - 1)))."""
    ratio = np.std(estimates, ddof=1) / np.mean(stderrs)
    tolerance = 5 / math.sqrt(2 * (len(estimates) - 1))
    assert abs(ratio - 1) <= tolerance, (label, ratio, tolerance)


SMALL_SIZES = {"a": 5, "b": 4, "c": 6}  # m = 120

# Queries whose estimates over seeds are checked on Adult, and cross-column conditions checked
# on the table of Example 4.1's domain.
ADULT_QUERIES = [
    "age < 30",
    "sex = 'Female' OR race = 'Black'",
    "NOT (education IN ('Bachelors', 'Masters', 'Doctorate'))",
    "occupation IN ('Sales', 'Tech-support') AND age >= 40",
    "2 * age + 1 < 61",
    "age = 30 AND sex = 'Female' AND race = 'White' AND education = 'Bachelors'",
]
NUMERIC_QUERIES = ["score < 3*age", "age + score > 120",
                   "score - age >= 60 OR nationality = 'Indian'",
                   "NOT (score >= 2*age + 30) AND nationality IN ('American', 'British')"]
