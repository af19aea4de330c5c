"""The ambiguity paper's experiments: ambiguity against Mondrian generalization at matched
privacy on Adult, FARS and MEPS, and as the data get denser (ambiguity Sections 6 and 8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ppdp.errors import PpdpError
from ppdp.evaluate.density import with_density
from ppdp.evaluate.experiments.config import Config
from ppdp.evaluate.experiments.tables import load_hierarchies, load_table
from ppdp.evaluate.figures import bars
from ppdp.evaluate.generalization_comparison import compare_with_generalization, paper_workloads
from ppdp.evaluate.result import Claim, ExperimentResult

__all__ = ["ambiguity", "density"]

TIMED_SECONDS = 1.0
"""Shortest publish time from which the density experiment compares run times (Figure 7)."""

def ambiguity(config: Config) -> ExperimentResult:
    """Ambiguity against Mondrian at matched privacy, and Theorem 6.1's scheme on Mondrian's
    own groups, on Section 8.1's pools (ambiguity Sections 6 and 8.3, Figures 8-9)."""
    runs = config.publications(1, 3)
    size = 100 if config.quick else 300
    settings = [("adult", "occupation", (1 / 5, 1 / 3) if config.quick else (1 / 7, 1 / 5, 1 / 3))]
    if not config.quick:
        settings += [("fars", "iage", (0.1, 0.05)), ("meps", "ICD9CODX", (0.1, 0.05))]
    result = ExperimentResult(
        "ambiguity", "Ambiguity against Mondrian generalization (ambiguity Sections 6 and 8.3)",
        {"alpha": 0.1, "Mondrian": "frequency l-diversity, l = k = ceil(1/beta) (c/|G| <= beta, "
                                   "matched to beta-association), with the ARX hierarchies; "
                                   "distinct l beside it, not matched",
         "pools": f"{size} queries per pool: range, IN-list and GROUP BY at selectivity "
                  f"1/5/10 %, range and IN-list on 3/4/5 attributes at 5 %",
         "publications": runs})
    means: dict[str, list[float]] = {}
    labels = []
    for dataset, sensitive, betas in settings:
        try:
            table = load_table(config.data, dataset, sensitive)
        except PpdpError as exc:
            result.notes.append(f"{dataset} skipped: {exc}")
            continue
        hierarchies = (load_hierarchies(config.data, dataset, table, result)
                       if dataset != "meps" else {})
        rows = compare_with_generalization(
            table, betas=betas, hierarchies=hierarchies, publications=runs,
            pools=paper_workloads(table, size=size, random_state=config.rng),
            random_state=config.rng,
            progress=_prefixed(config, f"ambiguity: {dataset}, "))
        for row in rows:
            result.rows.append({"dataset": dataset, "sensitive": sensitive, **row.to_dict()})
            if row.pool.startswith("IN-list, selectivity 0.05, 1/2/3"):
                if row.mechanism == "ambiguity":
                    labels.append(f"{dataset} beta={row.beta:.3g}")
                means.setdefault(row.mechanism, []).append(row.error_mean)
    by_key = {(r["dataset"], r["beta"], r["pool"], r["mechanism"]): r["error_mean"]
              for r in result.rows}
    # Per (dataset, beta): each pool's errors of ambiguity, the matched Mondrian, Theorem
    # 6.1's scheme and the unmatched Mondrian.
    cells: dict[tuple[str, float], list[tuple[float, float, float, float]]] = {}
    for (d, b, p, m), value in by_key.items():
        if m == "ambiguity":
            cells.setdefault((d, b), []).append((value, *(by_key[(d, b, p, other)] for other in (
                "mondrian", "ambiguity on mondrian groups",
                "mondrian, distinct l (not matched)"))))
    every = [c for group in cells.values() for c in group]
    algorithm2 = [(a, g) for a, g, _, _ in every if np.isfinite(a) and np.isfinite(g)]
    theorem = [(t, g) for _, g, t, _ in every if np.isfinite(t) and np.isfinite(g)]
    unmatched = [(a, u) for a, _, _, u in every if np.isfinite(a) and np.isfinite(u)]
    if algorithm2:
        lower = sum(a < g for a, g in algorithm2)
        association = max(r["association_max"] for r in result.rows
                          if r["mechanism"] == "mondrian")
        result.claims.append(Claim(
            "Ambiguity always has lower relative error than generalization (Section 8.3, "
            "Figs. 8-9), with groups built by Algorithm 2, at matched privacy (Mondrian with "
            "frequency l-diversity, c/|G| <= beta)",
            f"lower in {lower} of {len(algorithm2)} (beta, pool) cells; ratio of errors "
            f"{min(a / g for a, g in algorithm2):.2f}-{max(a / g for a, g in algorithm2):.2f}; "
            f"Mondrian's largest c/|G| {association:.3g}",
            lower == len(algorithm2)))
    # Per dataset and beta: does ambiguity win every pool against the matched Mondrian, and
    # against the unmatched one (distinct l only)?
    for (dataset, beta), group in cells.items():
        finite = [(a, g, u) for a, g, _, u in group if all(np.isfinite((a, g, u)))]
        if not finite:
            continue
        matched = sum(a < g for a, g, _ in finite)
        loose = sum(a < u for a, _, u in finite)
        result.claims.append(Claim(
            f"Ambiguity errs less than generalization on {dataset} at beta = {beta:.3g} "
            f"(Section 8.3, Figs. 8-9; range, IN-list and GROUP BY pools)",
            f"lower on {matched} of {len(finite)} pools against the matched Mondrian, {loose} "
            f"of {len(finite)} against distinct l only",
            matched == len(finite), matched_only=loose < len(finite)))
    if unmatched:
        association = max(r["association_max"] for r in result.rows
                          if r["mechanism"] == "mondrian, distinct l (not matched)")
        result.claims.append(Claim(
            "The same against Mondrian with distinct l-diversity only (not matched: its classes "
            "are not held to c/|G| <= beta)",
            f"lower in {sum(a < g for a, g in unmatched)} of {len(unmatched)} cells; that "
            f"Mondrian's largest c/|G| {association:.3g}",
            sum(a < g for a, g in unmatched) == len(unmatched)))
    if theorem:
        lower = sum(t < g for t, g in theorem)
        presence = max(r["presence_max"] for r in result.rows
                       if r["mechanism"] == "ambiguity on mondrian groups")
        result.claims.append(Claim(
            "An ambiguity scheme built on the generalization's own groups errs less "
            "(Theorem 6.1)",
            f"lower in {lower} of {len(theorem)} cells; that scheme's largest presence "
            f"probability is {presence:.3g}", lower == len(theorem)))
    if labels:
        result.figures.append(("ambiguity_errors", bars(
            labels, {m: (v, [0.0] * len(v)) for m, v in means.items()},
            ylabel="average relative error", title="Selectivity about 5 %, 1-3 attributes")))
    return result


def density(config: Config) -> ExperimentResult:
    """Ambiguity against Mondrian as the data get denser (ambiguity Figures 9 (2) and 10), and
    ambiguity's publishing time by density (Figure 7).

    Section 8.1 builds datasets whose sensitive values are "distributed to (100/d) % of
    tuples", denser as d grows, without saying how. `ppdp.evaluate.density.with_density` keeps
    every row's sensitive value and puts the quasi-identifier values of (100/d) % of the rows
    on all of them (each block of d neighbours takes one seeded host's values); d = 1 is the
    data as they are.
    """
    runs = config.publications(1, 3)
    size = 100 if config.quick else 300
    beta = 0.2
    densities = (1, 5) if config.quick else (1, 2, 3, 4, 5)
    result = ExperimentResult(
        "density", "Ambiguity against Mondrian as the data get denser, and ambiguity's run time "
                   "(ambiguity Figures 7, 9 (2) and 10)",
        {"dataset": "Adult, sensitive occupation; quasi-identifier values of (100/d) % of the "
                    "rows on all of them (with_density)",
         "d": str(densities), "alpha": 0.1, "beta": beta,
         "Mondrian": "frequency l-diversity, l = k = ceil(1/beta), with the ARX hierarchies",
         "publications": runs})
    try:
        source = load_table(config.data, "adult", "occupation")
    except PpdpError as exc:
        result.notes.append(f"skipped: {exc}")
        return result
    hierarchies = load_hierarchies(config.data, "adult", source, result)
    for d in densities:
        config.step(f"density: d = {d}")
        table = with_density(source, d, random_state=config.rng)
        for row in compare_with_generalization(
                table, betas=(beta,), hierarchies=hierarchies, publications=runs,
                pools=paper_workloads(table, size=size, random_state=config.rng),
                random_state=config.rng):
            result.rows.append({"d": d, **row.to_dict()})
    selected = [r for r in result.rows
                if r["pool"].startswith("IN-list, selectivity 0.05, 1/2/3")]
    if selected:
        result.figures.append(("density_errors", bars(
            [f"d={r['d']}" for r in selected if r["mechanism"] == "ambiguity"],
            {m: ([r["error_mean"] for r in selected if r["mechanism"] == m],
                 [r["error_std"] for r in selected if r["mechanism"] == m])
             for m in ("ambiguity", "mondrian")},
            ylabel="average relative error", title="Selectivity about 5 %, by density d")))
        pairs = [(a["error_mean"], g["error_mean"]) for a in result.rows for g in result.rows
                 if a["mechanism"] == "ambiguity" and g["mechanism"] == "mondrian"
                 and (a["d"], a["pool"]) == (g["d"], g["pool"])]
        lower = sum(a < g for a, g in pairs)
        result.claims.append(Claim(
            "Ambiguity errs less than generalization at every density (Section 8.3, Figure 10)",
            f"lower in {lower} of {len(pairs)} (d, pool) cells", lower == len(pairs)))
        ambiguity = [r for r in selected if r["mechanism"] == "ambiguity"]
        _runtime(result, ambiguity)
        result.claims.append(Claim(
            "Denser data give ambiguity larger groups and larger errors (Section 8.3, Figure "
            "9 (2))",
            f"d = {densities[0]}: groups of {ambiguity[0]['group_size_mean']:.2f} rows, error "
            f"{ambiguity[0]['error_mean']:.3f}; d = {densities[-1]}: "
            f"{ambiguity[-1]['group_size_mean']:.2f} rows, {ambiguity[-1]['error_mean']:.3f}",
            ambiguity[-1]["error_mean"] > ambiguity[0]["error_mean"]))
    return result


def _prefixed(config: Config, prefix: str) -> Callable[[str], None]:
    """Progress messages told to ``config.step`` after ``prefix``."""
    return lambda message: config.step(f"{prefix}{message}")


def _runtime(result: ExperimentResult, ambiguity: list[dict[str, Any]]) -> None:
    """Figure 7: ambiguity's publishing time by density, and Section 8.2's claim that the
    sparser the data, the faster (groups cover more distinct values and reach alpha
    sooner)."""
    result.figures.append(("density_runtime", bars(
        [f"d={r['d']}" for r in ambiguity],
        {"ambiguity": ([r["publish_s"] for r in ambiguity], [0.0] * len(ambiguity))},
        ylabel="publish time (s, median)", title="Ambiguity's run time by density d "
                                                 "(Figure 7)")))
    sparse, dense = ambiguity[0], ambiguity[-1]
    # Below a second, a publish time varies from run to run by more than the densities
    # change it (two seed-1 runs gave 0.08 against 0.05 s and 0.04 against 0.04 s): no
    # verdict is drawn from such times.
    timed = min(sparse["publish_s"], dense["publish_s"]) >= TIMED_SECONDS
    result.claims.append(Claim(
        "The sparser the data, the faster ambiguity publishes (Section 8.2, Figure 7)",
        f"d = {sparse['d']}: {sparse['publish_s']:.2f} s; d = {dense['d']}: "
        f"{dense['publish_s']:.2f} s (median of {sparse['publications']} publications, "
        f"{len(ambiguity)} densities: "
        + "/".join(f"{r['publish_s']:.2f}" for r in ambiguity) + " s)"
        + ("" if timed else f"; publishing takes under {TIMED_SECONDS:g} s at every density "
                            f"here, too short to compare"),
        sparse["publish_s"] < dense["publish_s"] if timed else None))
