"""What one experiment measured: its setting, raw rows, figures, and the papers' claims set
against the measured numbers.

Every experiment of `ppdp.evaluate.experiments` returns an `ExperimentResult`; the report
(`ppdp.evaluate.report`) and the demo (`ppdp.evaluate.demo`) read them, so they sit here,
below all three.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Claim", "ExperimentResult"]


@dataclass(frozen=True)
class Claim:
    """A paper's statement next to what was measured."""

    paper: str
    measured: str
    holds: bool | None
    """Same direction on our data (None: not comparable here)."""
    matched_only: bool = False
    """It holds against the baseline held to the same guarantee, but not against the baseline
    the comparison used before privacy was matched."""

    @property
    def verdict(self) -> str:
        """"holds", "holds at matched privacy only", "does not hold" or "not comparable"."""
        if self.holds is None:
            return "not comparable"
        if not self.holds:
            return "does not hold"
        return "holds at matched privacy only" if self.matched_only else "holds"


@dataclass
class ExperimentResult:
    """What one experiment measured."""

    name: str
    title: str
    setting: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
