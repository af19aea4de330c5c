"""Presence attacks on tuple-level releases: alpha-beta views and FRAPP (alpha-beta paper,
Rastogi, Suciu and Hong, VLDB 2007, Definitions 2.1-2.3, Theorem 4.3 and Section 6.1).

(d, gamma)-privacy: a tuple-independent adversary whose prior that a tuple t is in the table
is at most d believes it with at most gamma after seeing the view. For a tuple that occurs
once, t in the view has likelihood a when t is in the table and b when it is not (alpha-beta:
a = alpha + beta, b = beta; FRAPP: the chance that its row stays or some replaced row lands
on it, against the chance that one lands on it), so the posterior at prior d is
``d a / (d a + (1 - d) b)``, at most gamma by Theorem 4.3 (and by the same conditions for
FRAPP's p, `ppdp.mechanisms.frapp`).

``presence`` measures a and b on the view itself: a is the share of the table's tuples that
occur once and appear in the view; b the share of the domain's other tuples in the view
(after the first alpha-beta view, both among tuples outside the earlier views V'). Its
success is the posterior at prior d with these rates; its standard error follows from the
binomial share a by the delta method. Baseline: the prior d; bound: gamma.

``repeated`` (measured in the same pass, so with the same cost): a tuple that appears twice
in an alpha-beta view was certainly in the table (the beta-step inserts distinct tuples, none
of them in the table), outside the guarantee, which covers tuples that occur once (Section
6.1: correlated tuples). It counts the individuals so exposed; for FRAPP, the posterior of a
tuple seen twice follows from the binomial counts of its copies and is reported too.

Per individual: the posterior of its own tuple's presence given how many copies the view
holds, at prior d.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.stats import binom

from ppdp.attack.report import AttackResult
from ppdp.attack.targets import Targets
from ppdp.mechanisms.alphabeta.domain import TupleDomain
from ppdp.query.codes import sorted_distinct

NAME = "presence"
REPEATED = "repeated"
ALSO = (REPEATED,)
"""The other results this attack reports."""
ADVERSARY = ("tuple-independent, prior at most d that a tuple is in the table; sees how many "
             "copies of each tuple the view holds")
SOURCE = ("alpha-beta paper (Rastogi, Suciu, Hong, VLDB 2007), Definitions 2.1-2.3 and Theorem "
          "4.3; FRAPP at the same (d, gamma) (Section 4.3)")
REPEATED_SOURCE = "alpha-beta paper, Section 6.1 (correlated tuples, outside Theorem 4.3)"


def applies(targets: Targets) -> str | None:
    """Why the attack does not apply (None: it applies)."""
    if targets.release.mechanism not in ("alphabeta", "frapp"):
        return "only alpha-beta and FRAPP promise (d, gamma)-privacy of tuples"
    if targets.release.parameters.get("gamma") is None:
        # Set by alpha and beta alone, the view states no prior d and no bound gamma to
        # measure the posterior at and against.
        return ("this alpha-beta view was set by alpha and beta, not by (d, gamma) or (k, "
                "gamma): it promises no (d, gamma)-privacy to measure")
    return None


def _prior(release: Any) -> float:
    """d: FRAPP records it; alpha-beta's beta is d/gamma (Section 4.2)."""
    if release.mechanism == "frapp":
        return float(release.parameters["d"])
    return float(release.parameters["beta"]) * float(release.parameters["gamma"])


def _copies_likelihoods(release: Any, copies: np.ndarray, earlier: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """P(c copies in the view | t in the table once) and P(c copies | t not in the table);
    ``earlier`` marks tuples of the earlier views V' (alpha-beta's Algorithm 4 rates)."""
    if release.mechanism == "alphabeta":
        rates = release.rates
        seen = np.zeros(len(copies), dtype=bool) if earlier is None else earlier
        inside = np.where(seen, rates.seen + rates.earlier, rates.unseen + rates.other)
        outside = np.where(seen, rates.earlier, rates.other)
        # Inserted tuples are distinct and never in the table: two copies or more come from
        # the table (a tuple of several rows), with certainty.
        return (np.select([copies == 0, copies == 1], [1 - inside, inside], 1.0),
                np.select([copies == 0, copies == 1], [1 - outside, outside], 0.0))
    p = float(release.parameters["retention"])
    n = release.n_rows
    q = (1 - p) / TupleDomain.of(release.schema).size
    # The row of t stays (p + q) or not; the other n - 1 rows land on t with q each.
    stays = p + q
    inside = stays * binom.pmf(copies - 1, n - 1, q) + (1 - stays) * binom.pmf(copies, n - 1, q)
    return inside, binom.pmf(copies, n, q)


def _posterior(d: float, inside: Any, outside: Any) -> Any:
    return d * inside / (d * inside + (1 - d) * outside)


def run(targets: Targets) -> list[AttackResult]:
    """The measured posterior of presence, the repeated tuples, every individual's
    posterior."""
    start = time.perf_counter()
    release: Any = targets.release
    domain = TupleDomain.of(release.schema)
    d, gamma = _prior(release), float(release.parameters["gamma"])
    table_keys = domain.keys(targets.codes)
    view_keys = domain.keys(release.codes)
    earlier = getattr(release, "earlier", None)
    earlier_keys = (sorted_distinct(domain.keys(earlier)) if earlier and len(
        next(iter(earlier.values()))) else np.zeros(0, dtype=np.int64))
    tuples, multiplicity = np.unique(table_keys, return_counts=True)
    shown, copies = np.unique(view_keys, return_counts=True)
    copies_of_tuple = _lookup(shown, copies, tuples)
    fresh = ~np.isin(tuples, earlier_keys)
    once = (multiplicity == 1) & fresh
    n_once = int(once.sum())
    share_in = float(np.mean(copies_of_tuple[once] > 0)) if n_once else float("nan")
    foreign = ~np.isin(shown, tuples) & ~np.isin(shown, earlier_keys)
    others = domain.size - len(np.union1d(tuples, earlier_keys))
    share_out = float(foreign.sum()) / others if others else float("nan")
    measured = float(_posterior(d, share_in, share_out))
    slope = d * (1 - d) * share_out / (d * share_in + (1 - d) * share_out) ** 2
    stderr = float(slope * np.sqrt(share_in * (1 - share_in) / n_once)) if n_once else np.nan
    # The model's chance that t is in the view at all (one copy or more).
    absent_in, absent_out = _copies_likelihoods(release, np.asarray([0]))
    row_tuple = np.searchsorted(tuples, table_keys)
    row_copies = copies_of_tuple[row_tuple]
    inside, outside = _copies_likelihoods(release, row_copies, ~fresh[row_tuple])
    risk = _posterior(d, inside, outside)
    seconds = time.perf_counter() - start
    twice = row_copies >= 2
    seen_twice = _posterior(d, *_copies_likelihoods(release, np.asarray([2])))
    return [
        AttackResult(
            NAME, "measured posterior that a tuple seen in the view is in the table, at prior d",
            measured, d, gamma, ADVERSARY, SOURCE, seconds,
            {"stderr": stderr, "rate_in_table": share_in, "rate_outside": share_out,
             "model_posterior": float(_posterior(d, 1 - absent_in[0], 1 - absent_out[0])),
             "tuples_once": n_once, "view_rows": release.n_rows},
            risk, "the posterior that the individual is in the table"),
        AttackResult(
            REPEATED, "share of individuals whose tuple appears at least twice in the view",
            float(twice.mean()), 0.0, None, ADVERSARY, REPEATED_SOURCE, seconds,
            {"individuals": int(twice.sum()), "posterior_seen_twice": float(seen_twice[0])},
            np.where(twice, risk, 0.0),
            "the posterior of presence for individuals whose tuple the view repeats, else 0"),
    ]


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``values`` at the positions of ``wanted`` in the sorted ``keys``, 0 where absent."""
    if not len(keys):
        return np.zeros(len(wanted), dtype=values.dtype)
    where = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[where] == wanted, values[where], 0)
