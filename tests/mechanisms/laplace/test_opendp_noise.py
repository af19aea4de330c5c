"""OpenDP is the ``laplace`` extra: without it, Laplace counts without a seed are refused in one
line naming the extra, while seeded sessions (experiments), the other mechanisms, the demo and
``ppdp mechanisms`` work."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from ppdp import LaplaceCounts
from ppdp.cli import app
from ppdp.errors import MissingDependencyError, PpdpError
from ppdp.evaluate.demo import run_demo
from ppdp.table.table import Table, table_from_arrow

EXTRA = "pip install 'ppdp[laplace]'"


def people() -> Table:
    rng = np.random.default_rng(0)
    return table_from_arrow(pa.table({"age": rng.integers(18, 80, 300),
                                      "sex": rng.choice(["F", "M"], 300)}))


@pytest.fixture
def without_opendp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python as it is without OpenDP installed: importing it fails."""
    for name in list(sys.modules):
        if name == "opendp" or name.startswith("opendp."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opendp", None)
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)
    monkeypatch.delitem(sys.modules, "ppdp.mechanisms.laplace.opendp_noise", raising=False)


@pytest.mark.usefixtures("without_opendp")
def test_unseeded_laplace_without_opendp_is_one_line_naming_the_extra() -> None:
    with pytest.raises(MissingDependencyError) as raised:
        LaplaceCounts(epsilon=1.0).publish(people())
    message = str(raised.value)
    assert EXTRA in message and "\n" not in message
    assert isinstance(raised.value, PpdpError) and isinstance(raised.value, ImportError)


@pytest.mark.usefixtures("without_opendp")
def test_seeded_laplace_needs_no_opendp() -> None:
    session = LaplaceCounts(epsilon=1.0).publish(people(), random_state=3)
    again = LaplaceCounts(epsilon=1.0).publish(people(), random_state=3)
    assert session.count("sex = 'F'") == again.count("sex = 'F'")
    assert "opendp" not in sys.modules or sys.modules["opendp"] is None


@pytest.mark.usefixtures("without_opendp")
def test_the_command_line_names_the_extra() -> None:
    result = CliRunner().invoke(app, ["count", "adult", "sex = 'Female'", "--mechanism",
                                      "laplace", "-p", "epsilon=1"])
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and EXTRA in lines[0], result.output
    assert "Traceback" not in result.output
    listed = CliRunner().invoke(app, ["mechanisms"])
    assert listed.exit_code == 0 and "laplace" in listed.stdout


@pytest.mark.usefixtures("without_opendp")
def test_the_demo_leaves_unseeded_laplace_out_and_says_why() -> None:
    result = run_demo(None, size=10, progress=False)
    names = [row.mechanism for row in result.rows]
    assert "SPLU-Gen" in names and not any(name.startswith("Laplace") for name in names)
    left_out = [note for note in result.notes if "left out" in note]
    assert len(left_out) == 2 and all(EXTRA in note for note in left_out)


def test_with_opendp_the_unseeded_session_draws_from_it() -> None:
    pytest.importorskip("opendp")
    session = LaplaceCounts(epsilon=1.0).publish(people())
    assert session._noise is None
    noise = session.noise(100)
    assert noise.dtype == np.int64 and noise.shape == (100,)
