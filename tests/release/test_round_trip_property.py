"""Publish, save, load keeps every published row, for every mechanism, on random tables."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ppdp
from ppdp.data.schema import Role
from ppdp.mechanisms.ambiguity.release import FREQUENCY_COLUMN
from ppdp.table.table import table_from_arrow

MECHANISMS: dict[str, Any] = {
    "splu": lambda: ppdp.SPLUGen(gamma=2),
    "anatomy": lambda: ppdp.Anatomy(l=2),
    "dbr": lambda: ppdp.DBR(),
    "uniform": lambda: ppdp.UniformPerturbation(rho1=0.3, rho2=0.7),
    "sdr": lambda: ppdp.PerturbationPartitioning(rho1=0.3, rho2=0.7, delta=0.5),
    "alphabeta": lambda: ppdp.AlphaBeta(alpha=0.3, beta=0.1),
    "frapp": lambda: ppdp.FRAPP(k=1, gamma=0.5),
    "ambiguity": lambda: ppdp.Ambiguity(alpha=1.0, beta=0.5),
    "mondrian": lambda: ppdp.Mondrian(k=2),
}
# Mechanisms whose release holds one row per input row, with the quasi-identifiers unchanged.
ROW_PRESERVING = {"splu": "rows", "dbr": "rows", "uniform": "rows", "sdr": "rows",
                  "anatomy": "qit"}


@st.composite
def tables(draw: st.DrawFn) -> ppdp.Table:
    n_rows = draw(st.integers(20, 120))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sensitive = np.arange(n_rows) % 4  # four values, none dominant: every mechanism feasible
    rng.shuffle(sensitive)
    data = pa.table({
        "age": rng.integers(20, 20 + draw(st.integers(1, 8)), size=n_rows),
        "zip": rng.choice(["a", "b", "c"][:draw(st.integers(1, 3))], size=n_rows),
        "disease": np.asarray(["flu", "cold", "hiv", "ulcer"])[sensitive],
    })
    return table_from_arrow(data, roles={"disease": Role.SENSITIVE}, domains={
        "age": range(15, 35), "zip": ["a", "b", "c", "d"],
        "disease": ["asthma", "cold", "flu", "hiv", "ulcer"]})


def row_multiset(table: pa.Table) -> Counter:
    columns = [c.to_pylist() if not pa.types.is_dictionary(c.type)
               else c.combine_chunks().dictionary_decode().to_pylist() for c in table.columns]
    return Counter(zip(*columns, strict=True))


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(table=tables())
def test_publish_save_load_keeps_every_row(name: str, table: ppdp.Table) -> None:
    release = MECHANISMS[name]().publish(table, random_state=1)
    with tempfile.TemporaryDirectory() as folder:
        loaded = ppdp.load_release(release.save(Path(folder) / "release"))
        # A loaded release may read its rows from its files when asked for them.
        published, reloaded = release._tables(), loaded._tables()
    assert set(published) == set(reloaded)
    for stem, data in published.items():
        assert reloaded[stem].num_rows == data.num_rows, stem
        assert row_multiset(reloaded[stem]) == row_multiset(data), stem
    assert loaded.n_rows == release.n_rows
    if name in ROW_PRESERVING:
        rows = published[ROW_PRESERVING[name]]
        assert rows.num_rows == table.n_rows
        quasi = rows.select(["age", "zip"])
        assert row_multiset(quasi) == row_multiset(table.to_arrow().select(["age", "zip"]))
    if name == "ambiguity":
        frequencies = published["st"].column(FREQUENCY_COLUMN).to_numpy()
        assert frequencies.sum() == table.n_rows
    if name in ("mondrian", "frapp"):
        assert published["rows"].num_rows == table.n_rows
