"""Attack success against each mechanism's privacy parameter (`ppdp.attack` on a sweep).

For every mechanism a parameter is swept, each setting published ``runs`` times and attacked
with the attacks that apply (`ppdp.attack.run_attacks`); a row per (mechanism, value, attack)
holds the mean and standard deviation of the success over the publications, the baseline,
the stated bound, the largest standard error an attack reports (where it reports one) and the
seconds. A setting the table cannot meet (``InfeasibleError``) is skipped, and the reason
returned beside the rows, so that a sweep never fails on its own sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.attack.run import run_attacks
from ppdp.errors import InfeasibleError
from ppdp.mechanisms import (
    FRAPP,
    AlphaBeta,
    Ambiguity,
    Anatomy,
    Mondrian,
    PerturbationPartitioning,
    SPLUGen,
    UniformPerturbation,
)
from ppdp.table.table import Table

__all__ = ["Sweep", "SweepResult", "attack_sweep", "default_sweeps"]


@dataclass(frozen=True)
class Sweep:
    """One mechanism, the parameter swept, its values, and how to build the mechanism."""

    mechanism: str
    parameter: str
    values: tuple[float, ...]
    build: Callable[[float], Any]
    attacks: tuple[str, ...]


def default_sweeps(quick: bool) -> list[Sweep]:
    """The sweeps of the ``attack`` experiment: each mechanism from weak to strong privacy
    (two values each with ``quick``)."""
    def pick(full: tuple[float, ...]) -> tuple[float, ...]:
        return (full[0], full[-1]) if quick else full

    return [
        Sweep("uniform", "rho2", pick((0.9, 0.5, 0.2)),
              lambda v: UniformPerturbation(rho1=1 / 13, rho2=v),
              ("posterior", "inference")),
        Sweep("sdr", "rho2", pick((0.9, 0.5, 0.2)),
              lambda v: PerturbationPartitioning(rho1=1 / 13, rho2=v),
              ("posterior", "inference")),
        Sweep("splu", "gamma", pick((2, 3, 5, 7)), lambda v: SPLUGen(gamma=int(v)),
              ("small_counts", "inference")),
        Sweep("anatomy", "l", pick((2, 3, 5, 7)), lambda v: Anatomy(l=int(v)),
              ("definetti", "inference")),
        Sweep("ambiguity", "beta", pick((1 / 2, 1 / 3, 1 / 5)),
              lambda v: Ambiguity(alpha=0.1, beta=v),
              ("definetti", "linkage", "inference")),
        Sweep("mondrian", "k", pick((2, 5, 10, 25)), lambda v: Mondrian(k=int(v), l=2),
              ("linkage", "inference")),
        Sweep("alphabeta", "gamma", pick((0.5, 0.2, 0.1)),
              lambda v: AlphaBeta(k=10, gamma=v), ("presence", "inference")),
        Sweep("frapp", "gamma", pick((0.5, 0.2, 0.1)), lambda v: FRAPP(k=10, gamma=v),
              ("presence", "inference")),
    ]


@dataclass
class SweepResult:
    """The rows of a sweep, and the settings skipped because the table cannot meet them."""

    rows: list[dict[str, Any]]
    skipped: list[str]
    """One line per skipped setting: the mechanism, the value and why."""


def attack_sweep(table: Table, sweeps: Sequence[Sweep], *, runs: int,
                 rng: np.random.Generator, step: Callable[[str], None] = lambda _: None
                 ) -> SweepResult:
    """Publish every setting ``runs`` times, attack each release; one row per (mechanism,
    value, attack result). A setting the table cannot meet is skipped and said why."""
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for sweep in sweeps:
        for value in sweep.values:
            step(f"attack: {sweep.mechanism}, {sweep.parameter} = {value:.3g}")
            mechanism = sweep.build(value)
            collected: dict[str, list[Any]] = {}
            for _ in range(runs):
                try:
                    release = mechanism.publish(table, random_state=rng)
                except InfeasibleError as exc:
                    # The whole setting goes: its other publications would be averaged alone.
                    skipped.append(f"{sweep.mechanism} {sweep.parameter} = {value:.3g} "
                                   f"skipped: {exc}")
                    collected = {}
                    break
                report = run_attacks(release, table, attacks=sweep.attacks, random_state=rng)
                for result in report.results:
                    collected.setdefault(result.attack, []).append(result)
            for attack, results in collected.items():
                success = np.asarray([r.success for r in results], dtype=np.float64)
                stderr = [r.details.get("stderr") for r in results]
                rows.append({
                    "mechanism": sweep.mechanism, "parameter": sweep.parameter,
                    "value": float(value), "attack": attack,
                    "success": float(success.mean()),
                    "success_std": float(success.std(ddof=1)) if runs > 1 else float("nan"),
                    "baseline": float(np.mean([r.baseline for r in results])),
                    "bound": results[0].bound if results[0].bound is not None else float("nan"),
                    "stderr": float(max(stderr)) if all(s is not None for s in stderr)
                    else float("nan"),
                    "seconds": float(np.median([r.seconds for r in results])),
                    "publications": runs, **_extra(results)})
    return SweepResult(rows, skipped)


def _extra(results: Sequence[Any]) -> dict[str, float]:
    """Details worth a column: the largest individual risk, the individuals a repeated tuple
    exposes."""
    extra: dict[str, float] = {}
    for key in ("risk_max", "individuals"):
        values = [r.details[key] for r in results if key in r.details]
        if values:
            extra[key] = float(np.mean(values))
    return extra
