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
  Rows examined but not taken return to the front of the queue.

The guarantees do not depend on which candidate is taken: every group still takes each
sensitive value once, has at least ``ceil(1/beta)`` rows and is closed only at presence <=
alpha; residues are placed under the same checks as in the paper. A pick costs
O(candidates * k) array work, and each group a bitmap row of the quasi-identifier values;
a batch whose groups fail to reach alpha adds one pass over the bucket queues.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.errors import InfeasibleError

CANDIDATES = 16
"""Rows examined per pick (the bounded candidate set)."""

MAX_LANES = 4096
"""Groups built side by side; fewer when the quasi-identifier domains are large."""

_BITMAP_BYTES = 1 << 26
_RESIDUE_ROUNDS = 8


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
    Raises InfeasibleError when no such partition exists by Algorithm 2's rule (too few
    distinct sensitive values, or one value too frequent) or when residue rows fit no group.
    """
    builder = _Builder(quasi, quasi_sizes, sensitive, sensitive_size, alpha,
                       association_group_size(beta), rng, candidates, max_lanes)
    builder.check_feasible(beta, sensitive_name, domain)
    builder.build_safe_groups()
    residue = builder.place_residue(sensitive_name, domain)
    return AmbiguityGroups(builder.group_of_rows, builder.n_groups, residue)


class _Builder:
    def __init__(self, quasi: Sequence[np.ndarray], quasi_sizes: Sequence[int],
                 sensitive: np.ndarray, sensitive_size: int, alpha: float, size: int,
                 rng: np.random.Generator, candidates: int, max_lanes: int) -> None:
        self.n_rows = len(sensitive)
        self.alpha = alpha
        self.size = size
        self.rng = rng
        self.candidates = candidates
        self.sensitive = np.asarray(sensitive, dtype=np.int64)
        self.sensitive_size = sensitive_size
        offsets = np.concatenate([[0], np.cumsum(quasi_sizes)[:-1]]).astype(np.int64)
        self.n_values = int(np.sum(quasi_sizes)) if len(quasi_sizes) else 0
        # Global value ids (attribute offset + code), one column per quasi-identifier.
        self.values = (np.stack([np.asarray(q, dtype=np.int64) for q in quasi], axis=1)
                       + offsets if len(quasi) else np.zeros((self.n_rows, 0), dtype=np.int64))
        self.n_attributes = self.values.shape[1]
        self.quasi_sizes = np.asarray(quasi_sizes, dtype=np.int64)
        self.max_lanes = max(1, min(max_lanes, _BITMAP_BYTES // max(self.n_values, 1)))
        # Bucket queues: rows grouped by sensitive value, in random order within a value.
        order = rng.permutation(self.n_rows)
        self.pool = order[np.argsort(self.sensitive[order], kind="stable")]
        counts = np.bincount(self.sensitive, minlength=sensitive_size)
        self.bucket_start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.remaining = counts.astype(np.int64)
        self.taken = np.zeros(sensitive_size, dtype=np.int64)
        self.group_of_rows = np.full(self.n_rows, -1, dtype=np.int64)
        self.n_groups = 0
        self.unplaced: list[np.ndarray] = []

    # -- Step 0: can Algorithm 2 succeed at all? -------------------------------------------

    def check_feasible(self, beta: float, name: str, domain: Sequence[object] | None) -> None:
        """Algorithm 2's necessary conditions: ``ceil(1/beta)`` distinct values, and room for
        the most frequent value in distinct groups (``f_max * ceil(1/beta) <= N``)."""
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
                self.unplaced.append(failed)
            elif len(failed):
                self._return_to_queues(failed)
                per_group += 1
            grouped = int(np.count_nonzero(self.group_of_rows >= 0))
            if self.n_groups:
                per_group = max(per_group, math.ceil(grouped / self.n_groups))

    def _return_to_queues(self, rows: np.ndarray) -> None:
        """Put rows taken by failed groups back at the head of their buckets' queues."""
        returned = np.zeros(self.n_rows, dtype=bool)
        returned[rows] = True
        buckets = self.sensitive[self.pool]
        position = np.arange(self.n_rows)
        consumed = position < (self.bucket_start + self.taken)[buckets]
        # Within each bucket's consumed prefix, the returned rows move to its end.
        slots = position[consumed]
        key = buckets[consumed] * 2 + returned[self.pool[consumed]]
        self.pool[slots] = self.pool[slots[np.argsort(key, kind="stable")]]
        back = np.bincount(self.sensitive[rows], minlength=self.sensitive_size)
        self.taken -= back
        self.remaining += back

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
        """Build ``n_lanes`` groups side by side; the rows of those that fail are returned."""
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
        ids = self.n_groups + np.cumsum(ok) - 1
        filled = np.arange(state.members.shape[1])[None, :] < state.count[:, None]
        rows = state.members[filled]
        lane = np.broadcast_to(np.arange(n_lanes)[:, None], filled.shape)[filled]
        self.group_of_rows[rows] = np.where(ok[lane], ids[lane], -1)
        self.n_groups += int(ok.sum())
        return rows[failed[lane]]

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
        order = np.argsort(buckets, kind="stable")
        lanes, buckets = lanes[order], buckets[order]
        rank = _rank_within(buckets)
        users = np.bincount(buckets, minlength=self.sensitive_size)
        width = np.minimum(self.candidates, self.remaining // np.maximum(users, 1))[buckets]
        head = self.bucket_start[buckets] + self.taken[buckets]
        slots = np.arange(self.candidates)
        position = head[:, None] + rank[:, None] * width[:, None] + slots[None, :]
        valid = slots[None, :] < width[:, None]
        position = np.where(valid, position, head[:, None])
        rows = self.pool[position]
        values = self.values[rows]
        new = ~state.seen[lanes[:, None, None], values]
        distinct = state.distinct[lanes].astype(np.float64)
        weight = np.where(distinct > 0, np.log1p(1.0 / np.maximum(distinct, 1)), 1.0)
        score = np.where(valid, (new * weight[:, None, :]).sum(axis=2), -1.0)
        best = np.argmax(score, axis=1)
        index = np.arange(len(lanes))
        chosen = rows[index, best]
        state.add(lanes, chosen, values[index, best], new[index, best], buckets)
        # Taken rows move to the front of each bucket's examined region, then leave the queue;
        # the examined rows not taken stay at the front for the next picks.
        picked = np.zeros(position.shape, dtype=bool)
        picked[index, best] = True
        region = np.repeat(np.arange(len(lanes)), width)
        flat_position = position[valid]
        flat_picked = picked[valid]
        bucket_of = buckets[region]
        key = bucket_of * 2 + (~flat_picked)
        arrangement = np.argsort(key, kind="stable")
        self.pool[np.sort(flat_position)] = self.pool[flat_position[arrangement]]
        self.taken += users
        self.remaining -= users

    # -- Step 3: the residue -----------------------------------------------------------------

    def place_residue(self, name: str, domain: Sequence[object] | None) -> int:
        """Step 3: every row not in a safe group joins a group that lacks its sensitive value
        and stays within alpha with it.

        Rows are placed in rounds, each row trying ``candidates`` random groups (at most one
        row joins a group per round); a row that finds none after a few rounds is checked
        against every group, as in the paper. A row that fits no group at all is an error.
        """
        left = [self.pool[self.bucket_start[b] + self.taken[b]:
                          self.bucket_start[b] + self.taken[b] + self.remaining[b]]
                for b in np.flatnonzero(self.remaining)]
        residue = np.concatenate([*left, *self.unplaced]).astype(np.int64) \
            if left or self.unplaced else np.zeros(0, dtype=np.int64)
        if not len(residue):
            return 0
        if self.n_groups == 0:
            raise InfeasibleError(
                f"no group of {self.size} rows reaches presence <= alpha={self.alpha:g}; "
                f"raise alpha or beta, or add quasi-identifiers")
        index = _GroupIndex(self.group_of_rows, self.n_groups, self.values, self.sensitive,
                            np.repeat(np.arange(self.n_attributes), self.quasi_sizes),
                            self.sensitive_size)
        pending = residue
        for _ in range(_RESIDUE_ROUNDS):
            if not len(pending):
                break
            groups = self.rng.integers(0, self.n_groups, size=(len(pending), self.candidates))
            fits, new = index.fits(groups, pending, self.values, self.sensitive, self.alpha)
            has = fits.any(axis=1)
            first = np.argmax(fits, axis=1)
            rows, target = pending[has], groups[has, first[has]]
            gains = new[has, first[has]]
            # One row per group per round: a group's presence changes once a row joins it.
            _, keep = np.unique(target, return_index=True)
            index.add(target[keep], self.values[rows[keep]], self.sensitive[rows[keep]],
                      gains[keep])
            self.group_of_rows[rows[keep]] = target[keep]
            placed = np.zeros(len(pending), dtype=bool)
            placed[np.flatnonzero(has)[keep]] = True
            pending = pending[~placed]
        every_group = np.arange(self.n_groups)[None, :]
        for row in pending:
            fits, new = index.fits(every_group, np.asarray([row]), self.values, self.sensitive,
                                   self.alpha)
            if not fits.any():
                value = int(self.sensitive[row])
                shown = domain[value] if domain is not None else value
                raise InfeasibleError(
                    f"{len(residue)} rows are left after the safe groups are built, and a "
                    f"row with {name}={shown!r} fits no group: each group either holds that "
                    f"value already or would exceed presence alpha={self.alpha:g}; raise "
                    f"beta (larger groups) or alpha")
            target = int(np.argmax(fits[0]))
            index.add(np.asarray([target]), self.values[[row]], self.sensitive[[row]],
                      new[0, target][None, :])
            self.group_of_rows[row] = target
        return len(residue)


class _Lanes:
    """The groups of one batch as they grow."""

    def __init__(self, n_lanes: int, n_attributes: int, n_values: int, sensitive_size: int,
                 size: int) -> None:
        self.seen = np.zeros((n_lanes, max(n_values, 1)), dtype=bool)
        self.holds = np.zeros((n_lanes, sensitive_size), dtype=bool)
        self.distinct = np.zeros((n_lanes, n_attributes), dtype=np.int64)
        self.count = np.zeros(n_lanes, dtype=np.int64)
        self.members = np.zeros((n_lanes, size), dtype=np.int64)

    def add(self, lanes: np.ndarray, rows: np.ndarray, values: np.ndarray, new: np.ndarray,
            buckets: np.ndarray) -> None:
        if self.count[lanes].max(initial=0) >= self.members.shape[1]:
            self.members = np.concatenate([self.members, np.zeros_like(self.members)], axis=1)
        self.members[lanes, self.count[lanes]] = rows
        self.count[lanes] += 1
        self.seen[lanes[:, None], values] = True
        self.distinct[lanes] += new
        self.holds[lanes, buckets] = True


class _GroupIndex:
    """Which groups hold which values, sizes and distinct counts, for Step 3."""

    def __init__(self, group_of_rows: np.ndarray, n_groups: int, values: np.ndarray,
                 sensitive: np.ndarray, attribute_of_value: np.ndarray,
                 sensitive_size: int) -> None:
        grouped = group_of_rows >= 0
        groups = group_of_rows[grouped]
        self.n_values = max(len(attribute_of_value), 1)
        self.sensitive_size = sensitive_size
        value_keys = sorted_unique((groups[:, None] * self.n_values + values[grouped]).ravel())
        self.value_keys = _KeySet(value_keys)
        self.held_keys = _KeySet(sorted_unique(groups * sensitive_size + sensitive[grouped]))
        self.size = np.bincount(groups, minlength=n_groups).astype(np.int64)
        self.distinct = np.zeros((n_groups, values.shape[1]), dtype=np.int64)
        np.add.at(self.distinct, (value_keys // self.n_values,
                                  attribute_of_value[value_keys % self.n_values]), 1)

    def fits(self, groups: np.ndarray, rows: np.ndarray, values: np.ndarray,
             sensitive: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """For each row (axis 0) and candidate group (axis 1): whether the row may join it,
        and which of the row's values would be new to it."""
        lacks = ~self.held_keys.contains(groups * self.sensitive_size
                                         + sensitive[rows][:, None])
        new = ~self.value_keys.contains(groups[:, :, None] * self.n_values
                                        + values[rows][:, None, :])
        presence = presence_probability(self.size[groups] + 1, self.distinct[groups] + new)
        return lacks & (presence <= alpha), new

    def add(self, groups: np.ndarray, values: np.ndarray, sensitive: np.ndarray,
            new: np.ndarray) -> None:
        self.size[groups] += 1
        self.distinct[groups] += new
        self.value_keys.add((groups[:, None] * self.n_values + values)[new])
        self.held_keys.add(groups * self.sensitive_size + sensitive)


class _KeySet:
    """A set of int64 keys: a large sorted array plus a small sorted array of additions."""

    def __init__(self, keys: np.ndarray) -> None:
        self.base = keys
        self.added = np.zeros(0, dtype=np.int64)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return _member(self.base, keys) | _member(self.added, keys)

    def add(self, keys: np.ndarray) -> None:
        self.added = sorted_unique(np.concatenate([self.added, keys.ravel()]))


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
