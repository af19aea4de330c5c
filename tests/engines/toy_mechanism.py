"""A toy row-local mechanism, the worked example of docs/architecture.md: each row's sensitive
value is kept with probability 1/2, else replaced by a value drawn uniformly from its domain
(randomized response); a count is estimated by inverting that channel.

This module and one registry entry, ``register_mechanism("coin", __name__)``
(`ppdp.plan.registry`), make it a mechanism of every engine, of `ppdp.load_release` and of
``ppdp publish -m coin``: nothing else in ppdp changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ppdp.data.schema import Role
from ppdp.errors import QueryError
from ppdp.mechanisms.base import RowMechanism, require_sensitive
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import count_histogram
from ppdp.query.splitting import split
from ppdp.release.base import RowsRelease
from ppdp.table.source import Source

KEEP = 0.5
"""The probability that a row keeps its own sensitive value."""


@dataclass(frozen=True)
class CoinGuarantee:
    """The channel: any published value has probability at least (1 - KEEP)/m for every true
    value, so the posterior odds of two values change by at most ``ratio``."""

    keep: float
    ratio: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class CoinFlip(RowMechanism):
    """Keep each sensitive value with probability 1/2, else draw one uniformly."""

    name = "coin"
    summary = "toy randomized response: each sensitive value kept with probability 1/2"
    parameters = ()

    def row_plan(self, source: Source, key: int) -> RowPlan:
        """No summary pass; the kernel draws two keyed uniforms per row."""
        (sensitive,) = require_sensitive(source, "coin", exactly_one=True)
        size = source.schema[sensitive].size
        names = [c.name for c in source.schema.columns if c.role != Role.IGNORED]
        keep, draw = KeyedStream(key, "coin/keep"), KeyedStream(key, "coin/draw")

        def kernel(codes: Mapping[str, np.ndarray], start: int) -> dict[str, np.ndarray]:
            values = codes[sensitive]
            kept = keep.uniform(start, len(values)) < KEEP
            drawn = (draw.uniform(start, len(values)) * size).astype(values.dtype)
            return {**{name: codes[name] for name in names},
                    sensitive: np.where(kept, values, drawn)}

        return RowPlan(self.name, source.schema.select(names), kernel, {"keep": KEEP})

    def release_of(self, plan: RowPlan, rows: PublishedRows) -> CoinRelease:
        release = CoinRelease(plan.schema, plan.parameters, rows.n_rows, rows.codes)
        release.part_rows = rows.part_rows
        return release

    def guarantee(self) -> CoinGuarantee:
        return CoinGuarantee(keep=KEEP, ratio=float("inf"))


class CoinRelease(RowsRelease):
    """Published rows; a count of sensitive values S among the rows Res meeting the rest of the
    condition is ``(o_S - (1 - keep) |Res| |S|/m) / keep``, its variance binomial."""

    mechanism = "coin"

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        (sensitive,) = self.schema.sensitive
        sizes = self.schema.sizes()
        keep = float(self.parameters["keep"])
        results: list[tuple[np.ndarray, np.ndarray | None]] = []
        for query in queries:
            if sensitive in query.group_by:
                raise QueryError("the coin release does not group by its sensitive column")
            if sensitive not in query.columns:
                counts = np.asarray(count_histogram(self._cube, query.predicate,
                                                    query.group_by), dtype=float)
                results.append((counts, np.zeros(counts.shape)))
                continue
            value = variance = np.zeros(tuple(sizes[c] for c in query.group_by))
            for rest, values in split(query.predicate, [sensitive], sizes):
                observed = count_histogram(self._cube, rest, [*query.group_by, sensitive])
                res = observed.sum(axis=-1).astype(float)
                asked = (observed * values).sum(axis=-1).astype(float)
                noise = (1 - keep) * values.sum() / sizes[sensitive]
                value = value + (asked - noise * res) / keep
                with np.errstate(invalid="ignore", divide="ignore"):
                    share = np.where(res > 0, asked / res, 0.0)
                variance = variance + res * share * (1 - share) / keep ** 2
            results.append((value, np.sqrt(variance)))
        return results
