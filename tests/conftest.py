"""Fixtures shared across the test tree: the real datasets kept beside the project."""

from __future__ import annotations

from pathlib import Path

import pytest

import ppdp

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(autouse=True)
def private_state_dir(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test keeps alpha-beta's private view state in a folder of its own, never in the
    user's home."""
    folder = tmp_path_factory.mktemp("ppdp-state")
    monkeypatch.setenv("PPDP_STATE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test keeps the summaries of loaded releases in a cache folder of its own, never
    in the user's home (and never one left by another test)."""
    folder = tmp_path_factory.mktemp("ppdp-cache")
    monkeypatch.setenv("PPDP_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The ``shared/datasets`` folder beside the project (skips the test when it is absent)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def fars(shared_datasets: Path) -> ppdp.Table:
    """FARS (100,937 rows), sensitive attribute iinjury."""
    # The papers' setting: the domains are the values present.
    return ppdp.read_table(shared_datasets / "fars" / "fars_int.csv", sensitive="iinjury",
                           observed_domains=True)
