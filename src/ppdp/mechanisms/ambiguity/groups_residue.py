"""Step 3 of Algorithm 2: the rows left by Step 2 join groups that lack their sensitive value.

Ambiguity paper, Section 7. Residues are placed under the same checks as in the paper; Step 3
looks up the rows of the groups it offers a row to, and the rows that fit no group go to the
repair (`groups_repair`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.ambiguity.groups_arrays import CHECK_CELLS, segments, sorted_unique
from ppdp.mechanisms.ambiguity.groups_build import GroupBuilder
from ppdp.mechanisms.ambiguity.groups_repair import Repair
from ppdp.mechanisms.presence import presence_probability

_RESIDUE_ROUNDS = 8
"""Rounds in which each residue row tries ``candidates`` random groups."""


def place_residue(builder: GroupBuilder, name: str, domain: Sequence[object] | None) -> int:
    """Step 3: every row not in a safe group joins a group that lacks its sensitive value
    and stays within alpha with it; rows that fit no group found new groups (repair).

    Rows are placed in rounds, each row trying ``candidates`` random groups (at most one
    row joins a group per round); rows that find none are checked against every group
    that lacks their value, as in the paper. Algorithm 2 stops there and fails when a row
    fits no group, which happens near the edge of feasibility (the most frequent value in
    every group, with fewer groups than its rows, after groups grew past
    ``ceil(1/beta)`` rows to reach alpha) and, depending on the random picks, for some
    seeds only. Such rows are repaired instead (``Repair``): each founds a new group
    with rows that other groups can spare or trade.
    """
    b = builder
    left = [b.pool[b.bucket_start[bucket] + b.taken[bucket]:
                   b.bucket_start[bucket] + b.taken[bucket] + b.remaining[bucket]]
            for bucket in np.flatnonzero(b.remaining)]
    residue = np.concatenate([*left, *b.unplaced]).astype(np.int64) \
        if left or b.unplaced else np.zeros(0, dtype=np.int64)
    if not len(residue):
        return 0
    if b.n_groups == 0:
        # Every group of Step 2 ran out of sensitive values before reaching alpha; beta
        # plays no part (groups grow past ceil(1/beta) rows as far as alpha needs).
        raise InfeasibleError(
            f"no group of {b.size} or more rows with distinct values of {name!r} "
            f"reaches presence <= alpha={b.alpha:g}; raise alpha, or add "
            f"quasi-identifiers")
    index = _GroupIndex(b)
    pending = residue[b.rng.permutation(len(residue))]
    # A value held by every group (groups hold a value at most once, so its grouped rows
    # count the groups holding it) leaves its rows no group to join: straight to repair.
    held = np.bincount(b.sensitive[b.group_of_rows >= 0], minlength=b.sensitive_size)
    everywhere = held[b.sensitive[pending]] >= b.n_groups
    stuck = [pending[everywhere]]
    pending = pending[~everywhere]
    for _ in range(_RESIDUE_ROUNDS):
        if not len(pending):
            break
        groups = b.rng.integers(0, b.n_groups, size=(len(pending), b.candidates))
        pending = _join(b, index, pending, groups)
    # Then every group that lacks the row's value, value by value (rows of one value
    # compete for the same groups), in chunks of rows that keep the (rows x groups x
    # rows of a group) arrays bounded. A row that fits no group at all is repaired below.
    for value in np.unique(b.sensitive[pending]):
        rows = pending[b.sensitive[pending] == value]
        while len(rows):
            members = b.pool[b.bucket_start[value]:
                             b.bucket_start[value] + b.counts[value]]
            lacking = np.ones(b.n_groups, dtype=bool)
            lacking[b.group_of_rows[members][b.group_of_rows[members] >= 0]] = False
            groups = np.flatnonzero(lacking)
            if not len(groups):
                stuck.append(rows)
                break
            chunk = max(1, CHECK_CELLS // (len(groups) * index.width))
            batch = rows[:chunk]
            every = np.broadcast_to(groups, (len(batch), len(groups)))
            fits, new = index.fits(every, batch)
            has = fits.any(axis=1)
            stuck.append(batch[~has])
            left_over = _place(b, index, batch[has], every[has], fits[has], new[has],
                               spread=True)
            rows = np.concatenate([left_over, rows[chunk:]])
    stuck_rows = np.concatenate(stuck) if stuck else np.zeros(0, dtype=np.int64)
    if len(stuck_rows):
        Repair(b).run(stuck_rows, len(residue), name, domain)
    return len(residue)


def _join(builder: GroupBuilder, index: _GroupIndex, rows: np.ndarray, groups: np.ndarray
          ) -> np.ndarray:
    """Each row joins the first of its candidate groups (axis 1) that it fits, at most one
    row per group (a group's presence changes once a row joins it); returns the rows that
    joined none."""
    if not len(rows):
        return rows
    fits, new = index.fits(groups, rows)
    return _place(builder, index, rows, groups, fits, new)


def _place(builder: GroupBuilder, index: _GroupIndex, rows: np.ndarray, groups: np.ndarray,
           fits: np.ndarray, new: np.ndarray, *, spread: bool = False) -> np.ndarray:
    """``_join`` given the fits (a random fitting group with ``spread``, so that rows
    offered the same groups pick different ones)."""
    if not len(rows):
        return rows
    has = fits.any(axis=1)
    first = np.argmax(
        np.where(fits, builder.rng.random(fits.shape), -1.0) if spread else fits, axis=1)
    joining, target = rows[has], groups[has, first[has]]
    gains = new[has, first[has]]
    _, keep = np.unique(target, return_index=True)
    index.add(target[keep], joining[keep], gains[keep])
    builder.group_of_rows[joining[keep]] = target[keep]
    placed = np.zeros(len(rows), dtype=bool)
    placed[np.flatnonzero(has)[keep]] = True
    return rows[~placed]


class _GroupIndex:
    """The groups of Step 2 for Step 3: their rows, sizes and distinct counts as built, and
    the rows Step 3 adds to them."""

    def __init__(self, builder: GroupBuilder) -> None:
        self.b = builder
        self.rows = builder.group_rows[:builder.grouped]
        self.count = builder.group_size[:builder.n_groups]
        self.start = np.cumsum(self.count) - self.count
        self.width = int(self.count.max(initial=1))
        self.size = self.count.copy()
        self.distinct = builder.group_distinct[:builder.n_groups]
        # Step 3's additions as keys group * n_values + value and group * n_sensitive + value.
        self.added_values = _KeySet()
        self.added_held = _KeySet()

    def fits(self, groups: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each row (axis 0) and candidate group (axis 1): whether the row may join it,
        and which of the row's values would be new to it."""
        b = self.b
        members = segments(self.rows, self.start, self.count, groups)

        def held(column: np.ndarray) -> np.ndarray:
            """Whether each group's rows of Step 2 hold the row's value of the column."""
            return ((column[members] == column[rows][:, None, None]) & (members >= 0)).any(axis=2)

        lacks = ~(held(b.sensitive) | self.added_held.contains(
            groups * b.sensitive_size + b.sensitive[rows][:, None]))
        new = ~(np.stack([held(q) for q in b.quasi], axis=-1) | self.added_values.contains(
            groups[:, :, None] * b.n_values + b.values_of(rows)[:, None, :]))
        presence = presence_probability(self.size[groups] + 1, self.distinct[groups] + new)
        return lacks & (presence <= b.alpha), new

    def add(self, groups: np.ndarray, rows: np.ndarray, new: np.ndarray) -> None:
        """Each row joins its group (distinct groups); ``new``: its values new to the group."""
        b = self.b
        self.size[groups] += 1
        self.distinct[groups] += new
        self.added_values.add((groups[:, None] * b.n_values + b.values_of(rows))[new])
        self.added_held.add(groups * b.sensitive_size + b.sensitive[rows])


class _KeySet:
    """A set of int64 keys, as a sorted array (Step 3 adds few)."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.int64)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return _member(self.keys, keys)

    def add(self, keys: np.ndarray) -> None:
        self.keys = sorted_unique(np.concatenate([self.keys, keys.ravel()]))


def _member(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(keys.shape, dtype=bool)
    index = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[index] == keys
