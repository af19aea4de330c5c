"""Loading checks what each mechanism guarantees: any release ppdp writes loads, and any
parameter out of its mechanism's range (or a role the mechanism never publishes) in
``release.json``, its digests recomputed, is refused with one line."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ppdp
from ppdp.data.schema import Role
from ppdp.errors import ReleaseError
from ppdp.release.format import METADATA_FILE, metadata_digest
from ppdp.table.table import table_from_arrow

NAN = float("nan")

MECHANISMS: dict[str, st.SearchStrategy[ppdp.Mechanism]] = {
    "splu": st.builds(ppdp.SPLUGen, gamma=st.integers(2, 4)),
    "anatomy": st.builds(ppdp.Anatomy, l=st.integers(2, 4)),
    "dbr": st.just(ppdp.DBR()),
    "uniform": st.builds(ppdp.UniformPerturbation, rho1=st.floats(0.26, 0.4),
                         rho2=st.floats(0.5, 0.95)),
    "sdr": st.builds(ppdp.PerturbationPartitioning, rho1=st.floats(0.26, 0.4),
                     rho2=st.floats(0.5, 0.95), delta=st.floats(0.05, 0.9)),
    "alphabeta": st.one_of(
        st.builds(ppdp.AlphaBeta, alpha=st.floats(0.1, 0.5), beta=st.floats(0.01, 0.2),
                  v=st.integers(1, 4)),
        st.builds(ppdp.AlphaBeta, k=st.floats(0.1, 1.0), gamma=st.floats(0.5, 0.9),
                  v=st.integers(1, 4))),
    "frapp": st.builds(ppdp.FRAPP, k=st.floats(0.1, 1.0), gamma=st.floats(0.5, 0.9)),
    "ambiguity": st.builds(ppdp.Ambiguity, alpha=st.just(1.0), beta=st.floats(0.25, 1.0)),
    "mondrian": st.builds(ppdp.Mondrian, k=st.integers(1, 5), l=st.integers(1, 3),
                          diversity=st.sampled_from(["distinct", "frequency"])),
}

Tamper = Callable[[dict[str, Any]], None]


def parameter(name: str, value: Any) -> Tamper:
    def change(metadata: dict[str, Any]) -> None:
        metadata["parameters"][name] = value
    change.__name__ = f"{name}={value!r}"
    return change


def sensitive_role(role: str) -> Tamper:
    def change(metadata: dict[str, Any]) -> None:
        for column in metadata["schema"]:
            if column["role"] == Role.SENSITIVE:
                column["role"] = role
    change.__name__ = f"sensitive role {role}"
    return change


def column_ignored(metadata: dict[str, Any]) -> None:
    metadata["schema"][0]["role"] = Role.IGNORED.value


def uniform_gamma(metadata: dict[str, Any]) -> None:
    # A gamma other than Eq. 6's for the listed rho1 and rho2.
    metadata["parameters"]["gamma"] = [metadata["parameters"]["gamma"][0] * 2]


def view_beyond_v(metadata: dict[str, Any]) -> None:
    metadata["parameters"]["view"] = metadata["parameters"]["v"] + 1


def d_at_gamma(metadata: dict[str, Any]) -> None:
    metadata["parameters"]["d"] = metadata["parameters"]["gamma"]


NOT_A_NUMBER = [NAN, math.inf, -math.inf, "0.5", None, True, [0.5]]
PROBABILITY_OUT = [0, 0.0, -0.5, 1.5, 1e308, *NOT_A_NUMBER]

OUT_OF_RANGE: dict[str, list[Tamper]] = {
    "splu": [*(parameter("gamma", v) for v in (1, 0, -3, 5.5, 1e308, 6, 10**30,
                                                *NOT_A_NUMBER)),
             sensitive_role("quasi-identifier"), sensitive_role("ignored")],
    "anatomy": [*(parameter("l", v) for v in (1, 0, 2.5, 1e308, 6, *NOT_A_NUMBER)),
                *(parameter("n_groups", v) for v in (0, -1, 1.5, NAN, None)),
                sensitive_role("quasi-identifier")],
    "dbr": [sensitive_role("quasi-identifier"), sensitive_role("ignored")],
    "uniform": [*(parameter("rho1", v) for v in (*PROBABILITY_OUT, 0.99)),
                *(parameter("rho2", v) for v in (*PROBABILITY_OUT, 0.01)),
                *(parameter("gamma", v) for v in ([], [0.5], [1.0], [NAN], [math.inf],
                                                   [2.0, 3.0], 2.0, None)),
                uniform_gamma, sensitive_role("quasi-identifier")],
    "sdr": [*(parameter("rho1", v) for v in (*PROBABILITY_OUT, 0.99)),
            *(parameter("rho2", v) for v in PROBABILITY_OUT),
            *(parameter("delta", v) for v in (*PROBABILITY_OUT, 1)),
            *(parameter("gamma", v) for v in ([], [1.0], [NAN], [math.inf], 2.0, None)),
            sensitive_role("quasi-identifier")],
    "alphabeta": [*(parameter("alpha", v) for v in (*PROBABILITY_OUT, 1e-12, 0.99)),
                  *(parameter("beta", v) for v in PROBABILITY_OUT),
                  *(parameter("gamma", v) for v in (5.5, 1e308, 1.5, NAN)),
                  *(parameter("k", v) for v in (-1, 0, NAN, math.inf)),
                  *(parameter("v", v) for v in (0, -1, 2.5, 10**7, NAN, None)),
                  *(parameter("view", v) for v in (0, 1.5, NAN, None)),
                  parameter("source", {"nope": [1.0]}), view_beyond_v, column_ignored],
    "frapp": [*(parameter("retention", v) for v in PROBABILITY_OUT),
              *(parameter("k", v) for v in (0, -1, NAN, math.inf, None)),
              *(parameter("gamma", v) for v in (0, 1, 5.5, 1e308, NAN, None)),
              *(parameter("d", v) for v in (0, -1, NAN, math.inf, None)),
              d_at_gamma, column_ignored],
    "ambiguity": [*(parameter("alpha", v) for v in PROBABILITY_OUT),
                  *(parameter("beta", v) for v in PROBABILITY_OUT),
                  *(parameter("n_groups", v) for v in (0, -1, 1.5, NAN, None)),
                  sensitive_role("quasi-identifier")],
    "mondrian": [*(parameter("k", v) for v in (0, -1, 2.5, 1e308, *NOT_A_NUMBER)),
                 *(parameter("l", v) for v in (0, 1.5, NAN, None)),
                 parameter("diversity", "other"), parameter("hierarchies", ["disease"]),
                 parameter("hierarchies", "age"), sensitive_role("quasi-identifier")],
}


@st.composite
def tables(draw: st.DrawFn) -> ppdp.Table:
    """20 to 80 rows; four sensitive values, each on a quarter of them (every mechanism is
    feasible), all domains declared (m = 20 * 4 * 5 = 400 tuples)."""
    n_rows = 4 * draw(st.integers(5, 20))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sensitive = np.arange(n_rows) % 4
    rng.shuffle(sensitive)
    data = pa.table({
        "age": rng.integers(20, 20 + draw(st.integers(1, 8)), size=n_rows),
        "zip": rng.choice(["a", "b", "c"], size=n_rows),
        "disease": np.asarray(["flu", "cold", "hiv", "ulcer"])[sensitive],
    })
    return table_from_arrow(data, roles={"disease": Role.SENSITIVE}, domains={
        "age": range(15, 35), "zip": ["a", "b", "c", "d"],
        "disease": ["asthma", "cold", "flu", "hiv", "ulcer"]})


def tampered(release: Path, target: Path, change: Tamper) -> Path:
    """A copy of ``release`` with ``release.json`` changed and its digest recomputed (what
    anyone who can write the files can do; forging a consistent release is another matter)."""
    shutil.copytree(release, target)
    path = target / METADATA_FILE
    metadata = json.loads(path.read_text())
    change(metadata)
    metadata["metadata_digest"] = metadata_digest(metadata)
    path.write_text(json.dumps(metadata))
    return target


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_written_releases_load_and_parameters_out_of_range_are_refused(
        name: str, data: st.DataObject) -> None:
    mechanism = data.draw(MECHANISMS[name], label="mechanism")
    table = data.draw(tables(), label="table")
    change = data.draw(st.sampled_from(OUT_OF_RANGE[name]), label="change")
    release = mechanism.publish(table, random_state=1)
    with tempfile.TemporaryDirectory() as folder:
        saved = release.save(Path(folder) / "release")
        assert ppdp.load_release(saved).parameters == release.parameters
        broken = tampered(saved, Path(folder) / "broken", change)
        with pytest.raises(ReleaseError, match="never publishes") as refused:
            ppdp.load_release(broken)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_listed_change_is_refused(name: str, tmp_path: Path) -> None:
    """Each change of ``OUT_OF_RANGE`` once, on one release per mechanism (the property test
    draws some of them on random releases)."""
    table = _fixed_table()
    mechanism = _fixed_mechanism(name)
    saved = mechanism.publish(table, random_state=1).save(tmp_path / "release")
    for index, change in enumerate(OUT_OF_RANGE[name]):
        broken = tampered(saved, tmp_path / f"broken{index}", change)
        with pytest.raises(ReleaseError, match="never publishes"):
            ppdp.load_release(broken)
        shutil.rmtree(broken)


def _fixed_table() -> ppdp.Table:
    rng = np.random.default_rng(7)
    n_rows = 60
    data = pa.table({
        "age": rng.integers(20, 28, size=n_rows),
        "zip": rng.choice(["a", "b", "c"], size=n_rows),
        "disease": np.asarray(["flu", "cold", "hiv", "ulcer"])[np.arange(n_rows) % 4],
    })
    return table_from_arrow(data, roles={"disease": Role.SENSITIVE}, domains={
        "age": range(15, 35), "zip": ["a", "b", "c", "d"],
        "disease": ["asthma", "cold", "flu", "hiv", "ulcer"]})


def _fixed_mechanism(name: str) -> ppdp.Mechanism:
    return {
        "splu": lambda: ppdp.SPLUGen(gamma=3), "anatomy": lambda: ppdp.Anatomy(l=3),
        "dbr": ppdp.DBR,
        "uniform": lambda: ppdp.UniformPerturbation(rho1=0.3, rho2=0.7),
        "sdr": lambda: ppdp.PerturbationPartitioning(rho1=0.3, rho2=0.7, delta=0.5),
        "alphabeta": lambda: ppdp.AlphaBeta(k=0.5, gamma=0.6, v=3),
        "frapp": lambda: ppdp.FRAPP(k=0.5, gamma=0.6),
        "ambiguity": lambda: ppdp.Ambiguity(alpha=1.0, beta=0.5),
        "mondrian": lambda: ppdp.Mondrian(k=3, l=2),
    }[name]()
