"""The keyed draws of alpha-beta views (Algorithms 1, 2, 4 and 5).

Row r of the table is kept by draw r of stream ``view{v}/retain``; the beta-step cuts D into
chunks of consecutive keys, each drawn from a generator of its own (stream ``view{v}/noise``):
in each chunk of s tuples it draws how many to take, Binomial(s, beta), then that many distinct
uniform tuples of the chunk, and drops those in I and in earlier views. Every tuple of D - I is
so inserted independently with probability beta, as Algorithm 2's Binomial(m - n, beta) uniform
tuples of D - I are. The published rows are ordered by a keyed rank (stream ``view{v}/rank``,
ties by id) and cut into parts as for every mechanism (`ppdp.plan.order`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.mechanisms.alphabeta.domain import TupleDomain, _contains, _sorted_unique
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.order import in_release_order, part_count, part_of
from ppdp.table.source import Batch, SummarySource


def repeated_keys(keys: np.ndarray, counts: np.ndarray, size: int = 1 << 20
                  ) -> Iterator[np.ndarray]:
    """``np.repeat(keys, counts)`` in pieces of at most ``size``, in order."""
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    for low in range(0, total, size):
        high = min(low + size, total)
        first = int(np.searchsorted(ends, low, side="right"))
        last = int(np.searchsorted(ends, high - 1, side="right"))
        covered = np.arange(first, last + 1)
        starts = np.maximum(ends[covered] - counts[covered], low)
        yield np.repeat(keys[covered], np.minimum(ends[covered], high) - starts)


def source_distribution(source: SummarySource, domain: TupleDomain) -> list[np.ndarray]:
    """Each attribute's marginal with add-one smoothing, so that every tuple of D can be
    inserted (Algorithm 5's attribute-independent source distribution)."""
    return [(source.histogram((c,)) + 1) / (source.n_rows + size)
            for c, size in zip(domain.columns, domain.shape, strict=True)]


def source_scale(beta: float, source: Sequence[np.ndarray]) -> float:
    """beta(t) = scale source(t): the most likely tuple gets beta, the others less.

    Algorithm 5 makes beta(t) proportional to source(t) but does not fix the constant. An
    adversary whose prior is shaped like the source has prior d on the most likely tuple and
    less on the others; Theorem 4.3 then needs beta(t) >= d(t)/gamma tuple by tuple, which
    ``beta max source / max source`` meets with beta = d/gamma: the same privacy as uniform
    noise with fewer inserted tuples."""
    return beta / math.prod(float(p.max()) for p in source)


def tuple_probability(keys: np.ndarray, domain: TupleDomain,
                      source: Sequence[np.ndarray]) -> np.ndarray:
    """source(t) = p(t.A_1) .. p(t.A_l) for tuples given by their keys."""
    parts = np.unravel_index(keys, domain.shape)
    result = np.ones(len(keys))
    for part, probabilities in zip(parts, source, strict=True):
        result = result * probabilities[part]
    return result


@dataclass(frozen=True)
class ViewRates:
    """Insertion probabilities of Algorithm 4 for one view (see ``ViewSequence``)."""

    seen: float  # A: the alpha of a tuple of I that is in V'
    earlier: float  # B: a tuple of V' (not in I)
    unseen: float  # A': the alpha of a tuple of I not in V'
    other: float  # C: any other tuple of D


def view_rates(alpha: float, beta: float, v: int, view: int) -> ViewRates:
    """The rates of view ``view`` (1-based) of at most v (Algorithm 4; view 1 is Algorithm 1)."""
    keep = alpha + beta
    earlier = keep * math.exp(-1 / v)
    other = (1 - keep) ** (view - 1) * beta
    return ViewRates(seen=keep - earlier, earlier=earlier, unseen=keep - other, other=other)


def published_rates(parameters: Mapping[str, Any]) -> ViewRates:
    """The rates of a view from its public parameters (alpha, beta, v and its number)."""
    return view_rates(float(parameters["alpha"]), float(parameters["beta"]),
                      int(parameters.get("v", 1)), int(parameters.get("view", 1)))


NOISE_CHUNK = 1 << 20
"""Tuples the beta-step draws per chunk of D, on average: a chunk spans NOISE_CHUNK/C keys, so
the chunks follow from C and m alone, never from how the table's rows are batched."""


DENSE_NOISE = 0.25
"""From this probability C on, a chunk's tuples are drawn key by key (a uniform each), which
is then cheaper than drawing a count of distinct keys."""


Piece = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Published rows of a view, in no particular order: their ranks, ids and tuple keys."""


def bernoulli_keys(rng: np.random.Generator, low: int, high: int,
                   probability: float) -> np.ndarray:
    """The keys of ``low .. high - 1``, each drawn with ``probability`` independently, sorted
    (Algorithm 2 on one chunk of D: a binomial count of uniform distinct keys)."""
    size = high - low
    if probability >= DENSE_NOISE:
        return np.flatnonzero(rng.random(size) < probability) + low
    count = int(rng.binomial(size, probability))
    chosen = np.empty(0, dtype=np.int64)
    while len(chosen) < count:
        # Draw as many keys as are missing and add the new ones: no permutation of the keys
        # changes how this proceeds, so every set of ``count`` keys is equally likely.
        fresh = _sorted_unique(rng.integers(0, size, count - len(chosen)))
        fresh = fresh[~_contains(chosen, fresh)]
        chosen = np.insert(chosen, np.searchsorted(chosen, fresh), fresh)
    return chosen + low


def distinct_tuples(batches: Iterable[Batch], domain: TupleDomain
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tuples of the rows (sorted int64 keys) and how many rows hold each.

    Batches are reduced as they come and merged when the pending ones outnumber the merged
    tuples, so the work is O(r log r) for r rows in any batching; the result takes 16 bytes a
    distinct tuple, O(rows) memory: fine up to about 10^8 rows."""
    merged = _counted(np.empty(0, dtype=np.int64))
    pending: list[tuple[np.ndarray, np.ndarray]] = []
    waiting = 0
    for _, codes in batches:
        pending.append(_counted(domain.keys(codes)))
        waiting += len(pending[-1][0])
        if waiting > len(merged[0]):
            merged, pending, waiting = _merge_counts([merged, *pending]), [], 0
    return _merge_counts([merged, *pending])


def _counted(keys: np.ndarray, counts: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and the counts of each (summing ``counts``, else 1 a key); a sort
    is much faster than numpy's hashing unique here."""
    if counts is None:
        keys, counts = np.sort(keys), np.ones(len(keys), dtype=np.int64)
    else:
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
    if not len(keys):
        return keys.astype(np.int64), counts.astype(np.int64)
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    return keys[starts].astype(np.int64), np.add.reduceat(counts, starts)


def _merge_counts(parts: Sequence[tuple[np.ndarray, np.ndarray]]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """One sorted array of distinct keys with summed counts, from sorted (keys, counts)."""
    parts = [part for part in parts if len(part[0])] or [parts[0]]
    if len(parts) == 1:
        return parts[0]
    # Sorted runs: the stable sort merges them.
    return _counted(np.concatenate([k for k, _ in parts]), np.concatenate([c for _, c in parts]))


class ViewStreams:
    """The keyed draws of one view (Algorithms 1, 2, 4 and 5) as functions of the key, the
    view number v, a row id or a chunk of D, and what is known of each row (the count of its
    tuple, whether the tuple is in V'), so that any executor that brings those along draws the
    same view; no per-tuple table is held (`ViewDraws` adds the table's and V''s tuples).

    Ids: row r of the table keeps r; the tuple at position i of V' (sorted) gets n + i; the
    inserted tuples get n + |V'| + j, j counting them chunk by chunk. Rows of I and tuples of V'
    are kept by stream ``view{v}/retain`` at their ids, chunk c of D is drawn from
    ``view{v}/noise`` (generator c), and every published row gets its rank from ``view{v}/rank``
    at its id.
    """

    def __init__(self, key: int, view: int, domain: TupleDomain, rates: ViewRates,
                 n_rows: int, n_earlier: int,
                 marginals: Sequence[np.ndarray] | None = None) -> None:
        self.domain, self.rates, self.n_rows = domain, rates, n_rows
        self.n_earlier, self.marginals = n_earlier, marginals
        self._retain = KeyedStream(key, f"view{view}/retain")
        self._noise = KeyedStream(key, f"view{view}/noise")
        self._rank = KeyedStream(key, f"view{view}/rank")
        if marginals is not None:
            self.scale = source_scale(rates.other, marginals)
        # Chunks of D of NOISE_CHUNK tuples drawn on average (one chunk when C m is smaller).
        m, other = domain.size, rates.other
        self.span = m if other * m <= NOISE_CHUNK else math.ceil(NOISE_CHUNK / other)
        self.chunks = -(-m // self.span) if other > 0 else 0

    def keep(self, keys: np.ndarray, counts: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """The probability that each row is kept, from its tuple's key, the tuple's row count c
        and whether the tuple is in V': (A + B/c) for tuples of V', (A' + C/c) for the others,
        beta(t)/c in place of C/c for Algorithm 5."""
        rates = self.rates
        base = np.where(seen, rates.seen, rates.unseen)
        extra = np.where(seen, rates.earlier, rates.other)
        if self.marginals is not None:
            extra = self.scale * tuple_probability(keys, self.domain, self.marginals)
        return base + extra / counts

    def retained_rows(self, start: int, keys: np.ndarray, counts: np.ndarray,
                      seen: np.ndarray) -> Piece:
        """The alpha-step on rows ``start .. start + len(keys) - 1`` of the table, given each
        row's tuple key, its tuple's row count and whether the tuple is in V' (`keep`)."""
        kept = np.flatnonzero(self._retain.uniform(start, len(keys))
                              < self.keep(keys, counts, seen))
        return self._rank.raw(start, len(keys))[kept], kept + start, keys[kept]

    def repeated_rows(self, position: int, keys: np.ndarray, in_table: np.ndarray) -> Piece:
        """Algorithm 4 on the tuples at positions ``position ..`` of V' (sorted; ``keys``):
        each not in I (``in_table``) inserted with probability B."""
        first = self.n_rows + position
        chosen = np.flatnonzero((self._retain.uniform(first, len(keys)) < self.rates.earlier)
                                & ~in_table)
        return self._rank.raw(first, len(keys))[chosen], chosen + first, keys[chosen]

    def candidates(self, chunk: int) -> tuple[np.random.Generator, np.ndarray]:
        """Chunk ``chunk`` of D drawn with probability C a tuple (Algorithm 2), before the
        tuples of I and V' are taken out: its generator (for `inserted`) and sorted keys."""
        rng = self._noise.generator(chunk)
        low = chunk * self.span
        return rng, bernoulli_keys(rng, low, min(low + self.span, self.domain.size),
                                   self.rates.other)

    def inserted(self, rng: np.random.Generator, keys: np.ndarray) -> np.ndarray:
        """The candidates of a chunk outside I and V' that are inserted: all for uniform noise;
        for Algorithm 5, each kept with probability beta(t)/C <= 1 (the most likely tuple gets
        beta = C), drawn from the chunk's generator after `candidates`."""
        if self.marginals is None:
            return keys
        chance = (self.scale * tuple_probability(keys, self.domain, self.marginals)
                  / self.rates.other)
        return keys[rng.random(len(keys)) < chance]

    def numbered(self, first: int, keys: np.ndarray) -> Piece:
        """Inserted tuples ``first .. first + len(keys) - 1`` (j, counted chunk by chunk) as
        published rows: ranks and ids n + |V'| + j."""
        start = self.n_rows + self.n_earlier + first
        return self._rank.raw(start, len(keys)), np.arange(start, start + len(keys)), keys


class ViewDraws(ViewStreams):
    """The keyed draws of one view of a table whose distinct tuples (sorted keys ``tuples``,
    row counts ``counts``) and V' (sorted ``earlier``) are arrays in memory."""

    def __init__(self, key: int, view: int, domain: TupleDomain, rates: ViewRates,
                 n_rows: int, tuples: np.ndarray, counts: np.ndarray, earlier: np.ndarray,
                 marginals: Sequence[np.ndarray] | None = None) -> None:
        super().__init__(key, view, domain, rates, n_rows, len(earlier), marginals)
        self.tuples, self.counts, self.earlier = tuples, counts, earlier
        self.seen = _contains(earlier, tuples)

    def retained(self, start: int, codes: Mapping[str, np.ndarray]) -> Piece:
        """The alpha-step on rows ``start ..`` of the table (one batch of codes)."""
        keys = self.domain.keys(codes)
        at = np.searchsorted(self.tuples, keys)
        return self.retained_rows(start, keys, self.counts[at], self.seen[at])

    def repeated(self) -> Piece:
        """Algorithm 4: each tuple of V' outside I inserted with probability B."""
        return self.repeated_rows(0, self.earlier, _contains(self.tuples, self.earlier))

    def noise(self) -> Iterator[Piece]:
        """The beta-step, chunk by chunk: each tuple of D outside I and V' with probability C
        (Algorithm 2), or beta(t) (Algorithm 5)."""
        first = 0
        for chunk in range(self.chunks):
            rng, keys = self.candidates(chunk)
            keys = keys[~_contains(self.tuples, keys) & ~_contains(self.earlier, keys)]
            piece = self.numbered(first, self.inserted(rng, keys))
            first += len(piece[2])
            yield piece


def release_order(pieces: Iterable[Piece]) -> tuple[np.ndarray, tuple[int, ...]]:
    """The tuple keys of a view's rows in release order (by rank, ties by id) and the row
    counts of its parts (`ppdp.plans.part_of`)."""
    ranks, ids, keys = (np.concatenate(column) for column in zip(*pieces, strict=True))
    parts = part_count(len(ranks))
    part_rows = np.bincount(part_of(ranks, parts), minlength=parts)
    return (in_release_order({"key": keys}, ranks, ids)["key"],
            tuple(int(rows) for rows in part_rows))


