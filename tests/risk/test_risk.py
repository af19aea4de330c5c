"""Tests of ppdp.risk: the measured presence and association of an ambiguity release, per group
and per source tuple (ambiguity paper, Section 5), and the Mondrian measures."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import ppdp
from ppdp.mechanisms.ambiguity.mechanism import Ambiguity
from ppdp.risk import ambiguity_summary, release_risk, tuple_risk
from ppdp.table.table import table_from_arrow
from tests.mechanisms.ambiguity.test_ambiguity import figure_1a, figure_2


def test_figure_2_tuples_alan_and_alice() -> None:
    """Figures 1-2: Alan (row 0) is covered by group 1 only: presence 1/3, (Alan, diabetes)
    1/4; Alice (row 4) by group 2 only: presence 4/9, (Alice, leukemia) 1/2."""
    risk = tuple_risk(figure_2(), figure_1a()).to_pydict()
    assert risk["covering_groups"][0] == 1 and risk["covering_groups"][4] == 1
    assert risk["presence"][0] == pytest.approx(1 / 3)
    assert risk["presence_any"][0] == pytest.approx(1 / 3)
    assert risk["association"][0] == pytest.approx(1 / 4)
    assert risk["presence"][4] == pytest.approx(4 / 9)
    assert risk["association"][4] == pytest.approx(1 / 2)


def test_tuple_risk_against_brute_force_cover() -> None:
    """Definition 5.1 / Lemma 5.1 by brute force: a tuple is covered by group j when each of its
    quasi-identifier values appears in AT_i for j; presence_any = 1 - prod (1 - p_j)."""
    table = ppdp.datasets.adult(sensitive="occupation").resample(600, random_state=3)
    release = Ambiguity(alpha=0.5, beta=1 / 3).publish(table, random_state=4)
    risk = tuple_risk(release, table).to_pydict()
    presence = release.presence()
    sizes = release.group_sizes()
    sets = {q: {} for q in release.quasi_identifiers}
    for q in release.quasi_identifiers:
        for group, code in zip(*release.auxiliary[q], strict=True):
            sets[q].setdefault(int(group), set()).add(int(code))
    st = {(int(g), int(v)): int(c) for g, v, c in zip(*release.st, strict=True)}
    for row in range(0, table.n_rows, 37):
        covering = [j for j in range(release.n_groups)
                    if all(int(table.codes[q][row]) in sets[q][j]
                           for q in release.quasi_identifiers)]
        assert risk["covering_groups"][row] == len(covering)
        assert risk["presence"][row] == pytest.approx(max(presence[j] for j in covering))
        assert risk["presence_any"][row] == pytest.approx(
            1 - math.prod(1 - presence[j] for j in covering))
        value = int(table.codes["occupation"][row])
        assert risk["association"][row] == pytest.approx(
            max(st.get((j, value), 0) / sizes[j] for j in covering))


def test_summary_of_a_release_meets_alpha_and_beta() -> None:
    table = ppdp.datasets.adult(sensitive="occupation")
    release = Ambiguity(alpha=0.1, beta=0.2).publish(table, random_state=1)
    summary = ambiguity_summary(release)
    assert summary["presence_max"] <= 0.1 and summary["association_max"] <= 0.2
    assert summary["groups_over_alpha"] == summary["associations_over_beta"] == 0
    assert summary["diversity_min"] >= 5 and summary["group_size_min"] >= 5
    assert release_risk(release) == summary


def test_rows_with_unknown_values_are_uncovered() -> None:
    """A person whose age the release never publishes is covered by no group."""
    stranger = pa.table({"Age": [33], "Gender": ["M"], "Zipcode": [11000], "Disease": ["flu"]})
    source = table_from_arrow(stranger, roles={"Disease": ppdp.Role.SENSITIVE})
    assert tuple_risk(figure_2(), source).to_pydict() == {
        "covering_groups": [0], "presence": [0.0], "presence_any": [0.0], "association": [0.0]}


def test_release_without_risk_measures_is_an_error() -> None:
    table = ppdp.datasets.adult(sensitive="occupation").resample(200, random_state=1)
    release = ppdp.Anatomy(l=2).publish(table, random_state=1)
    with pytest.raises(ValueError, match="ambiguity and mondrian"):
        release_risk(release)


def test_mondrian_measures_through_release_risk() -> None:
    table = ppdp.datasets.adult(sensitive="occupation").resample(3000, random_state=2)
    measures = release_risk(ppdp.Mondrian(k=10, l=3).publish(table, random_state=1))
    assert measures["mechanism"] == "mondrian"
    assert measures["k"] >= 10 and measures["l"] >= 3 and 0 <= measures["ncp"] <= 1
    assert np.isfinite(measures["classes"])
    # Three distinct values in every class keep every association below 1.
    assert 0 < measures["association_max"] < 1
    assert 0 < measures["presence_max"] <= 1 and 0 <= measures["presence_certain_share"] <= 1
