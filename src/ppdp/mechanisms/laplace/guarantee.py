"""The Laplace mechanism's guarantee: epsilon-differential privacy per answered count of
sensitivity Delta f, composed over the answers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ppdp.mechanisms.parameters import check_int, is_real


@dataclass(frozen=True)
class LaplaceGuarantee:
    """ε-differential privacy of each count answered with discrete Laplace noise of scale b.

    Dwork et al. 2006 (Laplace mechanism), b = sensitivity / ε; the noise is the discrete
    Laplace (two-sided geometric), whose variance is 2α/(1−α)² with α = exp(−1/b).
    """

    epsilon: float
    sensitivity: float
    scale: float
    noise_variance: float

    def composed_epsilon(self, k: int) -> float:
        """The privacy loss of k answered counts under sequential composition: k·ε."""
        return check_int("k (number of answered queries)", k, 1) * self.epsilon

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return {
            "mechanism": "laplace",
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "noise_variance": self.noise_variance,
            "statement": (f"each answered count is {self.epsilon:g}-differentially private; "
                          f"k answered counts compose to k*{self.epsilon:g}"),
        }


def laplace_guarantee(*, epsilon: float, sensitivity: float = 1.0) -> LaplaceGuarantee:
    """Differential privacy of counts answered with discrete Laplace noise.

    Laplace mechanism (Dwork et al. 2006), the comparator of the SPLU-Gen paper (Section 6,
    ε = ln 2 and ln 3, sensitivity 1): each answer is ε-DP with noise scale
    b = ``sensitivity`` / ε (ε = ``epsilon`` > 0, sensitivity > 0); k answers compose to k·ε.
    """
    if not is_real(epsilon) or not math.isfinite(float(epsilon)) or float(epsilon) <= 0:
        raise ValueError(f"epsilon (privacy loss) must be a finite number with epsilon > 0, "
                         f"got {epsilon!r}")
    if (not is_real(sensitivity) or not math.isfinite(float(sensitivity))
            or float(sensitivity) <= 0):
        raise ValueError(f"sensitivity must be a finite number with sensitivity > 0, "
                         f"got {sensitivity!r}")
    eps, sens = float(epsilon), float(sensitivity)
    scale = sens / eps
    alpha = math.exp(-1.0 / scale)
    one_minus_alpha = -math.expm1(-1.0 / scale)
    variance = 2.0 * alpha / (one_minus_alpha * one_minus_alpha)
    return LaplaceGuarantee(epsilon=eps, sensitivity=sens, scale=scale, noise_variance=variance)
