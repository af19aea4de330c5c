"""What DBR guarantees: nothing formal (SPLU-Gen Section 3), stated as such."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DbrGuarantee:
    """DBR offers no formal privacy guarantee; what it does and does not hide, in words."""

    formal_guarantee: None = None
    discloses_marginal: bool = True
    statement: str = (
        "no formal guarantee: each row's sensitive value is drawn from the published marginal "
        "independently of the row, so correlations with the other attributes are lost; the "
        "marginal distribution of the sensitive attribute itself is disclosed"
    )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "mechanism": "dbr",
            "formal_guarantee": self.formal_guarantee,
            "discloses_marginal": self.discloses_marginal,
            "statement": self.statement,
        }


def dbr_guarantee() -> DbrGuarantee:
    """DBR's (absent) guarantee: values drawn from the marginal, independent of the row.

    The SPLU-Gen paper's DBR comparator (Section 6) draws each sensitive value from the original
    marginal distribution; it carries no formal privacy guarantee.
    """
    return DbrGuarantee()
