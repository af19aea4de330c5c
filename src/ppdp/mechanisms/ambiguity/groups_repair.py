"""The repair after Step 3 of Algorithm 2: new groups for the residue rows that fit no group.

Ambiguity paper, Section 7 (Theorems 5.1, 7.1 and 7.2); the moves are described at `Repair`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.ambiguity.groups_arrays import CHECK_CELLS, segments
from ppdp.mechanisms.ambiguity.groups_build import GroupBuilder
from ppdp.mechanisms.presence import presence_probability
from ppdp.query.codes import sorted_distinct

_REPAIR_WINDOW = 1024
"""Candidate rows examined per move of the repair."""
_CHECK_BLOCK = 32
"""Best-scoring candidates checked at once for whether their groups can spare them."""


class Repair:
    """New groups for the residue rows that fit no group (the repair after Step 3).

    A stuck row r founds a group N, which grows by two moves until it holds
    ``ceil(1/beta)`` rows and meets alpha:

    * **take** the row that adds the most new quasi-identifier values (Algorithm 4's rule)
      among the rows that may move: other stuck rows, and rows of Step 2 groups that can spare
      them (groups of more than ``ceil(1/beta)`` rows that still meet alpha without the row,
      Theorem 5.1 on G - {t});
    * **swap**, when no row adds a new value: a member m of N trades places with a row t of the
      same sensitive value in a Step 2 group G, when G - {t} + {m} still meets alpha and
      N - {m} + {t} covers more quasi-identifier combinations (each swap raises prod_i m_i of
      N, so swapping ends). Same-value swaps leave every group's sensitive values as they were.

    N takes each sensitive value once, so N and every group that gave or swapped a row stay
    safe (Theorems 7.1-7.2). Stuck rows then join the new groups by Step 3's rule where they
    fit. Candidates are sampled, at most ``_REPAIR_WINDOW`` per move; a row that a group can
    no longer spare is not offered again (groups only shrink or swap here).
    """

    def __init__(self, builder: GroupBuilder) -> None:
        self.b = builder
        b = builder
        self.n_original = b.n_groups
        grouped = np.flatnonzero(b.group_of_rows >= 0)
        # Step 2 groups as segments of one array of rows: group g holds
        # order[start[g] : start[g] + count[g]]; a row leaves by trading places with the last.
        self.order = grouped[np.argsort(b.group_of_rows[grouped], kind="stable")]
        self.count = np.bincount(b.group_of_rows[grouped], minlength=b.n_groups).astype(np.int64)
        self.start = np.cumsum(self.count) - self.count
        self.position = np.full(b.n_rows, -1, dtype=np.int64)
        self.position[self.order] = np.arange(len(self.order))
        self.free = np.zeros(b.n_rows, dtype=bool)
        chunk = max(1, CHECK_CELLS // max(int(self.count.max(initial=1)) * b.n_attributes, 1))
        spare = [grouped[i:i + chunk][self._spare(grouped[i:i + chunk])]
                 for i in range(0, len(grouped), chunk)]
        self.pool = np.concatenate(spare) if spare else grouped

    def _members(self, groups: np.ndarray) -> np.ndarray:
        """The rows of Step 2 groups, one group per line, -1 beyond a group's size."""
        return segments(self.order, self.start, self.count, groups)

    def _distinct(self, members: np.ndarray) -> np.ndarray:
        """Distinct values of each quasi-identifier among each line's rows (-1: no row)."""
        values = np.where(members[:, :, None] >= 0, self.b.values_of(members), -1)
        values = np.sort(values, axis=1)
        changes = (values[:, 1:] != values[:, :-1]) & (values[:, 1:] >= 0)
        return changes.sum(axis=1) + (values[:, 0] >= 0)

    def _original(self, rows: np.ndarray) -> np.ndarray:
        groups = self.b.group_of_rows[rows]
        return (groups >= 0) & (groups < self.n_original)

    def _spare(self, rows: np.ndarray) -> np.ndarray:
        """Whether each row's Step 2 group can give it up and stay safe."""
        b = self.b
        result = np.zeros(len(rows), dtype=bool)
        inside = np.flatnonzero(self._original(rows))
        rows = rows[inside]
        groups = b.group_of_rows[rows]
        members = self._members(groups)
        members[members == rows[:, None]] = -1
        after = presence_probability(self.count[groups] - 1, self._distinct(members))
        result[inside] = (self.count[groups] > b.size) & (after <= b.alpha)
        return result

    def _give(self, row: int) -> None:
        """Take a row out of its Step 2 group (the group's last row fills its place)."""
        group = int(self.b.group_of_rows[row])
        last = self.start[group] + self.count[group] - 1
        here = self.position[row]
        self.order[here] = self.order[last]
        self.position[self.order[here]] = here
        self.position[row] = -1
        self.count[group] -= 1

    def run(self, stuck: np.ndarray, residue: int, name: str,
            domain: Sequence[object] | None) -> None:
        """Found new groups for the stuck rows; InfeasibleError when one cannot reach alpha."""
        b = self.b
        self.free[stuck] = True
        self.pool = np.concatenate([stuck, self.pool])
        # Each stuck row of a value v needs a new group of its own (a group holds v once) with
        # at least ceil(1/beta) - 1 rows of other values, all from the movable rows (swaps
        # only trade rows of one value): when there are too few, fail now rather than after
        # building most of the groups.
        stuck_of = np.bincount(b.sensitive[stuck], minlength=b.sensitive_size)
        movable_of = np.bincount(b.sensitive[self.pool], minlength=b.sensitive_size)
        short = stuck_of * (b.size - 1) > len(self.pool) - movable_of
        if short.any():
            value = int(np.argmax(np.where(short, stuck_of, -1)))
            raise self._error(residue, name, domain, value, (
                f"; its {stuck_of[value]} such rows need new groups of {b.size} or more rows, "
                f"but only {len(self.pool) - movable_of[value]} rows of other values can move"))
        alive = np.ones(len(self.pool), dtype=bool)
        new_groups: list[_NewGroup] = []
        # How many new groups hold each value: a row whose value all of them hold (the usual
        # case: the stuck rows share the most frequent value) need not try them one by one.
        holding = np.zeros(b.sensitive_size, dtype=np.int64)
        for row in stuck[b.rng.permutation(len(stuck))]:
            if not self.free[row]:
                continue  # taken by an earlier new group
            value = int(b.sensitive[row])
            if holding[value] < len(new_groups) and any(group.join(row)
                                                        for group in new_groups):
                self.free[row] = False
                holding[value] += 1
                continue
            group = _NewGroup(b, b.n_groups)
            self._take(group, int(row))
            while group.size < b.size or group.presence() > b.alpha:
                candidates = np.flatnonzero(alive & ~group.holds[b.sensitive[self.pool]])
                if len(candidates) > _REPAIR_WINDOW:
                    candidates = b.rng.choice(candidates, _REPAIR_WINDOW, replace=False)
                best = self._best_movable(group, candidates, alive)
                if best is not None and (group.size < b.size or best[1] > 0):
                    self._take(group, best[0])
                elif not self._swap(group):
                    raise self._error(residue, name, domain, value, "")
            b.n_groups += 1
            new_groups.append(group)
            holding += group.holds

    def _best_movable(self, group: _NewGroup, candidates: np.ndarray, alive: np.ndarray
                      ) -> tuple[int, float] | None:
        """The movable pool row with the best score for the group, and its score; rows found
        not movable are retired. Candidates are checked best first, a block at a time, since
        checking is the costly part and the best few are usually movable."""
        rows = self.pool[candidates]
        score = group.score(rows)
        # Best first, equal scores in random order (a random permutation, then a stable sort).
        shuffle = self.b.rng.permutation(len(rows))
        order = shuffle[np.argsort(-score[shuffle], kind="stable")]
        for start in range(0, len(order), _CHECK_BLOCK):
            block = order[start:start + _CHECK_BLOCK]
            movable = self.free[rows[block]] | self._spare(rows[block])
            alive[candidates[block[~movable]]] = False
            if movable.any():
                best = int(block[np.argmax(movable)])
                return int(rows[best]), float(score[best])
        return None

    def _take(self, group: _NewGroup, row: int) -> None:
        if self.free[row]:
            self.free[row] = False
        else:
            self._give(row)
        group.add(row)

    def _swap(self, group: _NewGroup) -> bool:
        """Trade a member of the new group for a row of the same value in a Step 2 group, the
        trade that raises the new group's prod_i m_i most and keeps the other within alpha;
        False when no trade raises it."""
        b = self.b
        held = np.flatnonzero(group.holds)
        share = max(1, _REPAIR_WINDOW // len(held))
        picks = [b.pool[b.bucket_start[v] + b.rng.integers(0, b.counts[v], min(share,
                                                                                b.counts[v]))]
                 for v in held]
        rows = sorted_distinct(np.concatenate(picks))
        rows = rows[self._original(rows)]
        if not len(rows):
            return False
        mates = group.member_of[b.sensitive[rows]]
        gain = group.trade_gain(mates, rows)
        rows, mates, gain = rows[gain > 0], mates[gain > 0], gain[gain > 0]
        if not len(rows):
            return False
        groups = b.group_of_rows[rows]
        members = self._members(groups)
        members = np.where(members == rows[:, None], mates[:, None], members)
        fits = presence_probability(self.count[groups], self._distinct(members)) <= b.alpha
        if not fits.any():
            return False
        best = int(np.argmax(np.where(fits, gain, -np.inf)))
        row, mate, other = int(rows[best]), int(mates[best]), int(groups[best])
        self.order[self.position[row]] = mate
        self.position[mate], self.position[row] = self.position[row], -1
        group.remove(mate)
        b.group_of_rows[mate] = other
        group.add(row)
        return True

    def _error(self, residue: int, name: str, domain: Sequence[object] | None, value: int,
               detail: str) -> InfeasibleError:
        shown = domain[value] if domain is not None else value
        return InfeasibleError(
            f"{residue} rows are left after the safe groups are built, and a row with "
            f"{name}={shown!r} fits no group: each group either holds that value already or "
            f"would exceed presence alpha={self.b.alpha:g}, and no new group reaches alpha from "
            f"the rows that other groups can spare or trade{detail}; raise alpha, or raise "
            f"beta (allows smaller groups, so more of them to hold each value)")


class _NewGroup:
    """A group founded by the repair: its rows and how often it holds each value."""

    def __init__(self, builder: GroupBuilder, group_id: int) -> None:
        self.b = builder
        self.id = group_id
        self.times = np.zeros(max(builder.n_values, 1), dtype=np.int64)
        self.holds = np.zeros(builder.sensitive_size, dtype=bool)
        self.member_of = np.full(builder.sensitive_size, -1, dtype=np.int64)
        self.distinct = np.zeros(builder.n_attributes, dtype=np.int64)
        self.size = 0

    def presence(self, extra: int = 0, new: np.ndarray | int = 0) -> float:
        return float(presence_probability(np.array([self.size + extra]),
                                          (self.distinct + new)[None, :])[0])

    def score(self, rows: np.ndarray) -> np.ndarray:
        """Algorithm 4's pick: new values weighted by ``log((m_i + 1) / m_i)``, so the best
        row maximises ``prod_i m_i`` (minimises presence)."""
        new = self.times[self.b.values_of(rows)] == 0
        weight = np.where(self.distinct > 0, np.log1p(1.0 / np.maximum(self.distinct, 1)), 1.0)
        return (new * weight[None, :]).sum(axis=1)

    def trade_gain(self, members: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``log prod_i m_i`` gained by trading each member for the row beside it."""
        out, into = self.b.values_of(members), self.b.values_of(rows)
        lost = self.times[out] == 1
        gained = (self.times[into] - (into == out)) == 0
        after = self.distinct[None, :] - lost + gained
        return np.log(np.maximum(after, 1)).sum(axis=1) - np.log(np.maximum(self.distinct,
                                                                            1)).sum()

    def add(self, row: int) -> None:
        values = self.b.values_of(row)
        self.distinct += self.times[values] == 0
        self.times[values] += 1
        value = self.b.sensitive[row]
        self.holds[value] = True
        self.member_of[value] = row
        self.size += 1
        self.b.group_of_rows[row] = self.id

    def remove(self, row: int) -> None:
        values = self.b.values_of(row)
        self.times[values] -= 1
        self.distinct -= self.times[values] == 0
        value = self.b.sensitive[row]
        self.holds[value] = False
        self.member_of[value] = -1
        self.size -= 1

    def join(self, row: int) -> bool:
        """Step 3's rule for a stuck row and this (closed) group: join if the group lacks
        its value and stays within alpha."""
        if self.holds[self.b.sensitive[row]]:
            return False
        if self.presence(1, self.times[self.b.values_of(row)] == 0) > self.b.alpha:
            return False
        self.add(row)
        return True
