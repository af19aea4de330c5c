"""Anatomy's pair counts T(k, x, s) (`ppdp.mechanisms.anatomy.pairs`): counted in chunks
and blocks, they equal the pairs counted one at a time, and the cubes built from them give
the quasi-identifier counts exactly."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import ppdp.mechanisms.anatomy.pairs as pairs_module
import ppdp.query.row_counts
from ppdp import Anatomy
from ppdp.data.schema import Column, Role, Schema
from ppdp.mechanisms.anatomy.pairs import SIZE_COLUMN, PairCounts, count_pair_parts
from ppdp.query.row_counts import COUNT_COLUMN, RowCounter
from ppdp.release.load import load_release
from ppdp.table.table import table_from_arrow


def random_anatomy(seed: int, *, wide: bool = False, shuffled_st: bool = False,
                   counts_above_one: bool = False
                   ) -> tuple[Schema, dict[str, np.ndarray], np.ndarray, tuple[np.ndarray, ...]]:
    """A schema, QIT codes, group ids and ST of groups of 2 to 4 rows, each group's ST lines
    its distinct values (with their counts), as Anatomy publishes them; ``wide``: quasi-
    identifier domains whose product passes 2^63 (the codes pack into two keys)."""
    rng = np.random.default_rng(seed)
    sizes = [2**20] * 4 if wide else [5, 3, 4]
    columns = [Column(f"q{i}", Role.QUASI_IDENTIFIER, tuple(range(size)))
               for i, size in enumerate(sizes)]
    columns.append(Column("s", Role.SENSITIVE, tuple(range(6))))
    schema = Schema(tuple(columns))
    group_sizes = rng.integers(2, 5, 60)
    qit_groups = np.repeat(np.arange(60), group_sizes)
    n_rows = len(qit_groups)
    values = rng.integers(0, 2 if counts_above_one else 6, n_rows)
    qit = {f"q{i}": rng.integers(0, min(size, 3), n_rows).astype(np.int64)
           for i, size in enumerate(sizes)}
    lines = Counter(zip(qit_groups.tolist(), values.tolist(), strict=True))
    st_groups, st_values, st_counts = _st(lines)
    shuffle = rng.permutation(n_rows)
    if shuffled_st:
        order = rng.permutation(len(st_groups))
        st_groups, st_values, st_counts = st_groups[order], st_values[order], st_counts[order]
    return (schema, {name: codes[shuffle] for name, codes in qit.items()}, qit_groups[shuffle],
            (st_groups, st_values, st_counts))


def _st(lines: Counter[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys = sorted(lines)
    return (np.array([g for g, _ in keys]), np.array([v for _, v in keys]),
            np.array([lines[key] for key in keys]))


def pairs_one_at_a_time(schema: Schema, qit: dict[str, np.ndarray], qit_groups: np.ndarray,
                        st: tuple[np.ndarray, ...]) -> Counter[tuple[int, ...]]:
    """T(k, x, s): every QIT row with every ST line of its group, counted c(g, x) times."""
    by_group: dict[int, list[tuple[int, int]]] = {}
    for g, x, c in zip(*(a.tolist() for a in st), strict=True):
        by_group.setdefault(g, []).append((x, c))
    size = {g: sum(c for _, c in lines) for g, lines in by_group.items()}
    found: Counter[tuple[int, ...]] = Counter()
    quasi = schema.quasi_identifiers
    for row, g in enumerate(qit_groups.tolist()):
        k = tuple(int(qit[name][row]) for name in quasi)
        for x, c in by_group[g]:
            found[(*k, x, size[g])] += c
    return found


def as_counter(table: pa.Table, schema: Schema) -> Counter[tuple[int, ...]]:
    names = [*schema.quasi_identifiers, "s"]
    codes = [table.column(name).to_pylist() for name in names]
    found: Counter[tuple[int, ...]] = Counter()
    for *key, size, count in zip(*codes, table.column(SIZE_COLUMN).to_pylist(),
                                 table.column(COUNT_COLUMN).to_pylist(), strict=True):
        found[(*key, size)] += count
    return found


@pytest.mark.parametrize(("seed", "wide", "shuffled_st", "counts_above_one", "chunk"), [
    (0, False, False, False, 1 << 18), (1, False, True, True, 7), (2, True, False, False, 13),
    (3, True, True, True, 1 << 18)])
def test_pair_counts_equal_the_pairs_counted_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch, seed: int, wide: bool, shuffled_st: bool,
        counts_above_one: bool, chunk: int) -> None:
    """In one chunk or many, for an ST in group order or not, with counts above 1, and for
    quasi-identifiers packed into one key or two (and cells summed densely or by a sort)."""
    monkeypatch.setattr(pairs_module, "PAIR_CHUNK_ROWS", chunk)
    schema, qit, qit_groups, st = random_anatomy(seed, wide=wide, shuffled_st=shuffled_st,
                                                 counts_above_one=counts_above_one)
    counter = RowCounter()
    for counted in count_pair_parts(schema, qit, qit_groups, st, 60):
        counter.add(counted)
    table = counter.table()
    assert table is not None
    assert as_counter(table, schema) == pairs_one_at_a_time(schema, qit, qit_groups, st)
    # Sorted by codes: the bytes do not depend on the chunks.
    keys = [table.column(name).to_numpy() if name == SIZE_COLUMN
            else table.column(name).combine_chunks().indices.to_numpy()
            for name in [*schema.quasi_identifiers, "s", SIZE_COLUMN]]
    assert np.all(np.diff(np.lexsort(keys[::-1])) == 1)
    counts = PairCounts(schema, table, n_rows=len(qit_groups), n_groups=60, l=1)
    want = np.bincount(qit["q0"], minlength=schema["q0"].size)
    assert np.array_equal(counts.plain.histogram(["q0"]), want)
    # Every row's share of its group's values adds up to the row: E sums to n.
    assert counts.expected.histogram(["s"]).sum() == pytest.approx(len(qit_groups), rel=1e-12)


def test_cells_are_summed_alike_densely_and_by_a_sort() -> None:
    """Few cells against the pairs are counted densely, many by a sort: the same sums."""
    rng = np.random.default_rng(4)
    cells = rng.integers(0, 50, 1_000)
    weights = rng.integers(1, 4, 1_000).astype(float)
    dense = pairs_module._summed(cells, weights, 50)
    # The same cells among 10^9 possible ones: summed by a sort.
    sparse = pairs_module._summed(cells * 20_000_000, weights, 10**9)
    assert np.array_equal(dense[0] * 20_000_000, sparse[0])
    assert np.array_equal(dense[1], sparse[1])
    want = Counter()
    for cell, weight in zip(cells.tolist(), weights.tolist(), strict=True):
        want[cell] += int(weight)
    assert dict(zip(dense[0].tolist(), dense[1].tolist(), strict=True)) == want


def test_a_release_with_too_many_pairs_to_write_is_counted_from_its_tables(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Pairs of more distinct lines than a file may hold are not written; loading then reads
    the QIT and the ST and counts the pairs in memory: the same answers."""
    rng = np.random.default_rng(5)
    n_rows = 400
    table = table_from_arrow(pa.table({
        "a": rng.integers(0, 20, n_rows), "b": rng.integers(0, 20, n_rows),
        "s": [f"v{k % 7}" for k in rng.permutation(n_rows)]}),
        roles={"s": Role.SENSITIVE}).declare_observed_domains(warn=False)
    release = Anatomy(l=3).publish(table, random_state=1)
    queries = ["a < 5 AND s = 'v1'", "SELECT s, COUNT(*) FROM t WHERE b >= 10 GROUP BY s",
               "a = 3 OR s = 'v2'", "b < 4"]
    with_pairs = load_release(release.save(tmp_path / "with"))
    monkeypatch.setattr(ppdp.query.row_counts, "MAX_COUNTED_ROWS", 10)
    # Published again (the same release): the first one keeps the pairs it counted. Counted
    # before it is saved, it still saves no pairs: those counted in memory are not kept.
    again = Anatomy(l=3).publish(table, random_state=1)
    assert again.count(queries[0]).value == with_pairs.count(queries[0]).value
    saved = again.save(tmp_path / "without")
    assert not (saved / "pair_counts.parquet").exists()
    for engine in ("memory", "streaming"):
        without = load_release(saved, engine=engine)
        for query in queries:
            want, got = with_pairs.count(query), without.count(query)
            if hasattr(want, "groups"):
                assert [e.value for _, e in got.groups] == [e.value for _, e in want.groups]
            else:
                assert got.value == want.value
