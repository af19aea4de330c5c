"""Mondrian's guarantee: k-anonymity of every class, and distinct or frequency l-diversity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppdp.mechanisms.mondrian.partition import require_diversity
from ppdp.mechanisms.parameters import check_int


@dataclass(frozen=True)
class GeneralizationGuarantee:
    """k-anonymity and l-diversity of a generalized table (Mondrian, LeFevre et al. 2006):
    distinct (Machanavajjhala et al. 2006) or frequency l-diversity (Xiao and Tao 2006, the
    ambiguity paper's beta-association with beta = 1/l, Theorem 5.2)."""

    k: int
    l: int  # noqa: E741 - the usual symbol
    diversity: str = "distinct"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        statement = (f"k-anonymity with k = {self.k}: every combination of generalized "
                     f"quasi-identifiers is shared by at least {self.k} rows")
        if self.l > 1 and self.diversity == "frequency":
            statement += (f"; frequency l-diversity with l = {self.l}: no sensitive value makes "
                          f"up more than 1/{self.l} of such a class, so an individual's "
                          f"association with a sensitive value, given presence, is at most "
                          f"{1 / self.l:.4g}")
        elif self.l > 1:
            statement += (f"; distinct l-diversity with l = {self.l}: each such class holds at "
                          f"least {self.l} distinct sensitive values")
        return {"mechanism": "mondrian", "k": self.k, "l": self.l, "diversity": self.diversity,
                "statement": statement}


def mondrian_guarantee(*, k: int, l: int = 1,  # noqa: E741
                       diversity: str = "distinct") -> GeneralizationGuarantee:
    """Mondrian's k-anonymity (k >= 1) and, for l >= 2, l-diversity of the given kind."""
    return GeneralizationGuarantee(k=check_int("k", k, 1), l=check_int("l (diversity)", l, 1),
                                   diversity=require_diversity(diversity))
