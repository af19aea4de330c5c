"""An alpha-beta view and its estimator: ``(n_V - beta n_D)/alpha`` (Algorithm 3), and
after the first view the tuples seen in V' and the others estimated apart (Algorithm 4's
rates differ between them), with the Bernoulli variance of the view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.mechanisms.alphabeta.domain import TupleDomain, _contains
from ppdp.mechanisms.alphabeta.draws import published_rates, source_scale
from ppdp.mechanisms.alphabeta.parameters import (
    check_alphabeta,
    check_marginals,
    check_published_columns,
    check_view,
)
from ppdp.plan.order import part_count, split_parts
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.domain_count import count_domain
from ppdp.release.arrow import rows_from_arrow, rows_to_arrow
from ppdp.release.base import Release


class AlphaBetaRelease(Release):
    """An alpha-beta view: its tuples, alpha, beta and the domains (Algorithm 1, step 4); for
    a view after the first, also V', the union of the earlier views (public already)."""

    mechanism = "alphabeta"
    # The view; a later view's earlier rows are the table 'earlier'.
    main_table = "view"

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray],
                 earlier: Mapping[str, np.ndarray] | None = None,
                 part_rows: Sequence[int] | None = None) -> None:
        super().__init__(schema, parameters, n_rows)
        self.codes = dict(codes)
        # The view's parts are cut by rank when it is published (`release_order`).
        self.part_rows = None if part_rows is None else tuple(part_rows)
        self.domain = TupleDomain.of(schema)
        self.earlier = {c: np.asarray(earlier[c]) if earlier else
                        np.empty(0, dtype=schema[c].dtype) for c in schema.names}
        n_earlier = len(self.earlier[schema.names[0]])
        self.rates = published_rates(parameters)
        earlier_keys = np.sort(self.domain.keys(self.earlier)) if n_earlier else np.empty(
            0, dtype=np.int64)
        seen = _contains(earlier_keys, self.domain.keys(self.codes)).astype(np.uint8)
        self._cube = Cube({**self.codes, SEEN_COLUMN: seen}, {**schema.sizes(), SEEN_COLUMN: 2},
                          n_rows)
        self._earlier_cube = Cube(self.earlier, schema.sizes(), n_earlier)

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """k, gamma, alpha, beta, v, the kind of noise and the adversary as `AlphaBeta` takes
        them, a view number within v, every column in the tuple domain, and Algorithm 5's
        marginals when listed."""
        marginal = "source" in parameters
        check_alphabeta(k=parameters["k"], gamma=parameters["gamma"], alpha=parameters["alpha"],
                        beta=parameters["beta"], v=parameters["v"],
                        noise="marginal" if marginal else "uniform",
                        adversary=parameters.get("adversary", "independent"))
        check_view(parameters["view"], parameters["v"])
        check_published_columns(schema, "alphabeta")
        domain = TupleDomain.of(schema)
        if marginal:
            check_marginals(parameters["source"], {c: schema[c].size for c in domain.columns})

    def _tables(self) -> dict[str, pa.Table]:
        tables = {"view": split_parts(rows_to_arrow(self.schema, self.codes), self.part_rows)}
        if int(self.parameters.get("view", 1)) > 1:
            n_earlier = len(self.earlier[self.schema.names[0]])
            tables["earlier"] = split_parts(rows_to_arrow(self.schema, self.earlier),
                                            even_parts(n_earlier))
        return tables

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> AlphaBetaRelease:
        codes = rows_from_arrow(schema, tables["view"], n_rows)
        earlier = None
        if "earlier" in tables:
            earlier = rows_from_arrow(schema, tables["earlier"], tables["earlier"].num_rows)
        require_probabilities(parameters)
        return cls(schema, parameters, n_rows, codes, earlier)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return [self._estimate_one(q) for q in queries]

    def _estimate_one(self, query: BoundQuery) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 3 for one view; after the first, the tuples seen in V' and the others are
        estimated apart (Algorithm 4's rates differ between them) and added."""
        rates = self.rates
        dims = tuple(query.group_by)
        in_view = count_histogram(self._cube, query.predicate, (*dims, SEEN_COLUMN))
        seen, unseen = in_view[..., 1].astype(float), in_view[..., 0].astype(float)
        n_domain = count_domain(query.predicate, self.schema.sizes(), dims)
        n_earlier = np.asarray(count_histogram(self._earlier_cube, query.predicate, dims),
                               dtype=float)
        # Tuples outside V': kept at A' + C (rows of I), inserted at C (the rest of D - V').
        outside = n_domain - n_earlier
        other = rates.other
        if "source" in self.parameters:
            # Algorithm 5: beta n_D becomes the sum of beta(t) = scale source(t) over Q(D),
            # which is scale times the source probability of the condition.
            source = {c: np.asarray(p) for c, p in self.parameters["source"].items()}
            inserted = source_scale(self.rates.other, list(source.values())) * count_domain(
                query.predicate, self.schema.sizes(), dims, weights=source)
            other = np.divide(inserted, outside, out=np.zeros_like(inserted),
                              where=outside > 0)
        estimate = (unseen - other * outside) / rates.unseen
        variance = bernoulli_variance(estimate, outside, rates.unseen + other,
                                      other) / rates.unseen ** 2
        if self.parameters.get("view", 1) > 1:
            # Tuples of V': kept at A + B (rows of I), repeated at B (the rest of V').
            part = (seen - rates.earlier * n_earlier) / rates.seen
            estimate = estimate + part
            variance = variance + bernoulli_variance(
                part, n_earlier, rates.seen + rates.earlier, rates.earlier) / rates.seen ** 2
        return estimate, np.sqrt(variance)


SEEN_COLUMN = "\0seen"


def require_probabilities(parameters: Mapping[str, Any]) -> None:
    """Refuse a loaded view whose alpha or beta is not a probability."""
    for name in ("alpha", "beta"):
        value = float(parameters[name])
        if not 0 < value < 1:
            raise ValueError(f"{name} = {value} is not a probability")


def even_parts(n_rows: int) -> list[int]:
    """Row counts of `ppdp.plans.part_count` parts of nearly equal size, for rows without
    ranks (V', in key order)."""
    parts = part_count(n_rows)
    return [(i + 1) * n_rows // parts - i * n_rows // parts for i in range(parts)]


def bernoulli_variance(estimate: np.ndarray, total: np.ndarray, inside: Any,
                       outside: Any) -> np.ndarray:
    """Variance of a count over ``total`` candidate tuples when ``estimate`` rows of the table
    are each present with probability ``inside`` and the other candidates with ``outside``.

    ``estimate`` counts rows and ``total`` distinct tuples, so the first is not capped by the
    second: the c rows of one tuple contribute c Bernoulli variances."""
    present = np.maximum(estimate, 0)
    others = np.maximum(total - present, 0)
    return present * inside * (1 - inside) + others * outside * (1 - outside)
