"""SPLU-Gen's guarantees as the paper plots them: T_E against T_f (Figure 4, Lemma 1) and the
probability that a small count is missed by more than 30 % (Figure 5, Example 2, Lemma 2),
each computed and set against ppdp's SPLU-Gen publishing a table (SPLU-Gen Sections 4.1-4.2).

Both figures are about single sensitive-value concepts: a value with true count f_s is
published Binomial(gamma f_s, 1/gamma) times. Figure 4 plots Lemma 1's printed bound; next to
it stand the Chebyshev bound that does hold and the exact binomial probability (the erratum
of Theorem 3, `ppdp.mechanisms.splu.guarantee`). Figure 5 is exact; the measured points are
the share of publications whose count of a value with f_s rows missed it by more than 30 %.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Role
from ppdp.evaluate.experiments.config import Config
from ppdp.evaluate.figures import lines
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.mechanisms import SPLUGen
from ppdp.mechanisms.splu.guarantee import (
    splu_chebyshev_error_bound,
    splu_error_bound,
    splu_privacy_probability,
    splu_privacy_threshold,
)
from ppdp.table.table import Table, table_from_arrow

__all__ = ["FIGURE_5_GAMMAS", "small_count_table", "splu_bounds"]

FIGURE_4_GAMMA = 10
FIGURE_4_EPSILONS = (0.01, 0.03, 0.05, 0.07, 0.09)
FIGURE_4_COUNTS = tuple(range(100, 901, 50))
"""Figure 4's axes: gamma = 10, epsilon = 0.01..0.09, T_f = 100..900."""

FIGURE_5_GAMMAS = (5, 10, 20)
FIGURE_5_EPSILON = 0.3
SMALL_COUNTS = tuple(range(1, 11))
"""Figure 5's axes: gamma = 5, 10, 20, a relative error above 0.3, f_s = 1..10."""

FILLER_VALUES = 40
"""Values of 10 rows each beside the small counts, so that every gamma up to 20 is feasible
(the largest count, 10, at most N / gamma)."""


def small_count_table() -> Table:
    """A table whose sensitive values ``v1``..``v10`` occur 1..10 times, beside
    `FILLER_VALUES` values of 10 rows, and one quasi-identifier: each value's published count
    is its own single-value concept (Section 4.2)."""
    values = [f"v{f}" for f in SMALL_COUNTS for _ in range(f)]
    values += [f"w{i}" for i in range(FILLER_VALUES) for _ in range(10)]
    return table_from_arrow(
        pa.table({"q": np.arange(len(values)) % 7, "s": values}),
        roles={"s": Role.SENSITIVE}).declare_observed_domains(warn=False)


def splu_bounds(config: Config) -> ExperimentResult:
    """Figures 4 and 5 of SPLU-Gen (Sections 4.1-4.2) computed, with Examples 1 and 2, and
    the small-count misses measured on publications of `small_count_table`."""
    runs = config.publications(30, 500)
    result = ExperimentResult(
        "splu_bounds", "SPLU-Gen's utility and small-sum privacy bounds (SPLU-Gen Figures 4-5, "
                       "Lemmas 1-2, Examples 1-2)",
        {"Figure 4": f"gamma = {FIGURE_4_GAMMA}, epsilon = "
                     f"{', '.join(map(str, FIGURE_4_EPSILONS))}, T_f = 100..900",
         "Figure 5": f"gamma = {', '.join(map(str, FIGURE_5_GAMMAS))}, relative error above "
                     f"{FIGURE_5_EPSILON}, f_s = 1..10",
         "measured": f"{runs} publications per gamma of a table whose values occur 1..10 "
                     f"times (and {FILLER_VALUES} values of 10 rows)",
         "publications": runs})
    _figure_4(result)
    _figure_5(config, result, runs)
    return result


def _figure_4(result: ExperimentResult) -> None:
    """T_E against T_f: the printed bound, the one that holds, and the exact probability."""
    counts = np.array(FIGURE_4_COUNTS)
    series: dict[str, tuple[Any, Any, str]] = {}
    below = []
    for colour, epsilon in enumerate(FIGURE_4_EPSILONS):
        printed = np.array([splu_error_bound(gamma=FIGURE_4_GAMMA, epsilon=epsilon, f=int(f))
                            for f in counts])
        held = np.array([splu_chebyshev_error_bound(gamma=FIGURE_4_GAMMA, epsilon=epsilon,
                                                    f=int(f)) for f in counts])
        exact = np.asarray(splu_privacy_probability(gamma=FIGURE_4_GAMMA, epsilon=epsilon,
                                                    f=counts))
        for f, p, h, e in zip(counts, printed, held, exact, strict=True):
            result.rows.append({"figure": 4, "gamma": FIGURE_4_GAMMA, "epsilon": epsilon,
                                "f": int(f), "T_E_printed": float(p),
                                "T_E_chebyshev": float(h), "exact": float(e)})
        series[f"eps={epsilon:g} printed"] = (counts, printed, f"C{colour}-")
        series[f"eps={epsilon:g} exact"] = (counts, exact, f"C{colour}--")
        below.append(bool(np.all(exact <= printed)))
    result.figures.append(("splu_figure_4", lines(
        series, xlabel="T_f (true count)", ylabel="T_E: Pr(relative error >= epsilon)",
        title=f"Lemma 1 as printed (solid) and the exact probability (dashed), gamma = "
              f"{FIGURE_4_GAMMA} (Figure 4)", log=True)))
    at = {r["epsilon"]: r for r in result.rows if r["figure"] == 4 and r["f"] == counts[-1]}
    result.claims.append(Claim(
        "T_E becomes very small as the count grows towards 900: Lemma 1's printed T_E bounds "
        f"the chance of a relative error of epsilon (Section 4.1, Figure 4, gamma = "
        f"{FIGURE_4_GAMMA})",
        f"at T_f = {counts[-1]}: printed " + ", ".join(
            f"{r['T_E_printed']:.2g}" for r in at.values()) + "; exact " + ", ".join(
            f"{r['exact']:.2g}" for r in at.values()) + "; the Chebyshev bound that holds "
        + ", ".join(f"{r['T_E_chebyshev']:.2g}" for r in at.values())
        + f" (epsilon = {', '.join(f'{e:g}' for e in at)}); the exact probability is below the "
          f"printed T_E for {sum(below)} of {len(below)} epsilons (erratum of Theorem 3)",
        all(below)))


def _figure_5(config: Config, result: ExperimentResult, runs: int) -> None:
    """The sawtooth of Figure 5, Examples 1 and 2, and the misses measured on publications."""
    table = small_count_table()
    queries = [f"s = 'v{f}'" for f in SMALL_COUNTS]
    truth = np.array(SMALL_COUNTS, dtype=np.float64)
    series: dict[str, tuple[Any, Any, str]] = {}
    within = []
    for colour, gamma in enumerate(FIGURE_5_GAMMAS):
        config.step(f"splu_bounds: gamma = {gamma}, {runs} publications")
        exact = np.asarray(splu_privacy_probability(gamma=gamma, epsilon=FIGURE_5_EPSILON,
                                                    f=np.array(SMALL_COUNTS)))
        missed = np.zeros(len(SMALL_COUNTS))
        mechanism = SPLUGen(gamma=gamma)
        for _ in range(runs):
            estimates, _ = mechanism.publish(table, random_state=config.rng).count_all(queries)
            missed += np.abs(estimates - truth) > FIGURE_5_EPSILON * truth
        share = missed / runs
        # Each share is a mean of `runs` Bernoulli draws with the exact probability.
        stderr = np.sqrt(exact * (1 - exact) / runs)
        within.append(int(np.sum(np.abs(share - exact) <= 4 * stderr + 1e-12)))
        for f, e, m in zip(SMALL_COUNTS, exact, share, strict=True):
            result.rows.append({"figure": 5, "gamma": gamma, "epsilon": FIGURE_5_EPSILON,
                                "f": f, "exact": float(e), "measured": float(m),
                                "publications": runs})
        series[f"gamma={gamma}"] = (SMALL_COUNTS, exact, f"C{colour}-")
        series[f"gamma={gamma} measured"] = (SMALL_COUNTS, share, f"C{colour}o")
    result.figures.append(("splu_figure_5", lines(
        series, xlabel="f_s (true count)", ylabel="Pr(|f'_s - f_s| / f_s > 0.3)",
        title="Small sums: the sawtooth (lines) and ppdp's SPLU-Gen measured (points), "
              "Figure 5")))
    example_1 = float(splu_privacy_probability(gamma=10, epsilon=0.3, f=5))
    result.claims.append(Claim(
        "Example 1: f_s = 5, gamma = 10: the published count misses by more than 30 % with "
        "probability 0.48 (Section 4.2)", f"{example_1:.4f}", round(example_1, 2) == 0.48))
    thresholds = {g: splu_privacy_threshold(gamma=g, epsilon=FIGURE_5_EPSILON, a=3)
                  for g in FIGURE_5_GAMMAS}
    result.claims.append(Claim(
        "Example 2: for a = 3, epsilon = 0.3, SPLU-Gen with gamma = 10 gives T_P = 0.6, and "
        "the choice of gamma has little impact (Section 4.2, Figure 5, Lemma 2)",
        "T_P = " + ", ".join(f"{t:.3f} (gamma = {g})" for g, t in thresholds.items()),
        thresholds[10] >= 0.6 and max(thresholds.values()) - min(thresholds.values()) < 0.1))
    result.claims.append(Claim(
        "The published count of a value with f_s rows is Binomial(gamma f_s, 1/gamma), so the "
        "share of misses by more than 30 % follows Figure 5 (Section 4.2); measured on ppdp's "
        "SPLU-Gen, within 4 standard errors of the exact probability (30 points)",
        f"{sum(within)} of {len(within) * len(SMALL_COUNTS)} (gamma, f_s) points within, "
        f"{runs} publications each", sum(within) == len(within) * len(SMALL_COUNTS)))
