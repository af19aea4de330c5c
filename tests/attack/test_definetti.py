"""The deFinetti attack (Kifer, SIGMOD 2009, Section 5) on Anatomy and ambiguity."""

from __future__ import annotations

import numpy as np
import pandas as pd

import ppdp
from ppdp.attack.targets import build_targets
from ppdp.mechanisms.anatomy.release import AnatomyRelease
from tests.attack.conftest import best_guess_accuracy, difference_margin, single_margin


def test_learns_a_deterministic_correlation_through_the_groups() -> None:
    """When a quasi-identifier determines the sensitive value, the groups alone teach it:
    Anatomy's groups of 5 distinct values hide which member holds which, yet the attack
    recovers nearly every value, where the random-worlds adversary (and Anatomy's bound)
    stays at 1/5."""
    rng = np.random.default_rng(0)
    n = 2000
    code = rng.integers(0, 10, n)
    # A number per person makes every row's quasi-identifiers unique: a target is linked to
    # its own QIT row, whose group's five distinct values are all alike to random worlds.
    frame = pd.DataFrame({"code": code, "person": rng.permutation(n),
                          "disease": np.asarray([f"d{c}" for c in code])})
    table = ppdp.read_table(frame, sensitive="disease").declare_observed_domains(warn=False)
    release = ppdp.Anatomy(l=5).publish(table, random_state=1)
    result = ppdp.attack(release, table, attacks=["definetti"], random_state=1)["definetti"]
    assert result.bound == 0.2
    assert abs(result.details["random_worlds_accuracy"] - 0.2) < 1e-9
    assert result.success > 0.95


def test_far_above_the_baseline_at_l_2(adult: ppdp.Table) -> None:
    """l = 2 on Adult: each row's own value is one of two. Learning which beats the
    population-trained classifier by more than ten standard errors of the difference, and
    the bound 1/2 and the random-worlds adversary by more than three of its own."""
    release = ppdp.Anatomy(l=2).publish(adult, random_state=1)
    result = ppdp.attack(release, adult, attacks=["definetti"], random_state=1)["definetti"]
    n = result.details["targets"]
    assert result.success > result.baseline + difference_margin(n)
    assert result.success > result.bound + single_margin(n)
    assert result.success > result.details["random_worlds_accuracy"] + difference_margin(n, 3)
    assert result.details["association_max"] == 0.5


def test_identity_release_is_perfect(adult: ppdp.Table) -> None:
    """Groups of one row (every value published with its row): the attack's accuracy is the
    best any guess from the quasi-identifiers can reach, exactly."""
    sample = adult.take(np.arange(4000))
    n = sample.n_rows
    quasi = sample.schema.quasi_identifiers
    release = AnatomyRelease(sample.schema.select([*quasi, "occupation"]),
                             {"l": 1, "n_groups": n}, n, {q: sample.codes[q] for q in quasi},
                             np.arange(n), (np.arange(n), np.asarray(sample.codes["occupation"]),
                                            np.ones(n, dtype=np.int64)))
    result = ppdp.attack(release, sample, attacks=["definetti"], random_state=5)["definetti"]
    targets = build_targets(release, sample, random_state=5)
    assert abs(result.success - best_guess_accuracy(sample, quasi, "occupation",
                                                    targets.evaluation)) < 1e-12


def test_ambiguity_weak_and_identity(adult: ppdp.Table) -> None:
    """Ambiguity at alpha = beta = 1/2 (groups of two values) leaks far above the population
    baseline (ten standard errors of the difference); at alpha = beta = 1 every group is one
    row, and the attack reaches the best guess."""
    weak = ppdp.Ambiguity(alpha=0.5, beta=0.5).publish(adult, random_state=1)
    result = ppdp.attack(weak, adult, attacks=["definetti"], random_state=1)["definetti"]
    assert result.bound == 0.5
    assert result.success > result.baseline + difference_margin(result.details["targets"])
    sample = adult.take(np.arange(6000))
    identity = ppdp.Ambiguity(alpha=1, beta=1).publish(sample, random_state=1)
    assert identity.group_sizes().max() == 1
    exact = ppdp.attack(identity, sample, attacks=["definetti"], random_state=4)["definetti"]
    targets = build_targets(identity, sample, random_state=4)
    assert abs(exact.success - best_guess_accuracy(sample, sample.schema.quasi_identifiers,
                                                   "occupation", targets.evaluation)) < 1e-9
