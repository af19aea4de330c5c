"""Tests of ppdp.domain.count_domain: counting the tuples of a whole domain satisfying a condition.

The golden tests follow alpha-beta Section 4.1 (Example 4.1). Everything else is checked against
a brute-force oracle that enumerates the full product of small domains and evaluates the bound
predicate on every tuple, for random SQL conditions built from a small recursive grammar. The
same comparison runs with ``MAX_ENUMERATED_CELLS`` made tiny, so that the factorised paths
(independent conjuncts, fixed shared attributes, complements, inclusion-exclusion) do the work.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppdp.query.domain_count
from ppdp.data.schema import Schema
from ppdp.datasets import adult
from ppdp.errors import QueryError
from ppdp.query.binding import bind
from ppdp.query.domain_count import count_domain
from ppdp.query.predicates import Predicate
from ppdp.table.table import table_from_arrow

# ---------------------------------------------------------------------------------------------
# Helpers


def int_schema(domains: Mapping[str, Sequence[int]]) -> Schema:
    """A schema whose integer columns have the given domains (one dummy row)."""
    data = pa.table({name: pa.array([values[0]], pa.int64()) for name, values in domains.items()})
    return table_from_arrow(data, domains={n: list(v) for n, v in domains.items()}).schema


def predicate_of(text: str, schema: Schema) -> Predicate:
    return bind(text, schema).predicate


def brute_force(predicate: Predicate, sizes: Mapping[str, int], dims: Sequence[str] = (),
                weights: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """Enumerate the full product of the domains; sum (weighted) truth, per key of dims."""
    names = list(sizes)
    grids = np.meshgrid(*(np.arange(sizes[n]) for n in names), indexing="ij")
    codes = {n: g.ravel() for n, g in zip(names, grids, strict=True)}
    n_rows = math.prod(sizes.values())
    truth = np.broadcast_to(predicate.evaluate(codes, n_rows), (n_rows,)).astype(np.float64)
    for name, vector in (weights or {}).items():
        truth = truth * np.asarray(vector, dtype=np.float64)[codes[name]]
    if not dims:
        return np.asarray(truth.sum())
    histogram = np.zeros(tuple(sizes[d] for d in dims))
    np.add.at(histogram, tuple(codes[d] for d in dims), truth)
    return histogram


@contextlib.contextmanager
def enumeration_limit(cells: int) -> Iterator[None]:
    """Temporarily lower MAX_ENUMERATED_CELLS (usable inside hypothesis tests, unlike
    the function-scoped monkeypatch fixture)."""
    saved = ppdp.query.domain_count.MAX_ENUMERATED_CELLS
    ppdp.query.domain_count.MAX_ENUMERATED_CELLS = cells
    try:
        yield
    finally:
        ppdp.query.domain_count.MAX_ENUMERATED_CELLS = saved


# ---------------------------------------------------------------------------------------------
# A small random grammar of SQL conditions over integer columns, driven either by hypothesis
# (``data.draw``) or by a seeded ``random.Random`` (for a loop whose statistics we assert).


class Choices:
    def __init__(self, integer: Callable[[int, int], int]) -> None:
        self.integer = integer

    def choice(self, items: Sequence):  # type: ignore[no-untyped-def]
        return items[self.integer(0, len(items) - 1)]


def hypothesis_choices(data: st.DataObject) -> Choices:
    return Choices(lambda lo, hi: data.draw(st.integers(lo, hi)))


def random_choices(seed: int) -> Choices:
    rng = random.Random(seed)
    return Choices(rng.randint)


OPERATORS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Case:
    domains: dict[str, list[int]]
    text: str
    dims: tuple[str, ...]
    weights: dict[str, np.ndarray] | None

    @property
    def sizes(self) -> dict[str, int]:
        return {n: len(v) for n, v in self.domains.items()}


def random_domain(ch: Choices) -> list[int]:
    """Distinct small integers, not necessarily starting at 0."""
    start, size = ch.integer(-3, 4), ch.integer(1, 6)
    values, value = [], start
    for _ in range(size):
        values.append(value)
        value += ch.integer(1, 2)
    return values


def random_atom(ch: Choices, domains: dict[str, list[int]]) -> str:
    names = list(domains)
    column = ch.choice(names)
    domain = domains[column]
    lo, hi = domain[0] - 1, domain[-1] + 1

    def literal() -> int:
        return ch.integer(lo, hi)

    def member() -> int:
        return ch.choice(domain)

    kind = ch.integer(0, 7)
    if kind == 0:  # column op literal ('=' must name a domain value, else binding refuses)
        op = ch.choice(OPERATORS)
        return f"{column} {op} {member() if op == '=' else literal()}"
    if kind == 1:  # literal op column (mirrored)
        op = ch.choice(OPERATORS)
        return f"{member() if op == '=' else literal()} {op} {column}"
    if kind == 2:
        values = ", ".join(str(member()) for _ in range(ch.integer(1, 3)))
        return f"{column} {ch.choice(('IN', 'NOT IN'))} ({values})"
    if kind == 3:
        return f"{column} BETWEEN {literal()} AND {literal()}"
    other, third = ch.choice(names), ch.choice(names)
    op = ch.choice(OPERATORS)
    if kind == 4:
        return f"{column} + {other} {op} {ch.integer(-2, 10)}"
    if kind == 5:
        return f"{column} {op} {ch.integer(1, 3)}*{other}"
    if kind == 6:
        return f"{column} - {other} {op} {third}"
    return f"{column} + {other} {op} {third} - 1"


def random_condition(ch: Choices, domains: dict[str, list[int]], depth: int) -> str:
    if depth == 0 or ch.integer(0, 2) == 0:
        return random_atom(ch, domains)
    kind = ch.choice(("AND", "OR", "NOT"))
    if kind == "NOT":
        return f"NOT ({random_condition(ch, domains, depth - 1)})"
    parts = [f"({random_condition(ch, domains, depth - 1)})" for _ in range(ch.integer(2, 3))]
    return f" {kind} ".join(parts)


def random_weights(ch: Choices, domains: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Non-negative weights (zeros included) for a random subset of the columns."""
    weights = {}
    for name, domain in domains.items():
        if ch.integer(0, 2):
            weights[name] = np.array([0.0 if ch.integer(0, 5) == 0 else ch.integer(1, 1000) / 7
                                      for _ in domain])
    return weights


def random_case(ch: Choices, *, grouped: bool, weighted: bool) -> Case:
    names = ["a", "b", "c", "d"][: ch.integer(2, 4)]
    domains = {n: random_domain(ch) for n in names}
    text = random_condition(ch, domains, depth=ch.integer(0, 3))
    dims: tuple[str, ...] = ()
    if grouped:
        first = ch.choice(names)
        second = ch.choice([n for n in names if n != first])
        dims = (first,) if ch.integer(0, 1) else (first, second)
    weights = random_weights(ch, domains) if weighted else None
    return Case(domains, text, dims, weights)


def check_against_brute_force(case: Case) -> None:
    predicate = predicate_of(case.text, int_schema(case.domains))
    got = count_domain(predicate, case.sizes, case.dims, case.weights)
    expected = brute_force(predicate, case.sizes, case.dims, case.weights)
    assert got.shape == expected.shape, case
    if case.weights is None:
        np.testing.assert_array_equal(got, expected, err_msg=str(case))
    else:
        # Complements and inclusion-exclusion subtract from the whole domain's weight, so a true
        # zero may come out as rounding noise relative to that total: scale atol by it.
        mass = math.prod(float(case.weights[n].sum()) if n in case.weights else size
                         for n, size in case.sizes.items())
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9 * max(mass, 1.0),
                                   err_msg=str(case))


def cells_of(case: Case) -> int:
    """Value combinations of the attributes the condition and the dims mention."""
    predicate = predicate_of(case.text, int_schema(case.domains))
    return math.prod(case.sizes[c] for c in predicate.columns | set(case.dims))


# ---------------------------------------------------------------------------------------------
# 1. Golden: alpha-beta Example 4.1

EXAMPLE_DOMAINS = {
    "age": list(range(20, 40)),                          # 20 values
    "nationality": ["American", "British", "Indian"],    # 3 values
    "score": list(range(81, 101)),                       # 20 values
}


def example_schema() -> Schema:
    data = pa.table({"age": pa.array([20], pa.int64()), "nationality": ["American"],
                     "score": pa.array([81], pa.int64())})
    return table_from_arrow(data, domains=EXAMPLE_DOMAINS).schema


# Per age, how many scores in 81..100 satisfy the condition (3*age in parentheses):
#   ages 20..26 (60..78): none, either way
#   age 27 (81): <= 1 (81),       <  0
#   age 28 (84): <= 4 (81..84),   <  3 (81..83)
#   age 29 (87): <= 7,            <  6
#   age 30 (90): <= 10,           <  9
#   age 31 (93): <= 13,           <  12
#   age 32 (96): <= 16,           <  15
#   age 33 (99): <= 19,           <  18
#   ages 34..39 (102..117): all 20 scores, 6 * 20 = 120, either way
# <=: 1+4+7+10+13+16+19 + 120 = 70 + 120 = 190;  <: 0+3+6+9+12+15+18 + 120 = 63 + 120 = 183.
# Over the full domain each count is multiplied by the 3 nationalities: 570 and 549.


def test_example_4_1_pairs_with_less_or_equal_give_the_papers_190() -> None:
    # The paper prints n_D = 190 for "score < 3*age"; that is the number of (age, score) pairs
    # with <= (erratum: strict < and the nationality factor are both dropped).
    predicate = predicate_of("score <= 3*age", example_schema())
    assert count_domain(predicate, {"age": 20, "score": 20}) == 190


def test_example_4_1_pairs_with_strict_less() -> None:
    predicate = predicate_of("score < 3*age", example_schema())
    assert count_domain(predicate, {"age": 20, "score": 20}) == 183


@pytest.mark.parametrize(("text", "expected"), [("score <= 3*age", 570),
                                                ("score < 3*age", 549)])
def test_example_4_1_full_domain_multiplies_by_nationalities(text: str, expected: int) -> None:
    schema = example_schema()
    sizes = schema.sizes()
    assert sizes == {"age": 20, "nationality": 3, "score": 20}
    assert math.prod(sizes.values()) == 1200  # the paper's m
    assert count_domain(predicate_of(text, schema), sizes) == expected


def test_example_4_1_estimate_arithmetic() -> None:
    # Algorithm 3, line 4: (n_V - beta * n_D) / alpha = (6 - 190/150) / (2/3) = 7.1.
    n_v, alpha, n = 6, 2 / 3, 6
    beta = 2 * alpha * n / 1200
    assert beta == pytest.approx(1 / 150)
    n_d = float(count_domain(predicate_of("score <= 3*age", example_schema()),
                             {"age": 20, "score": 20}))
    assert round((n_v - beta * n_d) / alpha, 1) == 7.1


# ---------------------------------------------------------------------------------------------
# 2. Brute force on random small domains and random conditions


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_conditions_match_brute_force(data: st.DataObject) -> None:
    check_against_brute_force(random_case(hypothesis_choices(data), grouped=False,
                                          weighted=False))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_grouped_conditions_match_brute_force_histogram(data: st.DataObject) -> None:
    check_against_brute_force(random_case(hypothesis_choices(data), grouped=True,
                                          weighted=False))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), grouped=st.booleans())
def test_random_weighted_conditions_match_brute_force(data: st.DataObject,
                                                      grouped: bool) -> None:
    check_against_brute_force(random_case(hypothesis_choices(data), grouped=grouped,
                                          weighted=True))


# ---------------------------------------------------------------------------------------------
# 3. The factorised paths, forced by a tiny enumeration limit

SMALL_LIMIT = 12


@settings(max_examples=150, deadline=None)
@given(data=st.data(), grouped=st.booleans(), weighted=st.booleans())
def test_random_conditions_under_a_small_limit_are_right_or_refused(
        data: st.DataObject, grouped: bool, weighted: bool) -> None:
    case = random_case(hypothesis_choices(data), grouped=grouped, weighted=weighted)
    with enumeration_limit(SMALL_LIMIT), contextlib.suppress(QueryError):
        check_against_brute_force(case)


def test_most_large_random_conditions_are_answered_under_a_small_limit() -> None:
    # A fixed list of seeds: count the cases whose condition spans more than the limit (so they
    # cannot be enumerated at once) and check that many are still answered, and answered right.
    big = answered = 0
    for seed in range(600):
        case = random_case(random_choices(seed), grouped=seed % 2 == 0, weighted=seed % 3 == 0)
        if cells_of(case) <= SMALL_LIMIT:
            continue
        big += 1
        with enumeration_limit(SMALL_LIMIT):
            try:
                check_against_brute_force(case)
            except QueryError:
                continue
        answered += 1
    assert big >= 150
    assert answered >= big / 3, (answered, big)


FOUR_BY_FOUR = {n: [0, 1, 2, 3] for n in "abcd"}


@pytest.mark.parametrize(("text", "limit"), [
    # The paper's third idea: the two disjunctions share attribute a, which is fixed.
    ("(a > 1 OR b > 1) AND (c = 1 OR a < 2)", 8),
    # Independent parts multiply (each part spans 16 combinations, the whole 256).
    ("a + b < 4 AND c + d < 4", 16),
    # A complement of a disjunction too large to enumerate (inclusion-exclusion inside).
    ("NOT (a > 1 OR b > 1)", 8),
    # A disjunction of single-column conditions over 256 combinations: inclusion-exclusion.
    ("a = 0 OR b = 1 OR c > 2 OR d < 1", 8),
    # Example 4.2's chain P1(A1, A2) AND P2(A2, A3) AND P3(A3, A4): fix A2 then A3.
    ("a + b >= 3 AND b * c <= 4 AND c - d != 1", 16),
    # Single-column parts mixed with a cross-column one, under NOT and OR.
    ("NOT (a < 2 AND b + c > 3) OR d IN (0, 3)", 16),
])
def test_hand_picked_conditions_are_answered_under_a_small_limit(text: str, limit: int) -> None:
    sizes = {n: len(v) for n, v in FOUR_BY_FOUR.items()}
    predicate = predicate_of(text, int_schema(FOUR_BY_FOUR))
    assert math.prod(sizes[c] for c in predicate.columns) > limit  # really too big at once
    expected = brute_force(predicate, sizes)
    weights = {n: np.array([0.5, 1.0, 0.0, 2.25]) for n in "ac"}
    expected_weighted = brute_force(predicate, sizes, weights=weights)
    expected_grouped = brute_force(predicate, sizes, ("b",))
    with enumeration_limit(limit):
        assert count_domain(predicate, sizes) == expected
        np.testing.assert_allclose(count_domain(predicate, sizes, weights=weights),
                                   expected_weighted, rtol=1e-12)
        np.testing.assert_array_equal(count_domain(predicate, sizes, ("b",)), expected_grouped)


# ---------------------------------------------------------------------------------------------
# 4. Refusal


def test_two_related_columns_beyond_the_limit_are_refused_naming_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    domains = {"a": list(range(20)), "b": list(range(20)), "c": [0, 1]}
    predicate = predicate_of("a < b AND c = 1", int_schema(domains))
    monkeypatch.setattr(ppdp.query.domain_count, "MAX_ENUMERATED_CELLS", 100)
    with pytest.raises(QueryError) as raised:
        count_domain(predicate, {"a": 20, "b": 20, "c": 2})
    message = str(raised.value)
    assert "'a'" in message and "'b'" in message
    assert "400" in message
    assert "'c'" not in message  # c = 1 is an independent conjunct, split off


def test_refusal_uses_the_real_default_limit() -> None:
    # Three 400-value columns in one comparison: 64,000,000 > 2^25 combinations.
    sizes = {"x": 400, "y": 400, "z": 400}
    predicate = predicate_of("x + y < z", int_schema({n: list(range(400)) for n in sizes}))
    with pytest.raises(QueryError, match="64,000,000"):
        count_domain(predicate, sizes)


# ---------------------------------------------------------------------------------------------
# 5. Unmentioned attributes, on Adult's real schema


@pytest.fixture(scope="module")
def adult_schema() -> Schema:
    # The values present as the domains (m = 648,023,040, the alpha-beta paper's setting).
    return adult(observed_domains=True).schema


ADULT_M = 648_023_040


def test_adult_domain_size(adult_schema: Schema) -> None:
    sizes = adult_schema.sizes()
    assert len(sizes) == 9
    assert math.prod(sizes.values()) == ADULT_M
    assert sizes["sex"] == 2 and sizes["age"] == 72 and sizes["education"] == 16


def test_unmentioned_attributes_multiply_by_their_sizes(adult_schema: Schema) -> None:
    predicate = predicate_of("sex = 'Female'", adult_schema)
    assert count_domain(predicate, adult_schema.sizes()) == ADULT_M // 2


def test_adult_conjunction_of_two_columns(adult_schema: Schema) -> None:
    young = sum(1 for age in adult_schema["age"].domain if age < 30)
    assert young == 13  # 17..29
    predicate = predicate_of("age < 30 AND education = 'Bachelors'", adult_schema)
    expected = young * 1 * ADULT_M // (72 * 16)
    assert count_domain(predicate, adult_schema.sizes()) == expected


@pytest.mark.parametrize("dims", [("race", "sex"), ("education", "workclass"),
                                  ("age", "occupation")])
def test_adult_group_by_sums_to_the_ungrouped_count(adult_schema: Schema,
                                                    dims: tuple[str, str]) -> None:
    sizes = adult_schema.sizes()
    predicate = predicate_of("age < 30 AND education = 'Bachelors'", adult_schema)
    grouped = count_domain(predicate, sizes, dims)
    assert grouped.shape == (sizes[dims[0]], sizes[dims[1]])
    assert grouped.sum() == count_domain(predicate, sizes)


def test_adult_group_by_the_condition_column(adult_schema: Schema) -> None:
    sizes = adult_schema.sizes()
    female = adult_schema["sex"].domain.index("Female")
    grouped = count_domain(predicate_of("sex = 'Female'", adult_schema), sizes, ("sex",))
    expected = np.zeros(2)
    expected[female] = ADULT_M // 2
    np.testing.assert_array_equal(grouped, expected)


# ---------------------------------------------------------------------------------------------
# 6. Argument errors


def test_unknown_dim_is_refused() -> None:
    sizes = {"a": 3, "b": 3}
    predicate = predicate_of("a < 2", int_schema({"a": [0, 1, 2], "b": [0, 1, 2]}))
    with pytest.raises(QueryError, match="'nope'"):
        count_domain(predicate, sizes, ("nope",))


def test_condition_column_missing_from_sizes_is_refused() -> None:
    predicate = predicate_of("a < b", int_schema({"a": [0, 1, 2], "b": [0, 1, 2]}))
    with pytest.raises(QueryError, match="'b'"):
        count_domain(predicate, {"a": 3})


def test_weights_of_the_wrong_length_are_refused() -> None:
    sizes = {"a": 3, "b": 3}
    predicate = predicate_of("a < b", int_schema({"a": [0, 1, 2], "b": [0, 1, 2]}))
    with pytest.raises(ValueError, match="3 entries"):
        count_domain(predicate, sizes, weights={"a": np.ones(2)})


def test_probability_weights_give_a_probability() -> None:
    # With uniform probability vectors the weighted count is the paper's p(C) = Q(D) / m.
    domains = {"a": [0, 1, 2], "b": [0, 1, 2, 3], "c": [5, 6]}
    sizes = {n: len(v) for n, v in domains.items()}
    predicate = predicate_of("a < b OR c = 6", int_schema(domains))
    uniform = {n: np.full(s, 1 / s) for n, s in sizes.items()}
    probability = count_domain(predicate, sizes, weights=uniform)
    assert probability == pytest.approx(count_domain(predicate, sizes) / math.prod(sizes.values()))
