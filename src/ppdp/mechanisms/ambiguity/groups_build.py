"""Steps 0 and 2 of Algorithm 2: the counts checked, then safe QI-groups built many at a time.

Ambiguity paper, Section 7 (Algorithms 2-4). Scanning every unpicked row for each pick costs
O(N) per row, O(N^2) in all. Here the pick touches a bounded candidate set and many groups are
built side by side:

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
alpha. A pick costs O(candidates * k) array work, and each group a bitmap row of the
quasi-identifier values while it is built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ppdp.data.schema import code_dtype
from ppdp.errors import InfeasibleError
from ppdp.mechanisms.presence import presence_probability

_BITMAP_BYTES = 1 << 26
"""Bytes of the (groups x values) bitmap of a batch: fewer lanes when there are many values."""


class GroupBuilder:
    """One construction: the bucket queues, Steps 0 and 2, and the groups built so far (which
    Step 3 and the repair read and extend)."""

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


def _rank_within(labels: np.ndarray) -> np.ndarray:
    """The 0-based occurrence number of each element among earlier ones with its label."""
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    run = np.repeat(starts, np.diff(np.r_[starts, len(labels)]))
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels)) - run
    return rank
