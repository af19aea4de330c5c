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
  a group is in the table, held to alpha by ambiguity (Mondrian holds it to no bound);
- *tuple posterior* (alpha-beta Theorem 4.3, FRAPP): the chance that a tuple whose prior is
  d = k n/m is in the table, once it is seen in the view, ``d P_in / (d P_in + (1 - d) P_out)``
  from the view's own rates (alpha-beta: ``P_in = alpha + beta``, ``P_out = beta``; FRAPP:
  `ppdp.mechanisms.frapp.view_presence` of its retention), held to gamma;
- *small-count recovery* (SPLU-Gen Lemma 2, Theorem 4; `small_count_recovery`): the share of
  true counts 1..a that a release's estimates recover within a relative error epsilon, held
  to 1 - T_P. It is measured on queries, not read from the release, so it comes with a
  sampling margin.

The share of groups over the bound says whether a bound is met everywhere or only on average.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.mechanisms.alphabeta.frapp import FrappRelease, view_presence
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease
from ppdp.mechanisms.ambiguity.release import AmbiguityRelease
from ppdp.mechanisms.anatomy.release import AnatomyRelease
from ppdp.mechanisms.mondrian.release import MondrianRelease
from ppdp.mechanisms.sdr.compound import CompoundAttribute, compound_frequencies
from ppdp.mechanisms.sdr.formulas import amplification_gamma, protected_values
from ppdp.mechanisms.sdr.partitioning import PerturbationPartitioning
from ppdp.mechanisms.sdr.uniform import UniformPerturbation
from ppdp.table.table import Table

__all__ = ["Measured", "group_association", "measured_privacy", "perturbation_posterior",
           "small_count_recovery", "subtable_counts", "tuple_posterior"]


@dataclass(frozen=True)
class Measured:
    """The largest measured value of one privacy measure, its bound and the share of groups
    (or sub-tables) above the bound."""

    measure: str
    largest: float
    bound: float
    share_over: float
    margin: float = 0.0
    """How far above the bound a measure drawn from queries may land by chance alone (three
    standard errors); 0 for measures read from the release."""

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


def tuple_posterior(mechanism: Any, release: Any, table: Table) -> Measured:
    """The posterior that a tuple with prior d = k n/m is in ``table`` once it is seen in the
    view, from the view's own rates (alpha-beta Theorem 4.3, its condition on
    beta/(alpha + beta); FRAPP as derived in `ppdp.mechanisms.frapp`), against gamma.

    ``mechanism``: a first alpha-beta view's `ppdp.AlphaBeta`, or `ppdp.FRAPP`, with k and
    gamma; ``release``: its view of ``table``.
    """
    m = TupleDomain.of(release.schema).size
    d = mechanism.k * table.n_rows / m
    if isinstance(release, AlphaBetaRelease):
        alpha, beta = float(release.parameters["alpha"]), float(release.parameters["beta"])
        inside, outside = alpha + beta, beta
    else:
        inside, outside = view_presence(float(release.parameters["retention"]),
                                        n=release.n_rows, m=m)
    posterior = d * inside / (d * inside + (1 - d) * outside)
    return Measured("tuple_posterior", float(posterior), float(mechanism.gamma),
                    float(posterior > mechanism.gamma + 1e-12))


def small_count_recovery(truth: np.ndarray, estimates: np.ndarray, *, epsilon: float,
                         bound: float) -> Measured:
    """The share of true counts that the estimates recover within relative error epsilon,
    ``|estimate - f| <= epsilon f``, against ``bound`` = 1 - T_P (SPLU-Gen Lemma 2, Theorem 4:
    each count 1..a is missed by more than epsilon with probability at least T_P).

    ``truth`` and ``estimates`` hold the same queries (over one or several publications).
    The margin is three standard errors of a share whose chance is ``bound`` on every query:
    the observed share may exceed the bound by that much while each count meets it.
    """
    truth = np.asarray(truth, dtype=np.float64).reshape(-1)
    estimates = np.asarray(estimates, dtype=np.float64).reshape(-1)
    if not truth.size:
        return Measured("small_count_recovered", float("nan"), float(bound), float("nan"))
    # The decimal epsilon's error in binary must not turn a boundary count into a miss.
    recovered = np.abs(estimates - truth) <= epsilon * truth * (1 + 1e-12)
    margin = 3 * np.sqrt(bound * (1 - bound) / truth.size)
    return Measured("small_count_recovered", float(recovered.mean()), float(bound),
                    float("nan"), float(margin))


def measured_privacy(mechanism: Any, release: Any, table: Table) -> list[Measured]:
    """Every measure of the module doc read from this mechanism's release of ``table``
    (none for mechanisms whose guarantee is of another kind: SPLU-Gen's small-sum privacy,
    measured on queries by `small_count_recovery`, DBR, Laplace counts; none for alpha-beta
    views after the first, whose rates follow Algorithm 4)."""
    if isinstance(mechanism, UniformPerturbation | PerturbationPartitioning):
        return [perturbation_posterior(mechanism, table)]
    if isinstance(release, FrappRelease) or (
            isinstance(release, AlphaBetaRelease) and getattr(mechanism, "k", None) is not None
            and int(release.parameters.get("view", 1)) == 1):
        return [tuple_posterior(mechanism, release, table)]
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
