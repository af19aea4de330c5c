"""The attack sweep as an experiment: each mechanism attacked at several settings of its
privacy parameter on Adult, set against the bounds the papers prove (`ppdp.attack`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp import datasets
from ppdp.evaluate.attack_sweep import attack_sweep, default_sweeps
from ppdp.evaluate.experiments.config import Config
from ppdp.evaluate.figures import png
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.evaluate.sampling import proportional_sample
from ppdp.table.table import Table

__all__ = ["ATTACK_QUICK_ROWS", "attack", "attack_table"]

ATTACK_QUICK_ROWS = 2000
"""Rows of Adult drawn for the quick attack sweep."""


def attack_table(config: Config) -> Table:
    """Adult with sensitive occupation; for ``quick``, `ATTACK_QUICK_ROWS` of its rows drawn
    with proportional quotas per occupation (`proportional_sample`), so that every group size
    of the sweeps that Adult allows (gamma and l up to 7) stays feasible on the sample."""
    table = datasets.adult(observed_domains=True, sensitive="occupation")
    if config.quick:
        table = proportional_sample(table, ATTACK_QUICK_ROWS, "occupation", config.rng)
    return table


def attack(config: Config) -> ExperimentResult:
    """Attack success against each mechanism's privacy parameter on Adult (`ppdp.attack`),
    against the bound each paper proves (SPLU-Gen Theorem 4, Small Domain Randomization
    Theorem 1 and Corollary 1, alpha-beta Theorem 4.3, k-anonymity, Kifer 2009)."""
    table = attack_table(config)
    runs = config.publications(1, 3)
    sweeps = default_sweeps(config.quick)
    sweep = attack_sweep(table, sweeps, runs=runs, rng=config.rng, step=config.step)
    rows = sweep.rows
    result = ExperimentResult(
        "attack", "Attack success against each mechanism's privacy parameter (ppdp attack)",
        {"dataset": f"Adult ({table.n_rows:,} rows), sensitive occupation",
         "sweeps": "; ".join(f"{s.mechanism}: {s.parameter} = "
                             + ", ".join(f"{v:.3g}" for v in s.values) for s in sweeps),
         "fixed": "uniform/sdr rho1 = 1/13; ambiguity alpha = 0.1; Mondrian l = 2 (distinct); "
                  "alpha-beta/FRAPP k = 10",
         "publications": runs, "skipped": len(sweep.skipped)}, rows=rows)
    result.notes += sweep.skipped
    result.figures.append(("attack_success", _attack_figure(rows)))
    _attack_claims(result, rows)
    repeated = [r for r in rows if r["attack"] == "repeated" and r["mechanism"] == "alphabeta"]
    if repeated:
        result.notes.append(
            "A tuple that appears twice in an alpha-beta view was certainly in the table "
            "(inserted tuples are distinct and never in it), outside Theorem 4.3's "
            "tuple-independent adversary: " + ", ".join(
                f"gamma = {r['value']:.3g}: {r['success']:.1%} of the individuals"
                for r in repeated) + ".")
    return result


def _within(row: dict[str, Any]) -> bool:
    """The success at most the bound, up to three of its standard errors where the attack
    reports one (else exactly)."""
    margin = 3 * row["stderr"] if np.isfinite(row["stderr"]) else 0.0
    return bool(row["success"] <= row["bound"] + margin)


def _attack_claims(result: ExperimentResult, rows: list[dict[str, Any]]) -> None:
    """The bounds each paper proves, and the one the deFinetti attack breaks."""
    def of(mechanism: str, attack: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["mechanism"] == mechanism and r["attack"] == attack]

    def listed(selected: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['parameter']} = {r['value']:.3g}: {r['success']:.3f} (bound "
                         f"{r['bound']:.3f})" for r in selected)

    seen = "the posterior of a value seen in the release, at prior rho1, stays within rho2"
    present = "the posterior that a tuple seen once is in the table stays within gamma at prior d"
    for mechanism, attack, claim in (
            ("uniform", "posterior", f"{seen} (Small Domain Randomization, Theorem 1); "
                                     f"measured on linked rows"),
            ("sdr", "posterior", f"{seen} (Small Domain Randomization, Corollary 1); measured "
                                 f"on linked rows"),
            ("alphabeta", "presence", f"{present} (alpha-beta paper, Theorem 4.3)"),
            ("frapp", "presence", f"{present} (alpha-beta paper, Theorem 4.3)")):
        selected = of(mechanism, attack)
        if selected:
            result.claims.append(Claim(f"{mechanism}: {claim}, within 3 standard errors",
                                       listed(selected), all(_within(r) for r in selected)))
    selected = of("splu", "small_counts")
    if selected:
        result.claims.append(Claim(
            "SPLU-Gen: counts 1..3 are estimated within 30 % with probability at most 1 - T_P "
            "(Section 5.3, Theorem 4); here every (quasi-identifier combination, occupation) "
            "cell, by the adversary's better estimate; within 3 standard errors",
            listed(selected), all(_within(r) for r in selected)))
    selected = of("mondrian", "linkage")
    if selected:
        result.claims.append(Claim(
            "Mondrian: no individual's record is re-identified with probability above 1/k "
            "(k-anonymity)", ", ".join(f"k = {r['value']:.0f}: largest {r['risk_max']:.3f}"
                                       for r in selected),
            all(r["risk_max"] <= r["bound"] * (1 + 1e-9) for r in selected)))
    selected = of("anatomy", "definetti")
    if selected:
        result.claims.append(Claim(
            "Anatomy's 1/l bounds the inference of a sensitive value only for an adversary "
            "who learns no correlation; the deFinetti attack exceeds it (Kifer 2009, Sections "
            "5-6)", listed(selected), all(r["success"] > r["bound"] for r in selected)))


def _attack_figure(rows: list[dict[str, Any]]) -> bytes:
    """One panel per mechanism: each attack's success against the parameter, with its
    baseline (dashed) and bound (dotted)."""
    # matplotlib is slow to import: only a run that draws this figure pays for it.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows))
    columns = 4
    figure, axes = plt.subplots((len(mechanisms) + columns - 1) // columns, columns,
                                figsize=(3.4 * columns, 2.9 * ((len(mechanisms) + 3) // 4)),
                                squeeze=False)
    for axis, mechanism in zip(axes.flat, mechanisms, strict=False):
        selected = [r for r in rows if r["mechanism"] == mechanism]
        for attack in dict.fromkeys(r["attack"] for r in selected):
            points = [r for r in selected if r["attack"] == attack]
            x = [r["value"] for r in points]
            line, = axis.plot(x, [r["success"] for r in points], marker="o", label=attack)
            axis.plot(x, [r["baseline"] for r in points], linestyle="dashed",
                      color=line.get_color(), linewidth=0.8)
            if np.isfinite([r["bound"] for r in points]).any():
                axis.plot(x, [r["bound"] for r in points], linestyle="dotted",
                          color=line.get_color(), linewidth=1.2)
        axis.set_title(mechanism, fontsize=9)
        axis.set_xlabel(selected[0]["parameter"], fontsize=8)
        axis.set_ylim(0, 1.02)
        axis.legend(fontsize=6)
    for axis in list(axes.flat)[len(mechanisms):]:
        axis.set_visible(False)
    figure.suptitle("Attack success (solid) against the privacy parameter, baseline without "
                    "the release (dashed), stated bound (dotted)", fontsize=9)
    figure.tight_layout()
    return png(figure)
