"""The small CSV that the workbench's tests open."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench_helpers import visits_csv


@pytest.fixture(scope="module")
def visits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return visits_csv(tmp_path_factory.mktemp("data") / "visits.csv")
