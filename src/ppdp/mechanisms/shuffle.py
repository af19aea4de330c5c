"""Rows published in memory in a random order (the group mechanisms' publish of one block)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ppdp.data.schema import Role, Schema
from ppdp.table.table import Table


def publish_rows(table: Table, rng: np.random.Generator,
                 redraw: Callable[[str, np.ndarray], np.ndarray]
                 ) -> tuple[Schema, dict[str, np.ndarray]]:
    """The published columns (all but ignored ones), each sensitive column replaced by
    ``redraw(name, codes)``, rows shuffled."""
    names = [c.name for c in table.schema.columns if c.role != Role.IGNORED]
    sensitive = table.schema.sensitive
    codes = {name: redraw(name, table.codes[name]) if name in sensitive else table.codes[name]
             for name in names}
    # Positions as intp once: numpy converts int32 indices on every gather (twice the time).
    shuffle = shuffled_positions(table.n_rows, rng).astype(np.intp)
    return table.schema.select(names), {name: np.take(values, shuffle)
                                        for name, values in codes.items()}


def shuffled_positions(n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """A random permutation of the row positions (int32 where it fits, to save memory)."""
    positions = np.arange(n_rows, dtype=np.int32 if n_rows < 2**31 else np.int64)
    rng.shuffle(positions)
    return positions
