"""The QI-groups of an ambiguity scheme: Algorithm 2 of the ambiguity paper (Section 7).

A group is *safe* when it takes each sensitive value at most once, holds at least
``ceil(1/beta)`` rows (so every association probability ``c/|G| = 1/|G|`` is at most beta,
Theorem 5.2) and has presence probability ``|G| / prod_i m_i <= alpha``, where ``m_i`` is the
number of distinct values of quasi-identifier i in the group (Theorem 5.1, Algorithm 3).

Algorithm 2 builds groups one at a time: a row from each of the ``ceil(1/beta)`` largest
sensitive buckets, each chosen (Algorithm 4) to add the most new quasi-identifier values, then
more rows of other sensitive values until the presence probability is at most alpha. Rows left
when fewer than ``ceil(1/beta)`` buckets remain (the residue) join the first group that lacks
their sensitive value and stays within alpha.

Scanning every unpicked row for each pick costs O(N) per row, O(N^2) in all; Step 2 instead
picks from a bounded candidate set and builds many groups side by side (`groups_build`), so
that a pick costs O(candidates * k) array work. The guarantees do not depend on which
candidate is taken. Step 3 places the residue under the same checks as in the paper
(`groups_residue`); rows that fit no group are repaired (`groups_repair`).

Feasibility should depend on the table, not on the random state. Algorithm 2 fails when a
residue row fits no group; near the edge (the most frequent value in every group, and groups
grown past ``ceil(1/beta)`` rows to reach alpha having used up the rows it needs as partners)
whether that happens turns on the random picks. So: the conditions that the counts alone
decide are checked first (``check_feasible``); a residue row that fits no group founds a new
group with rows that other groups can spare or trade (`groups_repair`); and small tables, whose
outcome rests on few random choices, get a few more attempts with fresh picks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.ambiguity.groups_arrays import sorted_unique
from ppdp.mechanisms.ambiguity.groups_build import GroupBuilder
from ppdp.mechanisms.ambiguity.groups_residue import place_residue
from ppdp.mechanisms.presence import association_group_size, presence_probability

__all__ = [
    "CANDIDATES",
    "MAX_LANES",
    "AmbiguityGroups",
    "ambiguity_groups",
    "association_group_size",
    "presence_probability",
    "sorted_unique",
]

CANDIDATES = 16
"""Rows examined per pick (the bounded candidate set)."""

MAX_LANES = 4096
"""Groups built side by side; fewer when the quasi-identifier domains are large."""

_RETRY_ROWS = 1 << 14
_MAX_RETRIES = 15
"""Further attempts after a failed construction: ``min(15, 16,384 // N)``, so 15 up to 1,092
rows, 2 at 8,192 and none above 16,384 (Adult's 30,162 rows get one attempt)."""


@dataclass(frozen=True)
class AmbiguityGroups:
    """The partition: ``group_of_rows[r]`` is the group of row r (0 .. n_groups - 1)."""

    group_of_rows: np.ndarray
    n_groups: int
    residue_rows: int
    """Rows placed by Step 3 (the residue) rather than by Step 2."""


def ambiguity_groups(quasi: Sequence[np.ndarray], quasi_sizes: Sequence[int],
                     sensitive: np.ndarray, sensitive_size: int, *, alpha: float,
                     beta: float, rng: np.random.Generator, sensitive_name: str = "sensitive",
                     domain: Sequence[object] | None = None, candidates: int = CANDIDATES,
                     max_lanes: int = MAX_LANES) -> AmbiguityGroups:
    """Partition the rows into safe QI-groups (Algorithm 2 with bounded-candidate picks).

    ``quasi``: the code arrays of the quasi-identifiers; ``sensitive``: the sensitive codes.
    Raises InfeasibleError when the counts rule every partition out (too few distinct
    sensitive values, one value too frequent for beta, or for the group size alpha needs), or
    when residue rows fit no group and no new group can be made for them.
    """
    size = association_group_size(beta)
    # Small tables get a few more attempts with fresh random picks when the repair fails:
    # their outcome rests on few random choices and an attempt is cheap; large ones average
    # over many and the repair decides them (see ``_MAX_RETRIES``).
    attempts = 1 + min(_MAX_RETRIES, _RETRY_ROWS // max(len(sensitive), 1))
    for attempt in range(attempts):
        builder = GroupBuilder(quasi, quasi_sizes, sensitive, sensitive_size, alpha, size,
                               rng, candidates, max_lanes)
        if attempt == 0:
            builder.check_feasible(beta, sensitive_name, domain)
        builder.build_safe_groups()
        try:
            residue = place_residue(builder, sensitive_name, domain)
        except InfeasibleError:
            if attempt == attempts - 1:
                raise
            continue
        return AmbiguityGroups(builder.group_of_rows, builder.n_groups, residue)
    raise AssertionError("unreachable: the last attempt returns or raises")
