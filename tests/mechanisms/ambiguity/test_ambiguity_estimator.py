"""The ambiguity estimator (Section 6) against a brute force: the paper's formula, grouped
estimates, OR and NOT, and the scheme's tables.

Expected estimates are recomputed in plain Python from the published auxiliary tables and the
sensitive table only, so they do not depend on how the groups were formed.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from ppdp import GroupedEstimate
from ppdp.data.schema import Role
from ppdp.mechanisms import Ambiguity, AmbiguityRelease
from ppdp.mechanisms.ambiguity import mechanism as ambiguity_module
from ppdp.table.table import Table, table_from_arrow
from tests.mechanisms.ambiguity.test_ambiguity import check_release

# -- the estimator against a brute force -------------------------------------------------------

SMALL_DOMAINS = {"a": list(range(6)), "b": list(range(5)), "c": list(range(4))}
SMALL_SENSITIVE = ["s0", "s1", "s2", "s3", "s4", "s5"]


def small_release(seed: int) -> tuple[Table, AmbiguityRelease]:
    rng = np.random.default_rng(seed)
    n_rows = 120
    data = {name: rng.choice(domain, n_rows).tolist() for name, domain in SMALL_DOMAINS.items()}
    data["s"] = [SMALL_SENSITIVE[i] for i in np.repeat(np.arange(6), 20)[rng.permutation(120)]]
    table = table_from_arrow(pa.table(data), roles={"s": Role.SENSITIVE},
                             domains={**SMALL_DOMAINS, "s": SMALL_SENSITIVE})
    return table, Ambiguity(alpha=0.5, beta=0.25).publish(table, random_state=seed)


def published(release: AmbiguityRelease) -> tuple[dict[str, dict[int, list[Any]]],
                                                  dict[int, dict[Any, int]]]:
    """AT_i as {group: [values]} and ST as {group: {value: frequency}}, decoded."""
    auxiliary: dict[str, dict[int, list[Any]]] = {}
    for q in release.quasi_identifiers:
        groups, codes = release.auxiliary[q]
        domain = release.schema[q].domain
        per_group: dict[int, list[Any]] = defaultdict(list)
        for g, c in zip(groups.tolist(), codes.tolist(), strict=True):
            per_group[g].append(domain[c])
        auxiliary[q] = per_group
    st_table: dict[int, dict[Any, int]] = defaultdict(dict)
    domain = release.schema[release.sensitive].domain
    for g, v, c in zip(*(a.tolist() for a in release.st), strict=True):
        st_table[g][domain[v]] = c
    return auxiliary, st_table


def paper_estimate(release: AmbiguityRelease, conditions: dict[str, Callable[[Any], bool]]
                   ) -> float:
    """Section 6: sum over groups j of c_j(C_S) * prod_i l_ij / m_ij."""
    auxiliary, st_table = published(release)
    total = 0.0
    for j in range(release.n_groups):
        sensitive = conditions.get(release.sensitive, lambda _: True)
        c = sum(f for v, f in st_table[j].items() if sensitive(v))
        for q in release.quasi_identifiers:
            values = auxiliary[q][j]
            condition = conditions.get(q, lambda _: True)
            c *= sum(1 for v in values if condition(v)) / len(values)
        total += c
    return total


def joined_estimate(release: AmbiguityRelease, condition: Callable[[dict[str, Any]], bool],
                    group_by: tuple[str, ...] = ()) -> dict[tuple[Any, ...], float]:
    """The lossy join of the ATs and ST of each group (Section 5.2): every combination of one
    value per AT and one ST line, weighted frequency / prod_i m_ij; summed where the
    condition holds, per GROUP BY key."""
    auxiliary, st_table = published(release)
    result: dict[tuple[Any, ...], float] = defaultdict(float)
    for j in range(release.n_groups):
        lists = [auxiliary[q][j] for q in release.quasi_identifiers]
        scale = 1.0 / math.prod(len(values) for values in lists)
        for combination in itertools.product(*lists):
            row = dict(zip(release.quasi_identifiers, combination, strict=True))
            for value, frequency in st_table[j].items():
                row[release.sensitive] = value
                if condition(row):
                    result[tuple(row[c] for c in group_by)] += frequency * scale
    return result


def random_box(rng: np.random.Generator) -> tuple[str, dict[str, Callable[[Any], bool]]]:
    """A conjunction of a range or IN list on 1-3 quasi-identifiers, and maybe a condition on
    the sensitive column; as SQL and as Python predicates per column."""
    parts, conditions = [], {}
    columns = rng.permutation(list(SMALL_DOMAINS))[:rng.integers(1, 4)]
    for name in columns:
        domain = SMALL_DOMAINS[name]
        if rng.random() < 0.5:
            low, high = sorted(int(v) for v in rng.choice(domain, 2))
            parts.append(f"{name} BETWEEN {low} AND {high}")
            conditions[name] = lambda v, lo=low, hi=high: lo <= v <= hi
        else:
            chosen = sorted({int(v) for v in rng.choice(domain, int(rng.integers(1, 4)))})
            parts.append(f"{name} IN ({', '.join(map(str, chosen))})")
            conditions[name] = lambda v, values=tuple(chosen): v in values
    if rng.random() < 0.6:
        chosen = sorted({str(v) for v in rng.choice(SMALL_SENSITIVE, int(rng.integers(1, 3)))})
        parts.append("s IN (" + ", ".join(f"'{v}'" for v in chosen) + ")")
        conditions["s"] = lambda v, values=tuple(chosen): v in values
    return " AND ".join(parts), conditions


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_estimator_matches_the_paper_formula(seed: int) -> None:
    """Section 6 / Example 6.1: for conjunctions, count = sum_j c_j * prod_i l_ij / m_ij,
    computed here from the published AT_i and ST by plain loops."""
    table, release = small_release(seed)
    check_release(release, table, 0.5, 0.25)
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        text, conditions = random_box(rng)
        expected = paper_estimate(release, conditions)
        assert release.count(text).value == pytest.approx(expected, rel=1e-9, abs=1e-9), text
        joined = joined_estimate(
            release, lambda row, cs=conditions: all(f(row[c]) for c, f in cs.items()))
        assert expected == pytest.approx(sum(joined.values()), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_estimates_match_the_join_and_sum_to_the_total(seed: int) -> None:
    """GROUP BY one or two columns (quasi-identifier or sensitive) splits the ungrouped
    estimate, each cell equal to the lossy-join weight of its key."""
    _, release = small_release(seed)
    rng = np.random.default_rng(200 + seed)
    for group_by in (("a",), ("s",), ("b", "c"), ("c", "s")):
        text, conditions = random_box(rng)
        total = release.count(text).value
        grouped = release.count(f"SELECT COUNT(*) FROM t WHERE {text} "
                                f"GROUP BY {', '.join(group_by)}")
        assert isinstance(grouped, GroupedEstimate)
        assert sum(e.value for _, e in grouped.groups) == pytest.approx(total, rel=1e-9,
                                                                        abs=1e-9)
        joined = joined_estimate(
            release, lambda row, cs=conditions: all(f(row[c]) for c, f in cs.items()), group_by)
        for key, value in joined.items():
            assert grouped[key].value == pytest.approx(value, rel=1e-9, abs=1e-9)
        for key, estimate in grouped.groups:
            assert joined[tuple(key[c] for c in group_by)] == pytest.approx(
                estimate.value, rel=1e-9, abs=1e-9)


def holds(row: dict[str, Any], conditions: dict[str, Callable[[Any], bool]]) -> bool:
    return all(f(row[c]) for c, f in conditions.items())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_or_and_not_follow_inclusion_exclusion(seed: int) -> None:
    """NOT A = all - A and A OR B = A + B - (A AND B) under the product model, and both equal
    the lossy-join weight of the rows meeting the condition."""
    table, release = small_release(seed)
    rng = np.random.default_rng(300 + seed)
    total = release.count("a >= 0").value
    assert total == pytest.approx(table.n_rows)
    for _ in range(10):
        first, first_conditions = random_box(rng)
        second, second_conditions = random_box(rng)
        a = release.count(first).value
        b = release.count(second).value
        both = release.count(f"({first}) AND ({second})").value
        either = release.count(f"({first}) OR ({second})").value
        negated = release.count(f"NOT ({first})").value
        assert either == pytest.approx(a + b - both, rel=1e-9, abs=1e-9)
        assert negated == pytest.approx(total - a, rel=1e-9, abs=1e-9)

        joined = joined_estimate(
            release, lambda row, one=first_conditions, two=second_conditions:
            holds(row, one) or holds(row, two))
        assert either == pytest.approx(sum(joined.values()), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_scheme_tables_are_the_same_when_pairs_are_sorted(seed: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The (group, value) pairs of AT_i and ST and the frequencies, found by marking a table
    of the cells, are those found by sorting (the way for large domains): same values, same
    order, same types."""
    table, release = small_release(seed)
    monkeypatch.setattr(ambiguity_module, "_DENSE_BYTES", 0)
    sorted_release = Ambiguity(alpha=0.5, beta=0.25).publish(table, random_state=seed)
    for q in release.quasi_identifiers:
        for dense, by_sorting in zip(release.auxiliary[q], sorted_release.auxiliary[q],
                                     strict=True):
            np.testing.assert_array_equal(dense, by_sorting, strict=True)
    for dense, by_sorting in zip(release.st, sorted_release.st, strict=True):
        np.testing.assert_array_equal(dense, by_sorting, strict=True)
