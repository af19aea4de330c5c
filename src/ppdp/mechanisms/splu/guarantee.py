"""SPLU-Gen's guarantees: large-sum utility (Section 4.1, Theorem 3, Lemma 1) and small-sum
privacy (Section 4.2, Lemma 2; Section 5.3, Theorem 4).

A sensitive value with true count f_s is published Binomial(γ·f_s, 1/γ) times, and that count
f'_s is its estimate (Theorem 2). Large counts are estimated within a relative error ε with high
probability; small counts with a relative error above ε with probability at least T_P.

The interval of estimates counted as accurate, ⌈(1−ε)f⌉ … ⌊(1+ε)f⌋, is computed exactly with
``fractions.Fraction(str(epsilon))``: in floating point ``(1 - 0.7) * 10`` is
``3.0000000000000004`` (ceiling 4, not 3) and ``(1 + 0.16) * 25`` is ``28.999999999999996``
(floor 28, not 29).

Note on Theorem 3 and Lemma 1.  The printed bound 1/(γ·ε²·f_s²) does not follow from
Chebyshev's inequality: the proof divides the variance p(1−p)/n of the sample mean by n a second
time.  Chebyshev applied to f'_s ~ Binomial(γ·f_s, 1/γ), whose variance is f_s·(1 − 1/γ), gives
Pr(|f'_s − f_s| ≥ ε·f_s) ≤ (1 − 1/γ)/(ε²·f_s), and the exact probability can exceed the printed
bound (γ = 10, ε = 0.05, f_s = 20: exact 0.906, printed bound 0.1).  ``splu_error_bound`` and
``splu_utility_threshold`` return the paper's formulas as printed;
``splu_chebyshev_error_bound`` and ``splu_chebyshev_utility_threshold`` return the bound that
does hold."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ppdp.mechanisms.parameters import check_int, is_real


def _check_gamma(gamma: object) -> int:
    return check_int("gamma (decoy-group size)", gamma, 2)


def _check_epsilon(epsilon: object, *, below_one: bool) -> float:
    allowed = "0 < epsilon < 1" if below_one else "epsilon > 0"
    if not is_real(epsilon) or not math.isfinite(float(epsilon)):
        raise ValueError(f"epsilon (relative error) must be a finite number with {allowed}, "
                         f"got {epsilon!r}")
    value = float(epsilon)
    if value <= 0 or (below_one and value >= 1):
        raise ValueError(f"epsilon (relative error) must satisfy {allowed}, got {epsilon!r}")
    return value


def _check_probability(name: str, value: object) -> float:
    if not is_real(value) or not 0 < float(value) < 1:
        raise ValueError(f"{name} must be a probability with 0 < {name} < 1, got {value!r}")
    return float(value)


def _check_counts(f: npt.ArrayLike) -> np.ndarray:
    """``f`` as an int64 array of positive integers (any shape)."""
    if isinstance(f, np.ndarray) and f.ndim == 0:
        f = f.item()
    if np.ndim(f) == 0:
        return np.asarray(check_int("f (true count)", f, 1), dtype=np.int64)
    arr = np.asarray(f)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError("f (true count) must be a positive integer or an array of positive "
                         f"integers (>= 1), got an array of dtype {arr.dtype}")
    if int(arr.min()) < 1:
        raise ValueError("f (true count) must be a positive integer or an array of positive "
                         f"integers (>= 1), got an array with minimum {int(arr.min())}")
    return arr.astype(np.int64)


def _exact_epsilon(epsilon: float) -> Fraction:
    """ε as the exact fraction its decimal string denotes (0.3 -> 3/10, not the nearest double)."""
    return Fraction(str(epsilon))


def _interval(eps: Fraction, f: int) -> tuple[int, int]:
    return math.ceil((1 - eps) * f), math.floor((1 + eps) * f)


def splu_error_bound(*, gamma: int, epsilon: float, f: int) -> float:
    """Chebyshev bound on the chance that a count's relative error reaches epsilon.

    Section 4.1, Theorem 3 (Inequality 3): Pr(|f'_s − f_s| ≥ ε·f_s) ≤ 1 / (γ·ε²·f_s²), with
    γ = ``gamma`` (decoy-group size), ε = ``epsilon`` (relative error, > 0) and f_s = ``f``
    (true count of the sensitive value s).  The bound is clipped to 1.  As printed it is not a
    valid bound for every f_s (see the module docstring); ``splu_chebyshev_error_bound`` is.
    """
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=False)
    fs = check_int("f (true count)", f, 1)
    return min(1.0, 1.0 / (g * eps * eps * fs * fs))


def splu_utility_threshold(*, gamma: int, epsilon: float, T_E: float) -> float:
    """Smallest true count whose relative error reaches epsilon with probability at most T_E.

    Section 4.1, Lemma 1: SPLU-Gen gives an (ε, T_E, T_f) utility guarantee for every sensitive
    value, T_f = (1 / (γ·ε²·T_E))^(1/2); any value with true count f_s ≥ T_f has
    Pr(|f'_s − f_s| ≥ ε·f_s) ≤ T_E.  γ = ``gamma``, ε = ``epsilon`` (> 0), T_E = ``T_E``.
    It inherits Theorem 3's flaw (see the module docstring); ``splu_chebyshev_utility_threshold``
    gives a threshold that holds.
    """
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=False)
    t_e = _check_probability("T_E", T_E)
    return math.sqrt(1.0 / (g * eps * eps * t_e))


def splu_chebyshev_error_bound(*, gamma: int, epsilon: float, f: int) -> float:
    """Chebyshev bound that holds for the chance of a relative error of at least epsilon.

    Section 4.1, Theorem 3 with the variance of f'_s ~ Binomial(γ·f_s, 1/γ) taken once:
    Pr(|f'_s − f_s| ≥ ε·f_s) ≤ (1 − 1/γ) / (ε²·f_s), clipped to 1; γ = ``gamma``,
    ε = ``epsilon`` (> 0), f_s = ``f``.
    """
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=False)
    fs = check_int("f (true count)", f, 1)
    return min(1.0, (1.0 - 1.0 / g) / (eps * eps * fs))


def splu_chebyshev_utility_threshold(*, gamma: int, epsilon: float, T_E: float) -> float:
    """Smallest true count for which the Chebyshev bound that holds is at most T_E.

    Section 4.1, Lemma 1 redone from ``splu_chebyshev_error_bound``:
    T_f = (1 − 1/γ) / (ε²·T_E); γ = ``gamma``, ε = ``epsilon`` (> 0), T_E = ``T_E``.
    """
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=False)
    t_e = _check_probability("T_E", T_E)
    return (1.0 - 1.0 / g) / (eps * eps * t_e)


def splu_accuracy_interval(*, epsilon: float, f: int) -> tuple[int, int]:
    """The published counts that estimate ``f`` within relative error epsilon, as (low, high).

    Section 4.2, Lemma 2 (summation limits): ⌈(1−ε)·f_s⌉ … ⌊(1+ε)·f_s⌋, with ε = ``epsilon``
    (0 < ε < 1) and f_s = ``f``; computed exactly from the decimal string of ε.
    """
    eps = _exact_epsilon(_check_epsilon(epsilon, below_one=True))
    return _interval(eps, check_int("f (true count)", f, 1))


def splu_privacy_probability(
    *, gamma: int, epsilon: float, f: int | npt.ArrayLike
) -> float | npt.NDArray[np.float64]:
    """Probability that the published count misses the true count by more than epsilon·f.

    Section 4.2 (Example 1, Lemma 2) and Section 5.3 (Theorem 4): the published count f'_s of a
    value with true count f_s is Binomial(γ·f_s, 1/γ), and the returned value is
    1 − Σ_{x=⌈(1−ε)f_s⌉}^{⌊(1+ε)f_s⌋} C(γf_s, x) (1/γ)^x (1 − 1/γ)^(γf_s − x), with
    γ = ``gamma``, ε = ``epsilon`` (0 < ε < 1) and f_s = ``f`` (a positive integer, or an array
    of them; an array gives an array of the same shape).  The complement is evaluated as the
    two binomial tails, cdf(⌈(1−ε)f_s⌉ − 1) + sf(⌊(1+ε)f_s⌋), which stays accurate when it is
    small.
    """
    g = _check_gamma(gamma)
    eps = _exact_epsilon(_check_epsilon(epsilon, below_one=True))
    counts = _check_counts(f)
    scalar = counts.ndim == 0
    flat = counts.reshape(-1)
    uniq, inverse = np.unique(flat, return_inverse=True)
    bounds = np.array([_interval(eps, int(v)) for v in uniq], dtype=np.int64).reshape(-1, 2)
    n = uniq * g
    p = 1.0 / g
    # scipy.stats takes half a second to import: only where a tail is computed.
    from scipy.stats import binom

    outside = binom.cdf(bounds[:, 0] - 1, n, p) + binom.sf(bounds[:, 1], n, p)
    result = np.clip(np.asarray(outside, dtype=np.float64), 0.0, 1.0)[inverse]
    if scalar:
        return float(result[0])
    return result.reshape(counts.shape)


def splu_privacy_threshold(*, gamma: int, epsilon: float, a: int) -> float:
    """The privacy level T_P that SPLU-Gen guarantees for every true count from 1 to a.

    Section 4.2, Lemma 2, and Section 5.3, Theorem 4: SPLU-Gen with parameter γ satisfies
    SSP-privacy with respect to (ε, T_P, a), where
    T_P = min_{f_s ∈ [1..a]} (1 − Σ_{x=⌈(1−ε)f_s⌉}^{⌊(1+ε)f_s⌋} Binom(γ·f_s, 1/γ)(x)),
    with γ = ``gamma``, ε = ``epsilon`` (0 < ε < 1) and a = ``a`` (an integer ≥ 1).
    """
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=True)
    upper = check_int("a (largest protected count)", a, 1)
    probs = splu_privacy_probability(gamma=g, epsilon=eps, f=np.arange(1, upper + 1))
    return float(np.min(probs))


@dataclass(frozen=True)
class SpluGuarantee:
    """The utility and privacy guarantees of SPLU-Gen for one parameter setting.

    Section 4.1 (Lemma 1) and Sections 4.2 / 5.3 (Lemma 2, Theorem 4).  ``T_f`` (set when
    ``T_E`` is given) is the threshold that holds, from Chebyshev's inequality on the binomial
    published count; ``T_f_as_printed`` is Lemma 1's formula as the paper prints it, which
    does not hold (see the module notes).  ``T_P`` and ``privacy_by_count`` (pairs (f_s,
    probability of a relative error above ε) for f_s = 1..a) are set when ``a`` is given.
    """

    gamma: int
    epsilon: float
    T_E: float | None = None
    a: int | None = None
    T_f: float | None = None
    T_f_as_printed: float | None = None
    T_P: float | None = None
    privacy_by_count: tuple[tuple[int, float], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; ``privacy_by_count`` becomes a list of {f, probability}."""
        return {
            "mechanism": "splu-gen",
            "gamma": self.gamma,
            "epsilon": self.epsilon,
            "T_E": self.T_E,
            "a": self.a,
            "T_f": self.T_f,
            "T_f_as_printed": self.T_f_as_printed,
            "T_P": self.T_P,
            "privacy_by_count": None
            if self.privacy_by_count is None
            else [{"f": f, "probability": p} for f, p in self.privacy_by_count],
        }


def splu_guarantee(
    *, gamma: int, epsilon: float, T_E: float | None = None, a: int | None = None
) -> SpluGuarantee:
    """SPLU-Gen's utility threshold T_f (if T_E is given) and privacy level T_P (if a is given).

    Section 4.1, Lemma 1 (T_f from γ, ε, T_E) and Section 4.2 Lemma 2 / Section 5.3 Theorem 4
    (T_P from γ, ε, a); γ = ``gamma``, ε = ``epsilon``.  At least one of ``T_E`` and ``a``
    must be given; with ``a``, ε must lie strictly between 0 and 1.
    """
    if T_E is None and a is None:
        raise ValueError("splu_guarantee needs T_E (for the utility threshold T_f), "
                         "a (for the privacy level T_P), or both; neither was given")
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=a is not None)
    t_e = t_f = t_f_printed = t_p = by_count = upper = None
    if T_E is not None:
        t_e = _check_probability("T_E", T_E)
        t_f = splu_chebyshev_utility_threshold(gamma=g, epsilon=eps, T_E=t_e)
        t_f_printed = splu_utility_threshold(gamma=g, epsilon=eps, T_E=t_e)
    if a is not None:
        upper = check_int("a (largest protected count)", a, 1)
        counts = np.arange(1, upper + 1)
        probs = np.asarray(splu_privacy_probability(gamma=g, epsilon=eps, f=counts))
        by_count = tuple((int(c), float(p)) for c, p in zip(counts, probs, strict=True))
        t_p = float(probs.min())
    return SpluGuarantee(gamma=g, epsilon=eps, T_E=t_e, a=upper, T_f=t_f,
                         T_f_as_printed=t_f_printed, T_P=t_p,
                         privacy_by_count=by_count)
