"""A DBR release: counts estimated by the published counts (the MLE under DBR's own model,
SPLU-Gen Section 6.2.3); for conditions that involve other attributes this estimate is biased
towards independence, so no standard error is reported. A condition on quasi-identifiers only
is answered exactly (they are published unchanged), with standard error 0 as in every release
that publishes them unchanged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppdp.data.schema import Schema
from ppdp.mechanisms.base import check_sensitive
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import count_histogram
from ppdp.release.base import RowsRelease


class DbrRelease(RowsRelease):
    """A DBR release: rows with redrawn sensitive values; estimates are published counts."""

    mechanism = "dbr"

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """The sensitive columns, as `DBR` checks them (it has no parameters)."""
        check_sensitive(schema, "DBR")

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        sensitive = frozenset(self.schema.sensitive)
        answers: list[tuple[np.ndarray, np.ndarray | None]] = []
        for query in queries:
            counts = np.asarray(count_histogram(self._cube, query.predicate, query.group_by),
                                dtype=float)
            # Only the sensitive values are redrawn: a count on the others is exact.
            exact = not query.columns & sensitive
            answers.append((counts, np.zeros(counts.shape) if exact else None))
        return answers
