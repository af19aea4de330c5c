"""Ambiguity's guarantee: alpha-presence and beta-association of every group (Theorems 5.1,
5.2, 7.1 and 7.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppdp.mechanisms.parameters import require_unit_interval
from ppdp.mechanisms.presence import association_group_size


@dataclass(frozen=True)
class AmbiguityGuarantee:
    """(alpha, beta)-privacy of an ambiguity scheme built by Algorithm 2 (ambiguity paper,
    Definitions 4.1-4.3, Theorems 7.1-7.2)."""

    alpha: float
    beta: float
    diversity: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "mechanism": "ambiguity",
            "alpha": self.alpha,
            "beta": self.beta,
            "group_size_at_least": self.diversity,
            "statement": (f"alpha-presence: a tuple covered by one group is present with "
                          f"probability at most {self.alpha:g} (Theorem 5.1); "
                          f"beta-association: any individual-value association has "
                          f"probability at most "
                          f"{self.beta:g} (Theorem 5.2); each group holds "
                          f">= {self.diversity} distinct sensitive values once each, so the "
                          f"scheme is {self.diversity}-diverse (Theorems 7.1-7.2)"),
        }


def ambiguity_guarantee(*, alpha: float, beta: float) -> AmbiguityGuarantee:
    """The (alpha, beta)-privacy of ambiguity, with the ceil(1/beta)-diversity of Theorem 7.2.

    ``alpha`` bounds presence |G| / prod_i |G_ATi| (Theorem 5.1), ``beta`` association
    c / |G| (Theorem 5.2); both in (0, 1].
    """
    alpha, beta = require_unit_interval("alpha", alpha), require_unit_interval("beta", beta)
    return AmbiguityGuarantee(alpha=alpha, beta=beta, diversity=association_group_size(beta))
