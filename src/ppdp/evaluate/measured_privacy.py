"""The privacy each side of a comparison measurably gives on the table it was run on.

A comparison of errors is fair only at equal privacy, so the evaluation prints, next to each
mechanism's error, the largest value of the measure its guarantee bounds:

- *posterior* (Uniform Perturbation, Perturbation Partitioning; Small Domain Randomization
  Section 3.1, Eq. 6): an adversary whose prior on a row's value is that value's frequency in
  the row's sub-table (at most rho1 for a protected value) and who sees the published copy
  ``y = x`` believes ``x`` with probability ``f gamma_i / (f gamma_i + 1 - f)``; the largest
  over protected values and sub-tables, held to rho2;
- *association* (Anatomy, ambiguity, Mondrian): the largest share ``c / |G|`` of one sensitive
  value in a group or class (Anatomy's l-diversity: 1/l; ambiguity Theorem 5.2: beta);
- *presence* (ambiguity Theorem 5.1, Mondrian): the largest probability that a tuple covered by
  a group is in the table, held to alpha by ambiguity (Mondrian holds it to no bound).

The share of groups over the bound says whether a bound is met everywhere or only on average.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.table import Table

__all__ = ["Measured", "group_association", "measured_privacy", "perturbation_posterior",
           "subtable_counts"]


@dataclass(frozen=True)
class Measured:
    """The largest measured value of one privacy measure, its bound and the share of groups
    (or sub-tables) above the bound."""

    measure: str
    largest: float
    bound: float
    share_over: float

    def columns(self, prefix: str) -> dict[str, float]:
        """The row entries of an experiment: ``<prefix>_<measure>``, its bound and share."""
        return {f"{prefix}_{self.measure}": self.largest,
                f"{prefix}_{self.measure}_bound": self.bound,
                f"{prefix}_{self.measure}_share_over": self.share_over}


def perturbation_posterior(mechanism: Any, table: Table) -> Measured:
    """The largest posterior of a protected value given its own published copy, with each
    value's frequency in its sub-table as the prior (Section 3.1, Eq. 6), against rho2.

    ``mechanism``: a `ppdp.UniformPerturbation` (one sub-table, the whole table) or
    `ppdp.PerturbationPartitioning` (its partition of ``table``).
    """
    counts, gammas, protected = subtable_counts(mechanism, table)
    shares = counts / counts.sum(axis=1, keepdims=True)
    gamma = gammas[:, None]
    posterior = np.where(protected[None, :], shares * gamma / (shares * gamma + 1 - shares), 0)
    largest = posterior.max(axis=1)
    return Measured("posterior", float(largest.max()), float(mechanism.rho2),
                    float(np.mean(largest > mechanism.rho2 + 1e-12)))


def subtable_counts(mechanism: Any, table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counts of each (compound) sensitive value in each sub-table (sub-tables x values),
    each sub-table's gamma_i, and which values are protected (SA', relative frequency at most
    rho1 in the table; Section 4.1, Eq. 9).

    ``mechanism``: a `ppdp.UniformPerturbation` (one sub-table, the whole table) or
    `ppdp.PerturbationPartitioning` (its partition of ``table``, found from the value counts
    alone, so the same as the one its release was published with).
    """
    from ppdp.mechanisms.perturbation import (
        CompoundAttribute,
        amplification_gamma,
        compound_frequencies,
        protected_values,
    )

    compound = CompoundAttribute.of(table.schema, table.schema.sensitive)
    frequencies = compound_frequencies(table, compound)
    if hasattr(mechanism, "partition"):
        partition = mechanism.partition(table)
        counts, gammas = partition.counts, partition.gammas
    else:
        counts = frequencies[None, :]
        gammas = np.atleast_1d(amplification_gamma(mechanism.rho1, mechanism.rho2))
    return (np.asarray(counts), np.asarray(gammas, dtype=np.float64),
            protected_values(frequencies, mechanism.rho1))


def group_association(groups: np.ndarray, counts: np.ndarray, bound: float) -> Measured:
    """The largest share c/|G| of one sensitive value in a group, from lines (group, count)
    of the groups' sensitive counts (Anatomy's ST, ambiguity's ST, Mondrian's classes),
    against ``bound`` (1/l or beta)."""
    groups = np.asarray(groups, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.float64)
    if not groups.size:
        return Measured("association", float("nan"), float(bound), float("nan"))
    sizes = np.bincount(groups, weights=counts)
    largest = np.zeros(len(sizes))
    np.maximum.at(largest, groups, counts / sizes[groups])
    present = sizes > 0
    return Measured("association", float(largest[present].max()), float(bound),
                    float(np.mean(largest[present] > bound + 1e-12)))


def measured_privacy(mechanism: Any, release: Any, table: Table) -> list[Measured]:
    """Every measure of the module doc that applies to this mechanism's release of ``table``
    (none for mechanisms whose guarantee is of another kind: SPLU-Gen's small-sum privacy,
    DBR, Laplace counts)."""
    from ppdp.mechanisms.ambiguity import AmbiguityRelease
    from ppdp.mechanisms.anatomy import AnatomyRelease
    from ppdp.mechanisms.mondrian import MondrianRelease
    from ppdp.mechanisms.perturbation import UniformPerturbation
    from ppdp.mechanisms.sdr import PerturbationPartitioning

    if isinstance(mechanism, UniformPerturbation | PerturbationPartitioning):
        return [perturbation_posterior(mechanism, table)]
    if isinstance(release, AnatomyRelease):
        return [group_association(release.st[0], release.st[2], 1 / mechanism.l)]
    if isinstance(release, AmbiguityRelease):
        presence = release.presence()
        return [group_association(release.st[0], release.st[2], mechanism.beta),
                Measured("presence", float(presence.max()), float(mechanism.alpha),
                         float(np.mean(presence > mechanism.alpha + 1e-12)))]
    if isinstance(release, MondrianRelease):
        # Held to c/|G| <= 1/l with frequency l-diversity; distinct l bounds no share, and no
        # Mondrian bounds presence (nan bounds: measured, not held).
        association, presence = release.association(), release.presence()
        bound = 1 / mechanism.l if mechanism.diversity == "frequency" else float("nan")
        return [Measured("association", float(association.max()), bound,
                         float(np.mean(association > bound + 1e-12))),
                Measured("presence", float(presence.max()), float("nan"), float("nan"))]
    return []
