"""alpha-beta's guarantee: (d, gamma)-privacy of Theorem 4.3 and the usefulness of
Theorem 4.4 for the parameters a view publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AlphaBetaGuarantee:
    """(d, gamma)-privacy (Theorem 4.3) and usefulness (Theorem 4.4) of an alpha-beta view."""

    alpha: float
    beta: float
    gamma: float | None
    k: float | None
    d: float | None
    n: int | None
    m: int | None
    views: int
    rho: float | None
    expected_view_size: float | None

    def to_dict(self) -> dict[str, Any]:
        data = {"mechanism": "alphabeta", **vars(self)}
        data["statement"] = self.statement()
        return data

    def statement(self) -> str:
        if self.d is None or self.gamma is None:
            return (f"alpha = {self.alpha:.4g}, beta = {self.beta:.4g}; give k and gamma (and a "
                    f"table, or n and m) to check (d, gamma)-privacy (Theorem 4.3)")
        text = (f"(d, gamma)-privacy with d = {self.d:.4g} (k n/m) and gamma = {self.gamma:g}: "
                f"against any tuple-independent adversary whose prior on a tuple is at most d, "
                f"the posterior is at most gamma and at least prior*d/gamma (Theorem 4.3)")
        if self.rho is not None:
            text += (f"; every count is within rho sqrt(n) = {self.rho:.4g} sqrt(n) of the truth "
                     f"with probability >= 0.95 (Theorem 4.4)")
        if self.views > 1:
            text += (f"; up to v = {self.views} views of the same table (Algorithm 4, Section "
                     f"4.4.1)")
        return text
