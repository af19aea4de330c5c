"""The presence and association of individuals in published groups: the fewest rows of a
group for beta-association, and a group's presence probability (ambiguity paper, Theorems 5.1
and 5.2). Shared by the ambiguity scheme and by the generalization it is compared with
(Mondrian, Section 8), whose classes are measured the same way."""

from __future__ import annotations

import math

import numpy as np


def association_group_size(beta: float) -> int:
    """The fewest rows of distinct sensitive values with ``1/size <= beta``: ceil(1/beta)."""
    size = math.ceil(1.0 / beta)
    # 1/beta can land just above an integer in floating point (1/0.1 is exact, others not).
    return size - 1 if size > 1 and 1.0 / (size - 1) <= beta else size


def presence_probability(group_size: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """``|G| / prod_i |G_ATi|`` (Theorem 5.1) from the group sizes and per-attribute distinct
    counts (one row per group), capped at 1: a group with more rows than its join has
    combinations (repeated quasi-identifier tuples) holds some combination for certain."""
    return np.minimum(1.0, np.asarray(group_size, dtype=np.float64) / np.prod(
        np.asarray(distinct, dtype=np.float64), axis=-1))
