"""Plans: exact quotas by keyed order, release order by keyed rank, parts."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppdp
import ppdp.engines.memory.rows
import ppdp.plan.rows
import ppdp.workers
from ppdp import DBR, FRAPP, PerturbationPartitioning, UniformPerturbation
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.order import in_release_order, part_of, rank_order, row_ranks
from ppdp.plan.quotas import QuotaAssignment


def assign(values, counts, key, batch_rows, order=None):
    """Labels from a QuotaAssignment fed in batches (in ``order`` of batch index)."""
    assignment = QuotaAssignment(KeyedStream(key, "quota"), counts, lambda c: c["v"], ["v"])
    batches = [(start, {"v": values[start:start + batch_rows]})
               for start in range(0, len(values), batch_rows)]
    visit = batches if order is None else [batches[i] for i in order(len(batches))]
    for step in assignment.passes:
        if not step.needed:
            continue
        for start, codes in visit:
            step.update(start, codes)
        step.finish()
    labels = [assignment.labels(start, codes) for start, codes in batches]
    return np.concatenate(labels) if labels else np.zeros(0, dtype=assignment.label_dtype)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 8), k=st.integers(1, 5), n=st.integers(0, 300),
       seed=st.integers(0, 2 ** 32 - 1), batch_rows=st.integers(1, 400))
def test_quotas_are_exact_whatever_the_batches(m, k, n, seed, batch_rows):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, m, n)
    frequencies = np.bincount(values, minlength=m)
    # A random split of each value's rows over k labels, zero counts included.
    counts = np.array([rng.multinomial(f, np.full(k, 1 / k)) for f in frequencies]).T
    labels = assign(values, counts, seed, max(n, 1))
    assert labels.shape == (n,)
    for i in range(k):
        for x in range(m):
            assert int(np.sum((labels == i) & (values == x))) == counts[i, x]
    shuffled = assign(values, counts, seed, batch_rows,
                      order=lambda count: np.random.default_rng(seed).permutation(count))
    assert np.array_equal(shuffled, labels)


def test_a_single_label_needs_no_pass():
    values = np.array([0, 2, 2, 1, 0])
    counts = np.array([[2, 1, 2]])
    assignment = QuotaAssignment(KeyedStream(5, "quota"), counts, lambda c: c["v"], ["v"])
    assert assignment.passes == []
    assert assign(values, counts, 5, 2).tolist() == [0] * 5


def test_quotas_follow_the_keyed_order_of_each_value():
    """Within a value, rows sorted by their keyed draw get labels 0, 0, ..., 1, 1, ...; equal
    draws are told apart by row id."""
    values = np.array([0, 1, 0, 0, 1, 0, 1, 0] * 50)
    counts = np.array([[60, 40], [190, 110]])
    labels = assign(values, counts, 11, 7)
    draws = KeyedStream(11, "quota").raw(0, len(values))
    for value in (0, 1):
        rows = np.flatnonzero(values == value)
        in_order = labels[rows[np.argsort(draws[rows], kind="stable")]]
        assert np.all(np.diff(in_order.astype(int)) >= 0)


class FewDraws(KeyedStream):
    """A stream with only four distinct draws: most keys tie, as 64-bit draws almost never
    do."""

    def raw(self, start, count, per_row=1):
        return (super().raw(start, count, per_row) >> np.uint64(62)) << np.uint64(62)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(0, 200),
       seed=st.integers(0, 2 ** 32 - 1), batch_rows=st.integers(1, 250))
def test_quotas_are_exact_when_keys_tie(m, k, n, seed, batch_rows):
    """Equal keys are ordered by row id: quotas stay exact, the labels follow (draw, row id)
    within each value and do not depend on the batches."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, m, n)
    counts = np.array([rng.multinomial(f, np.full(k, 1 / k))
                       for f in np.bincount(values, minlength=m)]).T
    runs = []
    for rows in (max(n, 1), batch_rows):
        assignment = QuotaAssignment(FewDraws(seed, "quota"), counts, lambda c: c["v"], ["v"])
        batches = [(start, {"v": values[start:start + rows]}) for start in range(0, n, rows)]
        for step in assignment.passes:
            if not step.needed:
                continue
            for start, codes in batches:
                step.update(start, codes)
            step.finish()
        runs.append(np.concatenate([assignment.labels(start, codes) for start, codes in batches])
                    if batches else np.zeros(0, dtype=assignment.label_dtype))
    assert np.array_equal(runs[0], runs[1])
    labels, draws = runs[0], FewDraws(seed, "quota").raw(0, n)
    for x in range(m):
        rows = np.flatnonzero(values == x)
        in_order = labels[rows[np.lexsort((rows, draws[rows]))]]
        assert np.all(np.diff(in_order.astype(int)) >= 0)
        assert np.array_equal(np.bincount(in_order, minlength=k), counts[:, x])


@pytest.mark.parametrize("missed", [1e-6, 0.3, 0.5])
def test_quotas_do_not_depend_on_the_predicted_bins(missed, monkeypatch):
    """The first pass also collects the bins where thresholds are predicted to fall: with
    the usual central 1 - 2 * 10^-6 no second pass runs here; with narrow predictions (0.3,
    and 0.5: a single quantile) some thresholds fall outside and the second pass runs. The
    labels are those of the plain two passes (no prediction) in every case. Fine bins (of
    about two rows of each value) make the predictions as narrow as at 10^9 rows."""
    monkeypatch.setattr(QuotaAssignment, "_COLLECTED_ROWS", 64)
    rng = np.random.default_rng(4)
    values = rng.integers(0, 6, 50_000)
    counts = np.array([rng.multinomial(f, [0.2, 0.001, 0.5, 0.299])
                       for f in np.bincount(values, minlength=6)]).T
    with monkeypatch.context() as patch:
        patch.setattr(QuotaAssignment, "_PREDICTED_ROWS", 0)
        plain = assign(values, counts, 9, 6_000)
    monkeypatch.setattr(QuotaAssignment, "_MISSED", missed)
    assignment = QuotaAssignment(KeyedStream(9, "quota"), counts, lambda c: c["v"], ["v"])
    assignment.update(0, {"v": values})
    assignment.finish()
    assert assignment.needed == (missed > 1e-6)
    assert np.array_equal(assign(values, counts, 9, 6_000), plain)


@pytest.mark.parametrize("missed", [1e-6, 0.3])
def test_copies_taking_batches_apart_merge_into_one_pass(missed, monkeypatch):
    """Copies of the pass (deep copies, as a Spark task makes of the pass it gets) each take
    some batches; their `taken` merged in another order give the labels of one pass over the
    rows in order, with the second pass needed (0.3) or not."""
    import copy

    monkeypatch.setattr(QuotaAssignment, "_COLLECTED_ROWS", 64)
    monkeypatch.setattr(QuotaAssignment, "_MISSED", missed)
    rng = np.random.default_rng(5)
    values = rng.integers(0, 6, 50_000)
    counts = np.array([rng.multinomial(f, [0.2, 0.001, 0.5, 0.299])
                       for f in np.bincount(values, minlength=6)]).T
    expected = assign(values, counts, 9, len(values))
    assignment = QuotaAssignment(KeyedStream(9, "quota"), counts, lambda c: c["v"], ["v"])
    runs = [(start, {"v": values[start:start + 7_000]}) for start in range(0, 50_000, 7_000)]
    ran = 0
    for step in assignment.passes:
        if not step.needed:
            continue
        ran += 1
        copies = [copy.deepcopy(step) for _ in range(3)]
        for index, (start, codes) in enumerate(runs):
            copies[index % 3].update(start, codes)
        for taker in reversed(copies):
            step.merge(taker.taken())
        step.finish()
    assert ran == (2 if missed > 1e-6 else 1)
    labels = np.concatenate([assignment.labels(start, codes) for start, codes in runs])
    assert np.array_equal(labels, expected)


def test_quotas_choose_rows_at_random():
    """Rows of a value get label i with probability counts[i, x]/f_x: over 2000 keys each
    row's share is within 5 binomial sds (sqrt(0.3 * 0.7 / 2000) = 0.010) of 0.3."""
    values = np.array([0] * 10 + [1] * 5)
    counts = np.array([[3, 5], [7, 0]])
    draws = 2000
    in_first = np.zeros(15)
    for key in range(draws):
        in_first += assign(values, counts, key, 4) == 0
    assert np.all(np.abs(in_first[:10] / draws - 0.3) < 5 * math.sqrt(0.3 * 0.7 / draws))
    assert np.all(in_first[10:] == draws)


def test_release_order_is_by_rank_then_row_id_and_parts_are_contiguous():
    ranks = row_ranks(3, 0, 10_000)
    ordered = in_release_order({"rank": ranks, "id": np.arange(10_000)}, ranks)
    assert np.all(np.diff(ordered["rank"].astype(np.float64)) >= 0)
    tied = np.array([5, 1, 5, 1, 5], dtype=np.uint64)
    rows = in_release_order({"id": np.array([40, 41, 42, 43, 44])}, tied,
                            np.array([4, 3, 2, 1, 0]))
    assert rows["id"].tolist() == [43, 41, 44, 42, 40]
    parts = part_of(ordered["rank"], 7)
    assert np.all(np.diff(parts) >= 0) and set(parts.tolist()) == set(range(7))
    # The ranks of a batch are those of the same rows in the whole.
    assert np.array_equal(row_ranks(3, 1234, 100), ranks[1234:1334])


def test_rank_order_breaks_ties_by_row_id_given_or_by_position():
    tied = np.array([7, 7, 2, 7], dtype=np.uint64)
    assert rank_order(tied).tolist() == [2, 0, 1, 3]
    assert rank_order(tied, np.array([9, 8, 0, 1])).tolist() == [2, 3, 1, 0]


@pytest.mark.parametrize("bits", [64, 40, 8])
def test_rank_order_is_the_order_of_rank_then_row_id(bits):
    """Ranks spread over 2^64 (leading bits cut, ties among them re-sorted), over 2^40 (a
    part's ranks) and over 2^8 (every rank tied many times), with row ids in any order."""
    rng = np.random.default_rng(bits)
    ranks = rng.integers(0, 1 << bits, 50_000, dtype=np.uint64, endpoint=False) \
        if bits < 64 else rng.integers(0, np.iinfo(np.uint64).max, 50_000, dtype=np.uint64)
    # A run of 1,000 ranks equal but in their last 16 bits: one leading word in the 64-bit
    # case (50,000 positions take 16 bits), so that run is re-sorted by the whole rank.
    ranks[:1000] = (ranks[0] >> np.uint64(16)) << np.uint64(16) \
        | rng.integers(0, 1 << 16, 1000, dtype=np.uint64)
    ranks[1000:1100] = ranks[:100]
    ids = rng.permutation(50_000)
    np.testing.assert_array_equal(rank_order(ranks, ids), np.lexsort((ids, ranks)))
    np.testing.assert_array_equal(rank_order(ranks), np.lexsort((np.arange(50_000), ranks)))


@pytest.mark.parametrize("name", ["dbr", "uniform", "sdr", "frapp"])
def test_chunks_on_several_workers_publish_what_one_batch_does(name, monkeypatch):
    """The in-memory executor cuts a batch into a chunk a worker (passes and kernel): 1, 2 and
    7 workers publish the same rows."""
    make = {"dbr": DBR, "uniform": lambda: UniformPerturbation(rho1=0.077, rho2=0.2),
            "sdr": lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2),
            "frapp": lambda: FRAPP(k=10, gamma=0.2)}[name]
    table = ppdp.datasets.adult(sensitive="occupation")
    monkeypatch.setattr(ppdp.workers, "CHUNK_ROWS", 1000)
    published = {}
    for workers in (1, 2, 7):
        with ppdp.workers.using_workers(workers):
            chunks = ppdp.workers.chunk_bounds(table.n_rows,
                                               ppdp.workers.threads_for(table.n_rows))
            assert len(chunks) == workers
            published[workers] = make().publish(table, random_state=11)
    for column, codes in published[1].codes.items():
        for workers in (2, 7):
            np.testing.assert_array_equal(published[workers].codes[column], codes)
