"""The deFinetti attack on bucketized releases (Anatomy, ambiguity).

Kifer, "Attacks on Privacy and deFinetti's Theorem", SIGMOD 2009. Section 3: a table whose
rows are exchangeable is, by deFinetti's representation theorem, a mixture of i.i.d. draws, so
an adversary may learn the distribution of the sensitive value given the quasi-identifiers
from the release itself, which the random-worlds reasoning behind Anatomy's 1/l bound
excludes. Section 5: the attack on partition-based schemes, and its algorithm for Anatomy:
a naive Bayes model of S given the quasi-identifiers is learnt from the buckets by
re-weighting, for every member of a bucket, each sensitive value of the bucket's multiset by
the model, then predicting each member's value from the bucket's multiset.

Anatomy (QIT rows linked to their groups). Start from the random-worlds weights c/|G| of every
(row, value of its group); then repeat: fit naive Bayes P(q_i | s) to the weighted pairs
(Laplace smoothing 1), weight each pair by prod_i P(q_i | s), and balance the weights within
each group so that every row's sum to 1 and every value's to its count c in the group
(Sinkhorn scaling: the maximum-entropy assignment consistent with the multiset, which
approximates the posterior over the group's matchings). A target's posterior is the mean of
those of the QIT rows with its quasi-identifiers; its guess is the most likely value, which is
one of its group's.

Ambiguity publishes each quasi-identifier in a table of its own (AT_i), so the pairs are
learnt per attribute: every value v listed by a group takes a share of each of the group's
sensitive values s in proportion to P(v | s), normalised over the values the group lists, and
P(v | s) is refitted from those shares. A target may lie in any group covering its
quasi-identifiers (`ppdp.attack.linkage.covering_weights`); in group j its value is s with
probability proportional to c_js prod_i P(q_i | s), and the groups are mixed by the
probability that each is the target's.

Bound: the release's claim for inferring an individual's value, 1/l (Anatomy) or beta
(ambiguity), made against an adversary who knows no such correlation. Baseline: the
population-trained classifier of `ppdp.attack.inference`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import cast

import numpy as np
import scipy.sparse as sp

from ppdp.attack.inference import claimed_bound
from ppdp.attack.learning import (
    anatomy_entries,
    learned_posterior,
    pairs_by_group,
    population_posterior,
)
from ppdp.attack.linkage import groups_of
from ppdp.attack.report import AttackResult
from ppdp.attack.targets import Targets, expected_accuracy
from ppdp.risk.measured import group_association

NAME = "definetti"
ADVERSARY = ("knows each target's quasi-identifiers; learns naive Bayes P(quasi-identifiers | "
             "sensitive) from the groups, then guesses within the target's group")
SOURCE = ("Kifer, 'Attacks on Privacy and deFinetti's Theorem', SIGMOD 2009, Section 3 "
          "(exchangeability, deFinetti's theorem) and Section 5 (the attack on Anatomy)")

ITERATIONS = 15
"""Rounds of re-weighting and refitting: on Adult at l = 5 (Anatomy) and alpha = 0.1,
beta = 0.2 (ambiguity) the accuracy moved by at most 0.0032 between 10 and 30 rounds."""
SINKHORN = 20
"""Balancing sweeps per round within each group."""
ENTRY_CHUNK = 1 << 19
"""Covering (target, group) pairs handled at once for ambiguity."""


def applies(targets: Targets) -> str | None:
    """Why the attack does not apply (None: it applies)."""
    if targets.release.mechanism not in ("anatomy", "ambiguity"):
        return "only the bucketized releases (Anatomy, ambiguity) publish groups of values"
    if targets.sensitive not in targets.release.schema.sensitive:
        return "the attribute attacked is not the release's sensitive column"
    return None


def run(targets: Targets) -> list[AttackResult]:
    """Learn from the groups, infer every source row's value; accuracy on half A."""
    baseline_posterior = population_posterior(targets)
    start = time.perf_counter()
    release = targets.release
    attribute = targets.sensitive
    assert attribute is not None
    truth = targets.codes[attribute].astype(np.int64)
    learn = _anatomy if release.mechanism == "anatomy" else _ambiguity
    posterior, random_worlds_posterior = learn(targets)
    seconds = time.perf_counter() - start
    evaluation = targets.evaluation
    success = float(expected_accuracy(posterior[evaluation], truth[evaluation]).mean())
    baseline = float(expected_accuracy(baseline_posterior, truth[evaluation]).mean())
    random_worlds = float(expected_accuracy(random_worlds_posterior()[evaluation],
                                            truth[evaluation]).mean())
    bound = claimed_bound(release)
    association = group_association(release.st[0], release.st[2],  # type: ignore[attr-defined]
                                    float("nan") if bound is None else bound)
    return [AttackResult(
        NAME, f"accuracy inferring {attribute} (targets: half of the rows)", success, baseline,
        bound, ADVERSARY, SOURCE, seconds,
        {"random_worlds_accuracy": random_worlds, "association_max": association.largest,
         "iterations": ITERATIONS, "targets": len(evaluation)},
        posterior[np.arange(len(truth)), truth],
        f"the attack's probability of the individual's own {attribute}")]


def _log_conditionals(values: np.ndarray, codes: np.ndarray, weights: np.ndarray,
                      n_values: int, size: int) -> np.ndarray:
    """log P(q = v | s) of naive Bayes from weighted (s, v) pairs, Laplace smoothing 1."""
    counts = np.bincount(values * size + codes, weights=weights,
                         minlength=n_values * size).reshape(n_values, size) + 1.0
    return np.log(counts) - np.log(counts.sum(axis=1, keepdims=True))


def _anatomy(targets: Targets) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    """Every source row's posterior after learning, and how to compute it before learning
    (random worlds; apart, so that the attack's cost leaves it out)."""
    release = targets.release
    quasi, sizes = targets.quasi, targets.sizes
    assert targets.sensitive is not None  # `applies` admits only the release's sensitive column
    n_values = sizes[targets.sensitive]
    rows, lines = anatomy_entries(release)
    st_groups, st_values, st_counts = release.st  # type: ignore[attr-defined]
    values = st_values[lines].astype(np.int64)
    count = st_counts[lines].astype(np.float64)
    group_sizes = np.bincount(release.qit_groups,  # type: ignore[attr-defined]
                              minlength=int(release.parameters["n_groups"]))
    codes = {q: release.qit[q][rows].astype(np.int64) for q in quasi}  # type: ignore[attr-defined]
    weights = count / group_sizes[st_groups[lines]]
    ignorant = weights
    # Each row's pairs are contiguous (rows ascend), so per-row maxima are reductions.
    starts = np.flatnonzero(np.diff(rows, prepend=-1))
    for _ in range(ITERATIONS):
        log_likelihood = np.zeros(len(rows))
        for q in quasi:
            conditional = _log_conditionals(values, codes[q], weights, n_values, sizes[q])
            log_likelihood += conditional[values, codes[q]]
        log_likelihood -= np.repeat(np.maximum.reduceat(log_likelihood, starts),
                                    np.diff(np.append(starts, len(rows))))
        weights = np.exp(log_likelihood)
        for _ in range(SINKHORN):
            weights *= count / np.bincount(lines, weights=weights, minlength=len(st_values))[lines]
            weights /= np.bincount(rows, weights=weights)[rows]
    every = {q: targets.codes[q] for q in quasi}
    return (learned_posterior((codes, values, weights), every, quasi, sizes, n_values),
            lambda: learned_posterior((codes, values, ignorant), every, quasi, sizes, n_values))


def _ambiguity(targets: Targets) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
    """Every source row's posterior after learning, and how to compute it before learning
    (each covering group's multiset taken as the chance of each value)."""
    release = targets.release
    quasi, sizes = list(release.schema.quasi_identifiers), targets.sizes
    assert targets.sensitive is not None  # `applies` admits only the release's sensitive column
    n_values = sizes[targets.sensitive]
    st_groups, st_values, st_counts = release.st  # type: ignore[attr-defined]
    st_values = st_values.astype(np.int64)
    count = st_counts.astype(np.float64)
    conditionals = {}
    for q in quasi:
        at_groups, at_codes = release.auxiliary[q]  # type: ignore[attr-defined]
        listed, line = pairs_by_group(at_groups, st_groups, release.n_groups)  # type: ignore[attr-defined]
        codes, values = at_codes[listed].astype(np.int64), st_values[line]
        conditional = np.full((n_values, sizes[q]), -np.log(sizes[q]))
        for _ in range(ITERATIONS):
            likelihood = np.exp(conditional[values, codes])
            shares = count[line] * likelihood / np.bincount(
                line, weights=likelihood, minlength=len(st_values))[line]
            conditional = _log_conditionals(values, codes, shares, n_values, sizes[q])
        conditionals[q] = conditional
    weights, distinct, tuple_of, _ = groups_of(targets)
    log_likelihood = cast(np.ndarray, sum(conditionals[q][:, distinct[:, i]].T
                                          for i, q in enumerate(quasi)))
    likelihood = np.exp(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
    held = np.zeros((release.n_groups, n_values))  # type: ignore[attr-defined]
    np.add.at(held, (st_groups, st_values), count)
    learnt = _mixture(weights, likelihood, held)
    return learnt[tuple_of], lambda: _mixture(weights, np.ones_like(likelihood), held)[tuple_of]


def _mixture(weights: sp.csr_array, likelihood: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Sum over covering groups j of P(j) c_js L_s / sum_s' c_js' L_s', for every tuple."""
    weights = sp.csr_array(weights)
    rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    normaliser = np.empty(len(weights.data))
    for begin in range(0, len(rows), ENTRY_CHUNK):
        part = slice(begin, begin + ENTRY_CHUNK)
        normaliser[part] = np.einsum("ij,ij->i", held[weights.indices[part]],
                                     likelihood[rows[part]])
    scaled = sp.csr_array((weights.data / normaliser, weights.indices, weights.indptr),
                          shape=weights.shape)
    posterior = likelihood * (scaled @ held)
    totals = posterior.sum(axis=1, keepdims=True)
    return np.divide(posterior, totals, out=np.zeros_like(posterior), where=totals > 0)
