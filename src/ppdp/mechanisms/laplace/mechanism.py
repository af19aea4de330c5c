"""Laplace counts: epsilon-differential privacy by noise on each answer (SPLU-Gen Section
6.2.3).

This is an evaluation comparator, not a data release: the data stay with the custodian, each
count query is answered with its true count plus discrete Laplace noise of scale
``sensitivity / epsilon``, and every answer spends ``epsilon`` of the privacy budget (answers
compose: k answers cost k·epsilon; the cells of one GROUP BY are disjoint and cost epsilon
together). Its plan is a query session over the data (``plan_shape = "session"``): on any
engine, the counts come from the engine's source."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ppdp.errors import ReleaseError
from ppdp.mechanisms.base import Mechanism, Progress
from ppdp.mechanisms.laplace.guarantee import laplace_guarantee
from ppdp.mechanisms.laplace.session import (
    NO_RELEASE,
    LaplaceSession,
    SourceCube,
    check_laplace,
)
from ppdp.mechanisms.parameters import Parameter
from ppdp.plan.keyed import make_key
from ppdp.query.cube import Cube
from ppdp.randomness import RandomState
from ppdp.table.source import DEFAULT_BATCH_ROWS, Source
from ppdp.table.table import Table


class LaplaceCounts(Mechanism):
    """Answer count queries with discrete Laplace noise of scale sensitivity/epsilon."""

    name = "laplace"
    summary = ("Laplace counts: true count + discrete Laplace noise per query (an evaluation "
               "comparator; the budget composes over queries; no release is written)")
    parameters = (
        Parameter("epsilon", float, "privacy budget epsilon spent by each answered query (> 0)"),
        Parameter("sensitivity", float, "sensitivity Delta f of a count query", default=1.0),
    )

    plan_shape = "session"

    def __init__(self, *, epsilon: float, sensitivity: float = 1.0) -> None:
        self.epsilon, self.sensitivity = check_laplace(epsilon, sensitivity)

    def session(self, table: Table | Source, *, random_state: RandomState = None,
                batch_rows: int | None = None) -> LaplaceSession:
        """A query session over a table or a source (kept private); nothing is written
        (``publish`` gives it, on the engine that takes the data).

        A Source is never loaded: each contingency table a query needs is counted in a pass
        over its batches (of ``batch_rows`` rows where the session reads them itself). The
        same ``random_state`` gives the same answers over a table and over any source of it.
        """
        names = [c.name for c in table.schema.columns if c.role != "ignored"]
        schema = table.schema.select(names)
        key = None if random_state is None else make_key(random_state)
        cube = Cube({n: table.codes[n] for n in names}, schema.sizes(), table.n_rows) \
            if isinstance(table, Table) \
            else SourceCube(table, schema.sizes(), batch_rows or DEFAULT_BATCH_ROWS)
        return LaplaceSession(schema, self.parameter_values, table.n_rows, cube, key=key)

    def publish_source(self, source: Source, directory: str | os.PathLike[str], *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       overwrite: bool = False, progress: Progress | None = None) -> Path:
        """Refused: laplace writes no release (``publish`` gives a query session)."""
        raise ReleaseError(NO_RELEASE)

    def guarantee(self) -> Any:
        return laplace_guarantee(epsilon=self.epsilon, sensitivity=self.sensitivity)


