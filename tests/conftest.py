"""Fixtures shared across the test tree: the real datasets kept beside the project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ppdp

SHARED_DATASETS = Path(os.environ.get("PPDP_TEST_DATASETS")
                       or Path(__file__).resolve().parents[2] / "shared" / "datasets")
"""FARS, MEPS and the raw UCI Adult files (README "Tests"): $PPDP_TEST_DATASETS, else
``shared/datasets`` beside the repository."""


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
    """The shared datasets folder (skips the test when it is absent)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS} (set PPDP_TEST_DATASETS "
                    f"to their folder)")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def fars(shared_datasets: Path) -> ppdp.Table:
    """FARS (100,937 rows), sensitive attribute iinjury."""
    # The papers' setting: the domains are the values present.
    return ppdp.read_table(shared_datasets / "fars" / "fars_int.csv", sensitive="iinjury",
                           observed_domains=True)
