"""Linkage and singling out on Mondrian and ambiguity (ppdp.attack.linkage)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

import ppdp
from ppdp.attack.linkage import covering_weights


def multiplicity(table: ppdp.Table) -> np.ndarray:
    """How many rows share each row's quasi-identifiers (pandas)."""
    frame = pd.DataFrame({q: np.asarray(table.codes[q]) for q in table.schema.quasi_identifiers})
    return frame.groupby(list(frame.columns))[frame.columns[0]].transform("size").to_numpy()


def test_covering_weights_by_odds_and_certainty() -> None:
    """Groups hold a tuple independently with their presence p, exactly one does: odds
    p/(1 - p) (1/2 -> 1, 1/4 -> 1/3, so 3/4 and 1/4); a group with p = 1 is certain."""
    covering = sp.csr_array(np.array([[1, 1, 0], [0, 1, 1]]))
    weights = covering_weights(covering, np.array([0.5, 0.25, 1.0])).toarray()
    assert np.allclose(weights, [[0.75, 0.25, 0], [0, 0, 1]])


def test_mondrian_tiny_k_and_its_bound(adult: ppdp.Table) -> None:
    """k = 2: classes of two or three rows; each target's class is the one whose labels
    cover it, so its risk is 1/|class| (checked by hand on some rows), never above 1/k, and
    far above picking a record without the release (1/N)."""
    sample = adult.take(np.arange(5000))
    release = ppdp.Mondrian(k=2, l=1).publish(sample, random_state=1)
    report = ppdp.attack(release, sample, attacks=["linkage"], random_state=1)
    result = report["linkage"]
    assert result.bound == 0.5 and np.nanmax(result.risk) <= 0.5
    assert result.success > 100 * result.baseline and result.success > 0.3
    assert report["singling_out"].success == 0.0 and report["singling_out"].bound == 0.0
    labels, sizes = release.class_labels(), release.class_sizes()
    quasi = sample.schema.quasi_identifiers
    for row in range(0, 5000, 499):
        inside = np.ones(len(sizes), dtype=bool)
        for q in quasi:
            generalized = release.generalized[q]
            covers = [sample.codes[q][row] in generalized.cover(node) for node in labels[q]]
            inside &= np.asarray(covers)
        (own,) = np.flatnonzero(inside)
        assert result.risk[row] == 1 / sizes[own]


def test_identity_and_ambiguity(adult: ppdp.Table) -> None:
    """Mondrian at k = 1 and ambiguity at alpha = beta = 1 publish every combination of
    quasi-identifiers as it is: a target's risk is 1/(rows sharing its combination), and the
    unique ones are singled out. Ambiguity at beta = 1/2 keeps every risk within 1/2."""
    sample = adult.take(np.arange(4000))
    expected = 1 / multiplicity(sample)
    for release in (ppdp.Mondrian(k=1, l=1).publish(sample, random_state=1),
                    ppdp.Ambiguity(alpha=1, beta=1).publish(sample, random_state=1)):
        report = ppdp.attack(release, sample, attacks=["linkage"], random_state=1)
        assert np.allclose(report["linkage"].risk, expected)
        assert report["singling_out"].success == np.mean(expected == 1)
    weak = ppdp.Ambiguity(alpha=0.5, beta=0.5).publish(sample, random_state=1)
    result = ppdp.attack(weak, sample, attacks=["linkage"], random_state=1)["linkage"]
    assert result.bound == 0.5 and np.nanmax(result.risk) <= 0.5
    assert result.details["rows_over_bound"] == 0 and result.success > 100 * result.baseline
