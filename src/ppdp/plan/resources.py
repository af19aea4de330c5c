"""Memory a publish needs against what the machine has: a warning before a publish that is not
expected to fit, and readable counts and sizes for the messages that refuse one.

The needs are estimates from measured footprints: the peak memory a mechanism's ``publish``
allocates beyond the table itself, per row of the table, is close to constant (it grows with the
number of columns, not with the values), so ``need = n_rows (per_row + per_column c)`` for c
published columns. The constants below were measured on the bundled Adult table resampled to
10^5, 10^6 and 2 10^6 rows (one-byte codes; 4 and 9 columns) with ``tracemalloc``'s peak over
``publish`` and checked against the growth of the process's peak RSS (VmHWM after resetting it
through ``/proc/self/clear_refs``), e.g.::

    table = ppdp.datasets.adult(sensitive="occupation").resample(10**6, random_state=1)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    ppdp.SPLUGen(gamma=5).publish(table, random_state=2)
    per_row = (tracemalloc.get_traced_memory()[1] - base) / table.n_rows

The two measures agreed within 6 %. Each constant is rounded up so that the estimate errs high,
by less than 60 % on these tables (most for dbr on 9 columns, whose peak comes before its
per-column copies). Each mechanism's ``footprint`` holds its constants, and what was measured.
Alpha-beta's footprint also grows with its view: ``ALPHABETA_ROW`` per row of
the table plus ``ALPHABETA_TUPLE`` per tuple of the view, measured the same way on tables of
integer columns with explicit alpha = 0.4 and beta set for views of 4 10^5 to 5 10^6 tuples.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ppdp.data.schema import Role

if TYPE_CHECKING:
    from ppdp.table.table import Table

MEMINFO = Path("/proc/meminfo")


class MemoryNeedWarning(UserWarning):
    """A publish is expected to need more memory than the machine has available."""


@dataclass(frozen=True)
class Footprint:
    """Peak bytes a publish allocates per row: ``max(minimum, per_row + per_column c)`` for c
    published columns."""

    per_row: float
    per_column: float
    minimum: float = 0.0

    def bytes_per_row(self, columns: int) -> float:
        return max(self.minimum, self.per_row + self.per_column * columns)

    def need(self, rows: float, columns: int) -> int:
        """The estimated peak, in bytes, for ``rows`` rows of ``columns`` columns."""
        return math.ceil(rows * self.bytes_per_row(columns))


def available_memory() -> int | None:
    """Bytes the kernel reports available for new allocations (MemAvailable in /proc/meminfo),
    or None where that is not known (not Linux, or a kernel before 3.14)."""
    try:
        with MEMINFO.open() as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    value, unit = line.split()[1:3]
                    return int(value) * (1024 if unit.lower() == "kb" else 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def published_columns(table: Table) -> int:
    """The columns a mechanism publishes: all but the ignored ones."""
    return sum(1 for c in table.schema.columns if c.role != Role.IGNORED)


def memory_need(table: Table, footprint: Footprint | None) -> int:
    """The estimated peak memory, in bytes, of publishing ``table`` with a mechanism of this
    footprint (beyond the table itself); 0 for a mechanism without a measured footprint."""
    if footprint is None:
        return 0
    return footprint.need(table.n_rows, published_columns(table))


def check_memory(table: Table, mechanism: str, *, need: int,
                 available: int | None = None, stacklevel: int = 3) -> int:
    """Warn (MemoryNeedWarning) when publishing ``table`` with ``mechanism`` is expected to need
    more memory than is available; return the estimated need in bytes.

    ``need``: the estimate (`memory_need`, or the mechanism's own where its output size is not
    the table's); ``available`` replaces ``available_memory()``; ``stacklevel`` is passed to
    ``warnings.warn`` (3: the line that called the ``publish`` calling this). Never refuses,
    and costs nothing proportional to the table."""
    if available is None:
        available = available_memory()
    if available is not None and need > available:
        warnings.warn(
            f"{mechanism} on {table.n_rows:,} rows is expected to need about "
            f"{format_bytes(need)} of memory and {format_bytes(available)} is available; it "
            f"may be slow or be stopped: free memory, or publish a sample or fewer columns",
            MemoryNeedWarning, stacklevel=stacklevel)
    return need


def format_count(value: float) -> str:
    """A count for messages: exact up to 10^15, then 3 significant digits, and ``10^k`` for
    integers too large for a float (a domain of 1,000 columns)."""
    if value < 1e15:
        return f"{round(value):,}"
    if value < 1e300:
        return f"{float(value):.3g}"
    return f"10^{math.floor(math.log10(value))}"


def format_value(value: object) -> str:
    """A parameter value for messages: its repr, with integers beyond 10^15 shortened."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1e15:
        return format_count(value)
    return repr(value)


def format_bytes(value: float) -> str:
    """Bytes for messages, in decimal units with 3 significant digits (``2.4 GB``)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{round(value)} bytes"
