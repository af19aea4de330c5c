"""Perturbation Partitioning's partition of the sensitive values (Small Domain
Randomization, Section 5).

The table is partitioned into sub-tables T_1..T_k, each perturbed independently by Uniform
Perturbation over its own small domain SA_i with the ratio gamma_i that its largest relative
frequency of a protected value, rho1_i, allows (Eq. 9-10). Corollary 1: when every
rho1_i < rho2, this gives (rho1, rho2)-privacy on the whole table. The partition is found on
the value counts alone, in three phases:

1. balancing (Figure 1, Eq. 13, Lemma 1): initial groups, each taking h rows of each of the
   theta most frequent values, with h the largest that keeps the rest theta-balanced; when some
   values are more frequent than rho1 (SA' a proper subset of SA), the rows of the other values
   are then spread over the groups in proportion to their sizes (Appendix 10.7);
2. rearranging (Section 5.2): orders of the groups in which neighbours share values, by
   reverse Cuthill-McKee on A A^T: scipy's, and one started from each group; with few groups,
   also the best of all orders;
3. merging (Section 5.3, Eq. 14): dynamic programming over each order for the merging of
   neighbours that minimises the error bound eps(Part) of Eq. 12; the order whose merging has
   the lowest eps(Part) is kept.

Several orders because one RCM order is a heuristic whose tie-breaking decides the result: on
the running example scipy's order merges to {g1..g4}, {g5} with eps(Part) = 2.0303, where
Example 1's partition, the best of all 120 orders, has 2.0196.

The paper's Theorem 4 gives O(t^2 log t + t^2 m + n + m log m) for one order; the t + 1
orders here cost O(t^2 (m + nnz)), nnz <= t m the non-zero counts of the groups, and the best
of all orders O(3^t) for t <= EXHAUSTIVE_GROUPS. After counting, the work depends on the
number of initial groups t and the domain size m, not on the number of rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.sdr.formulas import (
    amplification_gamma,
    check_delta,
    check_privacy,
    error_bound,
    protected_values,
)


def balancing_level(frequencies: np.ndarray) -> int:
    """theta = floor(|T| / f^m), the largest theta for which T is theta-balanced (Sec. 5)."""
    return int(frequencies.sum() // frequencies.max())


def balance(frequencies: np.ndarray, theta: int | None = None) -> np.ndarray:
    """The initial groups of the balancing phase as counts (groups x values).

    Section 5.1, Figure 1 and Eq. 13: each iteration takes h rows of each of the theta most
    frequent remaining values (ties: lower value index first), with
    ``h = mu_theta`` if ``sigma(mu_theta) >= mu_theta`` else ``floor(|T0|/theta -
    mu_{theta+1})``, ``sigma(v) = |T0|/theta - max(mu_1 - v, mu_{theta+1})``; when h = 0 the
    remaining rows form the last group. Every group and every remainder is theta-balanced
    (Lemma 1). Integer arithmetic throughout: ``sigma(v) >= v`` is
    ``|T0| - theta max(mu_1 - v, mu_{theta+1}) >= theta v``.
    """
    remaining = np.asarray(frequencies, dtype=np.int64).copy()
    theta = balancing_level(remaining) if theta is None else int(theta)
    if theta < 1 or remaining.max() * theta > remaining.sum():
        raise ValueError(f"the counts are not {theta}-balanced")
    groups = []
    while remaining.any():
        total = int(remaining.sum())
        order = np.argsort(-remaining, kind="stable")
        mu = remaining[order]
        mu_theta = int(mu[theta - 1])
        mu_next = int(mu[theta]) if theta < len(mu) else 0
        if total - theta * max(int(mu[0]) - mu_theta, mu_next) >= theta * mu_theta:
            h = mu_theta
        else:
            h = (total - theta * mu_next) // theta
        group = np.zeros_like(remaining)
        if h == 0:
            group[:] = remaining
        else:
            group[order[:theta]] = h
        remaining -= group
        groups.append(group)
    return np.array(groups, dtype=np.int64).reshape(len(groups), len(remaining))


def balance_with_unprotected(frequencies: np.ndarray, protected: np.ndarray) -> np.ndarray:
    """Initial groups when only the values in SA' must be protected (Appendix 10.7).

    The rows T' of protected values are balanced on their own (theta' = floor(|T'|/f^m));
    then the rows T'' of the other values are dealt to the groups in proportion to their
    sizes, floor(|g_j| |T''| / |T'|) rows each and the residue to the last group, the most
    frequent value first so that each group gets few distinct values.
    """
    frequencies = np.asarray(frequencies, dtype=np.int64)
    groups = balance(np.where(protected, frequencies, 0))
    others = np.where(protected, 0, frequencies)
    n_others = int(others.sum())
    if n_others == 0:
        return groups
    sizes = groups.sum(axis=1)
    quota = sizes * n_others // int(sizes.sum())
    quota[-1] += n_others - int(quota.sum())
    order = np.argsort(-others, kind="stable")
    order = order[others[order] > 0]
    # The rows of T'' in that value order fill the groups one after another: group j takes
    # the overlap of its quota interval with each value's interval.
    value_end = np.cumsum(others[order])
    group_end = np.cumsum(quota)
    overlap = (np.minimum(group_end[:, None], value_end[None, :])
               - np.maximum((group_end - quota)[:, None], (value_end - others[order])[None, :]))
    groups[:, order] += np.maximum(overlap, 0)
    return groups


def rearrange(groups: np.ndarray) -> np.ndarray:
    """An order of the groups in which neighbours share values (Section 5.2).

    Reverse Cuthill-McKee (scipy) on B = A A^T, A the groups x values count matrix; its
    tie-breaking is implementation-defined, as the paper's Example 3 allows.
    """
    a = np.asarray(groups, dtype=np.float64)
    return np.asarray(reverse_cuthill_mckee(csr_matrix(a @ a.T), symmetric_mode=True),
                      dtype=np.int64)


def sharing_graph(groups: np.ndarray) -> np.ndarray:
    """Which groups share a value: the pattern of B = A A^T off its diagonal (Section 5.2)."""
    present = (np.asarray(groups) > 0).astype(np.int64)
    shared = present @ present.T > 0
    np.fill_diagonal(shared, False)
    return shared


def cuthill_mckee(adjacency: np.ndarray, start: int) -> np.ndarray:
    """Cuthill-McKee order of a graph's nodes, breadth first from ``start`` (Section 5.2).

    Each node's unvisited neighbours follow in order of increasing degree (ties: lower index
    first); when a component is exhausted the next begins at its unvisited node of least
    degree, as in scipy's ``reverse_cuthill_mckee``. Reverse the result for RCM.
    """
    t = len(adjacency)
    degree = adjacency.sum(axis=1)
    by_rank = np.argsort(degree, kind="stable")
    # Rows list the neighbours in rank order, so each visit appends them without a sort.
    ranked = adjacency[:, by_rank]
    seen = np.zeros(t, dtype=bool)  # indexed by rank
    seen[np.flatnonzero(by_rank == start)] = True
    order = np.empty(t, dtype=np.int64)
    order[0] = start
    head, tail = 0, 1
    while tail < t:
        if head == tail:  # a new component
            first = int(np.argmin(seen))
            seen[first] = True
            order[tail] = by_rank[first]
            tail += 1
        new = np.flatnonzero(ranked[order[head]] & ~seen)
        seen[new] = True
        order[tail:tail + len(new)] = by_rank[new]
        tail += len(new)
        head += 1
    return order


def _statistics(rows: np.ndarray, m: np.ndarray, top: np.ndarray, rho2: float,
                delta: float) -> dict[str, np.ndarray]:
    """rho1_i, gamma_i and eps_i from the size, m_i and largest protected count (Eq. 9-12)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rho1 = top / rows
        gamma = amplification_gamma(rho1, rho2)
        feasible = (rows > 0) & (rho1 > 0) & (rho1 < rho2)
        epsilon = np.where(feasible, error_bound(rows, m, gamma, delta), np.inf)
    return {"rows": rows, "m": m, "rho1": rho1, "gamma": gamma, "epsilon": epsilon}


def subtable_statistics(counts: np.ndarray, protected: np.ndarray, rho2: float,
                        delta: float) -> dict[str, np.ndarray]:
    """Size, m_i, rho1_i, gamma_i and eps_i of sub-tables given as counts (rows x values).

    rho1_i is the largest relative frequency of a protected value (Eq. 9), gamma_i follows
    from Eq. 10 and eps_i from Eq. 12; eps_i is infinite where rho1_i >= rho2 (no gamma_i > 1).
    """
    counts = np.atleast_2d(counts)
    return _statistics(counts.sum(axis=1), (counts > 0).sum(axis=1),
                       np.where(protected, counts, 0).max(axis=1), rho2, delta)


def run_costs(groups: np.ndarray, protected: np.ndarray, rho2: float,
              delta: float) -> np.ndarray:
    """|g[r+1..e]|/|T| eps(g[r+1..e]) of every run of consecutive groups (Eq. 12, Eq. 14).

    A (t+1) x (t+1) array, row r and column e; infinite where e <= r or rho1_i >= rho2.
    Work O(t m + t nnz), nnz the non-zero counts of the groups: a run's values and largest
    protected count come from where each value occurs, not from a t x t x m table of run
    counts.
    """
    t, m = groups.shape
    sizes = np.r_[0, np.cumsum(groups.sum(axis=1))]  # rows in the first e groups
    rows = sizes[None, :] - sizes[:, None]
    # m_i: value v in group i, after its previous occurrence in group p (or none, p = -1), is
    # one more value of each run g[r+1..e] with p < r <= i < e. These rectangles of (r, e)
    # are added as corner differences and summed up both axes.
    present = groups > 0
    value, holder = np.nonzero(present.T)  # by value, then group
    repeated = np.diff(value, prepend=-1) == 0
    previous = np.where(repeated, np.r_[-1, holder[:-1]], -1)
    corners = np.r_[(previous + 1) * (t + 1), (holder + 1) * (t + 1)] + np.r_[holder, holder] + 1
    signs = np.repeat([1.0, -1.0], len(holder))
    distinct = np.bincount(corners, signs, minlength=(t + 1) ** 2).reshape(t + 1, t + 1)
    distinct = distinct.cumsum(axis=0).cumsum(axis=1)
    # The largest protected count: a value's count in g[r+1..e] changes only at the groups
    # holding it, so it is the running maximum over e of each holder's counts for every r.
    holder, column = np.nonzero(present & protected)  # by group, then value
    # Value by value (rows contiguous for the gathers): its count in the first e groups.
    cumulative = np.zeros((m, t + 1), dtype=np.int64)
    np.cumsum(groups.T, axis=1, out=cumulative[:, 1:])
    count = cumulative[column, holder + 1][:, None] - cumulative[column, :t]
    segments = np.flatnonzero(np.diff(holder, prepend=-1))
    top = np.zeros((t + 1, t + 1), dtype=np.int64)
    top[holder[segments] + 1, :t] = np.maximum.reduceat(count, segments, axis=0)
    top = np.maximum.accumulate(top, axis=0).T
    epsilon = _statistics(rows, distinct, top, rho2, delta)["epsilon"]
    with np.errstate(invalid="ignore"):  # 0 x inf on the empty runs, e = r
        return np.where(np.isfinite(epsilon), rows / float(sizes[-1]) * epsilon, np.inf)


def merge(groups: np.ndarray, protected: np.ndarray, rho2: float, delta: float) -> list[int]:
    """Boundaries of the optimal merging of consecutive groups (Section 5.3, Eq. 14).

    ``eps_0([1..i]) = min(|g[1..i]|/|T| eps(g[1..i]),
    min_r eps_0([1..r]) + |g[r+1..i]|/|T| eps(g[r+1..i]))``. Returns the end index (exclusive)
    of each merged run; ties keep the fewest boundaries.
    """
    t = len(groups)
    costs = run_costs(groups, protected, rho2, delta)
    best = np.zeros(t + 1)
    start = np.zeros(t + 1, dtype=np.int64)
    for end in range(1, t + 1):
        cost = best[:end] + costs[:end, end]
        start[end] = int(np.argmin(cost))
        best[end] = cost[start[end]]
    if not np.isfinite(best[t]):
        # Unreachable from perturbation_partition (the whole table has rho1_T <= rho1 <
        # rho2), but merge() also takes groups from elsewhere.
        whole = subtable_statistics(groups.sum(axis=0), protected, rho2, delta)["rho1"][0]
        raise InfeasibleError(f"no merging of the groups gives every sub-table rho1_i < rho2 = "
                              f"{rho2:g}; raise rho2 above {whole:.4g}, the largest relative "
                              f"frequency of a protected value in the whole table")
    ends = []
    end = t
    while end > 0:
        ends.append(end)
        end = int(start[end])
    return ends[::-1]


# The best of all orders takes O(3^t) time, two to three times as long for each group more
# (measured on random groups: 0.4-0.6 ms at t = 9, 1.6-3.2 ms at 10, 4.7-5.4 ms at 11,
# 10-13 ms at 12, 24-28 ms at 13), and holds 2^t rows of the counts of the values present;
# beyond t = 11 or 2^21 counts (16 MiB) only the Cuthill-McKee orders are merged.
EXHAUSTIVE_GROUPS = 11


EXHAUSTIVE_ENTRIES = 1 << 21


def best_grouping(groups: np.ndarray, protected: np.ndarray, rho2: float,
                  delta: float) -> np.ndarray:
    """An order whose merging is the best over all t! orders of the groups (Eq. 12, 14).

    A merging of consecutive groups in some order is a set partition of the groups, and each
    set partition is one in the order that lists its blocks one after another; so the best of
    all orders is the best set partition, found by dynamic programming over subsets
    (O(3^t), against t! runs of Eq. 14). Returns its blocks in turn, each in index order.
    """
    t = len(groups)
    used = groups.sum(axis=0) > 0  # absent values change no sub-table's statistics
    subsets = np.zeros((1 << t, int(used.sum())), dtype=np.int64)  # row s: the union of s
    for i in range(t):
        subsets[1 << i:2 << i] = subsets[:1 << i] + groups[i, used]
    stats = subtable_statistics(subsets[1:], protected[used], rho2, delta)
    cost = np.zeros(1 << t)
    cost[1:] = stats["rows"] / float(subsets[-1].sum()) * stats["epsilon"]
    best = np.zeros(1 << t)
    block = np.zeros(1 << t, dtype=np.int64)
    # Sets whose lowest group is j choose the block holding j; what remains has only groups
    # above j, so j runs downwards. (sets, blocks) pairs every set of groups above j with
    # each of its subsets.
    sets = np.zeros(1, dtype=np.int64)
    blocks = np.zeros(1, dtype=np.int64)
    for j in reversed(range(t)):
        bit = 1 << j
        total = cost[blocks | bit] + best[sets & ~blocks]
        lowest = np.full(1 << t, np.inf)
        np.minimum.at(lowest, sets, total)
        attained = total == lowest[sets]
        kept, first = np.unique(sets[attained], return_index=True)  # ties: the first listed
        best[kept | bit] = lowest[kept]
        block[kept | bit] = blocks[attained][first] | bit
        sets = np.concatenate([sets, sets | bit, sets | bit])
        blocks = np.concatenate([blocks, blocks, blocks | bit])
    order = []
    remaining = (1 << t) - 1
    while remaining:
        order += [i for i in range(t) if block[remaining] >> i & 1]
        remaining &= ~block[remaining]
    return np.array(order, dtype=np.int64)


def candidate_orders(groups: np.ndarray, protected: np.ndarray, rho2: float,
                     delta: float) -> list[np.ndarray]:
    """The orders of the groups whose mergings Perturbation Partitioning compares (Sec. 5.2).

    In turn: scipy's RCM order (``rearrange``); the RCM order started from each group, by
    group index; and, when t <= EXHAUSTIVE_GROUPS and the subset table stays within
    EXHAUSTIVE_ENTRIES counts, the order of ``best_grouping``. An order whose reverse is
    already listed is left out: both have the same mergings.
    """
    t = len(groups)
    adjacency = sharing_graph(groups)
    # scipy's order first: where nothing merges better, the partition stays the one that
    # order alone gave.
    orders = [rearrange(groups), *(cuthill_mckee(adjacency, s)[::-1] for s in range(t))]
    if t <= EXHAUSTIVE_GROUPS and (1 << t) * int((groups.sum(axis=0) > 0).sum()) \
            <= EXHAUSTIVE_ENTRIES:
        orders.append(best_grouping(groups, protected, rho2, delta))
    listed: set[tuple[int, ...]] = set()
    distinct = []
    for order in orders:
        key = min(tuple(order.tolist()), tuple(order[::-1].tolist()))
        if key not in listed:
            listed.add(key)
            distinct.append(np.ascontiguousarray(order))
    return distinct


@dataclass(frozen=True)
class Partition:
    """The sub-tables found by PP, as counts of each value in each sub-table.

    ``counts`` (sub-tables x values) and the initial ``groups`` are secret (they are what the
    perturbation hides); the release publishes only each row's sub-table, SA_i (the values with
    a non-zero count) and ``gammas``. ``order`` is the order of the groups whose merging gave
    ``counts``: sub-table i is the i-th run of consecutive groups in it.
    """

    counts: np.ndarray
    groups: np.ndarray
    order: np.ndarray
    protected: np.ndarray
    rho1s: np.ndarray
    gammas: np.ndarray
    epsilons: np.ndarray
    epsilon: float

    @property
    def domains(self) -> np.ndarray:
        """SA_i of each sub-table: a boolean (sub-tables x values) mask."""
        return self.counts > 0


def _merging(groups: np.ndarray, order: np.ndarray, protected: np.ndarray, rho2: float,
             delta: float) -> tuple[float, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """eps(Part), order, counts and statistics of the DP merging of the groups in this order."""
    ordered = groups[order]
    ends = merge(ordered, protected, rho2, delta)
    prefix = np.vstack([np.zeros((1, groups.shape[1]), dtype=np.int64),
                        np.cumsum(ordered, axis=0)])
    counts = prefix[ends] - prefix[[0, *ends[:-1]]]
    stats = subtable_statistics(counts, protected, rho2, delta)
    epsilon = float((stats["rows"] / stats["rows"].sum() * stats["epsilon"]).sum())
    return epsilon, order, counts, stats


def perturbation_partition(frequencies: np.ndarray, *, rho1: float, rho2: float,
                           delta: float = 0.05) -> Partition:
    """Perturbation Partitioning of a table given by its value counts (Section 5).

    ``frequencies``: count of each (compound) sensitive value. Balancing (with Appendix 10.7
    when some values are more frequent than rho1), then the DP merging (Eq. 14) of each of
    ``candidate_orders``; the partition kept has the lowest eps(Part) of Eq. 12, the first
    such in that list (a later order must be lower by more than a relative 1e-12, the
    rounding of the same sums taken in another order).
    """
    rho1, rho2 = check_privacy(rho1, rho2)
    delta = check_delta(delta)
    frequencies = np.asarray(frequencies, dtype=np.int64)
    protected = protected_values(frequencies, rho1)
    groups = balance_with_unprotected(frequencies, protected)
    mergings = [_merging(groups, order, protected, rho2, delta)
                for order in candidate_orders(groups, protected, rho2, delta)]
    chosen = mergings[0]
    for merging in mergings[1:]:
        if merging[0] < chosen[0] * (1 - 1e-12):
            chosen = merging
    epsilon, order, counts, stats = chosen
    if not np.all(stats["gamma"] > 1):  # merge() only returns feasible sub-tables
        raise InfeasibleError("a sub-table has gamma_i <= 1")
    return Partition(counts=counts, groups=groups, order=order, protected=protected,
                     rho1s=stats["rho1"], gammas=stats["gamma"], epsilons=stats["epsilon"],
                     epsilon=epsilon)
