"""Memory needs (ppdp.plan.resources): the available memory, the measured footprints, the warning
every mechanism's publish gives when its need exceeds what is available, and the formatting of
counts and sizes too large for a float."""

from __future__ import annotations

import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

from ppdp.data.schema import Column, Role, Schema
from ppdp.mechanisms import get_mechanism
from ppdp.plan import resources
from ppdp.plan.resources import (
    MemoryNeedWarning,
    available_memory,
    check_memory,
    format_bytes,
    format_count,
    format_value,
    memory_need,
)
from ppdp.table.table import Table


def small_table(n_rows: int = 400, seed: int = 0) -> Table:
    """Two quasi-identifiers and a sensitive column over declared domains, every sensitive
    value frequent (each mechanism below publishes it)."""
    rng = np.random.default_rng(seed)
    schema = Schema((Column("a", Role.QUASI_IDENTIFIER, tuple(range(10))),
                     Column("b", Role.QUASI_IDENTIFIER, tuple(range(10))),
                     Column("s", Role.SENSITIVE, tuple(range(8)))))
    return Table(schema, {"a": rng.integers(0, 10, n_rows), "b": rng.integers(0, 10, n_rows),
                          "s": np.arange(n_rows) % 8})


MECHANISMS = {
    "splu": {"gamma": 2}, "anatomy": {"l": 2}, "dbr": {}, "uniform": {"rho1": 0.2, "rho2": 0.5},
    "sdr": {"rho1": 0.2, "rho2": 0.5}, "ambiguity": {"alpha": 1.0, "beta": 0.5},
    "mondrian": {"k": 2}, "frapp": {"k": 0.5, "gamma": 0.5}, "alphabeta": {"alpha": 0.5,
                                                                          "beta": 0.1},
}


def test_available_memory_is_a_positive_number_of_bytes_on_linux():
    if not resources.MEMINFO.exists():
        pytest.skip("no /proc/meminfo")
    available = available_memory()
    assert isinstance(available, int) and available > 0


def test_available_memory_is_none_where_unknown(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(resources, "MEMINFO", tmp_path / "absent")
    assert available_memory() is None
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16384 kB\nMemFree:         1024 kB\n")
    monkeypatch.setattr(resources, "MEMINFO", meminfo)
    assert available_memory() is None
    meminfo.write_text("MemTotal:       16384 kB\nMemAvailable:    2048 kB\n")
    assert available_memory() == 2048 * 1024


def test_check_memory_warns_when_the_need_exceeds_what_is_available():
    table = small_table()
    need = memory_need(table, get_mechanism("dbr").footprint)
    assert need == table.n_rows * (16 + 1 * 3)
    with pytest.warns(MemoryNeedWarning, match=r"dbr on 400 rows .* about 7\.6 kB of memory "
                                               r"and 1 kB is available"):
        assert check_memory(table, "dbr", need=need, available=1000) == need


def test_check_memory_is_silent_when_the_memory_is_there_or_unknown(monkeypatch):
    table = small_table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        need = memory_need(table, get_mechanism("dbr").footprint)
        check_memory(table, "dbr", need=need, available=10**9)
        monkeypatch.setattr(resources, "available_memory", lambda: None)
        check_memory(table, "dbr", need=need)
        check_memory(table, "no-footprint", need=memory_need(table, None), available=0)


def test_check_memory_costs_nothing_proportional_to_the_rows():
    table = small_table(n_rows=10**6)
    tracemalloc.start()
    try:
        check_memory(table, "ambiguity",
                     need=memory_need(table, get_mechanism("ambiguity").footprint),
                     available=10**15)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_publish_states_its_need(monkeypatch, name):
    """Each mechanism's publish warns when its need exceeds the (here: patched) available
    memory, and still publishes."""
    monkeypatch.setattr(resources, "available_memory", lambda: 1)
    mechanism = get_mechanism(name).from_params(MECHANISMS[name])
    with pytest.warns(MemoryNeedWarning, match=f"^{name} on 400 rows"):
        release = mechanism.publish(small_table(), random_state=0)
    assert release.n_rows > 0


def test_every_mechanism_with_a_release_has_a_footprint():
    assert all(get_mechanism(name).footprint is not None for name in MECHANISMS)


def test_counts_and_sizes_too_large_for_a_float_are_formatted():
    assert format_count(648_023_040) == "648,023,040"
    assert format_count(2.5e8) == "250,000,000"
    assert format_count(10**18) == "1e+18"
    assert format_count(2**1000) == "10^301"
    assert format_count(10**5000) == "10^5000"
    assert format_value(10**400) == "10^400" and format_value(3) == "3"
    assert format_value(1e300) == "1e+300"
    assert format_bytes(24.6e9) == "24.6 GB"
    assert format_bytes(512) == "512 bytes"
