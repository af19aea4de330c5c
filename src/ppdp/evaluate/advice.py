"""Parameter advice: for a privacy target stated once, each mechanism's parameters that meet
it, the paper's bound on its error where one exists, or why no parameter can meet it.

A target is one of four notions, each the guarantee of one family of papers:

- ``small-count:a=3,eps=0.3[,tp=0.5]`` (`SmallCountPrivacy`): SPLU-Gen's small-sum privacy
  (Section 4.2): every true count from 1 to a is estimated with a relative error above eps
  with probability at least T_P (``tp``, default 0.5: a small count is at least as likely to
  be missed by more than eps as recovered within it);
- ``beta=0.2[,alpha=0.1]`` (`AssociationPrivacy`): no one is linked to a sensitive value with
  probability above beta (ambiguity Theorem 5.2's association c/|G|; Anatomy's l-diversity
  with 1/l <= beta; Mondrian with frequency l-diversity); with alpha, also no tuple's presence
  above alpha (ambiguity Theorem 5.1);
- ``rho1=1/13,rho2=0.2`` (`PosteriorPrivacy`): (rho1, rho2)-privacy (Small Domain
  Randomization Section 3.2): a value whose prior is at most rho1 has a posterior of at most
  rho2; the group mechanisms are held to an association of at most rho2, as Small Domain
  Randomization Section 6.2 compares Anatomy (l = L with rho2 = 1/L);
- ``k=10,gamma=0.2`` or ``d=0.0005,gamma=0.2`` (`TuplePrivacy`): (d, gamma)-privacy of whole
  tuples (alpha-beta Theorem 4.3), d = k n/m.

Each mechanism is advised by `advise`: SPLU-Gen the smallest gamma whose T_P (Theorem 4)
reaches tp for counts up to a; uniform perturbation and sdr (rho1, rho2) as stated; alpha-beta
and FRAPP (k, gamma); ambiguity (alpha, beta); Anatomy l = ceil(1/beta); Mondrian
k = l = ceil(1/beta) with frequency l-diversity. A mechanism whose guarantee is of another
notion, or whose parameters the data cannot meet (a sensitive value more frequent than beta
of the rows, say), gets the reason instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ppdp.data.schema import list_names
from ppdp.errors import PpdpError
from ppdp.mechanisms import FRAPP, AlphaBeta, PerturbationPartitioning, UniformPerturbation
from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.mechanisms.base import get_mechanism
from ppdp.mechanisms.grouping import largest_feasible_size
from ppdp.mechanisms.presence import association_group_size
from ppdp.mechanisms.sdr.formulas import check_privacy
from ppdp.mechanisms.splu.guarantee import (
    splu_chebyshev_utility_threshold,
    splu_privacy_threshold,
)
from ppdp.table.table import Table

__all__ = ["MECHANISMS", "PRIVACY_FORMS", "Advice", "AssociationPrivacy", "PosteriorPrivacy",
           "PredictedError", "PrivacyTarget", "SmallCountPrivacy", "TuplePrivacy", "advise",
           "parse_privacy", "splu_gamma_for"]

MECHANISMS = ("splu", "anatomy", "dbr", "laplace", "uniform", "sdr", "alphabeta", "frapp",
              "ambiguity", "mondrian")
"""Every registered mechanism, in the order advice and comparisons list them."""

CONFIDENCE = 0.95
"""The confidence at which predicted errors are stated (T_E = 0.05 for SPLU-Gen)."""


# -- targets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmallCountPrivacy:
    """SPLU-Gen's small-sum privacy (Section 4.2, Lemma 2, Theorem 4): every count 1..a is
    missed by more than a relative error epsilon with probability at least T_P."""

    a: int
    epsilon: float
    t_p: float = 0.5

    kind = "small-count"

    def __post_init__(self) -> None:
        if isinstance(self.a, bool) or not isinstance(self.a, int) or self.a < 1:
            raise ValueError(f"small-count privacy: a (largest protected count) must be an "
                             f"integer >= 1, got {self.a!r}")
        _open_unit("eps", self.epsilon)
        _open_unit("tp", self.t_p)

    @property
    def bounds(self) -> dict[str, float]:
        """The largest value each measured privacy may take (see `measured_privacy`)."""
        return {"small_count_recovered": 1 - self.t_p}

    def text(self) -> str:
        return f"small-count:a={self.a},eps={_shown(self.epsilon)},tp={_shown(self.t_p)}"

    def describe(self) -> str:
        return (f"no true count from 1 to {self.a} is recovered within {self.epsilon:.0%} with "
                f"probability above {1 - self.t_p:.3g} (SPLU-Gen's small-sum privacy, Section "
                f"4.2: T_P = {self.t_p:g})")


@dataclass(frozen=True)
class AssociationPrivacy:
    """beta-association (ambiguity Theorem 5.2; 1/l of Anatomy and frequency l-diversity) and,
    when alpha is given, alpha-presence (ambiguity Theorem 5.1)."""

    beta: float
    alpha: float | None = None

    kind = "association"

    def __post_init__(self) -> None:
        _open_unit("beta", self.beta)
        if self.alpha is not None:
            _open_unit("alpha", self.alpha, closed=True)

    @property
    def bounds(self) -> dict[str, float]:
        bounds = {"association": self.beta}
        if self.alpha is not None:
            bounds["presence"] = self.alpha
        return bounds

    def text(self) -> str:
        return f"beta={_shown(self.beta)}" + (
            "" if self.alpha is None else f",alpha={_shown(self.alpha)}")

    def describe(self) -> str:
        text = (f"no one is linked to a sensitive value with probability above {self.beta:.3g} "
                f"(association c/|G|, ambiguity Theorem 5.2)")
        if self.alpha is not None:
            text += (f", and no tuple's presence is above {self.alpha:.3g} (ambiguity "
                     f"Theorem 5.1)")
        return text


@dataclass(frozen=True)
class PosteriorPrivacy:
    """(rho1, rho2)-privacy (Small Domain Randomization Section 3.2)."""

    rho1: float
    rho2: float

    kind = "rho"

    def __post_init__(self) -> None:
        check_privacy(self.rho1, self.rho2)

    @property
    def bounds(self) -> dict[str, float]:
        return {"posterior": self.rho2, "association": self.rho2}

    def text(self) -> str:
        return f"rho1={_shown(self.rho1)},rho2={_shown(self.rho2)}"

    def describe(self) -> str:
        return (f"a sensitive value whose prior is at most {self.rho1:.3g} has a posterior of "
                f"at most {self.rho2:.3g} ((rho1, rho2)-privacy, Small Domain Randomization "
                f"Section 3.2); group mechanisms are held to an association of at most "
                f"{self.rho2:.3g}, as Section 6.2 compares Anatomy")


@dataclass(frozen=True)
class TuplePrivacy:
    """(d, gamma)-privacy of whole tuples (alpha-beta Theorem 4.3), with d = k n/m given as k
    or as d."""

    gamma: float
    k: float | None = None
    d: float | None = None

    kind = "tuple"

    def __post_init__(self) -> None:
        _open_unit("gamma", self.gamma)
        if (self.k is None) == (self.d is None):
            raise ValueError("(d, gamma)-privacy takes k (d = k n/m) or d, not both or "
                             "neither: e.g. k=10,gamma=0.2")
        if self.k is not None and not (math.isfinite(self.k) and self.k > 0):
            raise ValueError(f"k must be a positive number, got {self.k!r}")
        if self.d is not None:
            _open_unit("d", self.d)

    def k_for(self, table: Table) -> float:
        """k of d = k n/m for this table's n rows and tuple domain of m tuples."""
        if self.k is not None:
            return self.k
        return self._d() * _tuple_domain_size(table) / table.n_rows

    def _d(self) -> float:
        """d, given when k is not (`__post_init__` holds exactly one of them)."""
        if self.d is None:
            raise ValueError("(d, gamma)-privacy without d takes k")
        return float(self.d)

    @property
    def bounds(self) -> dict[str, float]:
        return {"tuple_posterior": self.gamma}

    def text(self) -> str:
        prior = f"k={_shown(self.k)}" if self.k is not None else f"d={_shown(self._d())}"
        return f"{prior},gamma={_shown(self.gamma)}"

    def describe(self) -> str:
        prior = f"k n/m with k = {self.k:g}" if self.k is not None else f"{self.d:g}"
        return (f"a tuple whose prior is at most d = {prior} has a posterior of at most "
                f"{self.gamma:g} of being in the table ((d, gamma)-privacy, alpha-beta Theorem "
                f"4.3)")


PrivacyTarget = SmallCountPrivacy | AssociationPrivacy | PosteriorPrivacy | TuplePrivacy

_FORMS: dict[str, tuple[Callable[..., PrivacyTarget], frozenset[str], frozenset[str]]] = {
    # name -> (target, keys it needs, keys it may take)
    "small-count": (SmallCountPrivacy, frozenset({"a", "eps"}), frozenset({"a", "eps", "tp"})),
    "association": (AssociationPrivacy, frozenset({"beta"}), frozenset({"beta", "alpha"})),
    "rho": (PosteriorPrivacy, frozenset({"rho1", "rho2"}), frozenset({"rho1", "rho2"})),
    "tuple": (TuplePrivacy, frozenset({"gamma"}), frozenset({"gamma", "k", "d"})),
}
_ARGUMENTS = {"eps": "epsilon", "tp": "t_p"}

PRIVACY_FORMS = ("small-count:a=3,eps=0.3[,tp=0.5]", "beta=0.2[,alpha=0.1]",
                 "rho1=1/13,rho2=0.2", "k=10,gamma=0.2 (or d=...,gamma=...)")


def parse_privacy(text: str) -> PrivacyTarget:
    """A privacy target from its text: comma-separated ``key=value`` pairs whose keys name the
    form (see the module doc), optionally after the form's name and a colon
    (``small-count:``, ``association:``, ``rho:``, ``tuple:``); values are numbers or
    fractions such as ``1/13``."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"--privacy takes one of {'; '.join(PRIVACY_FORMS)}")
    name, colon, rest = text.partition(":")
    named = name.strip().lower() if colon else None
    pairs: dict[str, str] = {}
    for item in (rest if colon else text).split(","):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not key or not value.strip():
            raise ValueError(f"privacy {text!r}: {item.strip()!r} is not key=value; forms: "
                             f"{'; '.join(PRIVACY_FORMS)}")
        if key in pairs:
            raise ValueError(f"privacy {text!r}: {key} is given twice")
        pairs[key] = value.strip()
    forms = [form for form, (_, needed, allowed) in _FORMS.items()
             if needed <= pairs.keys() <= allowed]
    if named is not None and named not in _FORMS:
        raise ValueError(f"privacy {text!r}: unknown form {named!r}; forms: "
                         f"{', '.join(_FORMS)}")
    if len(forms) != 1 or (named is not None and forms[0] != named):
        raise ValueError(f"privacy {text!r} names none of the forms: "
                         f"{'; '.join(PRIVACY_FORMS)}")
    target, _, _ = _FORMS[forms[0]]
    values: dict[str, Any] = {_ARGUMENTS.get(k, k): _number(k, v) for k, v in pairs.items()}
    if "a" in values:
        if not float(values["a"]).is_integer():
            raise ValueError(f"small-count privacy: a must be a whole count, got {pairs['a']}")
        values["a"] = int(values["a"])
    return target(**values)


def _number(key: str, value: str) -> float:
    try:
        number = float(Fraction(value))
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"privacy: {key} must be a number or a fraction such as 1/13, got "
                         f"{value!r}") from None
    return number


def _shown(value: float) -> str:
    """A number as ``parse_privacy`` reads it back exactly: short decimals as they are, others
    as a fraction when one with a small denominator is exact (1/13)."""
    text = repr(float(value))
    fraction = Fraction(value).limit_denominator(10_000)
    if len(text) > 8 and float(fraction) == value:
        return f"{fraction.numerator}/{fraction.denominator}"
    return text.removesuffix(".0")


def _open_unit(name: str, value: float, *, closed: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 < value < 1 or (closed and value == 1)):
        interval = "(0, 1]" if closed else "(0, 1)"
        raise ValueError(f"privacy: {name} must lie in {interval}, got {value!r}")


def _tuple_domain_size(table: Table) -> int:
    return TupleDomain.of(table.schema).size


# -- advice ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PredictedError:
    """A paper's bound on the absolute error of a count, ``constant + sqrt_factor * sqrt(f)``
    for a true count f, holding with probability at least ``confidence``; ``scope`` says which
    counts it covers: ``"values"`` (each sensitive value's count over the whole table) or
    ``"any"`` (every count)."""

    source: str
    scope: str
    confidence: float
    constant: float = 0.0
    sqrt_factor: float = 0.0
    note: str = ""

    def absolute(self, truth: np.ndarray) -> np.ndarray:
        """The bound for each true count."""
        return self.constant + self.sqrt_factor * np.sqrt(np.asarray(truth, dtype=np.float64))

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "scope": self.scope, "confidence": self.confidence,
                "constant": self.constant, "sqrt_factor": self.sqrt_factor, "note": self.note}


@dataclass(frozen=True)
class Advice:
    """One mechanism's parameters for a target (None when no parameter meets it), how they
    were found or why none can be, and the predicted error where a paper bounds it."""

    mechanism: str
    parameters: dict[str, Any] | None
    reason: str
    predicted: PredictedError | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Values behind the choice (T_P of the advised gamma, retention, ...), for reports."""

    @property
    def eligible(self) -> bool:
        return self.parameters is not None

    def build(self, hierarchies: Mapping[str, Any] | None = None) -> Any:
        """The configured mechanism (Mondrian generalizes by ``hierarchies`` when given)."""
        if self.parameters is None:
            raise ValueError(f"{self.mechanism} cannot meet the target: {self.reason}")
        extra = {"hierarchies": hierarchies} if self.mechanism == "mondrian" and hierarchies \
            else {}
        return get_mechanism(self.mechanism)(**self.parameters, **extra)

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "eligible": self.eligible,
                "parameters": self.parameters, "reason": self.reason,
                "predicted": None if self.predicted is None else self.predicted.to_dict(),
                **self.extra}


def splu_gamma_for(*, a: int, epsilon: float, t_p: float, largest: int) -> int | None:
    """The smallest gamma in 2..``largest`` whose T_P (Theorem 4) for counts 1..a is at least
    ``t_p``; None when none is."""
    for gamma in range(2, largest + 1):
        if splu_privacy_threshold(gamma=gamma, epsilon=epsilon, a=a) >= t_p:
            return gamma
    return None


def advise(table: Table, target: PrivacyTarget | str) -> list[Advice]:
    """Every mechanism of `MECHANISMS`, configured for ``target`` on ``table`` (one sensitive
    column) or with the reason it cannot be."""
    if isinstance(target, str):
        target = parse_privacy(target)
    sensitive = table.schema.sensitive
    if len(sensitive) != 1:
        raise ValueError(f"advice needs exactly one sensitive column; the table has "
                         f"{len(sensitive)}: {list_names(sensitive) or 'none'}")
    facts = _Facts.of(table, sensitive[0])
    return [_ADVISERS[name](facts, target) for name in MECHANISMS]


@dataclass(frozen=True)
class _Facts:
    """What advice needs from the table."""

    table: Table
    sensitive: str
    largest_group: int
    """The largest number of distinct values a group of every row can take: N // f_max
    (SPLU-Gen's and Anatomy's eligibility; ambiguity's and frequency l-diversity's too)."""
    top_share: float
    top_value: Any

    @classmethod
    def of(cls, table: Table, sensitive: str) -> _Facts:
        codes = table.codes[sensitive]
        column = table.schema[sensitive]
        counts = np.bincount(codes, minlength=column.size)
        top = int(np.argmax(counts))
        return cls(table, sensitive, largest_feasible_size(codes, column.size),
                   float(counts[top] / max(table.n_rows, 1)), column.domain[top])

    def group_size_reason(self, size: int, symbol: str) -> str | None:
        """Why groups of ``size`` distinct values cannot hold every row, if they cannot."""
        if size <= self.largest_group:
            return None
        return (f"{symbol} = {size} is infeasible: {self.top_value!r} makes up "
                f"{self.top_share:.1%} of {self.sensitive!r}, more than 1/{size} of the rows, "
                f"so no grouping meets it (the largest feasible is {self.largest_group})")


def _notion(target: PrivacyTarget) -> str:
    return {"small-count": "small-count privacy", "association": "an association bound",
            "rho": "(rho1, rho2)-privacy", "tuple": "(d, gamma)-privacy"}[target.kind]


def _splu(facts: _Facts, target: PrivacyTarget) -> Advice:
    if not isinstance(target, SmallCountPrivacy):
        return Advice("splu", None, f"SPLU-Gen's guarantee is small-sum privacy (Section 4.2, "
                                    f"Theorem 4), not {_notion(target)}: its decoy groups "
                                    f"bound how well small counts are recovered, not a "
                                    f"posterior; state --privacy small-count:a=..,eps=..")
    gamma = splu_gamma_for(a=target.a, epsilon=target.epsilon, t_p=target.t_p,
                           largest=facts.largest_group)
    if gamma is None:
        if facts.largest_group < 2:
            why = f"no decoy group of 2 distinct values holds every row ({facts.top_value!r} " \
                  f"makes up {facts.top_share:.1%} of {facts.sensitive!r})"
        else:
            reached = splu_privacy_threshold(gamma=facts.largest_group,
                                             epsilon=target.epsilon, a=target.a)
            why = (f"T_P reaches only {reached:.3f} < {target.t_p:g} at the largest feasible "
                   f"gamma = {facts.largest_group} ({facts.top_value!r} makes up "
                   f"{facts.top_share:.1%} of the rows)")
        return Advice("splu", None, why)
    t_p = splu_privacy_threshold(gamma=gamma, epsilon=target.epsilon, a=target.a)
    below = splu_privacy_threshold(gamma=gamma - 1, epsilon=target.epsilon, a=target.a) \
        if gamma > 2 else None
    t_f = splu_chebyshev_utility_threshold(gamma=gamma, epsilon=target.epsilon,
                                           T_E=1 - CONFIDENCE)
    reason = (f"the smallest gamma with T_P >= {target.t_p:g} for counts 1..{target.a} "
              f"(Theorem 4): T_P = {t_p:.4f}"
              + ("" if below is None else f" (gamma = {gamma - 1}: {below:.4f})"))
    predicted = PredictedError(
        "SPLU-Gen Lemma 1 / Theorem 3 with Chebyshev on the binomial published count "
        "(the bound that holds; see Guarantees)", "values", CONFIDENCE,
        sqrt_factor=math.sqrt((1 - 1 / gamma) / (1 - CONFIDENCE)),
        note=f"T_f = {t_f:.4g}: a value's count of at least T_f is within "
             f"{target.epsilon:.0%} with probability >= {CONFIDENCE:g}")
    return Advice("splu", {"gamma": gamma}, reason, predicted, {"T_P": t_p, "T_f": t_f})


def _association_size(target: PrivacyTarget) -> int | None:
    """ceil(1/bound) for targets held by association, else None."""
    if isinstance(target, AssociationPrivacy):
        return association_group_size(target.beta)
    if isinstance(target, PosteriorPrivacy):
        return association_group_size(target.rho2)
    return None


def _grouping_size(mechanism: str, facts: _Facts, target: PrivacyTarget, *, bounds: str,
                   no_presence: str, smallest: int = 1) -> int | Advice:
    """The size ceil(1/bound) (at least ``smallest``) of the groups or classes that hold an
    association target, or the Advice refusing the target: another notion (the mechanism
    ``bounds`` something else), a presence bound alpha (``no_presence`` says why not), or data
    that rule that size out."""
    size = _association_size(target)
    if size is None:
        return Advice(mechanism, None, f"{bounds}, not {_notion(target)}")
    if isinstance(target, AssociationPrivacy) and target.alpha is not None:
        return Advice(mechanism, None, no_presence)
    size = max(size, smallest)
    why = facts.group_size_reason(size, "l")
    return size if why is None else Advice(mechanism, None, why)


def _anatomy(facts: _Facts, target: PrivacyTarget) -> Advice:
    size = _grouping_size(
        "anatomy", facts, target, bounds="Anatomy's l-diversity bounds association (1/l)",
        no_presence="Anatomy publishes every quasi-identifier tuple as it is (its QIT), so it "
                    "bounds no presence probability (alpha)", smallest=2)
    if isinstance(size, Advice):
        return size
    how = ("l = ceil(1/beta): association at most 1/l" if isinstance(target, AssociationPrivacy)
           else "l = ceil(1/rho2), as Small Domain Randomization Section 6.2 compares Anatomy "
                "(rho2 = 1/L): association at most 1/l")
    return Advice("anatomy", {"l": size}, how)


def _dbr(facts: _Facts, target: PrivacyTarget) -> Advice:
    return Advice("dbr", None, "DBR has no formal guarantee: it redraws each value from the "
                               "column's marginal and discloses that marginal")


def _laplace(facts: _Facts, target: PrivacyTarget) -> Advice:
    return Advice("laplace", None, "Laplace counts publish nothing: each answer spends epsilon "
                                   "and k answers spend k epsilon, so repeated answers recover "
                                   "any count; there is no release to hold to the target")


def _perturbation(name: str, facts: _Facts, target: PrivacyTarget) -> Advice:
    if not isinstance(target, PosteriorPrivacy):
        return Advice(name, None, f"(rho1, rho2)-privacy bounds the posterior of values rarer "
                                  f"than rho1 (Small Domain Randomization Section 3.2), not "
                                  f"{_notion(target)}; state --privacy rho1=..,rho2=..")
    parameters = {"rho1": target.rho1, "rho2": target.rho2}
    mechanism = (UniformPerturbation if name == "uniform" else PerturbationPartitioning)(
        **parameters)
    try:
        guarantee = mechanism.guarantee(facts.table)
    except PpdpError as exc:
        return Advice(name, None, str(exc))
    # The table gives n and m, so the bound is known.
    assert guarantee.epsilon is not None
    statistics = guarantee.partition_statistics()
    source = ("Small Domain Randomization Theorem 2, Eq. 11" if name == "uniform"
              else "Small Domain Randomization Eq. 12 (the partition's bound)")
    predicted = PredictedError(
        source, "values", 1 - guarantee.delta,
        constant=float(guarantee.epsilon) * facts.table.n_rows,
        note=f"every value's reconstructed frequency within eps = {guarantee.epsilon:.4g} of "
             f"the truth, together")
    how = (f"gamma = {guarantee.gamma:.4g} from (rho1, rho2) (Eq. 6), retention p = "
           f"{statistics['row_weighted_retention']:.4g}" if name == "uniform" else
           f"{statistics['subtables']} sub-tables, mean gamma_i = "
           f"{statistics['mean_gamma']:.4g}, retention {statistics['row_weighted_retention']:.4g}"
           f" (rows weighted; Section 5)")
    return Advice(name, parameters, how, predicted,
                  {"retention": statistics["row_weighted_retention"],
                   "epsilon": guarantee.epsilon})


def _uniform(facts: _Facts, target: PrivacyTarget) -> Advice:
    return _perturbation("uniform", facts, target)


def _sdr(facts: _Facts, target: PrivacyTarget) -> Advice:
    return _perturbation("sdr", facts, target)


def _not_tuples(name: str, target: PrivacyTarget) -> Advice:
    return Advice(name, None, f"(d, gamma)-privacy of whole tuples (alpha-beta Theorem 4.3) "
                              f"bounds whether a tuple is in the table, not {_notion(target)}; "
                              f"state --privacy k=..,gamma=..")


def _alphabeta(facts: _Facts, target: PrivacyTarget) -> Advice:
    if not isinstance(target, TuplePrivacy):
        return _not_tuples("alphabeta", target)
    try:
        k = target.k_for(facts.table)
        guarantee = AlphaBeta(k=k, gamma=target.gamma).guarantee(facts.table)
    except PpdpError as exc:
        return Advice("alphabeta", None, str(exc))
    # Theorem 4.4's rho, for the r of the view's alpha and beta (none for a table of no rows).
    predicted = None if guarantee.rho is None else PredictedError(
        "alpha-beta Theorem 4.4 ((rho, 0.05)-usefulness)", "any", CONFIDENCE,
        constant=float(guarantee.rho) * math.sqrt(facts.table.n_rows),
        note=f"every count within rho sqrt(n) = {guarantee.rho:.4g} sqrt(n)")
    return Advice("alphabeta", {"k": k, "gamma": target.gamma},
                  f"alpha = {guarantee.alpha:.4g}, beta = {guarantee.beta:.4g} (Section 4.2: "
                  f"alpha + beta = 1/2, beta = d/gamma); expected view of "
                  f"{guarantee.expected_view_size:,.0f} tuples", predicted,
                  {"alpha": guarantee.alpha, "beta": guarantee.beta, "d": guarantee.d})


def _frapp(facts: _Facts, target: PrivacyTarget) -> Advice:
    if not isinstance(target, TuplePrivacy):
        return _not_tuples("frapp", target)
    try:
        k = target.k_for(facts.table)
        guarantee = FRAPP(k=k, gamma=target.gamma).guarantee(facts.table)
    except PpdpError as exc:
        return Advice("frapp", None, str(exc))
    return Advice("frapp", {"k": k, "gamma": target.gamma},
                  f"retention p = {guarantee.retention:.4g}, the largest with (d, gamma)-privacy "
                  f"(see frapp)", None, {"retention": guarantee.retention, "d": guarantee.d})


def _ambiguity(facts: _Facts, target: PrivacyTarget) -> Advice:
    if isinstance(target, AssociationPrivacy):
        alpha = 1.0 if target.alpha is None else target.alpha
        beta = target.beta
        how = "beta as stated" + (", alpha = 1: no presence bound stated" if target.alpha
                                  is None else ", alpha as stated")
    elif isinstance(target, PosteriorPrivacy):
        alpha, beta = 1.0, target.rho2
        how = "beta = rho2 (association at most rho2); alpha = 1: no presence bound stated"
    else:
        return Advice("ambiguity", None, f"ambiguity bounds association (beta) and presence "
                                         f"(alpha), not {_notion(target)}")
    size = association_group_size(beta)
    why = facts.group_size_reason(size, "ceil(1/beta)")
    if why is not None:
        return Advice("ambiguity", None, why)
    return Advice("ambiguity", {"alpha": alpha, "beta": beta},
                  f"{how}; groups of at least {size} distinct values (Algorithm 2)")


def _mondrian(facts: _Facts, target: PrivacyTarget) -> Advice:
    size = _grouping_size(
        "mondrian", facts, target,
        bounds="Mondrian's k-anonymity and l-diversity bound association",
        no_presence="generalization bounds no presence probability (alpha): a class whose "
                    "generalized values cover only its own tuples has presence 1")
    if isinstance(size, Advice):
        return size
    bound = "beta" if isinstance(target, AssociationPrivacy) else "rho2"
    return Advice("mondrian", {"k": size, "l": size, "diversity": "frequency"},
                  f"frequency l-diversity with l = k = ceil(1/{bound}): no value above 1/l of "
                  f"a class (the matched baseline of the ambiguity comparison)")


_ADVISERS = {"splu": _splu, "anatomy": _anatomy, "dbr": _dbr, "laplace": _laplace,
             "uniform": _uniform, "sdr": _sdr, "alphabeta": _alphabeta, "frapp": _frapp,
             "ambiguity": _ambiguity, "mondrian": _mondrian}
