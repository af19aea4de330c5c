"""Distribution-based randomization (DBR), the comparator of SPLU-Gen Section 3 and 6.2.3.

Every row's sensitive value is replaced by an independent draw from the column's original
marginal distribution. The marginal survives; any link between the sensitive value and the
other attributes is lost. Counts are estimated by the published counts (the MLE under DBR's
own model, Section 6.2.3); for conditions that involve other attributes this estimate is biased
towards independence, so no standard error is reported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.guarantees import dbr_guarantee
from ppdp.mechanisms.base import Mechanism, publish_rows, require_sensitive
from ppdp.query import BoundQuery, count_histogram
from ppdp.randomness import RandomState, make_rng
from ppdp.release import RowsRelease
from ppdp.table import Table


class DBR(Mechanism):
    """Redraw each sensitive value from the column's marginal distribution."""

    name = "dbr"
    summary = "distribution-based randomization: sensitive values redrawn from their marginal"
    parameters = ()

    def publish(self, table: Table, *, random_state: RandomState = None) -> DbrRelease:
        self.check_memory(table)
        require_sensitive(table, "DBR")
        rng = make_rng(random_state)

        def redraw(name: str, values: np.ndarray) -> np.ndarray:
            frequencies = np.bincount(values, minlength=table.schema[name].size)
            return rng.choice(len(frequencies), size=table.n_rows,
                              p=frequencies / table.n_rows).astype(values.dtype)

        schema, codes = publish_rows(table, rng, redraw)
        return DbrRelease(schema, {}, table.n_rows, codes)

    def guarantee(self) -> Any:
        return dbr_guarantee()


class DbrRelease(RowsRelease):
    """A DBR release: rows with redrawn sensitive values; estimates are published counts."""

    mechanism = "dbr"

    def _estimate(self, queries: list[BoundQuery]) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return [(np.asarray(count_histogram(self._cube, q.predicate, q.group_by), dtype=float),
                 None) for q in queries]
