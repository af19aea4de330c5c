"""Fixtures shared across the test tree: the real datasets kept beside the project."""

from __future__ import annotations

from pathlib import Path

import pytest

import ppdp

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The ``shared/datasets`` folder beside the project (skips the test when it is absent)."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def fars(shared_datasets: Path) -> ppdp.Table:
    """FARS (100,937 rows), sensitive attribute iinjury."""
    return ppdp.read_table(shared_datasets / "fars" / "fars_int.csv", sensitive="iinjury")
