"""Laplace counts: epsilon-differential privacy by noise on each answer (SPLU-Gen Section 6.2.3).

This is an evaluation comparator, not a data release: the data stay with the custodian, each
count query is answered with its true count plus discrete Laplace noise of scale
``sensitivity / epsilon``, and every answer spends ``epsilon`` of the privacy budget (answers
compose: k answers cost k·epsilon; the cells of one GROUP BY are disjoint and cost epsilon
together). ``LaplaceSession`` therefore cannot be saved.

Noise is integer-valued (discrete Laplace, Canonne, Kamath and Steinke 2020), which avoids the
floating-point attacks on the continuous Laplace sampler (Mironov 2012). Without a seed it is
drawn by OpenDP's vetted sampler from OS entropy. With a seed it is drawn, reproducibly, as
the difference of two geometric variables from keyed draws (`ppdp.keyed`): that is for
experiments only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.errors import ReleaseError
from ppdp.guarantees import laplace_guarantee
from ppdp.keyed import KeyedStream, make_key
from ppdp.mechanisms.base import Mechanism, Parameter, require_positive
from ppdp.query import BoundQuery, Cube, count_histogram
from ppdp.randomness import RandomState
from ppdp.release import Estimate, Release
from ppdp.table import Schema, Table

MAX_SCALE = 1e12
"""The largest noise scale sensitivity/epsilon: the noise stays below 2^53 (exact in the float64
answers) except with probability about e^-9000."""


class LaplaceCounts(Mechanism):
    """Answer count queries with discrete Laplace noise of scale sensitivity/epsilon."""

    name = "laplace"
    summary = ("Laplace counts: true count + discrete Laplace noise per query (an evaluation "
               "comparator; the budget composes over queries; no release is written)")
    parameters = (
        Parameter("epsilon", float, "privacy budget epsilon spent by each answered query (> 0)"),
        Parameter("sensitivity", float, "sensitivity Delta f of a count query", default=1.0),
    )

    def __init__(self, *, epsilon: float, sensitivity: float = 1.0) -> None:
        self.epsilon = require_positive("epsilon", epsilon)
        self.sensitivity = require_positive("sensitivity", sensitivity)
        if not self.sensitivity / self.epsilon <= MAX_SCALE:
            raise ValueError(f"the noise scale sensitivity/epsilon must be at most {MAX_SCALE:g} "
                             f"for noisy counts to stay exact integers; epsilon must be at least "
                             f"{self.sensitivity / MAX_SCALE:.3g} for sensitivity "
                             f"{self.sensitivity:g}, got {epsilon!r}")

    def publish(self, table: Table, *, random_state: RandomState = None) -> LaplaceSession:
        """A query session over the table (kept private); nothing is written anywhere."""
        names = [c.name for c in table.schema.columns if c.role != "ignored"]
        key = None if random_state is None else make_key(random_state)
        return LaplaceSession(table.schema.select(names), self.parameter_values, table.n_rows,
                              {n: table.codes[n] for n in names}, key=key)

    def guarantee(self) -> Any:
        return laplace_guarantee(epsilon=self.epsilon, sensitivity=self.sensitivity)


class LaplaceSession(Release):
    """Noisy answers to count queries over private data; ``spent_epsilon`` tracks the budget."""

    mechanism = "laplace"
    # A key whose noisy answer is 0 is still an answer; hiding it would leak.
    answers_every_key = True

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray], *, key: int | None) -> None:
        super().__init__(schema, parameters, n_rows)
        self._cube = Cube(codes, schema.sizes(), n_rows)
        # Seeded sessions draw the i-th noise value from a keyed stream at position i, so the
        # same key gives the same answers however the counts were computed.
        self._noise = None if key is None else KeyedStream(key, "noise")
        self._drawn = 0
        self.scale = float(parameters["sensitivity"]) / float(parameters["epsilon"])
        self.spent_epsilon = 0.0
        alpha = math.exp(-1.0 / self.scale)
        # 1 - alpha by expm1: for a large scale, 1 - alpha would keep few correct digits.
        self._stderr = math.sqrt(2 * alpha) / -math.expm1(-1.0 / self.scale)
        # Smallest k with P(|noise| > k) = 2 alpha^(k+1) / (1 + alpha) <= 0.05; alpha = 0 (a
        # scale below 1/745, epsilon above 745) is noise that is 0 in every float64 draw.
        self._half_width = 0 if alpha == 0 else max(
            0, math.ceil(math.log(0.025 * (1 + alpha)) / -(1.0 / self.scale)) - 1)

    def noise(self, size: int) -> np.ndarray:
        """Discrete Laplace noise of scale ``sensitivity / epsilon``."""
        if self._noise is not None:
            uniforms = self._noise.uniform(self._drawn, size, 2)
            self._drawn += size
            # Inverse CDF of the geometric law on {0, 1, ...} with P(G = k) = (1 - a) a^k,
            # a = exp(-1/scale); 1 - u lies in (0, 1], so its log is finite.
            geometric = np.floor(np.log1p(-uniforms) * -self.scale)
            return (geometric[:, 0] - geometric[:, 1]).astype(np.int64)
        import opendp.prelude as dp

        dp.enable_features("contrib")
        # 64-bit integers: OpenDP's default (T=int) is 32-bit and saturates at 2^31, which a
        # scale above about 10^7 reaches.
        sampler = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")),
                                    dp.l1_distance(T="i64"), scale=self.scale)
        return np.asarray(sampler([0] * size), dtype=np.int64)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        truths = [np.asarray(count_histogram(self._cube, q.predicate, q.group_by))
                  for q in queries]
        sizes = [t.size for t in truths]
        noise = self.noise(sum(sizes))
        self.spent_epsilon += self.parameters["epsilon"] * len(queries)
        results, start = [], 0
        for truth, size in zip(truths, sizes, strict=True):
            noisy = truth + noise[start:start + size].reshape(truth.shape)
            start += size
            results.append((noisy.astype(np.float64), np.full(truth.shape, self._stderr)))
        return results

    def _interval(self, value: float, stderr: float | None) -> Estimate:
        # The discrete Laplace's own 95 % interval, not a normal approximation.
        return Estimate(value, stderr, (value - self._half_width, value + self._half_width))

    def _tables(self) -> dict[str, pa.Table]:
        raise ReleaseError("laplace answers queries over the private data; there is no data "
                           "release to write (use count on the session, or ppdp count SOURCE "
                           "QUERY --mechanism laplace -p epsilon=...)")

    def save(self, directory: Any, *, overwrite: bool = False) -> Any:
        self._tables()

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        raise ReleaseError("laplace has no release format")
