"""DBR's publishing: every row's sensitive value replaced by an independent draw from the
column's original marginal distribution. The marginal survives; any link between the sensitive
value and the other attributes is lost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ppdp.data.schema import Role
from ppdp.mechanisms.base import RowMechanism, require_sensitive
from ppdp.mechanisms.dbr.guarantee import dbr_guarantee
from ppdp.mechanisms.dbr.release import DbrRelease
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.resources import Footprint
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.plan.sorted_search import SortedSearch
from ppdp.table.source import SummarySource


class DBR(RowMechanism):
    """Redraw each sensitive value from the column's marginal distribution."""

    name = "dbr"
    summary = "distribution-based randomization: sensitive values redrawn from their marginal"
    parameters = ()
    # Measured (`ppdp.plan.resources`): 16.0 bytes a row for 4 and for 9 columns (the redrawn
    # column's float64 probabilities and int64 draws, then one shuffled copy per column).
    footprint = Footprint(per_row=16, per_column=1)

    def release_of(self, plan: RowPlan, rows: PublishedRows) -> DbrRelease:
        release = DbrRelease(plan.schema, {}, rows.n_rows, rows.codes)
        release.part_rows = rows.part_rows
        return release

    def row_plan(self, source: SummarySource, key: int) -> RowPlan:
        """The plan: the sensitive marginals (one histogram each), then every row's sensitive
        values redrawn from them by inverting the cumulative distribution at a keyed draw."""
        sensitive = require_sensitive(source, "DBR")
        names = [c.name for c in source.schema.columns if c.role != Role.IGNORED]
        cumulative = {name: SortedSearch(np.cumsum(source.histogram((name,))) / source.n_rows,
                                         side="right")
                      for name in sensitive}
        streams = {name: KeyedStream(key, f"redraw/{name}") for name in sensitive}

        def kernel(codes: Mapping[str, np.ndarray], start: int) -> dict[str, np.ndarray]:
            rows = {name: codes[name] for name in names}
            for name, cdf in cumulative.items():
                redrawn = cdf(streams[name].uniform(start, len(codes[name])))
                # Rounding can leave the last cumulative frequency a hair below 1.
                rows[name] = np.minimum(redrawn, len(cdf.edges) - 1).astype(codes[name].dtype)
            return rows

        return RowPlan(self.name, source.schema.select(names), kernel, {})

    def guarantee(self) -> Any:
        return dbr_guarantee()
