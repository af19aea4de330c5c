"""A Laplace query session: true counts plus discrete Laplace noise, never saved.

Noise is integer-valued (discrete Laplace, Canonne, Kamath and Steinke 2020), which avoids the
floating-point attacks on the continuous Laplace sampler (Mironov 2012). Without a seed it is
drawn by OpenDP's vetted sampler from OS entropy (`opendp_noise`; OpenDP is the ``laplace``
extra). With a seed it is drawn, reproducibly, as
the difference of two geometric variables from keyed draws (`ppdp.plan.keyed`): that is for
experiments only.

A session over a source read in batches never holds the rows: its contingency tables come from
passes over the source (`SourceCube`), and the same key gives the same answers as over the
table in memory."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.errors import ReleaseError
from ppdp.estimate import Estimate
from ppdp.mechanisms.laplace.opendp_noise import discrete_laplace
from ppdp.mechanisms.parameters import require_positive
from ppdp.plan.keyed import KeyedStream
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import MAX_CUBE_CELLS, Cube, count_histogram
from ppdp.query.predicates import Predicate
from ppdp.release.base import Release
from ppdp.table.source import Source


class SourceCube(Cube):
    """A Cube over the rows of a Source that never holds them (SPLU-Gen Section 6.2.3's
    comparator at scale).

    A contingency table is the source's ``histogram`` (one pass, cached), or comes from
    `prefetch`, which counts many in one pass. A condition that is not a box is evaluated,
    as an in-memory Cube would evaluate it on rows, on the cells of the table over its columns
    weighted by their counts (rows with equal values satisfy it alike), or, when that table
    would exceed `MAX_CUBE_CELLS`, on the combinations found in the rows if the source counts
    them where the rows are (``cells``, Spark), else on batches of ``batch_rows`` rows.
    Memory: the cached tables and a batch. ``codes`` is empty and row masks are refused: only
    `histogram` and `histogram_where` (all `count_histogram` asks) are answered.
    """

    def __init__(self, source: Source, sizes: Mapping[str, int], batch_rows: int) -> None:
        super().__init__({}, sizes, source.n_rows)
        self.source = source
        self.batch_rows = batch_rows

    def _histogram(self, columns: tuple[str, ...], mask: np.ndarray | None) -> np.ndarray:
        if mask is not None:
            raise TypeError("a SourceCube holds no rows to mask; use histogram_where")
        if not self.fits(columns):
            # Cube's own error for a table too large to count densely (it reads no rows).
            return super()._histogram(columns, None)
        return self.source.histogram(columns)

    def histogram_where(self, predicate: Predicate, dims: Sequence[str]) -> np.ndarray:
        """Counts over ``dims`` of the rows where ``predicate`` holds (see the class)."""
        columns = tuple(sorted(predicate.columns | set(dims)))
        counts = np.zeros([self.sizes[c] for c in dims], dtype=np.int64)
        for part in self._parts(columns):
            # Cell weights add up in float64: exact for counts below 2^53.
            counts += part.histogram_where(predicate, dims).astype(np.int64)
        return counts

    def _parts(self, columns: tuple[str, ...]) -> Iterator[Cube]:
        """The rows as in-memory Cubes over ``columns`` (at least one): the non-empty cells
        of their table weighted by count, else batches of rows."""
        if self.fits(columns):
            table = self.histogram(columns)
            cells = np.nonzero(table)
            yield Cube(dict(zip(columns, cells, strict=True)), self.sizes, len(cells[0]),
                       weights=table[cells])
            return
        if hasattr(self.source, "cells"):
            # A source that counts where its rows are (Spark) gives the found cells instead.
            codes, counts = self.source.cells(columns)
            yield Cube(codes, self.sizes, len(counts), weights=counts)
            return
        for _, codes in self.source.batches(self.batch_rows, columns):
            yield Cube(codes, self.sizes, len(codes[columns[0]]))

    def prefetch(self, column_sets: Iterable[Iterable[str]]) -> None:
        """Count the tables over these sets of columns in as few passes as fit in memory.

        A pass costs about the reading of the columns it touches, whatever it counts, so the
        tables not yet cached are counted together, each batch once for all of them, in
        passes whose tables hold at most `MAX_CUBE_CELLS` cells in all. Sets of one column
        (a source counts them cheaply) or of too many cells to build are left out.
        """
        wanted = sorted({tuple(sorted(c)) for c in column_sets} - set(self._cache))
        passes: list[list[tuple[str, ...]]] = []
        room = 0
        for columns in wanted:
            if len(columns) < 2 or not self.fits(columns):
                continue
            size = math.prod(self.sizes[c] for c in columns)
            if size > room:
                passes.append([])
                room = MAX_CUBE_CELLS
            passes[-1].append(columns)
            room -= size
        for tables in passes:
            if hasattr(self.source, "histograms"):
                # One aggregation where the rows are (Spark) counts the pass's tables.
                self._cache.update(self.source.histograms(tables))
                continue
            read = sorted(set().union(*tables))
            counts = {columns: np.zeros([self.sizes[c] for c in columns], dtype=np.int64)
                      for columns in tables}
            for _, codes in self.source.batches(self.batch_rows, read):
                batch = Cube(codes, self.sizes, len(codes[read[0]]))
                for columns, table in counts.items():
                    table += batch.histogram(columns)
            self._cache.update(counts)


MAX_SCALE = 1e12
"""The largest noise scale sensitivity/epsilon: the noise stays below 2^53 (exact in the float64
answers) except with probability about e^-9000."""


def check_laplace(epsilon: Any, sensitivity: Any) -> tuple[float, float]:
    """epsilon and the sensitivity, positive, with a noise scale of at most `MAX_SCALE`."""
    checked = require_positive("epsilon", epsilon)
    scaled = require_positive("sensitivity", sensitivity)
    if not scaled / checked <= MAX_SCALE:
        raise ValueError(f"the noise scale sensitivity/epsilon must be at most {MAX_SCALE:g} "
                         f"for noisy counts to stay exact integers; epsilon must be at least "
                         f"{scaled / MAX_SCALE:.3g} for sensitivity {scaled:g}, got {epsilon!r}")
    return checked, scaled


class LaplaceSession(Release):
    """Noisy answers to count queries over private data; ``spent_epsilon`` tracks the budget."""

    mechanism = "laplace"
    # A key whose noisy answer is 0 is still an answer; hiding it would leak.
    answers_every_key = True

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """epsilon and the sensitivity as `LaplaceCounts` checks them."""
        check_laplace(parameters["epsilon"], parameters["sensitivity"])

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int, cube: Cube,
                 *, key: int | None) -> None:
        super().__init__(schema, parameters, n_rows)
        self._cube = cube
        # Seeded sessions draw the i-th noise value from a keyed stream at position i, so the
        # same key gives the same answers however the counts were computed.
        self._noise = None if key is None else KeyedStream(key, "noise")
        self._drawn = 0
        self.scale = float(parameters["sensitivity"]) / float(parameters["epsilon"])
        self._opendp: Callable[[int], np.ndarray] | None = None
        if key is None:
            # Without OpenDP (the ``laplace`` extra) this is the one-line error naming the
            # extra, raised before any count is answered.
            self._opendp = discrete_laplace(self.scale)
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
        assert self._opendp is not None
        return self._opendp(size)

    def _prefetch(self, queries: Sequence[BoundQuery]) -> None:
        if isinstance(self._cube, SourceCube):
            self._cube.prefetch(query.columns for query in queries)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        truths = [np.asarray(count_histogram(self._cube, q.predicate, q.group_by))
                  for q in queries]
        if not truths:
            return []
        sizes = [t.size for t in truths]
        noise = self.noise(sum(sizes))
        self.spent_epsilon += self.parameters["epsilon"] * len(queries)
        # All answers noised and converted at once, then cut into each query's shape.
        noisy = (np.concatenate([t.reshape(-1) for t in truths]) + noise).astype(np.float64)
        cuts = np.cumsum(sizes)[:-1]
        stderr = np.split(np.full(len(noisy), self._stderr), cuts)
        return [(piece.reshape(truth.shape), spread.reshape(truth.shape))
                for piece, spread, truth in zip(np.split(noisy, cuts), stderr, truths,
                                                strict=True)]

    def _interval(self, value: float, stderr: float | None) -> Estimate:
        # The discrete Laplace's own 95 % interval, not a normal approximation.
        return Estimate(value, stderr, (value - self._half_width, value + self._half_width))

    def _tables(self) -> NoReturn:
        raise ReleaseError(NO_RELEASE)

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False,
             before_commit: Callable[[], Any] | None = None) -> NoReturn:
        self._tables()

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> Release:
        raise ReleaseError("laplace has no release format")


NO_RELEASE = ("laplace answers queries over the private data; there is no data release to "
              "write (use count on the session from LaplaceCounts.publish(table or source), or "
              "ppdp count SOURCE QUERY --mechanism laplace -p epsilon=...)")
