"""The rows a mechanism publishes: a dictionary-encoded `Table` held in memory (which answers
count queries exactly), or a `Source` handing out its rows in batches.

Modules: `table` (the Table), `source` (the Source protocol, the SummarySource protocol of a
source whose rows stay where they are, a Table as a source).
"""

from __future__ import annotations

import warnings
from typing import Any

from ppdp.data import schema
from ppdp.table.source import (
    DEFAULT_BATCH_ROWS,
    Batch,
    MarginalSource,
    Source,
    SummarySource,
    TableSource,
)
from ppdp.table.table import Table, exact_count, exact_counts, table_from_arrow

__all__ = ["DEFAULT_BATCH_ROWS", "Batch", "MarginalSource", "Source", "SummarySource", "Table",
           "TableSource", "exact_count", "exact_counts", "table_from_arrow"]

_MOVED = frozenset({"KIND_NAMES", "Column", "Ordered", "Role", "Schema", "arrange_domain",
                    "code_dtype", "dictionary_order", "encode_column",
                    "unknown_column_message"})
"""Names of ppdp 0.1's ``ppdp.table`` that moved to `ppdp.data.schema`."""


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(f"ppdp.table.{name} is deprecated and will be removed in ppdp 0.3: use "
                      f"ppdp.data.schema.{name}", DeprecationWarning, stacklevel=2)
        return getattr(schema, name)
    raise AttributeError(f"module 'ppdp.table' has no attribute {name!r}")
