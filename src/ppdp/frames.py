"""Tables handed to the user as the data frame they ask for: pandas, polars or Arrow.

Releases (``release.to_pandas()``), grouped answers (``GroupedEstimate.to_frame()``) and
batches of answers (``release.count_all(queries, frame=...)``) build an Arrow table and give it
in the library named here, so that each reads the same columns in the same types whichever
library the user works in. pandas is the ``dataframes`` extra; polars and pyarrow are always
installed."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ppdp.errors import MissingDependencyError

LIBRARIES = ("pandas", "polars", "arrow")
"""The libraries a table can be given in."""


def check_library(library: str) -> str:
    """``library`` if it is one of `LIBRARIES`; a ValueError naming them otherwise."""
    if library not in LIBRARIES:
        raise ValueError(f"library must be one of {', '.join(map(repr, LIBRARIES))}, not "
                         f"{library!r}")
    return library


def as_frame(table: pa.Table, library: str) -> Any:
    """``table`` as a pandas DataFrame, a polars DataFrame, or itself (``"arrow"``).

    Dictionary-encoded columns (a release's values) become pandas categoricals and polars
    categoricals (strings) or plain columns (numbers)."""
    check_library(library)
    if library == "arrow":
        return table
    if library == "pandas":
        try:
            return table.to_pandas()
        except ImportError as missing:
            # pandas absent (its name), or one too old for pyarrow (no name).
            if missing.name not in (None, "pandas"):
                raise
            raise MissingDependencyError(f"a pandas DataFrame needs pandas ({missing}): pip "
                                         f"install 'ppdp[dataframes]', or ask for 'polars' or "
                                         f"'arrow'") from None
    # Imported here, not at the top: polars takes longer to import than all of ppdp, and only
    # a frame asked for in polars needs it (as in ppdp.plan.order).
    import polars as pl

    return pl.from_arrow(table)
