"""Distribution-based randomization (DBR), the comparator of SPLU-Gen Section 3 and 6.2.3.

Every row's sensitive value is replaced by an independent draw from the column's original
marginal distribution. The marginal survives; any link between the sensitive value and the
other attributes is lost. Counts are estimated by the published counts (the MLE under DBR's
own model, Section 6.2.3); for conditions that involve other attributes this estimate is biased
towards independence, so no standard error is reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ppdp.guarantees import dbr_guarantee
from ppdp.keyed import KeyedStream
from ppdp.mechanisms.base import Mechanism, publish_in_memory, require_sensitive
from ppdp.plans import RowPlan
from ppdp.query import BoundQuery, count_histogram
from ppdp.randomness import RandomState
from ppdp.release import RowsRelease
from ppdp.sorted_search import SortedSearch
from ppdp.sources import Source
from ppdp.table import Role, Table


class DBR(Mechanism):
    """Redraw each sensitive value from the column's marginal distribution."""

    name = "dbr"
    summary = "distribution-based randomization: sensitive values redrawn from their marginal"
    parameters = ()

    def publish(self, table: Table, *, random_state: RandomState = None) -> DbrRelease:
        self.check_memory(table)
        plan, rows = publish_in_memory(self, table, random_state)
        release = DbrRelease(plan.schema, {}, rows.n_rows, rows.codes)
        release.part_rows = rows.part_rows
        return release

    def row_plan(self, source: Source, key: int) -> RowPlan:
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


class DbrRelease(RowsRelease):
    """A DBR release: rows with redrawn sensitive values; estimates are published counts."""

    mechanism = "dbr"

    def _estimate(self, queries: list[BoundQuery]) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return [(np.asarray(count_histogram(self._cube, q.predicate, q.group_by), dtype=float),
                 None) for q in queries]
