"""How one experiment is run: quick or full, its random generator, where it reports progress
and where its data are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ppdp.evaluate.result import ExperimentResult

__all__ = ["Config", "Experiment"]


@dataclass(frozen=True)
class Config:
    """One run's setting, handed to every experiment."""

    quick: bool
    rng: np.random.Generator
    step: Callable[[str], None]
    """Told what is being done, for a progress display."""
    data: Path | None
    """The folder holding ``fars`` and MEPS (`ppdp.evaluate.experiments.tables`); None when
    none was given or found (an experiment that needs one says so)."""

    def publications(self, quick: int, full: int) -> int:
        """The number of publications of each point: ``quick`` or ``full``."""
        return quick if self.quick else full


Experiment = Callable[[Config], ExperimentResult]
"""An experiment: a run's setting in, what it measured out."""
