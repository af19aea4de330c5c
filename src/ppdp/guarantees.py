"""Formal guarantees of SPLU-Gen and of the comparators it is evaluated against.

SPLU-Gen (Fu et al., "Small sum privacy and large sum utility in data publishing", J Biomed
Inform 2014) publishes, for every row, a value drawn uniformly from the sensitive values of its
decoy group of γ (``gamma``) rows.  A sensitive value with true count f_s is therefore published
Binomial(γ·f_s, 1/γ) times, and that count f'_s is its estimate (Theorem 2).  From this the paper
derives

* large sum utility (Section 4.1, Theorem 3 and Lemma 1): large counts are estimated within a
  relative error ε with high probability;
* small sum privacy (Section 4.2, Lemma 2; Section 5.3, Theorem 4): small counts are estimated
  with a relative error above ε with probability at least T_P.

Only numpy, scipy and the standard library are used, so this module works on its own.

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
does hold.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "AnatomyGuarantee",
    "DbrGuarantee",
    "LaplaceGuarantee",
    "SpluGuarantee",
    "anatomy_guarantee",
    "dbr_guarantee",
    "laplace_guarantee",
    "splu_accuracy_interval",
    "splu_chebyshev_error_bound",
    "splu_chebyshev_utility_threshold",
    "splu_error_bound",
    "splu_guarantee",
    "splu_privacy_probability",
    "splu_privacy_threshold",
    "splu_utility_threshold",
]


# --------------------------------------------------------------------------------------------
# validation


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _check_int(name: str, value: object, minimum: int) -> int:
    if not _is_int(value) or int(value) < minimum:  # type: ignore[call-overload]
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def _check_gamma(gamma: object) -> int:
    return _check_int("gamma (decoy-group size)", gamma, 2)


def _check_epsilon(epsilon: object, *, below_one: bool) -> float:
    allowed = "0 < epsilon < 1" if below_one else "epsilon > 0"
    if not _is_real(epsilon) or not math.isfinite(float(epsilon)):  # type: ignore[arg-type]
        raise ValueError(f"epsilon (relative error) must be a finite number with {allowed}, "
                         f"got {epsilon!r}")
    value = float(epsilon)  # type: ignore[arg-type]
    if value <= 0 or (below_one and value >= 1):
        raise ValueError(f"epsilon (relative error) must satisfy {allowed}, got {epsilon!r}")
    return value


def _check_probability(name: str, value: object) -> float:
    if not _is_real(value) or not 0 < float(value) < 1:  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a probability with 0 < {name} < 1, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_counts(f: object) -> np.ndarray:
    """``f`` as an int64 array of positive integers (any shape)."""
    if isinstance(f, np.ndarray) and f.ndim == 0:
        f = f.item()
    if np.ndim(f) == 0:
        return np.asarray(_check_int("f (true count)", f, 1), dtype=np.int64)
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


# --------------------------------------------------------------------------------------------
# SPLU-Gen: large sum utility (Section 4.1)


def splu_error_bound(*, gamma: int, epsilon: float, f: int) -> float:
    """Chebyshev bound on the chance that a count's relative error reaches epsilon.

    Section 4.1, Theorem 3 (Inequality 3): Pr(|f'_s − f_s| ≥ ε·f_s) ≤ 1 / (γ·ε²·f_s²), with
    γ = ``gamma`` (decoy-group size), ε = ``epsilon`` (relative error, > 0) and f_s = ``f``
    (true count of the sensitive value s).  The bound is clipped to 1.  As printed it is not a
    valid bound for every f_s (see the module docstring); ``splu_chebyshev_error_bound`` is.
    """
    g = _check_gamma(gamma)
    eps = _check_epsilon(epsilon, below_one=False)
    fs = _check_int("f (true count)", f, 1)
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
    fs = _check_int("f (true count)", f, 1)
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


# --------------------------------------------------------------------------------------------
# SPLU-Gen: small sum privacy (Sections 4.2 and 5.3)


def splu_accuracy_interval(*, epsilon: float, f: int) -> tuple[int, int]:
    """The published counts that estimate ``f`` within relative error epsilon, as (low, high).

    Section 4.2, Lemma 2 (summation limits): ⌈(1−ε)·f_s⌉ … ⌊(1+ε)·f_s⌋, with ε = ``epsilon``
    (0 < ε < 1) and f_s = ``f``; computed exactly from the decimal string of ε.
    """
    eps = _exact_epsilon(_check_epsilon(epsilon, below_one=True))
    return _interval(eps, _check_int("f (true count)", f, 1))


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
    upper = _check_int("a (largest protected count)", a, 1)
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
        upper = _check_int("a (largest protected count)", a, 1)
        counts = np.arange(1, upper + 1)
        probs = np.asarray(splu_privacy_probability(gamma=g, epsilon=eps, f=counts))
        by_count = tuple((int(c), float(p)) for c, p in zip(counts, probs, strict=True))
        t_p = float(probs.min())
    return SpluGuarantee(gamma=g, epsilon=eps, T_E=t_e, a=upper, T_f=t_f,
                         T_f_as_printed=t_f_printed, T_P=t_p,
                         privacy_by_count=by_count)


# --------------------------------------------------------------------------------------------
# comparators


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
    diversity = _check_int("l (diversity)", l, 2)
    return AnatomyGuarantee(l=diversity, max_inference_probability=1.0 / diversity)


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
    from ppdp.mechanisms.ambiguity_groups import association_group_size
    from ppdp.mechanisms.base import require_unit_interval

    alpha, beta = require_unit_interval("alpha", alpha), require_unit_interval("beta", beta)
    return AmbiguityGuarantee(alpha=alpha, beta=beta, diversity=association_group_size(beta))


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
    from ppdp.mechanisms.mondrian import require_diversity

    return GeneralizationGuarantee(k=_check_int("k", k, 1), l=_check_int("l (diversity)", l, 1),
                                   diversity=require_diversity(diversity))


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
        return _check_int("k (number of answered queries)", k, 1) * self.epsilon

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
    if not _is_real(epsilon) or not math.isfinite(float(epsilon)) or float(epsilon) <= 0:
        raise ValueError(f"epsilon (privacy loss) must be a finite number with epsilon > 0, "
                         f"got {epsilon!r}")
    if (not _is_real(sensitivity) or not math.isfinite(float(sensitivity))
            or float(sensitivity) <= 0):
        raise ValueError(f"sensitivity must be a finite number with sensitivity > 0, "
                         f"got {sensitivity!r}")
    eps, sens = float(epsilon), float(sensitivity)
    scale = sens / eps
    alpha = math.exp(-1.0 / scale)
    one_minus_alpha = -math.expm1(-1.0 / scale)
    variance = 2.0 * alpha / (one_minus_alpha * one_minus_alpha)
    return LaplaceGuarantee(epsilon=eps, sensitivity=sens, scale=scale, noise_variance=variance)


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
