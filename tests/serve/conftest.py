"""Releases for the query server's tests: Anatomy and SPLU-Gen on 2,000 rows of Adult, and
a client of the server over them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import ppdp
from ppdp.serve import ServeConfig, create_app
from ppdp.table.table import Table

BASE_URL = "http://127.0.0.1:8000"
"""Where the test client says it sends its requests: the Host the server checks."""


@pytest.fixture(scope="session")
def sample() -> Table:
    """2,000 rows of Adult, occupation sensitive."""
    return ppdp.datasets.adult(sensitive="occupation").take(list(range(0, 30_000, 15)))


def publish_releases(directory: Path, sample: Table) -> Path:
    """``directory`` holding ``anatomy`` and ``splu`` releases of ``sample``."""
    directory.mkdir(parents=True, exist_ok=True)
    ppdp.Anatomy(l=3).publish(sample, random_state=1).save(directory / "anatomy")
    ppdp.SPLUGen(gamma=5).publish(sample, random_state=1).save(directory / "splu")
    return directory


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory, sample: Table) -> Path:
    """A directory of two releases, shared by a module's tests (which only read it)."""
    return publish_releases(tmp_path_factory.mktemp("releases"), sample)


def client(directory: Path, **options: Any) -> TestClient:
    """A test client of a server over ``directory`` bound to 127.0.0.1:8000 (``options``:
    `ServeConfig`'s)."""
    config = ServeConfig(directory, host="127.0.0.1", port=8000, **options)
    return TestClient(create_app(config), base_url=BASE_URL, raise_server_exceptions=False)


@pytest.fixture(scope="session")
def make_client() -> Callable[..., TestClient]:
    """`client`, for the tests' own directories and options."""
    return client


@pytest.fixture(scope="session")
def publish() -> Callable[[Path, Table], Path]:
    """`publish_releases`, for the tests' own directories."""
    return publish_releases


@pytest.fixture(scope="module")
def api(releases: Path) -> Iterator[TestClient]:
    """A client of the server over `releases`."""
    with client(releases) as test_client:
        yield test_client
