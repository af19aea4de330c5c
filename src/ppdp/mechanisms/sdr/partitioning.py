"""Perturbation Partitioning (PP, Small Domain Randomization Section 5): the partition, then
rows dealt to sub-tables at random within each value, so that sub-table i receives exactly its
count of each value (`ppdp.plan.quotas`), each perturbed within its own domain. Which sub-table
a row is in, SA_i and gamma_i are published (Section 4.3); the counts of the partition are
not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppdp.data.schema import Schema
from ppdp.mechanisms.base import RowMechanism, check_sensitive, require_sensitive
from ppdp.mechanisms.parameters import Parameter
from ppdp.mechanisms.sdr.compound import CompoundAttribute, compound_frequencies
from ppdp.mechanisms.sdr.formulas import (
    amplification_gamma,
    check_delta,
    check_privacy,
    uniform_probabilities,
)
from ppdp.mechanisms.sdr.guarantee import PerturbationGuarantee, SubTableSummary
from ppdp.mechanisms.sdr.partition import Partition, perturbation_partition
from ppdp.mechanisms.sdr.plan import perturbation_plan
from ppdp.mechanisms.sdr.release import (
    PerturbationRelease,
    check_gammas,
    perturbation_release,
)
from ppdp.mechanisms.sdr.uniform import UniformPerturbation
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.quotas import QuotaAssignment
from ppdp.plan.resources import Footprint
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.table.source import SummarySource
from ppdp.table.table import Table


class PerturbationPartitioning(RowMechanism):
    """Small domain randomization by Perturbation Partitioning (PP, Section 5)."""

    name = "sdr"
    summary = ("small domain randomization: perturbation within sub-tables of small sensitive "
               "domains (Perturbation Partitioning); (rho1, rho2)-privacy")
    # Measured (`ppdp.plan.resources`): 27.0 bytes a row for 4 and for 9 columns.
    footprint = Footprint(per_row=28, per_column=1)
    parameters = (
        *UniformPerturbation.parameters,
        Parameter("delta", float, "confidence 1 - delta of the error bound minimised by the "
                                  "merging (Eq. 12)", default=0.05),
    )
    guarantee_uses_table = True
    guarantee_parameters = UniformPerturbation.guarantee_parameters[:2]

    def __init__(self, *, rho1: float, rho2: float, delta: float = 0.05) -> None:
        self.rho1, self.rho2 = check_privacy(rho1, rho2)
        self.delta = check_delta(delta)

    def partition(self, table: Table | SummarySource) -> Partition:
        """The partition PP finds for this table's (compound) sensitive attribute."""
        sensitive = require_sensitive(table, "Perturbation partitioning", publishing=False)
        compound = CompoundAttribute.of(table.schema, sensitive)
        return perturbation_partition(compound_frequencies(table, compound), rho1=self.rho1,
                                      rho2=self.rho2, delta=self.delta)

    def release_of(self, plan: RowPlan, rows: PublishedRows) -> SdrRelease:
        """The table partitioned, each sub-table perturbed within its own domain."""
        return perturbation_release(SdrRelease, plan, rows)

    def row_plan(self, source: SummarySource, key: int) -> RowPlan:
        """The plan: the partition (from the sensitive histogram), each row's sub-table by
        exact quotas (``partition.counts``), then perturbation within the sub-table."""
        sensitive = require_sensitive(source, "Perturbation partitioning")
        compound = CompoundAttribute.of(source.schema, sensitive)
        partition = self.partition(source)
        assignment = QuotaAssignment(KeyedStream(key, "subtable"), partition.counts,
                                     compound.encode, compound.columns)
        parameters = {"rho1": self.rho1, "rho2": self.rho2, "delta": self.delta,
                      "gamma": [float(g) for g in partition.gammas]}
        return perturbation_plan(self.name, source.schema, compound, partition.domains,
                                 partition.gammas, parameters, key, assignment)

    def guarantee(self, table: Table | None = None, *, m: int | None = None,
                  n: int | None = None) -> PerturbationGuarantee:
        """Privacy and error bound; with a table, the partition's sub-tables (Tables 2-3)."""
        gamma = float(amplification_gamma(self.rho1, self.rho2))
        if table is None:
            return PerturbationGuarantee.of(self.rho1, self.rho2, self.delta, gamma, m, n)
        partition = self.partition(table)
        sizes = partition.counts.sum(axis=1)
        m_i = partition.domains.sum(axis=1)
        retention, replacement = uniform_probabilities(partition.gammas, m_i)
        subtables = tuple(
            SubTableSummary(rows=int(r), m=int(mi), rho1=float(rho), gamma=float(g),
                            retention=float(p), diagonal=float(p + q), epsilon=float(e))
            for r, mi, rho, g, p, q, e in zip(sizes, m_i, partition.rho1s, partition.gammas,
                                              retention, replacement, partition.epsilons,
                                              strict=True))
        whole = CompoundAttribute.of(table.schema, table.schema.sensitive).size
        base = PerturbationGuarantee.of(self.rho1, self.rho2, self.delta, gamma, whole,
                                        table.n_rows)
        return PerturbationGuarantee(
            rho1=self.rho1, rho2=self.rho2, delta=self.delta, gamma=gamma, m=whole,
            n=table.n_rows, retention=base.retention, replacement=base.replacement,
            diagonal=base.diagonal, epsilon=partition.epsilon, subtables=subtables)


class SdrRelease(PerturbationRelease):
    """A Perturbation Partitioning release: perturbed rows with their public sub-table."""

    mechanism = "sdr"

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """The sensitive columns, (rho1, rho2) and delta as `PerturbationPartitioning` checks
        them, and a gamma_i above 1 for each sub-table."""
        check_sensitive(schema, "Perturbation partitioning")
        check_privacy(parameters["rho1"], parameters["rho2"])
        check_delta(parameters["delta"])
        check_gammas(parameters["gamma"])
