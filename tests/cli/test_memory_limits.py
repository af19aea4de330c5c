"""Memory running out ends a command in one ``error:`` line that says so, whichever library
noticed first, and leaves nothing behind; under an address-space limit (``prlimit --as``,
``ulimit -v``) the command is set up to stay within it (`ppdp.cli._memory`)."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import typer
from typer.testing import CliRunner

import ppdp.cli._app as cli_app
from ppdp.cli import _memory
from ppdp.cli._app import EXIT_INPUT

DATASETS = Path(_memory.__file__).resolve().parents[1] / "datasets"
ADULT = DATASETS / "adult.parquet"
DOMAINS = DATASETS / "adult.domains.json"
GIB = 1 << 30

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="address-space limits as Linux applies them")


def capped(limit: int) -> Callable[[], None]:
    """A preexec_fn that limits the child's address space to ``limit`` bytes."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def publish_capped(tmp_path: Path, limit: int, *mechanism: str) -> subprocess.CompletedProcess:
    output = tmp_path / "out" / "release"
    return subprocess.run(
        [sys.executable, "-m", "ppdp.cli", "publish", str(ADULT), "--domains", str(DOMAINS),
         *mechanism, "-o", str(output), "--engine", "streaming", "--seed", "1",
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=300, preexec_fn=capped(limit),
        env={**os.environ, "COLUMNS": "200"})


def left_behind(tmp_path: Path) -> list[str]:
    """Partial or staging directories anywhere under ``tmp_path``."""
    return [str(path) for path in tmp_path.rglob("*") if "ppdp-partial" in path.name]


def assert_one_memory_line(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == EXIT_INPUT, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: ppdp ran out of memory within its address-space limit")
    assert "try" in lines[0]


@pytest.mark.parametrize("mechanism", [
    ("-m", "sdr", "-s", "occupation", "-p", "rho1=0.05", "-p", "rho2=0.3"),
    ("-m", "frapp", "-p", "k=1", "-p", "gamma=0.5"),
])
def test_a_limit_too_small_for_the_libraries_is_one_line(tmp_path, mechanism):
    """Under 0.75 GB the libraries were cut off while loading: "Polars binary is missing!"
    with NameError, a Rust allocation abort (exit 134), a hang in loading SciPy's BLAS, or
    an ImportError traceback. Now: refused before anything is loaded."""
    result = publish_capped(tmp_path, 768 << 20, *mechanism)
    assert_one_memory_line(result)
    assert not (tmp_path / "out" / "release").exists()
    assert left_behind(tmp_path) == []


def test_a_publish_under_a_limit_finishes_or_says_so(tmp_path):
    """Under a 3 GB limit (the libraries reserve about 2 GB of address space before a row is
    read) the publish either fits, with fewer threads, or ends in the one line; never a
    traceback, an abort or a partial release."""
    result = publish_capped(tmp_path, 3 * GIB, "-m", "sdr", "-s", "occupation",
                            "-p", "rho1=0.05", "-p", "rho2=0.3")
    if result.returncode == 0:
        assert (tmp_path / "out" / "release" / "release.json").is_file()
    else:
        assert_one_memory_line(result)
        assert not (tmp_path / "out" / "release").exists()
    assert left_behind(tmp_path) == []


LIMITED_CHILD = """
import os, sys
from ppdp.cli._memory import threads_within, within_limit
within_limit()
import polars, pyarrow
print(os.environ["POLARS_MAX_THREADS"], os.environ["OPENBLAS_NUM_THREADS"],
      polars.thread_pool_size(), pyarrow.cpu_count(), "scipy.linalg" in sys.modules,
      threads_within(int(sys.argv[1])))
"""


def test_under_a_limit_the_pools_shrink_and_blas_loads_first():
    """Each worker thread reserves a stack and allocator arenas; OpenBLAS, loaded late, waited
    forever for its buffer (a hang of over 300 s in FRAPP's lazy SciPy import)."""
    limit = 2 * GIB + (GIB // 2)
    env = {key: value for key, value in os.environ.items()
           if key not in ("POLARS_MAX_THREADS", "OPENBLAS_NUM_THREADS")}
    result = subprocess.run([sys.executable, "-c", LIMITED_CHILD, str(limit)],
                            capture_output=True, text=True, check=True, timeout=120,
                            preexec_fn=capped(limit), env=env)
    polars_env, blas_env, polars_threads, arrow_threads, blas_first, expected = \
        result.stdout.split()
    assert polars_env == blas_env == polars_threads == arrow_threads == expected
    assert int(expected) == min(2, os.cpu_count() or 1)
    assert blas_first == "True"


def test_threads_within_a_limit():
    assert _memory.threads_within(GIB) == 1
    assert _memory.threads_within(2 * GIB) == 1
    assert _memory.threads_within(64 * GIB) == os.cpu_count()


def test_frapp_loads_scipy_optimize_at_import():
    """Not when its retention is solved, in the middle of a publish (see above)."""
    code = ("import sys, ppdp.mechanisms.alphabeta.frapp; "
            "print('scipy.optimize' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "True"


# How each library says memory ran out, as seen under the limits above.
OUT_OF_MEMORY = [
    MemoryError(),
    ImportError("libgfortran-8f1e9814.so.5.0.0: failed to map segment from shared object"),
    ImportError("The pyarrow installation is not built with support for the Parquet file "
                "format (_parquet.so: failed to map segment from shared object)"),
    RuntimeError("can't start new thread"),
    pa.ArrowException("Unknown error: Failed to launch worker thread: Resource temporarily "
                      "unavailable"),
    OSError(errno.ENOMEM, "Cannot allocate memory"),
    ValueError("while reading"),  # raised from a MemoryError: see below
]


def run_failing(error: BaseException, monkeypatch: pytest.MonkeyPatch, *,
                limit: int | None = 2 * GIB) -> object:
    """A command that fails with ``error``, run through the command line's error handling
    under an (apparent) address-space limit."""
    monkeypatch.setattr(_memory, "address_space_limit", lambda: limit)
    monkeypatch.setattr(cli_app, "within_limit", lambda: None)

    @cli_app.handle_errors
    def command() -> None:
        if isinstance(error, ValueError):
            try:
                raise MemoryError
            except MemoryError:
                raise error  # noqa: B904 - the context is the point
        raise error

    app = typer.Typer()
    app.command()(command)
    return CliRunner().invoke(app, [])


@pytest.mark.parametrize("error", OUT_OF_MEMORY, ids=lambda e: type(e).__name__)
def test_each_way_of_running_out_is_one_line(error, monkeypatch):
    result = run_failing(error, monkeypatch)
    assert result.exit_code == EXIT_INPUT, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ppdp ran out of memory within its address-space "
                               "limit of 2.15 GB (ulimit -v): try ")


def test_polars_without_its_compiled_core_is_one_line(monkeypatch):
    """Polars only warns ("Polars binary is missing!") when its library cannot be mapped,
    and fails later where it is used: NameError: name 'PySeries' is not defined."""
    import polars  # noqa: F401 - loaded, then its compiled core taken away

    monkeypatch.delitem(sys.modules, "polars._plr")
    result = run_failing(NameError("name 'PySeries' is not defined"), monkeypatch)
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.startswith("error: ppdp ran out of memory")


def test_without_a_limit_the_message_names_none(monkeypatch):
    result = run_failing(MemoryError(), monkeypatch, limit=None)
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.strip() == ("error: ppdp ran out of memory: try --engine streaming "
                                     "with a smaller --batch-rows, a sample or fewer columns, "
                                     "or more memory")


@pytest.mark.parametrize("error", [NameError("name 'x' is not defined"),
                                   RuntimeError("something else"),
                                   ImportError("No module named 'nothing'")],
                         ids=lambda e: type(e).__name__)
def test_other_errors_are_not_taken_for_memory(error, monkeypatch):
    result = run_failing(error, monkeypatch)
    assert result.exit_code not in (EXIT_INPUT, 2)
    assert result.exception is error
