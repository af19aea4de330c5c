"""Learning an attribute from a release: the rows each kind of release teaches, and the
classifier that every inference-type attack (and its baseline) uses.

The classifier predicts the attribute attacked from the quasi-identifiers. Where the training
rows hold the target's exact combination of quasi-identifiers it answers with their weighted
shares (a nearest-neighbour vote at distance 0, found by a sorted join on the combination's
key): this is what memorises an individual's own published row, and what makes the attack
perfect on an identity release. Elsewhere it falls back to scikit-learn's categorical naive
Bayes (Laplace smoothing 1), which is linear in the rows, so that a 1.5-million-row alpha-beta
view trains in a second or two. The same classifier, trained on an independent sample of the
population instead of the release, gives the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppdp.attack.targets import Targets, joint_keys
from ppdp.errors import PpdpError
from ppdp.mechanisms.ambiguity.release import AmbiguityRelease
from ppdp.mechanisms.anatomy.release import AnatomyRelease
from ppdp.mechanisms.mondrian.release import MondrianRelease
from ppdp.release.base import Release

__all__ = [
    "TrainingRows",
    "anatomy_entries",
    "learned_posterior",
    "pairs_by_group",
    "population_posterior",
    "release_rows",
    "rows_unavailable",
]

ROW_RELEASES = ("uniform", "sdr", "dbr", "splu", "frapp", "alphabeta")
"""Releases that publish one row per published tuple, in the source's domains."""
GROUP_RELEASES = ("anatomy", "ambiguity", "mondrian")
"""Releases that publish groups (or generalized rows) instead."""

TrainingRows = tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]
"""Quasi-identifier codes by column, the attribute's codes, and a weight per row (None: 1)."""


def rows_unavailable(release: Release, targets: Targets) -> str | None:
    """Why a release teaches no rows for the attribute attacked (None: it does)."""
    if targets.sensitive is None:
        return ("no attribute to infer: the release publishes no column the source marks "
                "sensitive (pass sensitive=..., CLI: --sensitive COL)")
    if release.mechanism not in (*ROW_RELEASES, *GROUP_RELEASES):
        return (f"a {release.mechanism} release publishes no rows or groups (only noisy "
                f"answers to count queries)")
    return None


def release_rows(release: Release, targets: Targets) -> TrainingRows:
    """The rows a release teaches, in the source's domains (see `rows_unavailable`).

    Rows releases (uniform, sdr, dbr, splu, frapp, alpha-beta views) give their published rows
    as they are. Anatomy gives each QIT row once with every value of its group's ST, weighted
    by the value's share of the group (its estimator's model). Ambiguity and Mondrian publish
    no row in the source's domain; each published row is drawn as their estimators assume
    (values uniform over what a group lists or a label covers, independent across attributes).
    """
    reason = rows_unavailable(release, targets)
    if reason is not None:
        raise ValueError(reason)
    attribute, quasi = targets.sensitive, targets.quasi
    if isinstance(release, AnatomyRelease):
        rows, lines = anatomy_entries(release)
        st_groups, st_values, st_counts = release.st
        sizes = np.bincount(release.qit_groups, minlength=int(release.parameters["n_groups"]))
        return ({q: release.qit[q][rows] for q in quasi}, st_values[lines].astype(np.int64),
                st_counts[lines] / sizes[st_groups[lines]])
    if isinstance(release, AmbiguityRelease):
        return _ambiguity_rows(release, quasi, targets.rng), _ambiguity_values(release), None
    if isinstance(release, MondrianRelease):
        codes = {}
        for q in quasi:
            generalized, nodes = release.generalized[q], release.rows[q]
            width = generalized.cover_sizes[nodes]
            pick = generalized.indptr[nodes] + (targets.rng.random(len(nodes))
                                                * width).astype(np.int64)
            codes[q] = generalized.codes[np.minimum(pick, generalized.indptr[nodes + 1] - 1)]
        return codes, release.sensitive_codes.astype(np.int64), None
    published = release.codes  # type: ignore[attr-defined]
    return ({q: published[q] for q in quasi}, np.asarray(published[attribute], np.int64), None)


def anatomy_entries(release: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (QIT row, ST line of the row's group), as the QIT row and the ST line."""
    return pairs_by_group(release.qit_groups, release.st[0], int(release.parameters["n_groups"]))


def pairs_by_group(left: np.ndarray, right: np.ndarray, n_groups: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of a left item and a right item of the same group (items given by their
    group ids), as the positions of each; left positions ascending."""
    by_group = np.argsort(right, kind="stable")
    per_group = np.bincount(right, minlength=n_groups)
    first = np.cumsum(per_group) - per_group
    per_left = per_group[left]
    left_index = np.repeat(np.arange(len(left)), per_left)
    within = np.arange(int(per_left.sum())) - np.repeat(np.cumsum(per_left) - per_left,
                                                        per_left)
    return left_index, by_group[np.repeat(first[left], per_left) + within]


def _ambiguity_values(release: Any) -> np.ndarray:
    """One value per row of every group: the ST's multisets, in ST order."""
    return np.repeat(release.st[1], release.st[2]).astype(np.int64)


def _ambiguity_rows(release: Any, quasi: Sequence[str], rng: np.random.Generator
                    ) -> dict[str, np.ndarray]:
    """One row per member of every group (ST order), each quasi-identifier drawn uniformly
    from the values the group's AT_i lists."""
    groups = np.repeat(release.st[0], release.st[2])
    codes = {}
    for q in quasi:
        at_groups, at_values = release.auxiliary[q]
        order = np.argsort(at_groups, kind="stable")
        listed = np.bincount(at_groups, minlength=release.n_groups)
        first = np.cumsum(listed) - listed
        pick = first[groups] + (rng.random(len(groups)) * listed[groups]).astype(np.int64)
        codes[q] = at_values[order][np.minimum(pick, first[groups] + listed[groups] - 1)]
    return codes


def learned_posterior(training: TrainingRows, targets: Mapping[str, np.ndarray],
                      quasi: Sequence[str], sizes: Mapping[str, int], n_values: int
                      ) -> np.ndarray:
    """The classifier's distribution over the attribute's values for each target row
    (targets x values): the weighted shares of the training rows with the target's exact
    quasi-identifiers, else categorical naive Bayes."""
    codes, values, weights = training
    n_targets = len(next(iter(targets.values()))) if targets else 0
    train_keys, target_keys = joint_keys([codes, targets], quasi, sizes)
    wanted, target_index = np.unique(target_keys, return_inverse=True)
    # Only the training rows whose combination some target holds are counted.
    where = np.minimum(np.searchsorted(wanted, train_keys), len(wanted) - 1)
    useful = wanted[where] == train_keys
    counts = np.bincount(where[useful] * n_values + values[useful],
                         weights=None if weights is None else weights[useful],
                         minlength=len(wanted) * n_values).reshape(len(wanted), n_values)
    posterior = counts[target_index.reshape(-1)].astype(np.float64)
    totals = posterior.sum(axis=1)
    matched = totals > 0
    posterior[matched] /= totals[matched, None]
    if (~matched).any():
        posterior[~matched] = _naive_bayes(training, {q: targets[q][~matched] for q in quasi},
                                           quasi, sizes, n_values)
    assert posterior.shape == (n_targets, n_values)
    return posterior


def _naive_bayes(training: TrainingRows, targets: Mapping[str, np.ndarray],
                 quasi: Sequence[str], sizes: Mapping[str, int], n_values: int) -> np.ndarray:
    """scikit-learn's categorical naive Bayes (Laplace smoothing 1), trained on the rows and
    applied to the targets, over every value of the attribute."""
    # scikit-learn is an optional dependency (the ``attack`` extra): imported where it is
    # used, so that the rest of ppdp works without it.
    try:
        from sklearn.naive_bayes import CategoricalNB
    except ImportError:
        raise PpdpError("the inference attacks need scikit-learn: pip install "
                        "'ppdp[attack]'") from None

    codes, values, weights = training
    n_targets = len(next(iter(targets.values()))) if targets else 0
    posterior = np.zeros((n_targets, n_values))
    if not quasi:
        shares = np.bincount(values, weights=weights, minlength=n_values)
        posterior[:] = shares / shares.sum()
        return posterior
    model = CategoricalNB(alpha=1.0, min_categories=[int(sizes[q]) for q in quasi])
    model.fit(np.stack([np.asarray(codes[q], dtype=np.int64) for q in quasi], axis=1), values,
              sample_weight=weights)
    features = np.stack([np.asarray(targets[q], dtype=np.int64) for q in quasi], axis=1)
    posterior[:, model.classes_] = model.predict_proba(features)
    return posterior


def population_posterior(targets: Targets) -> np.ndarray:
    """The baseline classifier's distribution for every target of half A, learned from the
    true rows of half B (an independent sample of the population), computed once per run."""
    def compute() -> np.ndarray:
        attribute = targets.sensitive
        assert attribute is not None
        population = targets.population
        training = ({q: targets.codes[q][population] for q in targets.quasi},
                    targets.codes[attribute][population].astype(np.int64), None)
        evaluation = {q: targets.codes[q][targets.evaluation] for q in targets.quasi}
        return learned_posterior(training, evaluation, targets.quasi, targets.sizes,
                                 targets.sizes[attribute])

    return targets.cached("population_posterior", compute)
