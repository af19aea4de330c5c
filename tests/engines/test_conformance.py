"""The conformance suite every engine passes: every mechanism publishes the same table with the
same key on every engine of `ENGINES`, and

* the release files are the memory engine's, byte for byte;
* a saved release counts the same on every engine (Spark adds floating-point sums in another
  order: its answers agree to 1e-9, relatively);
* a damaged release is refused on loading, whatever engine loads it;
* Laplace's query session answers the same.

The table, 3,000 rows of the bundled Adult over declared domains, is opened by each engine from
the same Parquet file (`Engine.open`), so the row ids are the same; releases are cut into parts
of 1,000 rows (`ppdp.plan.order.ROWS_PER_PART` lowered) and group mechanisms publish blocks of
1,200 rows (`ppdp.plan.blocks.BLOCK_ROWS` lowered: three blocks). The memory and streaming
engines publish on one worker, on two and on seven (`ppdp.workers`, batches cut into chunks of
500 rows or more): the same files. Every release is published on two workers unless a test says
otherwise, so that one publication per engine serves both comparisons.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.workers
from ppdp.errors import ReleaseError
from ppdp.plan import blocks, order
from ppdp.plan.engine import get_engine, publish
from ppdp.release.base import Release
from ppdp.release.format import METADATA_FILE
from ppdp.release.load import load_release
from ppdp.workers import using_workers
from tests.engines.conftest import ENGINES

SEED = 20261127
ROWS = 3_000
ROWS_PER_PART = 1_000
BLOCK_ROWS = 1_200
CHUNK_ROWS = 500
COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "education", "occupation"]
QUERIES = [
    "sex = 'Male' AND occupation = 'Adm-clerical'",
    "age >= 40 AND occupation IN ('Sales', 'Tech-support')",
    "race = 'White'",
    "SELECT COUNT(*) FROM t WHERE sex = 'Female' GROUP BY salary-class",
    "SELECT COUNT(*) FROM t WHERE age < 30 GROUP BY occupation",
]
MECHANISMS: dict[str, Callable[[], Any]] = {
    "splu": lambda: ppdp.SPLUGen(gamma=5),
    "anatomy": lambda: ppdp.Anatomy(l=5),
    "ambiguity": lambda: ppdp.Ambiguity(alpha=0.3, beta=0.2),
    "dbr": lambda: ppdp.DBR(),
    "uniform": lambda: ppdp.UniformPerturbation(rho1=0.1, rho2=0.5),
    "sdr": lambda: ppdp.PerturbationPartitioning(rho1=0.077, rho2=0.2),
    "frapp": lambda: ppdp.FRAPP(k=0.01, gamma=0.2),
    "alphabeta": lambda: ppdp.AlphaBeta(alpha=0.3, beta=0.05),
    "mondrian": lambda: ppdp.Mondrian(k=10, l=3),
}
"""Every mechanism that writes a release (laplace answers queries instead: see below)."""


@pytest.fixture(scope="module")
def source_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The table every engine opens: Adult's first `ROWS` rows over `COLUMNS`."""
    table = ppdp.datasets.adult(sensitive="occupation").select(COLUMNS)
    path = tmp_path_factory.mktemp("conformance") / "adult.parquet"
    pq.write_table(table.to_arrow().slice(0, ROWS), path)
    return path


@pytest.fixture(scope="module")
def domains() -> dict[str, Any]:
    """The bundled codebook's domains of `COLUMNS`, declared."""
    declared = {c.name: c.domain for c in ppdp.datasets.adult().schema.columns}
    return {name: list(declared[name]) for name in COLUMNS}


def opened(engine: str, source_file: Path, domains: dict[str, Any]) -> Any:
    """The table as the engine opens it."""
    return get_engine(engine).open(source_file, sensitive="occupation", domains=domains)


class Published:
    """Releases published once per (mechanism, engine) in a module, saved in a folder."""

    def __init__(self, root: Path, source_file: Path, domains: dict[str, Any]) -> None:
        self.root, self.source_file, self.domains = root, source_file, domains
        self.saved: dict[tuple[str, str, int], Path] = {}
        self.in_memory: dict[str, Release] = {}

    def path(self, mechanism: str, engine: str, workers: int = 2) -> Path:
        """The saved release of ``mechanism`` published on ``engine`` on ``workers``
        workers."""
        if (mechanism, engine, workers) not in self.saved:
            with pytest.MonkeyPatch.context() as patch, using_workers(workers):
                patch.setattr(order, "ROWS_PER_PART", ROWS_PER_PART)
                patch.setattr(blocks, "BLOCK_ROWS", BLOCK_ROWS)
                patch.setattr(ppdp.workers, "CHUNK_ROWS", CHUNK_ROWS)
                data = opened(engine, self.source_file, self.domains)
                released = publish(MECHANISMS[mechanism](), data, engine=engine,
                                   random_state=SEED)
                if engine == "memory" and workers == 2:
                    self.in_memory[mechanism] = released
                self.saved[mechanism, engine, workers] = released.save(
                    self.root / f"{mechanism}-{engine}-{workers}")
        return self.saved[mechanism, engine, workers]

    def reference(self, mechanism: str) -> Release:
        """The release the memory engine holds in memory."""
        self.path(mechanism, "memory")
        return self.in_memory[mechanism]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, source_file: Path,
              domains: dict[str, Any]) -> Iterator[Published]:
    yield Published(tmp_path_factory.mktemp("releases"), source_file, domains)


def digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.iterdir())}


def answers(release: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every query's estimates and standard errors (NaN where there is none), by group."""
    out = []
    for query in QUERIES:
        answer = release.count(query)
        estimates = [answer] if isinstance(answer, ppdp.Estimate) else \
            [estimate for _, estimate in answer.groups]
        out.append((np.array([e.value for e in estimates]),
                    np.array([np.nan if e.stderr is None else e.stderr for e in estimates])))
    return out


def assert_same_answers(got: list[tuple[np.ndarray, np.ndarray]],
                        expected: list[tuple[np.ndarray, np.ndarray]], engine: str) -> None:
    rtol = 1e-9 if engine == "spark" else 0.0
    for (values, errors), (want, want_errors) in zip(got, expected, strict=True):
        np.testing.assert_allclose(values, want, rtol=rtol, atol=0)
        np.testing.assert_allclose(errors, want_errors, rtol=rtol, atol=0)


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "memory"])
@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_the_same_key_gives_the_same_files(mechanism: str, engine: str, engine_session: Any,
                                           published: Published) -> None:
    reference = digests(published.path(mechanism, "memory"))
    assert len([name for name in reference if name != METADATA_FILE]) >= 2
    assert digests(published.path(mechanism, engine)) == reference


@pytest.mark.parametrize("workers", [1, 7])
@pytest.mark.parametrize("engine", ["memory", "streaming"])
@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_any_number_of_workers_writes_the_same_files(mechanism: str, engine: str,
                                                     workers: int,
                                                     published: Published) -> None:
    """One worker, or more workers than blocks, parts or chunks: the files of two."""
    assert digests(published.path(mechanism, engine, workers)) == \
        digests(published.path(mechanism, engine))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_a_saved_release_counts_the_same_on_every_engine(mechanism: str, engine: str,
                                                         engine_session: Any,
                                                         published: Published) -> None:
    expected = answers(published.reference(mechanism))
    loaded = load_release(published.path(mechanism, "memory"), engine=engine)
    assert_same_answers(answers(loaded), expected, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("damage", ["data file", "release.json"])
def test_a_damaged_release_is_refused(damage: str, engine: str, engine_session: Any,
                                      published: Published, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(published.path("dbr", "memory"), damaged)
    if damage == "data file":
        path = sorted(damaged.glob("rows*.parquet"))[0]
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        path = damaged / METADATA_FILE
        path.write_text(path.read_text().replace('"n_rows": 3000', '"n_rows": 2999'))
    with pytest.raises(ReleaseError, match="digest"):
        load_release(damaged, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_laplace_session_answers_the_same_on_every_engine(engine: str, engine_session: Any,
                                                            source_file: Path,
                                                            domains: dict[str, Any]) -> None:
    def session(on: str) -> Any:
        return publish(ppdp.LaplaceCounts(epsilon=0.5), opened(on, source_file, domains),
                       engine=on, random_state=SEED)

    assert_same_answers(answers(session(engine)), answers(session("memory")), engine)
