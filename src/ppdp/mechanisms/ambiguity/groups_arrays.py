"""Array helpers of the QI-group construction: groups as segments of one array, sorted keys.

Ambiguity paper, Section 7 (Algorithm 2); also the bound on the cells that Step 3 and the
repair compare at once.
"""

from __future__ import annotations

import numpy as np

CHECK_CELLS = 1 << 22
"""(rows x groups x rows of a group) cells compared at once when a row tries every group."""


def segments(rows: np.ndarray, start: np.ndarray, count: np.ndarray, groups: np.ndarray
             ) -> np.ndarray:
    """The rows of groups stored as segments ``rows[start[g] : start[g] + count[g]]``, along a
    new last axis, -1 beyond a group's size."""
    slots = np.arange(int(count[groups].max(initial=1)))
    index = np.minimum(start[groups][..., None] + slots, len(rows) - 1)
    return np.where(slots < count[groups][..., None], rows[index], -1)


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """np.unique by sorting (faster than hashing for large int64 arrays)."""
    keys = np.sort(keys, kind="stable")
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys
