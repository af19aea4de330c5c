"""Ambiguity's publishing time against alpha and beta (ambiguity Section 8.2, Figure 6).

The paper times Algorithm 2 on Occ-500k (an IPUMS census extract of 500,000 rows, not
distributed) for alpha = 0.5, 0.2, 0.1 and beta = 0.1, 0.05, 0.025, and reads the figure as
"the performance is not linear to either alpha or beta": the work is t_c * m, t_c (Algorithm 3)
growing with the groups' size and the number of groups m shrinking with it, so "although alpha
and beta decide the size of QI-groups, they cannot decide the performance". Here Adult stands
in, resampled to 1,500,000 rows (`FULL_ROWS`), with occupation sensitive: its 14 values, the
most frequent in 13.4 % of the rows, allow groups of at most 7 distinct values, so beta runs
over 1/3, 1/5 and 1/7 rather than the paper's 1/10 .. 1/40.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ppdp.errors import InfeasibleError, PpdpError
from ppdp.evaluate.experiments.ambiguity import TIMED_SECONDS
from ppdp.evaluate.experiments.config import Config
from ppdp.evaluate.experiments.tables import load_table
from ppdp.evaluate.figures import bars
from ppdp.evaluate.publications import mean_std
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.evaluate.sampling import proportional_sample
from ppdp.mechanisms import Ambiguity
from ppdp.mechanisms.ambiguity.release import AmbiguityRelease
from ppdp.table.table import Table

__all__ = ["ALPHAS", "BETAS", "FULL_ROWS", "QUICK_ROWS", "ambiguity_time"]

ALPHAS = (0.5, 0.2, 0.1)
"""Figure 6's alphas."""

BETAS = (1 / 3, 1 / 5, 1 / 7)
"""The betas Adult's occupation allows (groups of 3, 5 and 7 distinct values), for Figure 6's
0.1, 0.05 and 0.025."""

FULL_ROWS = 1_500_000
"""Rows of Adult resampled with replacement for the full run. At Occ-500k's 500,000 rows and
up to 1,000,000 ppdp publishes every grid point in about a second or less (0.89-1.04 s at
1,000,000, seed 1), too short to compare; above `ppdp.plan.blocks.BLOCK_ROWS` (2^20) rows a
table is published block by block, which takes seconds."""

QUICK_ROWS = 3_000
"""Rows of Adult drawn with proportional quotas per occupation for the quick run, so that
beta = 1/7 stays feasible on every sample (`proportional_sample`)."""


def ambiguity_time(config: Config) -> ExperimentResult:
    """Ambiguity's median publishing time, number of groups and mean group size at every
    (alpha, beta) of the grid (Figure 6), and Section 8.2's claim that alpha and beta, though
    they set the group size, do not decide the run time."""
    runs = config.publications(1, 2)
    result = ExperimentResult(
        "ambiguity_time", "Ambiguity's run time against alpha and beta (ambiguity Section 8.2, "
                          "Figure 6)",
        {"dataset": "Adult, sensitive occupation; "
                    + (f"{QUICK_ROWS:,} rows with proportional quotas per occupation"
                       if config.quick else f"resampled to {FULL_ROWS:,} rows (with "
                                            f"replacement)"),
         "alpha": str(ALPHAS), "beta": "1/3, 1/5, 1/7", "publications": runs})
    result.notes.append(
        "The paper's Occ-500k (an IPUMS census extract, Section 8.1) is not distributed; Adult "
        "resampled stands in (1,500,000 rows: at 500,000 ppdp publishes in well under a "
        "second, too short to compare), and its occupation (14 values, the most "
        "frequent in 13.4 % of the rows) allows beta down to 1/7, not the paper's 0.1-0.025.")
    try:
        source = load_table(config.data, "adult", "occupation")
    except PpdpError as exc:
        result.notes.append(f"skipped: {exc}")
        return result
    table = (proportional_sample(source, QUICK_ROWS, "occupation", config.rng) if config.quick
             else source.resample(FULL_ROWS, random_state=config.rng))
    for beta in BETAS:
        for alpha in ALPHAS:
            config.step(f"ambiguity_time: alpha = {alpha:g}, beta = 1/{round(1 / beta)}")
            result.rows.append(_timed(Ambiguity(alpha=alpha, beta=beta), table, runs, config,
                                      result))
    timed = [r for r in result.rows if np.isfinite(r["publish_s"])]
    if not timed:
        return result
    result.figures.append(("ambiguity_time", bars(
        [f"beta=1/{round(1 / b)}" for b in BETAS],
        {f"alpha={a:g}": ([r["publish_s"] for r in result.rows if r["alpha"] == a],
                          [0.0] * len(BETAS)) for a in ALPHAS},
        ylabel="publish time (s, median)",
        title=f"Ambiguity's run time, Adult {table.n_rows:,} rows (Figure 6)")))
    result.claims.append(_claim(timed))
    return result


def _timed(mechanism: Ambiguity, table: Table, runs: int, config: Config,
           result: ExperimentResult) -> dict[str, Any]:
    """One grid point: ``runs`` publications' median time, groups and mean group size (NaN,
    with a note, where the sample cannot meet alpha and beta)."""
    seconds: list[float] = []
    groups: list[float] = []
    sizes: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            release = mechanism.publish(table, random_state=config.rng)
        except InfeasibleError as exc:
            result.notes.append(f"alpha = {mechanism.alpha:g}, beta = {mechanism.beta:.4g} "
                                f"skipped: {exc}")
            break
        seconds.append(time.perf_counter() - start)
        assert isinstance(release, AmbiguityRelease)
        groups.append(float(release.n_groups))
        sizes.append(float(np.mean(release.group_sizes())))
    return {"alpha": mechanism.alpha, "beta": mechanism.beta, "rows": table.n_rows,
            "publications": len(seconds),
            "publish_s": float(np.median(seconds)) if seconds else float("nan"),
            "groups": float(np.mean(groups)) if groups else float("nan"),
            "group_size_mean": mean_std(sizes)[0] if sizes else float("nan")}


def _claim(rows: list[dict[str, Any]]) -> Claim:
    """Section 8.2: alpha and beta decide the group size, not the run time. Judged by the
    spread over the grid: the run time holds to the groups' size when its largest-to-smallest
    ratio is at least theirs (the size setting the time), and does not when it is below
    (t_c * m, the work per group times the groups, moves less than the size). No verdict where
    a publication takes under `TIMED_SECONDS` (run-to-run variation exceeds the
    differences)."""
    times = [r["publish_s"] for r in rows]
    sizes = [r["group_size_mean"] for r in rows]
    time_ratio, size_ratio = max(times) / min(times), max(sizes) / min(sizes)
    fastest, slowest = min(rows, key=lambda r: r["publish_s"]), max(
        rows, key=lambda r: r["publish_s"])
    timed = min(times) >= TIMED_SECONDS
    by_beta: dict[float, list[float]] = {}
    for row in rows:
        by_beta.setdefault(row["beta"], []).append(row["publish_s"])
    return Claim(
        "Alpha and beta decide the size of the QI-groups but not the run time, which is "
        "linear in neither (Section 8.2, Figure 6)",
        f"{len(rows)} (alpha, beta) points: publish time {min(times):.2f}-{max(times):.2f} s "
        f"(x{time_ratio:.2f}; fastest at alpha = {fastest['alpha']:g}, beta = "
        f"1/{round(1 / fastest['beta'])}, slowest at alpha = {slowest['alpha']:g}, beta = "
        f"1/{round(1 / slowest['beta'])}), mean group size {min(sizes):.2f}-{max(sizes):.2f} "
        f"rows (x{size_ratio:.2f}); by beta: "
        + ", ".join(f"1/{round(1 / b)}: {min(t):.2f}-{max(t):.2f} s" for b, t in by_beta.items())
        + ("" if timed else f"; publishing takes under {TIMED_SECONDS:g} s here, too short to "
                            f"compare"),
        time_ratio < size_ratio if timed else None)
