"""Alpha-beta at its limits: views over the row limit refused before they are drawn, very wide
tables, and extreme or tiny parameters (Theorem 4.3's conditions checked on n and m).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ppdp
from ppdp import AlphaBeta, InfeasibleError
from ppdp.mechanisms.alphabeta.views import ViewSequence
from ppdp.table.table import Table
from tests.mechanisms.alphabeta.alphabeta_helpers import int_table

# -- resource limits and extreme parameters -----------------------------------------------------


def sparse_table(n_rows: int = 200) -> Table:
    """n rows over a domain of m = 50 * 50 * 40 = 100,000 tuples."""
    rng = np.random.default_rng(7)
    return int_table({"a": 50, "b": 50, "c": 40}, rng.integers(0, 40, size=(n_rows, 3)))


def test_a_view_over_max_rows_is_refused_before_it_is_drawn():
    """100 rows over m = 5 10^9 tuples at alpha = 0.3, beta = 0.2 expect a view of about 10^9
    tuples (alpha n + beta m): refused with its size, its memory and the limit to raise, while
    allocating next to nothing (a cap on new address space turns a regression into a
    MemoryError instead of exhausting the machine)."""
    resource = pytest.importorskip("resource")
    import tracemalloc

    rng = np.random.default_rng(0)
    table = int_table({"a": 1000, "b": 1000, "c": 5000}, rng.integers(0, 1000, size=(100, 3)))
    mechanism = AlphaBeta(alpha=0.3, beta=0.2)
    assert mechanism.expected_view_size(100, 5 * 10**9) == pytest.approx(1e9, rel=1e-6)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize"))
    except FileNotFoundError:
        pytest.skip("the address-space cap reads /proc/self/status (Linux)")
    cap = size + 2**30 if hard == resource.RLIM_INFINITY else min(size + 2**30, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    tracemalloc.start()
    try:
        with pytest.raises(InfeasibleError) as error:
            mechanism.publish(table, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert peak < 2**24
    message = str(error.value)
    assert ("about 1,000,000,030 tuples (alpha n + beta m with n = 100, m = 5,000,000,000"
            in message)
    assert "need about 64 GB of memory" in message
    assert "more than max_rows = 20,000,000" in message
    assert "max_rows=1100000000 (CLI: -p max_rows=1100000000)" in message
    with pytest.raises(InfeasibleError, match="about 1,000,000,030 tuples"):
        mechanism.views(table)
    # Later views are checked with Algorithm 4's rates and the size of V'.
    with pytest.raises(InfeasibleError, match=r"view 2, \|V'\| = 1,000"):
        AlphaBeta(alpha=0.3, beta=0.2, v=2).check_view_size(table, earlier=1000, view=2)


def test_raising_max_rows_lets_a_larger_view_through():
    # 1,000 rows over m = 10^6 at alpha = 0.3, beta = 0.2: about 200,300 tuples expected.
    rng = np.random.default_rng(1)
    table = int_table({"a": 100, "b": 100, "c": 100}, rng.integers(0, 100, size=(1000, 3)))
    with pytest.raises(InfeasibleError, match=r"raise the limit .* max_rows=210000"):
        AlphaBeta(alpha=0.3, beta=0.2, max_rows=100_000).publish(table, random_state=0)
    mechanism = AlphaBeta.from_params({"alpha": "0.3", "beta": "0.2", "max_rows": "2.1e5"})
    assert mechanism.max_rows == 210_000
    release = mechanism.publish(table, random_state=0)
    assert abs(release.n_rows - 200_300) < 5 * math.sqrt(10**6 * 0.2 * 0.8)


def test_max_rows_is_a_resource_option_not_a_privacy_parameter(tmp_path):
    """max_rows is left out of the release's parameters, the saved view state and the
    parameters later views must repeat: a later view may be published with another limit."""
    table = sparse_table()
    mechanism = AlphaBeta(alpha=0.3, beta=0.2, v=2, max_rows=10**6)
    assert "max_rows" not in mechanism.parameter_values
    assert mechanism.resource_values == {"max_rows": 10**6}
    assert "max_rows=1000000" in repr(mechanism)
    views = mechanism.views(table)
    release = views.publish(random_state=0)
    assert "max_rows" not in release.parameters
    release.save(tmp_path / "view1")
    assert "max_rows" not in (tmp_path / "view1" / "release.json").read_text()
    views.save_state(tmp_path / "state")
    assert "max_rows" not in (tmp_path / "state" / "state.json").read_text()
    raised = AlphaBeta(alpha=0.3, beta=0.2, v=2, max_rows=5 * 10**6)
    later = ViewSequence.load_state(tmp_path / "state", raised, table)
    assert later.publish(random_state=1).parameters["view"] == 2


def test_a_thousand_columns_give_a_schema_error_not_an_overflow():
    # m = 2^1000, beyond a float: the message states it as a power of ten.
    table = int_table({f"c{i}": 2 for i in range(1000)}, np.zeros((5, 1000), dtype=np.int64))
    mechanism = AlphaBeta(k=1, gamma=0.5)
    with pytest.raises(ppdp.SchemaError, match=r"1000 columns has 10\^301 tuples"):
        mechanism.publish(table, random_state=0)
    with pytest.raises(ppdp.SchemaError, match=r"10\^301"):
        mechanism.guarantee(table)


@pytest.mark.parametrize(("params", "match"), [
    ({"k": "1e308", "gamma": "0.2"}, r"needs beta = k n'/\(gamma m\) = inf > 1/2.*lower k"),
    ({"k": "1", "gamma": "1e308"}, r"gamma must be in the open interval \(0, 1\)"),
    ({"k": "1", "gamma": "1e-320"}, r"raise gamma"),
    ({"k": "inf", "gamma": "0.2"}, r"k must be a positive number"),
    ({"k": "nan", "gamma": "0.2"}, r"k must be a positive number"),
    ({"k": "1", "gamma": "nan"}, r"gamma must be in the open interval"),
    ({"alpha": "1e-320", "beta": "0.5"}, r"alpha must be at least 1e-09"),
    ({"alpha": "0.5", "beta": "nan"}, r"beta must be in the open interval"),
    ({"alpha": "inf", "beta": "0.1"}, r"alpha must be in the open interval"),
    ({"k": "1", "gamma": "0.2", "v": "1e308"},
     r"v \(number of views\) must be an integer in 1\.\.1,000,000, got 10\^308"),
    ({"k": "1", "gamma": "0.2", "max_rows": "0"}, r"max_rows must be an integer >= 1"),
    # d = 50 * 200/100,000 = 0.1 and d/gamma = 1/2 exactly: alpha = 1/2 - beta = 0.
    ({"k": "50", "gamma": "0.2"}, r"n' = 1,024 is the row count rounded up"),
])
def test_extreme_parameters_give_a_value_error_naming_them(params, match):
    table = sparse_table()
    with pytest.raises(ValueError, match=match):
        mechanism = AlphaBeta.from_params(params)
        mechanism.guarantee(table)
        mechanism.publish(table, random_state=0)


@pytest.mark.parametrize("params", [{"k": "1e-320", "gamma": "0.2"},
                                    {"alpha": "0.5", "beta": "1e-320"},
                                    {"k": "1", "gamma": "0.9999999999999999"}])
def test_tiny_parameters_give_a_valid_view(params):
    table = sparse_table()
    mechanism = AlphaBeta.from_params(params)
    assert math.isfinite(mechanism.guarantee(table).expected_view_size)
    estimate = mechanism.publish(table, random_state=0).count("a = 1")
    assert math.isfinite(estimate.value) and math.isfinite(estimate.stderr)


@pytest.mark.parametrize(("options", "match"), [
    ({"n": 10, "m": 0}, r"m \(domain size\) must be an integer in 1\.\.2\^62 - 1, got 0"),
    ({"n": -1, "m": 10}, r"n \(number of rows\) must be an integer >= 0"),
    ({"n": 10, "m": 10**400}, r"got 10\^400"),
])
def test_guarantee_checks_n_and_m(options, match):
    with pytest.raises(ValueError, match=match):
        AlphaBeta(k=1, gamma=0.2).guarantee(**options)
