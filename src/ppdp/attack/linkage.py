"""Linkage: re-identifying a target's record from its quasi-identifiers (prosecutor risk), and
singling it out, on Mondrian's classes and ambiguity's groups.

The adversary knows that the target is in the table and its quasi-identifiers. The groups
that cover them (Mondrian: classes whose labels cover every value; ambiguity: groups whose
auxiliary tables list every value, Definition 5.1) are where its record may be. Each covering
group g holds it with the presence probability p_g of Theorem 5.1 (|G| / prod_i |G_ATi|, or
over the labels' covers for Mondrian); the target is in exactly one, so group g is its group
with probability proportional to p_g / (1 - p_g) (any group with p_g = 1 is certain), and
each of g's |G| rows is its record alike. The adversary picks the most likely record: the
prosecutor risk ``max_g P(g) / |G_g|``, 1/|G| for a target covered by one class (the
re-identification risk of ARX and sdcMicro for generalized data). An individual is singled
out when that risk is 1 (measured in the same pass, so with the same cost).

Bounds: 1/k for Mondrian (classes of at least k rows); 1/ceil(1/beta) for ambiguity (groups
of at least ceil(1/beta) rows, Theorem 7.2); no individual is singled out when those are
below 1. Baseline: 1/N, a record picked without the release.

anonymeter's singling-out and linkability evaluators, which this module would otherwise run
beside these, need individual records in the source's domain (a synthetic table), which
neither Mondrian (classes of k identical generalized rows) nor ambiguity (no rows at all)
publishes; and anonymeter could not be installed beside this project's numpy and pyarrow (it
requires numpy < 1.27 and pyarrow < 22). The class and group matching above is exact.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from ppdp.attack.report import AttackResult
from ppdp.attack.targets import Targets
from ppdp.release.base import Release
from ppdp.risk import ambiguity_incidence, covering_groups

NAME = "linkage"
SINGLING_OUT = "singling_out"
ALSO = (SINGLING_OUT,)
"""The other results this attack reports."""
ADVERSARY = ("knows that the target is in the table and its quasi-identifiers; picks the most "
             "likely record among the groups or classes covering them")
SOURCE = ("prosecutor re-identification risk 1/|class| (Mondrian, LeFevre et al. ICDE 2006, "
          "k-anonymity); ambiguity paper, Definition 5.1 and Theorems 5.1 and 7.2 (covering "
          "groups, presence, group sizes)")


def applies(targets: Targets) -> str | None:
    """Why the attack does not apply (None: it applies)."""
    if targets.release.mechanism not in ("mondrian", "ambiguity"):
        return "only Mondrian and ambiguity publish classes or groups to link to"
    return None


def mondrian_incidence(release: Release) -> dict[str, sp.csr_array]:
    """For every quasi-identifier, which classes' labels cover each of its values (values x
    classes, 1 where covered)."""
    labels = release.class_labels()  # type: ignore[attr-defined]
    sizes = release.schema.sizes()
    incidence = {}
    for q, nodes in labels.items():
        generalized = release.generalized[q]  # type: ignore[attr-defined]
        width = generalized.cover_sizes[nodes]
        classes = np.repeat(np.arange(len(nodes)), width)
        within = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
        codes = generalized.codes[np.repeat(generalized.indptr[nodes], width) + within]
        incidence[q] = sp.csr_array((np.ones(len(codes), dtype=np.int8), (codes, classes)),
                                    shape=(sizes[q], len(nodes)))
    return incidence


def groups_of(targets: Targets) -> tuple[sp.csr_array, np.ndarray, np.ndarray, np.ndarray]:
    """The groups covering each distinct combination of the source's quasi-identifiers (a
    tuples x groups matrix of the probability that each is the tuple's group), those
    combinations (tuples x quasi-identifiers, in the release's order), each source row's
    combination, and the groups' sizes."""
    release = targets.release
    quasi = list(release.schema.quasi_identifiers)
    combos = np.stack([targets.codes[q] for q in quasi], axis=1)
    distinct, inverse = np.unique(combos, axis=0, return_inverse=True)
    if release.mechanism == "ambiguity":
        incidence = ambiguity_incidence(release)  # type: ignore[arg-type]
        sizes = release.group_sizes()  # type: ignore[attr-defined]
    else:
        incidence = mondrian_incidence(release)
        sizes = release.class_sizes()  # type: ignore[attr-defined]
    covering = covering_groups({q: distinct[:, i] for i, q in enumerate(quasi)}, incidence)
    presence = release.presence()  # type: ignore[attr-defined]
    return covering_weights(covering, presence), distinct, inverse.reshape(-1), sizes


def covering_weights(covering: sp.csr_array, presence: np.ndarray) -> sp.csr_array:
    """For each tuple, the probability that each covering group is the one holding it: the
    groups hold it independently with their presence probabilities and exactly one does, so
    group g has odds p_g / (1 - p_g); groups with p_g = 1 share the certainty."""
    entries = sp.csr_array(covering, dtype=np.float64)
    rows = np.repeat(np.arange(entries.shape[0]), np.diff(entries.indptr))
    p = presence[entries.indices]
    certain = p >= 1
    any_certain = np.bincount(rows, weights=certain, minlength=entries.shape[0]) > 0
    odds = np.where(any_certain[rows], certain.astype(np.float64),
                    p / np.maximum(1 - p, 1e-300))
    totals = np.bincount(rows, weights=odds, minlength=entries.shape[0])
    entries.data = odds / totals[rows]
    return entries


def run(targets: Targets) -> list[AttackResult]:
    """Prosecutor risk and singling out for every source row."""
    start = time.perf_counter()
    release = targets.release
    weights, _, tuple_of, sizes = groups_of(targets)
    per_record = sp.csr_array((weights.data / sizes[weights.indices], weights.indices,
                               weights.indptr), shape=weights.shape)
    covered = np.diff(per_record.indptr) > 0
    best = np.full(per_record.shape[0], np.nan)
    best[covered] = np.maximum.reduceat(per_record.data, per_record.indptr[:-1][covered])
    risk = best[tuple_of]
    smallest = (int(release.parameters["k"]) if release.mechanism == "mondrian"
                else math.ceil(1 / float(release.parameters["beta"]))
                if "beta" in release.parameters else None)
    bound = None if smallest is None else 1 / smallest
    seconds = time.perf_counter() - start
    details = {"risk_max": float(np.nanmax(risk)), "groups": len(sizes),
               "smallest_group": int(sizes.min()), "uncovered_rows": int(np.isnan(risk).sum()),
               "rows_over_bound": None if bound is None
               else int(np.count_nonzero(risk > bound * (1 + 1e-12)))}
    isolated = int(np.count_nonzero(risk >= 1 - 1e-12))
    return [
        AttackResult(NAME, "mean prosecutor risk (chance of re-identifying a target's record)",
                     float(np.nanmean(risk)), 1 / targets.n_rows, bound, ADVERSARY, SOURCE,
                     seconds, details, risk, "the chance of picking the individual's own record"),
        AttackResult(SINGLING_OUT, "share of individuals whose record the release isolates",
                     isolated / targets.n_rows, 0.0,
                     None if smallest is None or smallest < 2 else 0.0, ADVERSARY, SOURCE, seconds,
                     {"individuals": isolated}),
    ]
