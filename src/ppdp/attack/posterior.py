"""Posterior checks of uniform perturbation and Perturbation Partitioning (Small Domain
Randomization, Sections 3.1-3.2 and 4.3; Theorem 1, Eq. 6 and Eq. 10).

(rho1, rho2)-privacy: an adversary whose prior that a row of sub-table T_i holds a value s is
at most rho1_i (the largest relative frequency of a protected value in T_i; rho1 for uniform
perturbation) believes s with at most rho2 after seeing the row's published copy. The
posterior at prior pi after seeing s is ``pi gamma / (pi gamma + 1 - pi)``, increasing in pi,
so the largest over priors up to rho1_i is at rho1_i, where Eq. 10
(``gamma_i = rho2 (1 - rho1_i) / (rho1_i (1 - rho2))``) makes it exactly rho2; rho1_i follows
from the published gamma_i by the same equation.

The check measures gamma on the release itself: the quasi-identifiers are published as they
are, so a source row whose combination of them occurs once is linked to its published row
(an adversary who knows the target's quasi-identifiers does the same). Over those rows of
sub-table i, the share published as themselves estimates p_i + q_i and the others (m_i - 1)
q_i, so ``gamma_i = (p_i + q_i) / q_i`` is measured, and with it the posterior at prior
rho1_i; its standard error follows by the delta method from the binomial share. Success: the
largest measured posterior over the sub-tables; bound rho2; baseline the prior rho1_i.

Per individual: the posterior of its own value given the published rows that carry its
quasi-identifiers (the target is any one of them alike), with each value's frequency in the
row's sub-table as the prior: the theorem's adversary, who knows the population's
frequencies (`ppdp.risk.measured.subtable_counts`).
"""

from __future__ import annotations

import time

import numpy as np

from ppdp.attack.report import AttackResult
from ppdp.attack.targets import Targets, joint_keys
from ppdp.mechanisms.base import Mechanism, mechanism_with
from ppdp.query.codes import sorted_distinct
from ppdp.release.base import Release
from ppdp.risk.measured import perturbation_posterior, subtable_counts

NAME = "posterior"
ADVERSARY = ("prior on each row's value at most rho1_i (the population's frequency in the "
             "row's sub-table); knows the target's quasi-identifiers, so sees its published "
             "value")
SOURCE = ("Small Domain Randomization: Same Privacy, More Utility, Sections 3.1-3.2 (Theorem "
          "1, Eq. 6) and 4.3 (Eq. 10)")


def applies(targets: Targets) -> str | None:
    """Why the attack does not apply (None: it applies)."""
    if targets.release.mechanism not in ("uniform", "sdr"):
        return "only uniform perturbation and sdr promise (rho1, rho2)-privacy"
    if len(targets.release.schema.sensitive) != 1:
        return "the check links one sensitive column; this release perturbs several together"
    return None


def mechanism_of(release: Release) -> Mechanism:
    """The mechanism with the release's public parameters (its partition of a table is found
    from the value counts alone, so it is the one the release was published with)."""
    return mechanism_with(release.mechanism, release.parameters)


def prior_bounds(gammas: np.ndarray, rho2: float) -> np.ndarray:
    """rho1_i from gamma_i by Eq. 10: ``rho1_i = rho2 / (gamma_i (1 - rho2) + rho2)``."""
    return rho2 / (gammas * (1 - rho2) + rho2)


def run(targets: Targets) -> list[AttackResult]:
    """Measured posterior at prior rho1_i per sub-table; every individual's posterior."""
    start = time.perf_counter()
    release = targets.release
    attribute = targets.sensitive
    assert attribute is not None
    rho2 = float(release.parameters["rho2"])
    gammas = np.asarray(release.gammas, dtype=np.float64)  # type: ignore[attr-defined]
    mechanism = mechanism_of(release)
    counts, table_gammas, _ = subtable_counts(mechanism, targets.encoded)
    if not np.allclose(table_gammas, gammas):
        raise ValueError("the source's value counts do not give the partition this release was "
                         "published with; attack the release with the table it was published "
                         "from")
    published = release.codes  # type: ignore[attr-defined]
    subtable = np.asarray(release.subtable, dtype=np.int64)  # type: ignore[attr-defined]
    truth = targets.codes[attribute].astype(np.int64)
    source_keys, release_keys = joint_keys([targets.codes, published], targets.quasi,
                                           targets.sizes)
    # Rows whose combination occurs once in the source (and so once in the release).
    _, first, multiplicity = np.unique(source_keys, return_index=True, return_counts=True)
    single = first[multiplicity == 1]
    order = np.argsort(release_keys, kind="stable")
    linked = order[np.searchsorted(release_keys[order], source_keys[single])]
    kept = published[attribute][linked].astype(np.int64) == truth[single]
    sizes = release.domains.sum(axis=1)  # type: ignore[attr-defined]
    rho1 = prior_bounds(gammas, rho2)
    per_table = []
    for i in range(len(gammas)):
        inside = subtable[linked] == i
        n = int(inside.sum())
        share = float(kept[inside].mean()) if n else float("nan")
        measured = share * (sizes[i] - 1) / (1 - share) if share < 1 else float("inf")
        posterior = (1.0 if not np.isfinite(measured) else
                     rho1[i] * measured / (rho1[i] * measured + 1 - rho1[i]))
        # Delta method: d posterior / d gamma times d gamma / d share times sd(share).
        slope = (rho1[i] * (1 - rho1[i]) / (rho1[i] * measured + 1 - rho1[i]) ** 2
                 * (sizes[i] - 1) / (1 - share) ** 2) if 0 < share < 1 else 0.0
        stderr = slope * np.sqrt(share * (1 - share) / n) if n else float("nan")
        per_table.append({"subtable": i, "gamma": float(gammas[i]), "rho1_i": float(rho1[i]),
                          "linked_rows": n, "gamma_measured": measured,
                          "posterior_at_rho1_i": posterior, "stderr": float(stderr)})
    largest = max(per_table, key=lambda t: t["posterior_at_rho1_i"])
    risk = _individual_posteriors(release, counts, source_keys, release_keys, truth, subtable)
    return [AttackResult(
        NAME, "measured posterior of a value seen in the release, at prior rho1_i (largest "
              "over sub-tables)",
        float(largest["posterior_at_rho1_i"]), float(rho1.max()), rho2, ADVERSARY, SOURCE,
        time.perf_counter() - start,
        {"subtables": per_table, "stderr": largest["stderr"],
         "model_posterior_max": perturbation_posterior(mechanism, targets.encoded).largest,
         "linked_rows": len(single)},
        risk, f"the posterior of the individual's own {attribute}")]


def _individual_posteriors(release: object, counts: np.ndarray, source_keys: np.ndarray,
                           release_keys: np.ndarray, truth: np.ndarray, subtable: np.ndarray
                           ) -> np.ndarray:
    """For every source row, the mean over the published rows with its quasi-identifiers of
    the posterior of its own value: ``pi_i(x) (q_i + p_i [x = y]) / (q_i + p_i pi_i(y))``."""
    attribute = release.schema.sensitive[0]  # type: ignore[attr-defined]
    published = np.asarray(release.codes[attribute], dtype=np.int64)  # type: ignore[attr-defined]
    p = np.asarray(release.retention, dtype=np.float64)  # type: ignore[attr-defined]
    q = np.asarray(release.replacement, dtype=np.float64)  # type: ignore[attr-defined]
    prior = counts / counts.sum(axis=1, keepdims=True)
    inverse_normaliser = 1.0 / (q[subtable] + p[subtable] * prior[subtable, published])
    n_values = prior.shape[1]
    wanted, target_of = np.unique(source_keys, return_inverse=True)
    where = np.minimum(np.searchsorted(wanted, release_keys), len(wanted) - 1)
    # Per (combination, sub-table): the sum of 1/normaliser; per (combination, sub-table,
    # published value): the same over the rows published with that value.
    k = len(p)
    by_table = np.bincount(where * k + subtable, weights=inverse_normaliser,
                           minlength=len(wanted) * k).reshape(len(wanted), k)
    cells = (where * k + subtable) * n_values + published
    by_value_keys = sorted_distinct(cells)
    sums = np.bincount(np.searchsorted(by_value_keys, cells), weights=inverse_normaliser,
                       minlength=len(by_value_keys))
    rows_per_combination = np.bincount(where, minlength=len(wanted))
    target_of = target_of.reshape(-1)
    posterior = np.zeros(len(truth))
    for i in range(k):
        own = (target_of * k + i) * n_values + truth
        position = np.minimum(np.searchsorted(by_value_keys, own), len(by_value_keys) - 1)
        same = np.where(by_value_keys[position] == own, sums[position], 0.0)
        posterior += prior[i, truth] * (q[i] * by_table[target_of, i] + p[i] * same)
    return posterior / rows_per_combination[target_of]
