"""Tests of the SPLU-Gen query pools (Section 6.1, SDR Appendix 10.9) in ppdp.evaluate.workloads."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import ppdp
from ppdp.data.schema import Role
from ppdp.errors import SchemaError
from ppdp.evaluate.generalization_comparison import paper_workloads
from ppdp.evaluate.workloads import (
    QueryPool,
    _draw,
    format_condition,
    group_by_pool,
    in_list_pool,
    ordered_range_pool,
    range_columns,
    range_pool,
    sdr_pool,
    splu_pools,
)
from ppdp.query.binding import bind
from ppdp.query.parse import parse_query
from ppdp.query.syntax import And, Between, Col, Compare, Condition, In, Lit
from ppdp.table.table import Table, exact_counts, table_from_arrow

SIZE = 300


@pytest.fixture(scope="module")
def adult() -> Table:
    return ppdp.datasets.adult(sensitive="occupation")


@pytest.fixture(scope="module")
def pools(adult: Table) -> tuple[QueryPool, QueryPool]:
    return splu_pools(adult, size=SIZE, random_state=11)


def _atoms(condition: Condition) -> list[Compare]:
    if isinstance(condition, And):
        return [atom for item in condition.items for atom in _atoms(item)]
    assert isinstance(condition, Compare | In | Between)
    return [condition]


def test_pool_sizes_and_names(pools: tuple[QueryPool, QueryPool]) -> None:
    small, large = pools
    assert (small.name, large.name) == ("small", "large")
    assert len(small) == len(large) == SIZE
    assert small.truth.shape == large.truth.shape == (SIZE,)


def test_truth_bands(adult: Table, pools: tuple[QueryPool, QueryPool]) -> None:
    small, large = pools
    assert small.truth.min() >= 1 and small.truth.max() <= 10
    selectivity = large.truth / adult.n_rows
    assert selectivity.min() >= 0.005 and selectivity.max() < 0.05
    # 0.5 % of 30,162 rows is 150.81: the smallest large count is 151.
    assert large.truth.min() >= 151


def test_seeds_reproduce(adult: Table, pools: tuple[QueryPool, QueryPool]) -> None:
    again = splu_pools(adult, size=SIZE, random_state=11)
    other = splu_pools(adult, size=SIZE, random_state=12)
    for first, second in zip(pools, again, strict=True):
        assert [q.text for q in first.queries] == [q.text for q in second.queries]
        np.testing.assert_array_equal(first.truth, second.truth)
    assert [q.text for q in pools[0].queries] != [q.text for q in other[0].queries]


def test_distinct_pools_hold_distinct_queries(adult: Table) -> None:
    for pool in splu_pools(adult, size=SIZE, random_state=11, distinct=True):
        conditions = {frozenset(_atoms(q.where)) for q in pool.queries}
        assert len(conditions) == len(pool)
        assert len({q.text for q in pool.queries}) == len(pool)


def test_query_form(adult: Table, pools: tuple[QueryPool, QueryPool]) -> None:
    quasi = set(adult.schema.quasi_identifiers)
    widths = set()
    for pool in pools:
        for query in pool.queries:
            atoms = _atoms(query.where)
            assert all(a.op == "=" and isinstance(a.left, Col) and isinstance(a.right, Lit)
                       for a in atoms)
            names = [a.left.name for a in atoms]
            assert names[-1] == "occupation"
            assert set(names[:-1]) <= quasi and len(set(names[:-1])) == len(names) - 1
            widths.add(len(names) - 1)
            for atom in atoms:
                value = atom.right.value
                assert type(value) in (int, float, str)
                assert value in adult.schema[atom.left.name].domain
    assert widths == {1, 2, 3}


def test_truth_matches_sql_brute_force(adult: Table,
                                       pools: tuple[QueryPool, QueryPool]) -> None:
    for pool in pools:
        for index in range(0, len(pool), 15):
            query = pool.queries[index]
            assert adult.count(query.text).value == pool.truth[index], query.text


def test_text_parses_to_the_same_conditions(pools: tuple[QueryPool, QueryPool]) -> None:
    for query in pools[0].queries[:50]:
        assert set(_atoms(parse_query(query.text).where)) == set(_atoms(query.where))
    assert any('"marital-status"' in q.text or '"native-country"' in q.text
               or '"salary-class"' in q.text for q in pools[0].queries)


def test_draw_picks_d_uniformly_and_columns_without_replacement() -> None:
    rng = np.random.default_rng(0)
    sizes = np.array([2, 3, 4, 5, 6])
    rows = _draw(rng, 30_000, sizes, 7)
    used = rows[:, :5] > 0
    d = used.sum(axis=1)
    shares = np.bincount(d, minlength=4)[1:] / len(d)
    np.testing.assert_allclose(shares, [1 / 3] * 3, atol=0.02)
    # Every column is conditioned on equally often, and values stay inside each domain.
    np.testing.assert_allclose(used.mean(axis=0), [2 / 5] * 5, atol=0.02)
    assert np.all(rows[:, :5] <= sizes) and rows[:, 5].max() == 6 and rows[:, 5].min() == 0


def test_awkward_names_and_values_round_trip() -> None:
    rng = np.random.default_rng(3)
    n = 400
    data = pa.table({
        "marital-status": rng.choice(["it's", "plain", 'say "hi"'], n),
        "select": rng.integers(-2, 3, n),
        "weight kg": rng.choice([0.5, 1.25, 70.0], n),
        "ok_name": rng.choice(["a", "b"], n),
        "disease": rng.choice(["flu", "cold", "o'brien syndrome"], n),
    })
    table = table_from_arrow(data, roles={"disease": Role.SENSITIVE})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small, large = splu_pools(table, size=40, random_state=1, max_candidates=20_000)
    assert len(small) > 0 and len(large) > 0
    for pool in (small, large):
        for query, truth in zip(pool.queries, pool.truth, strict=True):
            assert table.count(query.text).value == truth, query.text
            assert set(_atoms(parse_query(query.text).where)) == set(_atoms(query.where))


def test_sparse_counts_match_dense(adult: Table, pools: tuple[QueryPool, QueryPool],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Column sets whose contingency table would be too large are counted from the occupied
    # cells only; forcing that path everywhere must give the same pools.
    monkeypatch.setattr("ppdp.query.cube.MAX_CUBE_CELLS", 10)
    sparse = splu_pools(adult, size=SIZE, random_state=11)
    for dense, other in zip(pools, sparse, strict=True):
        assert [q.text for q in dense.queries] == [q.text for q in other.queries]
        np.testing.assert_array_equal(dense.truth, other.truth)


def test_short_pool_warns_with_the_count() -> None:
    data = pa.table({"x": ["a", "b", "a", "b"] * 5, "s": ["u", "v", "w", "u"] * 5})
    table = table_from_arrow(data, roles={"s": Role.SENSITIVE})
    with pytest.warns(UserWarning) as record:
        small, large = splu_pools(table, size=50, random_state=0, max_candidates=5_000,
                                  distinct=True)
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2
    assert messages[0].startswith("only 0 of 50 distinct large-count queries")
    assert messages[1].startswith(f"only {len(small)} of 50 distinct small-count queries")
    # 2 values of x times 3 of s: at most 6 distinct queries, each with a count of 0 to 10.
    assert 0 < len(small) <= 6
    assert len(large) == 0 and large.truth.shape == (0,)
    # Independent draws (the default) may repeat a query and so fill the small pool.
    with pytest.warns(UserWarning, match="only 0 of 50 large-count"):
        repeated, _ = splu_pools(table, size=50, random_state=0, max_candidates=5_000)
    assert len(repeated) == 50 and len({q.text for q in repeated.queries}) <= 6


def test_sensitive_column_must_be_clear(adult: Table) -> None:
    plain = adult.with_roles(sensitive=None)
    with pytest.raises(SchemaError, match="no sensitive column"):
        splu_pools(plain, size=5)
    two = adult.with_roles(sensitive="occupation,sex")
    with pytest.raises(SchemaError, match="sensitive columns"):
        splu_pools(two, size=5)
    small, _ = splu_pools(two, sensitive="occupation", size=20, random_state=0)
    assert all("sex" not in {a.left.name for a in _atoms(q.where)} for q in small.queries)
    with pytest.raises(SchemaError, match="unknown column"):
        splu_pools(adult, sensitive="nope", size=5)
    with pytest.raises(ValueError, match="size"):
        splu_pools(adult, size=0)


# -- the SDR pool (Appendix 10.9) -----------------------------------------------------------


def test_sdr_pool_asks_every_condition_with_every_sensitive_value(adult: Table) -> None:
    pool = sdr_pool(adult, conditions=50, random_state=3)
    m = adult.schema["occupation"].size
    assert pool.name == "sdr" and len(pool) == 50 * m
    for start in range(0, len(pool), m):
        block = [_atoms(q.where) for q in pool.queries[start:start + m]]
        conditions = {tuple((a.left.name, a.right.value) for a in atoms[:-1]) for atoms in block}
        assert len(conditions) == 1  # one condition per block of m queries
        (condition,) = conditions
        assert 1 <= len(condition) <= 3
        assert len({name for name, _ in condition}) == len(condition)
        assert [atoms[-1].right.value for atoms in block] == list(
            adult.schema["occupation"].domain)


def test_sdr_pool_truth_matches_brute_force_and_seeds_reproduce(adult: Table) -> None:
    pool = sdr_pool(adult, conditions=20, random_state=5)
    again = sdr_pool(adult, conditions=20, random_state=5)
    assert [q.text for q in pool.queries] == [q.text for q in again.queries]
    np.testing.assert_array_equal(pool.truth, again.truth)
    assert [q.text for q in sdr_pool(adult, conditions=20, random_state=6).queries] != [
        q.text for q in pool.queries]
    for query, truth in zip(pool.queries, pool.truth, strict=True):
        mask = np.ones(adult.n_rows, dtype=bool)
        for atom in _atoms(query.where):
            column = adult.schema[atom.left.name]
            mask &= adult.codes[atom.left.name] == column.domain.index(atom.right.value)
        assert truth == mask.sum()


def test_sdr_pool_rejects_bad_sizes(adult: Table) -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="conditions"):
            sdr_pool(adult, conditions=bad)


@pytest.mark.parametrize(("selectivity", "attributes"), [(0.01, (1, 2, 3)), (0.1, (1, 2, 3)),
                                                          (0.05, (4,))])
def test_range_pool_band_truth_and_seeds(adult: Table, selectivity: float,
                                         attributes: tuple[int, ...]) -> None:
    """Ambiguity Section 8.1 pools: the quasi-identifier part selects between s/2 and 2s of
    the rows, the truth matches counting the SQL text, and a seed reproduces the pool."""
    pool = range_pool(adult, selectivity=selectivity, attributes=attributes, size=40,
                      random_state=5)
    assert len(pool) == 40
    np.testing.assert_array_equal(exact_counts(adult, pool.queries), pool.truth)
    for query in pool.queries:
        columns = bind(query, adult.schema).predicate.columns
        assert "occupation" in columns and len(columns) - 1 in attributes
        quasi_part, last = query.text.rsplit(" AND ", 1)
        assert last.startswith("occupation = ")
        share = adult.count(quasi_part).value / adult.n_rows
        assert selectivity / 2 <= share < 2 * selectivity
    again = range_pool(adult, selectivity=selectivity, attributes=attributes, size=40,
                       random_state=5)
    assert [q.text for q in again.queries] == [q.text for q in pool.queries]


def test_range_pool_rejects_bad_arguments(adult: Table) -> None:
    with pytest.raises(ValueError, match="selectivity"):
        range_pool(adult, selectivity=0)
    with pytest.raises(ValueError, match="attributes"):
        range_pool(adult, selectivity=0.05, attributes=(9,))


# -- the three forms of Section 8.1's workload ----------------------------------------------


def _rows_meeting(table: Table, text: str) -> int:
    """The rows meeting a condition's SQL text, evaluated row by row: independent of the
    contingency tables the pools count from (and, on many columns, faster than building
    them)."""
    predicate = bind(parse_query(text), table.schema).predicate
    return int(np.count_nonzero(predicate.evaluate(table.codes, table.n_rows)))


def _quasi_rows(table: Table, text: str) -> int:
    """The rows meeting a query's quasi-identifier part (all but its last condition, on the
    sensitive value)."""
    return _rows_meeting(table, text.rsplit(" AND ", 1)[0])


@pytest.mark.parametrize(("form", "selectivity", "attributes"), [
    ("range", 0.01, (1, 2, 3)), ("range", 0.1, (5,)), ("in-list", 0.05, (1, 2, 3)),
    ("in-list", 0.05, (4,))])
def test_range_and_in_list_pools(fars: Table, form: str, selectivity: float,
                                 attributes: tuple[int, ...]) -> None:
    """Range pools put runs on ordered columns, IN-list pools value sets on any column; the
    truths are the SQL texts' counts and the quasi-identifier part lies in [s/2, 2s)."""
    make = ordered_range_pool if form == "range" else in_list_pool
    pool = make(fars, selectivity=selectivity, attributes=attributes, size=30, random_state=4)
    label = "range" if form == "range" else "IN-list"
    assert pool.name == f"{label}, selectivity {selectivity:g}, " \
                        f"{'/'.join(map(str, attributes))} attributes"
    assert len(pool) == 30
    for query, truth in zip(pool.queries, pool.truth, strict=True):
        assert _rows_meeting(fars, query.text) == truth, query.text
    for query in pool.queries:
        *conditions, last = _atoms(query.where)
        assert isinstance(last, Compare) and last.left == Col("iinjury")
        assert len(conditions) in attributes
        if form == "range":
            # Every FARS column is an integer code: a run is written BETWEEN its ends.
            assert all(isinstance(c, Between) for c in conditions)
        else:
            assert all(isinstance(c, In) for c in conditions)
        assert selectivity / 2 <= _quasi_rows(fars, query.text) / fars.n_rows \
            < 2 * selectivity
        assert set(_atoms(parse_query(query.text).where)) == set(_atoms(query.where))
    again = make(fars, selectivity=selectivity, attributes=attributes, size=30, random_state=4)
    assert [q.text for q in again.queries] == [q.text for q in pool.queries]


def test_range_pool_needs_ordered_columns(adult: Table) -> None:
    """Adult's only ordered quasi-identifier is age: its range pools condition on age alone."""
    assert range_columns(adult) == ["age"]
    pool = ordered_range_pool(adult, selectivity=0.05, attributes=(1,), size=20, random_state=1)
    assert all(q.text.startswith("age BETWEEN ") for q in pool.queries)
    np.testing.assert_array_equal(exact_counts(adult, pool.queries), pool.truth)
    with pytest.raises(ValueError, match="ordered quasi-identifiers"):
        ordered_range_pool(adult, selectivity=0.05, attributes=(2,))


@pytest.mark.parametrize("selectivity", [0.01, 0.05, 0.1])
def test_group_by_pool_cells_partition_each_statement(adult: Table, selectivity: float
                                                      ) -> None:
    """Each GROUP BY statement's cells are its positive cells: their truths add up to the rows
    of S = v, every cell's truth is its SQL count, and the mean quasi-identifier share of the
    cells lies in [s/2, 2s)."""
    pool = group_by_pool(adult, selectivity=selectivity, size=100, random_state=3)
    assert pool.name == f"GROUP BY, selectivity {selectivity:g}, 1/2/3 attributes"
    assert len(pool) >= 100 and (pool.truth >= 1).all()
    statements: dict[tuple[frozenset[str], str], list[int]] = {}
    for index, query in enumerate(pool.queries):
        *cell, last = _atoms(query.where)
        assert all(isinstance(a, Compare) and a.op == "=" for a in (*cell, last))
        assert last.left == Col("occupation") and 1 <= len(cell) <= 3
        key = (frozenset(a.left.name for a in cell), last.right.value)
        statements.setdefault(key, []).append(index)
    # Queries come statement by statement, so each statement's cells are consecutive.
    assert sum(len(v) for v in statements.values()) == len(pool)
    for (_, value), members in statements.items():
        assert members == list(range(members[0], members[-1] + 1))
        total = adult.count(format_condition([("occupation", value)])).value
        assert pool.truth[members].sum() == total
        rows = sum(_quasi_rows(adult, pool.queries[i].text) for i in members)
        assert selectivity / 2 <= rows / (len(members) * adult.n_rows) < 2 * selectivity
        assert len({pool.queries[i].text for i in members}) == len(members)
    for index in range(0, len(pool), 7):
        assert _rows_meeting(adult, pool.queries[index].text) == pool.truth[index]
    again = group_by_pool(adult, selectivity=selectivity, size=100, random_state=3)
    assert [q.text for q in again.queries] == [q.text for q in pool.queries]


def test_group_by_pool_sparse_counts_match_dense(fars: Table,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells of column sets whose contingency table is too large are counted from the occupied
    cells only; forcing that path everywhere gives the same pool."""
    dense = group_by_pool(fars, selectivity=0.01, size=50, random_state=2)
    monkeypatch.setattr("ppdp.query.cube.MAX_CUBE_CELLS", 10)
    sparse = group_by_pool(fars, selectivity=0.01, size=50, random_state=2)
    assert [q.text for q in dense.queries] == [q.text for q in sparse.queries]
    np.testing.assert_array_equal(dense.truth, sparse.truth)
    for index in range(0, len(dense), 5):
        assert _rows_meeting(fars, dense.queries[index].text) == dense.truth[index]


def test_paper_workloads_on_adult(adult: Table) -> None:
    """Section 8.1's workloads: three forms at 1/5/10 %, then the 3/4/5-attribute pools;
    Adult has no range pool on several attributes (one ordered column)."""
    pools = paper_workloads(adult, size=20, random_state=5)
    names = [p.name for p in pools]
    assert names == [
        *(f"{form}, selectivity {s:g}, {attributes} attributes"
          for s in (0.01, 0.05, 0.1)
          for form, attributes in (("range", "1"), ("IN-list", "1/2/3"),
                                   ("GROUP BY", "1/2/3"))),
        *(f"IN-list, selectivity 0.05, {k} attributes" for k in (3, 4, 5))]
    assert all(len(p) > 0 and (p.truth > 0).all() for p in pools)
