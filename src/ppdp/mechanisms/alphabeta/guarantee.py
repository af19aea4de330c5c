"""alpha-beta's guarantee: (d, gamma)-privacy of Theorem 4.3, the usefulness of Theorem 4.4 for
each view, and Theorem 6.3 against d-exclusive adversaries, for the parameters a view
publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AlphaBetaGuarantee:
    """(d, gamma)-privacy (Theorem 4.3), usefulness (Theorem 4.4, per view: Section 4.4.1) and
    the absence of positive leakage against d-exclusive adversaries (Theorem 6.3) of an
    alpha-beta view.

    ``rho`` holds for ``view``, or for every one of the v views when ``view`` is None (the
    largest of ``rhos``, which lists views 1..v); ``r`` is the smallest r of Theorem 4.4 that
    alpha and beta meet, and the first view's rho is the theorem's for it. ``rho_as_printed``
    is Section 4.2's closed form ``2 sqrt(2 k (1 - gamma)/gamma ln(2/epsilon))`` for its
    parameters: it does not follow from Theorem 4.4 (whose r is 4k/gamma there) and falls
    below the error's 95 % quantile when gamma is large (0.5, say). ``exclusive_beta`` is
    Theorem 6.3's smallest beta, ``theorem_6_3`` whether this view meets its conditions, and
    ``exclusive_posterior`` the largest posterior a d-exclusive adversary reaches
    (`ppdp.mechanisms.alphabeta.exclusive`); all three for one view of uniform noise, None
    otherwise."""

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
    view: int | None = None
    rhos: tuple[float, ...] | None = None
    r: float | None = None
    rho_as_printed: float | None = None
    adversary: str = "independent"
    exclusive_beta: float | None = None
    theorem_6_3: bool | None = None
    exclusive_posterior: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"mechanism": "alphabeta", **vars(self)}
        if self.rhos is not None:
            data["rhos"] = list(self.rhos)
        data["statement"] = self.statement()
        return data

    def statement(self) -> str:
        if self.d is None or self.gamma is None:
            text = (f"alpha = {self.alpha:.4g}, beta = {self.beta:.4g}; give k and gamma (and a "
                    f"table, or n and m) to check (d, gamma)-privacy (Theorem 4.3)")
            return text + self._usefulness()
        text = (f"(d, gamma)-privacy with d = {self.d:.4g} (k n/m) and gamma = {self.gamma:g}: "
                f"against any tuple-independent adversary whose prior on a tuple is at most d, "
                f"the posterior is at most gamma and at least prior*d/gamma (Theorem 4.3)")
        text += self._usefulness()
        if self.views > 1:
            text += (f"; up to v = {self.views} views of the same table (Algorithm 4, Section "
                     f"4.4.1)")
        return text + self._exclusive()

    def _usefulness(self) -> str:
        """Theorem 4.4's statement, for the view or for every view."""
        if self.rho is None:
            return ""
        which = "" if self.views == 1 else (
            " of every view" if self.view is None else f" of view {self.view}")
        text = (f"; every count{which} is within rho sqrt(n) = {self.rho:.4g} sqrt(n) of the "
                f"truth with probability >= 0.95 (Theorem 4.4, r = {self.r:.4g}")
        if self.rho_as_printed is not None:
            text += (f"; Section 4.2 prints rho = {self.rho_as_printed:.4g} for these "
                     f"parameters, which does not follow from the theorem")
        text += ")"
        if self.views > 1 and self.rhos is not None:
            text += ("; rho of views 1.." + str(self.views) + ": "
                     + ", ".join(f"{x:.4g}" for x in self.rhos)
                     + ", later views being noisier (Section 4.4.1)")
        return text

    def _exclusive(self) -> str:
        """Theorem 6.3's statement against d-exclusive adversaries (join/link attacks)."""
        if self.theorem_6_3 is None or self.exclusive_beta is None:
            return ""
        posterior = (f"; the largest posterior of such an adversary on a tuple of prior <= d "
                     f"is {self.exclusive_posterior:.4g} here (Section 6.2)")
        if self.theorem_6_3:
            return (f"; against d-exclusive adversaries (exactly one of a set of tuples is in "
                    f"the table: join/link attacks) no positive leakage: alpha + beta = 1/2 "
                    f"and beta >= 2 (d/gamma)(1 - gamma)/(1 - d) = {self.exclusive_beta:.4g} "
                    f"(Theorem 6.3)" + posterior)
        return (f"; Theorem 6.3 (no positive leakage against d-exclusive adversaries: "
                f"join/link attacks) needs alpha + beta = 1/2 and beta >= 2 (d/gamma)"
                f"(1 - gamma)/(1 - d) = {self.exclusive_beta:.4g}, which this view does not "
                f"meet (adversary=exclusive chooses that beta)" + posterior)
