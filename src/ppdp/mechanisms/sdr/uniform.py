"""Uniform Perturbation (UP) under (rho1, rho2)-privacy (Small Domain Randomization, Sections
3-4 and Appendix 10.2).

Each row's sensitive value x is kept with the retention probability p and otherwise replaced by
a value drawn uniformly from the domain (x included), so Pr[x -> x] = p + q and Pr[x -> y] = q
with q = (1 - p)/m (Eq. 1). The ratio gamma = (p + q)/q is the largest that gives
(rho1, rho2)-privacy (Theorem 1, Eq. 6); then p = (gamma - 1)/(m - 1 + gamma) and
q = 1/(m - 1 + gamma) (Eq. 4). Several sensitive columns form one compound attribute over the
product of their domains (Section 3)."""

from __future__ import annotations

import numpy as np

from ppdp.mechanisms.base import RowMechanism, require_sensitive
from ppdp.mechanisms.parameters import Parameter
from ppdp.mechanisms.sdr.compound import CompoundAttribute, compound_frequencies
from ppdp.mechanisms.sdr.formulas import (
    amplification_gamma,
    check_delta,
    check_privacy,
    protected_values,
)
from ppdp.mechanisms.sdr.guarantee import PerturbationGuarantee
from ppdp.mechanisms.sdr.plan import perturbation_plan
from ppdp.mechanisms.sdr.release import PerturbationRelease, perturbation_release
from ppdp.plan.resources import Footprint
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.table.source import SummarySource
from ppdp.table.table import Table


class UniformPerturbation(RowMechanism):
    """Uniform Perturbation (UP) of the sensitive attribute over its whole domain (Sec. 3)."""

    name = "uniform"
    summary = ("uniform perturbation: keep the sensitive value with probability p, else draw "
               "one uniformly from the whole domain; (rho1, rho2)-privacy")
    # Measured (`ppdp.plan.resources`): 27.0 bytes a row for 4 and for 9 columns.
    footprint = Footprint(per_row=27, per_column=1)
    parameters = (
        Parameter("rho1", float, "prior bound rho1 of (rho1, rho2)-privacy (0 < rho1 < rho2)"),
        Parameter("rho2", float, "posterior bound rho2 of (rho1, rho2)-privacy (rho2 < 1)"),
    )
    guarantee_uses_table = True
    guarantee_parameters = (
        Parameter("m", int, "sensitive domain size m (taken from the table when one is given)",
                  default=None),
        Parameter("n", int, "number of rows |T| for the error bound (taken from the table)",
                  default=None),
        Parameter("delta", float, "the error bound holds with probability 1 - delta",
                  default=0.05),
    )

    def __init__(self, *, rho1: float, rho2: float) -> None:
        self.rho1, self.rho2 = check_privacy(rho1, rho2)

    @property
    def gamma(self) -> float:
        """gamma of Eq. 6."""
        return float(amplification_gamma(self.rho1, self.rho2))

    def release_of(self, plan: RowPlan, rows: PublishedRows) -> PerturbationRelease:
        """The (compound) sensitive value of every row perturbed over the whole domain."""
        return perturbation_release(PerturbationRelease, plan, rows)

    def row_plan(self, source: SummarySource, key: int) -> RowPlan:
        """The plan: one sub-table, the whole (compound) domain, gamma of Eq. 6."""
        compound = self._compound(source)
        domains = np.ones((1, compound.size), dtype=bool)
        parameters = {"rho1": self.rho1, "rho2": self.rho2, "gamma": [self.gamma]}
        return perturbation_plan(self.name, source.schema, compound, domains,
                                 np.array([self.gamma]), parameters, key)

    def _compound(self, source: Table | SummarySource, *, publishing: bool = True
                  ) -> CompoundAttribute:
        """The sensitive attribute, checked to have a value that rho1 protects."""
        sensitive = require_sensitive(source, "Uniform perturbation", publishing=publishing)
        compound = CompoundAttribute.of(source.schema, sensitive)
        protected_values(compound_frequencies(source, compound), self.rho1)
        return compound

    def guarantee(self, table: Table | None = None, *, m: int | None = None,
                  n: int | None = None, delta: float = 0.05) -> PerturbationGuarantee:
        """gamma, p, q (Eq. 4, 6) and the error bound eps (Eq. 11) for a domain of size m and
        n rows, taken from ``table`` when it is given."""
        if table is not None:
            compound = self._compound(table, publishing=False)
            m, n = compound.size, table.n_rows
        return PerturbationGuarantee.of(self.rho1, self.rho2, check_delta(delta),
                                        self.gamma, m, n)
