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

Scanning every unpicked row for each pick costs O(N) per row, O(N^2) in all. Here the pick
touches a bounded candidate set and many groups are built side by side:

* **Lanes.** A batch of up to ``max_lanes`` groups is built at once, one pick per group per
  step, so every step is a handful of array operations over the batch.
* **Buckets by water-filling.** Each group needs ``ceil(1/beta)`` distinct buckets. The batch
  takes its picks from the largest buckets, lowering them to a common level (the aggregate of
  "start from the largest buckets" applied group after group), and deals them to the groups
  cyclically, so no group gets a bucket twice.
* **Bounded candidates.** Each bucket's rows wait in a queue in random order. A group picking
  from a bucket examines a window of ``candidates`` rows of that queue (disjoint from the
  windows of the other groups picking from it in the same step) and takes the row that adds
  the most: new values are weighted by ``log((m_i + 1) / m_i)``, so the pick maximises the
  product ``prod_i m_i``, i.e. minimises the presence probability (Algorithm 4's intent).
  Rows examined but not taken stay at the front of the queue.
* **Queues in place.** The quasi-identifier values of the queued rows are kept in queue order
  beside the rows, so a window is read from a few nearby stretches of memory, not from rows
  scattered over the table. When u groups pick from one bucket, group r's window is every
  u-th slot from the queue's head + r, and the row it takes trades places with its window's
  first slot: the head's u slots then hold the rows taken, and a pick moves two slots, not
  the window. A taken row keeps its slot, so a failed group can give its rows back.

The guarantees do not depend on which candidate is taken: every group still takes each
sensitive value once, has at least ``ceil(1/beta)`` rows and is closed only at presence <=
alpha; residues are placed under the same checks as in the paper. A pick costs
O(candidates * k) array work, and each group a bitmap row of the quasi-identifier values
while it is built; Step 3 looks up the rows of the groups it offers a row to.

Feasibility should depend on the table, not on the random state. Algorithm 2 fails when a
residue row fits no group; near the edge (the most frequent value in every group, and groups
grown past ``ceil(1/beta)`` rows to reach alpha having used up the rows it needs as partners)
whether that happens turns on the random picks. So: the conditions that the counts alone
decide are checked first (``check_feasible``); a residue row that fits no group founds a new
group with rows that other groups can spare or trade (``_Repair``); and small tables, whose
outcome rests on few random choices, get a few more attempts with fresh picks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.data.schema import code_dtype
from ppdp.errors import InfeasibleError

CANDIDATES = 16
"""Rows examined per pick (the bounded candidate set)."""

MAX_LANES = 4096
"""Groups built side by side; fewer when the quasi-identifier domains are large."""

_BITMAP_BYTES = 1 << 26
_RESIDUE_ROUNDS = 8
_CHECK_CELLS = 1 << 22
"""(rows x groups x rows of a group) cells compared at once when a row tries every group."""
_REPAIR_WINDOW = 1024
"""Candidate rows examined per move of the repair."""
_CHECK_BLOCK = 32
"""Best-scoring candidates checked at once for whether their groups can spare them."""
_RETRY_ROWS = 1 << 14
_MAX_RETRIES = 15
"""Further attempts after a failed construction: ``min(15, 16,384 // N)``, so 15 up to 1,092
rows, 2 at 8,192 and none above 16,384 (Adult's 30,162 rows get one attempt)."""


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
        builder = _Builder(quasi, quasi_sizes, sensitive, sensitive_size, alpha, size, rng,
                           candidates, max_lanes)
        if attempt == 0:
            builder.check_feasible(beta, sensitive_name, domain)
        builder.build_safe_groups()
        try:
            residue = builder.place_residue(sensitive_name, domain)
        except InfeasibleError:
            if attempt == attempts - 1:
                raise
            continue
        return AmbiguityGroups(builder.group_of_rows, builder.n_groups, residue)
    raise AssertionError("unreachable: the last attempt returns or raises")


class _Builder:
    def __init__(self, quasi: Sequence[np.ndarray], quasi_sizes: Sequence[int],
                 sensitive: np.ndarray, sensitive_size: int, alpha: float, size: int,
                 rng: np.random.Generator, candidates: int, max_lanes: int) -> None:
        if not len(quasi):
            raise ValueError("ambiguity groups need at least one quasi-identifier")
        self.n_rows = len(sensitive)
        self.alpha = alpha
        self.size = size
        self.rng = rng
        self.candidates = candidates
        self.sensitive = np.asarray(sensitive)
        self.sensitive_size = sensitive_size
        self.quasi = [np.asarray(q) for q in quasi]
        self.n_attributes = len(quasi)
        # Global value ids: attribute offset + code.
        self.offsets = np.concatenate([[0], np.cumsum(quasi_sizes)[:-1]]).astype(np.int64)
        self.n_values = int(np.sum(quasi_sizes))
        self.max_lanes = max(1, min(max_lanes, _BITMAP_BYTES // max(self.n_values, 1)))
        # Bucket queues: rows grouped by sensitive value, in random order within a value.
        order = rng.permutation(self.n_rows)
        self.pool = order[np.argsort(self.sensitive[order], kind="stable")]
        # Each row's values as one item (a window is gathered item by item), in queue order.
        self.value_dtype = code_dtype(max(self.n_values, 1))
        values = np.empty((self.n_rows, self.n_attributes), dtype=self.value_dtype)
        for i, q in enumerate(self.quasi):
            values[:, i] = q
        values += self.offsets.astype(self.value_dtype)
        self.pool_tuples = values.view(np.dtype((np.void, values.strides[0])))[:, 0][self.pool]
        counts = np.bincount(self.sensitive, minlength=sensitive_size)
        self.counts = counts.astype(np.int64)
        self.bucket_start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.remaining = counts.astype(np.int64)
        self.taken = np.zeros(sensitive_size, dtype=np.int64)
        self.group_of_rows = np.full(self.n_rows, -1, dtype=np.int64)
        self.n_groups = 0
        self.unplaced: list[np.ndarray] = []
        # The rows (group after group), sizes and distinct counts of the groups of Step 2, for
        # Step 3, so that it need not index every row's values to place a few. Allocated for
        # the most groups there can be; only the pages written take memory.
        self.grouped = 0
        self.group_rows = np.empty(self.n_rows, dtype=np.int64)
        self.group_size = np.empty(self.n_rows // size, dtype=np.int64)
        self.group_distinct = np.empty((self.n_rows // size, self.n_attributes), dtype=np.int32)

    def values_of(self, rows: np.ndarray | int) -> np.ndarray:
        """The global value ids of rows (any shape), one per quasi-identifier on a last axis."""
        return np.stack([q[rows] for q in self.quasi], axis=-1).astype(np.int64) + self.offsets

    # -- Step 0: can Algorithm 2 succeed at all? -------------------------------------------

    def check_feasible(self, beta: float, name: str, domain: Sequence[object] | None) -> None:
        """Necessary conditions from the counts, so that these failures do not depend on the
        random state: ``ceil(1/beta)`` distinct values; room for the most frequent value in
        distinct groups (``f_max * ceil(1/beta) <= N``); and room for it in groups large
        enough for alpha (``f_max * s_alpha <= N``, where ``s_alpha`` is the fewest rows
        whose presence can reach alpha given the values present, Theorem 5.1)."""
        if self.n_rows == 0:
            raise InfeasibleError("the table has no rows")
        present = int(np.count_nonzero(self.remaining))
        top = int(np.argmax(self.remaining))
        frequency = int(self.remaining[top])
        largest = min(present, self.n_rows // frequency)
        advice = (f"the smallest feasible beta is 1/{largest} = {1 / largest:.4g}"
                  if largest >= 1 else "no beta is feasible")
        if present < self.size:
            raise InfeasibleError(
                f"beta={beta:g} needs groups of {self.size} distinct values of {name!r}, but "
                f"it takes only {present} distinct values; {advice}")
        if frequency * self.size > self.n_rows:
            shown = domain[top] if domain is not None else top
            raise InfeasibleError(
                f"beta={beta:g} is infeasible for {name!r}: its value {shown!r} occurs "
                f"{frequency} times in {self.n_rows} rows, and each group of at least "
                f"{self.size} rows holds it at most once (at most {self.n_rows // self.size} "
                f"groups); {advice}. No grouping at all meets beta below "
                f"{frequency / self.n_rows:.4g}, that value's share")
        # Presence needs prod_i m_i >= |G| / alpha, and m_i <= min(|G|, d_i) with d_i the
        # values of attribute i present: a lower bound on the size of every group.
        present_values = np.array([np.count_nonzero(np.bincount(q)) for q in self.quasi],
                                  dtype=np.float64)
        sizes = np.arange(self.size, present + 1)
        reach = presence_probability(sizes, np.minimum(sizes[:, None], present_values[None, :]))
        if not (reach <= self.alpha).any():
            best = float(reach.min())
            raise InfeasibleError(
                f"no group of distinct values of {name!r} can reach presence <= "
                f"alpha={self.alpha:g}: a group holds at most {present} rows (one per value), "
                f"and even with every quasi-identifier value different its presence is at "
                f"least {best:.4g}; raise alpha to at least {best:.4g} or add "
                f"quasi-identifiers")
        smallest = int(sizes[np.argmax(reach <= self.alpha)])
        if frequency * smallest > self.n_rows:
            shown = domain[top] if domain is not None else top
            raise InfeasibleError(
                f"alpha={self.alpha:g} is infeasible for {name!r}: a group needs at least "
                f"{smallest} rows to reach presence <= alpha with these quasi-identifiers, "
                f"and {shown!r} occurs {frequency} times, at most once per group, so "
                f"{frequency} groups of {smallest} rows would need more than the "
                f"{self.n_rows} rows there are; raise alpha (allows smaller groups) or add "
                f"quasi-identifiers")

    # -- Step 2: safe groups, a batch of lanes at a time -----------------------------------

    def build_safe_groups(self) -> None:
        """Batches of groups until fewer than ``ceil(1/beta)`` buckets are left.

        A group may need more than ``ceil(1/beta)`` rows to reach alpha, so a batch reserves
        ``per_group`` rows for each of its groups: at least the mean size of the groups built
        so far. Groups of a batch that still cannot reach alpha give their rows back and the
        reserve grows by one; once no batch fits that reserve, the last batches reserve
        ``ceil(1/beta)`` only and the rows of their failed groups go to the residue (Step 3).
        """
        per_group = self.size
        while True:
            lanes = self._batch_lanes(per_group)
            final = lanes == 0
            if final:
                lanes = self._batch_lanes(self.size)
            if lanes == 0:
                return
            failed = self._build_batch(lanes)
            if len(failed) and final:
                self.unplaced.append(self.pool[failed])
            elif len(failed):
                self._return_to_queues(failed)
                per_group += 1
            if self.n_groups:
                per_group = max(per_group, math.ceil(self.grouped / self.n_groups))

    def _return_to_queues(self, slots: np.ndarray) -> None:
        """Put the rows in ``slots`` (taken by failed groups) back at the head of their
        buckets' queues."""
        slots = np.sort(slots)
        back = np.bincount(self.sensitive[self.pool[slots]], minlength=self.sensitive_size)
        # Each head moves back over as many taken slots as the bucket gets rows back; rows
        # given back from outside those slots trade places with the rows that stay taken
        # inside them (both lists run bucket by bucket, as many of each per bucket).
        uncovered = np.arange(len(slots)) + np.repeat(
            self.bucket_start + self.taken - back - (np.cumsum(back) - back), back)
        self._trade(slots[~np.isin(slots, uncovered)], uncovered[~np.isin(uncovered, slots)])
        self.taken -= back
        self.remaining += back

    def _trade(self, slots: np.ndarray, others: np.ndarray) -> None:
        """Swap the queue entries in ``slots`` with those in ``others`` (pairwise distinct)."""
        for queue in (self.pool, self.pool_tuples):
            queue[slots], queue[others] = queue[others], queue[slots]

    def _batch_lanes(self, per_group: int) -> int:
        """The most groups a batch can start with ``per_group`` rows each from distinct
        buckets (a bucket gives a batch at most one row per group)."""
        def spare(lanes: int) -> int:
            return int(np.minimum(self.remaining, lanes).sum()) - lanes * per_group

        low, high = 0, min(self.max_lanes, int(self.remaining.sum()) // per_group)
        while low < high:  # spare() is concave with spare(0) = 0: feasibility is an interval
            middle = (low + high + 1) // 2
            if spare(middle) >= 0:
                low = middle
            else:
                high = middle - 1
        return low

    def _build_batch(self, n_lanes: int) -> np.ndarray:
        """Build ``n_lanes`` groups side by side; returns the queue slots of the rows of those
        that fail."""
        plan = self._deal_buckets(n_lanes)
        state = _Lanes(n_lanes, self.n_attributes, self.n_values, self.sensitive_size,
                       self.size)
        all_lanes = np.arange(n_lanes)
        for step in range(self.size):
            self._pick(state, all_lanes, plan[step])
        presence = presence_probability(state.count, state.distinct)
        needing = all_lanes[presence > self.alpha]
        failed = np.zeros(n_lanes, dtype=bool)
        while len(needing):
            # Largest non-empty bucket the group does not hold yet.
            options = np.where(state.holds[needing], -1, self.remaining[None, :])
            bucket = np.argmax(options, axis=1)
            stuck = options[np.arange(len(needing)), bucket] <= 0
            failed[needing[stuck]] = True
            needing, bucket = needing[~stuck], bucket[~stuck]
            if not len(needing):
                break
            # A bucket serves at most as many groups as it has rows; the rest wait a round.
            rank = _rank_within(bucket)
            serve = rank < self.remaining[bucket]
            self._pick(state, needing[serve], bucket[serve])
            presence = presence_probability(state.count[needing], state.distinct[needing])
            needing = needing[presence > self.alpha]
        ok = ~failed
        filled = np.arange(state.members.shape[1])[None, :] < state.count[:, None]
        kept = np.broadcast_to(ok[:, None], filled.shape)[filled]
        rows = state.members[filled][kept]
        groups = slice(self.n_groups, self.n_groups + int(ok.sum()))
        self.group_of_rows[rows] = np.repeat(np.arange(groups.start, groups.stop),
                                             state.count[ok])
        self.group_rows[self.grouped:self.grouped + len(rows)] = rows
        self.group_size[groups] = state.count[ok]
        self.group_distinct[groups] = state.distinct[ok]
        self.grouped += len(rows)
        self.n_groups = groups.stop
        return state.slots[filled][~kept]

    def _deal_buckets(self, n_lanes: int) -> np.ndarray:
        """``plan[step, lane]``: the bucket each group picks from at each of ``size`` steps."""
        need = n_lanes * self.size
        capped = np.minimum(self.remaining, n_lanes)

        def taken_at(level: int) -> np.ndarray:
            return np.minimum(capped, np.maximum(self.remaining - level, 0))

        low, high = 0, int(self.remaining.max())
        while low < high:  # the highest level that still yields enough picks
            middle = (low + high + 1) // 2
            if taken_at(middle).sum() >= need:
                low = middle
            else:
                high = middle - 1
        take = taken_at(low)
        excess = int(take.sum()) - need
        if excess:
            # Buckets that lose a pick one level higher: drop a pick from ``excess`` of them.
            marginal = np.flatnonzero(take > taken_at(low + 1))
            take[marginal[:excess]] -= 1
        order = np.argsort(-self.remaining, kind="stable")
        sequence = np.repeat(order, take[order])
        # Dealt cyclically: a bucket's (at most n_lanes) picks land in distinct groups.
        return sequence.reshape(self.size, n_lanes)

    def _pick(self, state: _Lanes, lanes: np.ndarray, buckets: np.ndarray) -> None:
        """One row for each of ``lanes`` from its bucket, the best of a candidate window."""
        rank = _rank_within(buckets)
        users = np.bincount(buckets, minlength=self.sensitive_size)
        stride = users[buckets]
        width = np.minimum(self.candidates, self.remaining[buckets] // stride)
        first = self.bucket_start[buckets] + self.taken[buckets] + rank
        slots = np.arange(self.candidates)
        # Slots past a short window repeat its first, so they never win (argmax: first best).
        position = np.where(slots < width[:, None], first[:, None] + slots * stride[:, None],
                            first[:, None])
        values = self.pool_tuples[position].view(self.value_dtype).reshape(
            len(lanes), self.candidates, self.n_attributes)
        index = np.arange(len(lanes))
        if state.count[lanes].any():
            # int32 suffices (lanes x values <= _BITMAP_BYTES) and makes the sum faster.
            offset = (lanes * state.unseen.shape[1]).astype(np.int32)
            new = np.take(state.unseen, values + offset[:, None, None])
            distinct = state.distinct[lanes]
            weight = np.where(distinct > 0, np.log1p(1.0 / np.maximum(distinct, 1)), 1.0)
            score = np.matmul(new.astype(np.float32), weight.astype(np.float32)[:, :, None])
            best = np.argmax(score[:, :, 0], axis=1)
            new = new[index, best]
        else:
            # Every value is new to empty groups: all candidates score alike, take the first.
            best = np.zeros(len(lanes), dtype=np.int64)
            new = np.ones((len(lanes), self.n_attributes), dtype=bool)
        self._trade(first, position[index, best])
        state.add(lanes, self.pool[first], first, values[index, best], new, buckets)
        self.taken += users
        self.remaining -= users

    # -- Step 3: the residue -----------------------------------------------------------------

    def place_residue(self, name: str, domain: Sequence[object] | None) -> int:
        """Step 3: every row not in a safe group joins a group that lacks its sensitive value
        and stays within alpha with it; rows that fit no group found new groups (repair).

        Rows are placed in rounds, each row trying ``candidates`` random groups (at most one
        row joins a group per round); rows that find none are checked against every group
        that lacks their value, as in the paper. Algorithm 2 stops there and fails when a row
        fits no group, which happens near the edge of feasibility (the most frequent value in
        every group, with fewer groups than its rows, after groups grew past
        ``ceil(1/beta)`` rows to reach alpha) and, depending on the random picks, for some
        seeds only. Such rows are repaired instead (``_Repair``): each founds a new group
        with rows that other groups can spare or trade.
        """
        left = [self.pool[self.bucket_start[b] + self.taken[b]:
                          self.bucket_start[b] + self.taken[b] + self.remaining[b]]
                for b in np.flatnonzero(self.remaining)]
        residue = np.concatenate([*left, *self.unplaced]).astype(np.int64) \
            if left or self.unplaced else np.zeros(0, dtype=np.int64)
        if not len(residue):
            return 0
        if self.n_groups == 0:
            # Every group of Step 2 ran out of sensitive values before reaching alpha; beta
            # plays no part (groups grow past ceil(1/beta) rows as far as alpha needs).
            raise InfeasibleError(
                f"no group of {self.size} or more rows with distinct values of {name!r} "
                f"reaches presence <= alpha={self.alpha:g}; raise alpha, or add "
                f"quasi-identifiers")
        index = _GroupIndex(self)
        pending = residue[self.rng.permutation(len(residue))]
        # A value held by every group (groups hold a value at most once, so its grouped rows
        # count the groups holding it) leaves its rows no group to join: straight to repair.
        held = np.bincount(self.sensitive[self.group_of_rows >= 0],
                           minlength=self.sensitive_size)
        everywhere = held[self.sensitive[pending]] >= self.n_groups
        stuck = [pending[everywhere]]
        pending = pending[~everywhere]
        for _ in range(_RESIDUE_ROUNDS):
            if not len(pending):
                break
            groups = self.rng.integers(0, self.n_groups, size=(len(pending), self.candidates))
            pending = self._join(index, pending, groups)
        # Then every group that lacks the row's value, value by value (rows of one value
        # compete for the same groups), in chunks of rows that keep the (rows x groups x
        # rows of a group) arrays bounded. A row that fits no group at all is repaired below.
        for value in np.unique(self.sensitive[pending]):
            rows = pending[self.sensitive[pending] == value]
            while len(rows):
                members = self.pool[self.bucket_start[value]:
                                    self.bucket_start[value] + self.counts[value]]
                lacking = np.ones(self.n_groups, dtype=bool)
                lacking[self.group_of_rows[members][self.group_of_rows[members] >= 0]] = False
                groups = np.flatnonzero(lacking)
                if not len(groups):
                    stuck.append(rows)
                    break
                chunk = max(1, _CHECK_CELLS // (len(groups) * index.width))
                batch = rows[:chunk]
                every = np.broadcast_to(groups, (len(batch), len(groups)))
                fits, new = index.fits(every, batch)
                has = fits.any(axis=1)
                stuck.append(batch[~has])
                left_over = self._place(index, batch[has], every[has], fits[has], new[has],
                                        spread=True)
                rows = np.concatenate([left_over, rows[chunk:]])
        stuck_rows = np.concatenate(stuck) if stuck else np.zeros(0, dtype=np.int64)
        if len(stuck_rows):
            _Repair(self).run(stuck_rows, len(residue), name, domain)
        return len(residue)

    def _join(self, index: _GroupIndex, rows: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Each row joins the first of its candidate groups (axis 1) that it fits, at most one
        row per group (a group's presence changes once a row joins it); returns the rows that
        joined none."""
        if not len(rows):
            return rows
        fits, new = index.fits(groups, rows)
        return self._place(index, rows, groups, fits, new)

    def _place(self, index: _GroupIndex, rows: np.ndarray, groups: np.ndarray,
               fits: np.ndarray, new: np.ndarray, *, spread: bool = False) -> np.ndarray:
        """``_join`` given the fits (a random fitting group with ``spread``, so that rows
        offered the same groups pick different ones)."""
        if not len(rows):
            return rows
        has = fits.any(axis=1)
        first = np.argmax(np.where(fits, self.rng.random(fits.shape), -1.0) if spread else fits,
                          axis=1)
        joining, target = rows[has], groups[has, first[has]]
        gains = new[has, first[has]]
        _, keep = np.unique(target, return_index=True)
        index.add(target[keep], joining[keep], gains[keep])
        self.group_of_rows[joining[keep]] = target[keep]
        placed = np.zeros(len(rows), dtype=bool)
        placed[np.flatnonzero(has)[keep]] = True
        return rows[~placed]


class _Repair:
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

    def __init__(self, builder: _Builder) -> None:
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
        chunk = max(1, _CHECK_CELLS // max(int(self.count.max(initial=1)) * b.n_attributes, 1))
        spare = [grouped[i:i + chunk][self._spare(grouped[i:i + chunk])]
                 for i in range(0, len(grouped), chunk)]
        self.pool = np.concatenate(spare) if spare else grouped

    def _members(self, groups: np.ndarray) -> np.ndarray:
        """The rows of Step 2 groups, one group per line, -1 beyond a group's size."""
        return _segments(self.order, self.start, self.count, groups)

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
        rows = np.unique(np.concatenate(picks))
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

    def __init__(self, builder: _Builder, group_id: int) -> None:
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


class _Lanes:
    """The groups of one batch as they grow."""

    def __init__(self, n_lanes: int, n_attributes: int, n_values: int, sensitive_size: int,
                 size: int) -> None:
        self.unseen = np.ones((n_lanes, max(n_values, 1)), dtype=bool)
        """Whether each value is new to each group."""
        self.holds = np.zeros((n_lanes, sensitive_size), dtype=bool)
        self.distinct = np.zeros((n_lanes, n_attributes), dtype=np.int64)
        self.count = np.zeros(n_lanes, dtype=np.int64)
        self.members = np.zeros((n_lanes, size), dtype=np.int64)
        self.slots = np.zeros((n_lanes, size), dtype=np.int64)
        """The queue slot of each member (a taken row keeps its slot)."""

    def add(self, lanes: np.ndarray, rows: np.ndarray, slots: np.ndarray, values: np.ndarray,
            new: np.ndarray, buckets: np.ndarray) -> None:
        if self.count[lanes].max(initial=0) >= self.members.shape[1]:
            self.members = np.concatenate([self.members, np.zeros_like(self.members)], axis=1)
            self.slots = np.concatenate([self.slots, np.zeros_like(self.slots)], axis=1)
        self.members[lanes, self.count[lanes]] = rows
        self.slots[lanes, self.count[lanes]] = slots
        self.count[lanes] += 1
        self.unseen.reshape(-1)[lanes[:, None] * self.unseen.shape[1] + values] = False
        self.distinct[lanes] += new
        self.holds[lanes, buckets] = True


class _GroupIndex:
    """The groups of Step 2 for Step 3: their rows, sizes and distinct counts as built, and
    the rows Step 3 adds to them."""

    def __init__(self, builder: _Builder) -> None:
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
        members = _segments(self.rows, self.start, self.count, groups)

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


def _segments(rows: np.ndarray, start: np.ndarray, count: np.ndarray, groups: np.ndarray
              ) -> np.ndarray:
    """The rows of groups stored as segments ``rows[start[g] : start[g] + count[g]]``, along a
    new last axis, -1 beyond a group's size."""
    slots = np.arange(int(count[groups].max(initial=1)))
    index = np.minimum(start[groups][..., None] + slots, len(rows) - 1)
    return np.where(slots < count[groups][..., None], rows[index], -1)


def _member(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(keys.shape, dtype=bool)
    index = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[index] == keys


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """np.unique by sorting (faster than hashing for large int64 arrays)."""
    keys = np.sort(keys, kind="stable")
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def _rank_within(labels: np.ndarray) -> np.ndarray:
    """The 0-based occurrence number of each element among earlier ones with its label."""
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    run = np.repeat(starts, np.diff(np.r_[starts, len(labels)]))
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels)) - run
    return rank
