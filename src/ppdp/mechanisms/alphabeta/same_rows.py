"""The rows of a table recognised whatever the columns and domains its alpha-beta views were
published with, so that changing them cannot start a fresh count of views.

Algorithm 4 (Section 4.4.1) bounds by v the views of one instance I; views of the same rows
published as separate sequences are the "severe privacy breach" the paper opens that section
with (a tuple in every view was almost surely in I). The views' state is kept by the table's
`fingerprint`, which covers the published columns and their domains, so the same rows with a
wider declared domain, or a column added or dropped, would get a state of their own. The state
therefore also records the rows apart from columns and domains (`rows_record`): their number and,
for each published column, a digest of the values present with their row counts; a view is
refused while another state of the same folder holds the same number of rows and a column of
the same name whose digests agree on every column of that name (`require_no_other_views`). The
record is as private as the fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.data.schema import Schema
from ppdp.errors import InfeasibleError
from ppdp.mechanisms.alphabeta.domain import TupleDomain


def tuple_histograms(domain: TupleDomain, tuples: np.ndarray, counts: np.ndarray
                     ) -> dict[str, np.ndarray]:
    """The rows of each code of each column, from the distinct tuples (keys) and their
    counts (`ppdp.mechanisms.alphabeta.draws.distinct_tuples`)."""
    histograms: dict[str, np.ndarray] = {}
    rest = np.asarray(tuples, dtype=np.int64)
    weights = np.asarray(counts, dtype=np.int64)
    for column, size in zip(domain.columns[::-1], domain.shape[::-1], strict=True):
        rest, codes = np.divmod(rest, size)
        histograms[column] = np.bincount(codes, weights=weights, minlength=size).astype(np.int64)
    return {column: histograms[column] for column in domain.columns}


def rows_record(schema: Schema, n_rows: int, histograms: Mapping[str, np.ndarray]
                ) -> dict[str, Any]:
    """The rows apart from the columns chosen and their declared domains: their number and, by
    column name, a digest of the values present (as text) with their row counts, sorted."""
    digests = {}
    for column, histogram in histograms.items():
        values = schema[column].domain
        present = sorted((str(values[code]), int(histogram[code]))
                         for code in np.flatnonzero(histogram))
        digests[column] = hashlib.sha256(json.dumps(present).encode()).hexdigest()
    return {"n_rows": int(n_rows), "columns": digests}


def same_rows(record: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether two `rows_record` are of the same rows: as many rows, a column in common, and
    the same values and counts in every column they have in common (what a change of declared
    domains, or a column added or dropped, leaves as it was)."""
    common = set(record["columns"]) & set(other["columns"])
    return record["n_rows"] == other["n_rows"] and bool(common) and all(
        record["columns"][name] == other["columns"][name] for name in common)


def require_no_other_views(root: Path, state: Path, record: Mapping[str, Any]) -> None:
    """Refuse a view when a state under ``root`` other than ``state`` holds views of the same
    rows (`same_rows`) under other columns or domains; states written without the record are
    not compared."""
    for other in sorted(root.glob("alphabeta-*")):
        if other.name == state.name:
            continue
        try:
            held = json.loads((other / "state.json").read_text())
            same = same_rows(record, held["rows"])
            published = int(held["published"])
        except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):
            continue
        if same:
            raise InfeasibleError(
                f"{published} alpha-beta view(s) of these rows were published with other "
                f"columns or domains (private state {other}); views with other columns or "
                f"domains would be counted apart and escape the bound v on the views of the same "
                f"rows (Algorithm 4): publish with the columns and domains of those views")
