"""Anatomy's guarantee: l-diversity of every group, so an individual's association with a
sensitive value is at most 1/l (Xiao and Tao 2006)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppdp.mechanisms.parameters import check_int


@dataclass(frozen=True)
class AnatomyGuarantee:
    """l-diversity of Anatomy: each tuple's sensitive value is inferred with probability ≤ 1/l.

    Xiao & Tao, "Anatomy: simple and effective privacy preservation", VLDB 2006; the SPLU-Gen
    paper compares with l = γ.
    """

    l: int  # noqa: E741 - the paper's symbol
    max_inference_probability: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "mechanism": "anatomy",
            "l": self.l,
            "max_inference_probability": self.max_inference_probability,
            "statement": (f"l-diversity with l = {self.l}: an adversary infers any tuple's "
                          f"sensitive value with probability at most 1/{self.l} "
                          "(Xiao & Tao 2006)"),
        }


def anatomy_guarantee(*, l: int) -> AnatomyGuarantee:  # noqa: E741 - the paper's symbol
    """Anatomy's l-diversity guarantee: a tuple's sensitive value is inferred w.p. at most 1/l.

    Xiao & Tao 2006 (Anatomy), l = ``l``, the number of distinct sensitive values in every
    QI-group (an integer ≥ 2).
    """
    diversity = check_int("l (diversity)", l, 2)
    return AnatomyGuarantee(l=diversity, max_inference_probability=1.0 / diversity)
