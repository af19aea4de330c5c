"""Error and publishing time against the number of rows, on seeded row-resamples of Adult and
FARS: SPLU-Gen on its large-count pool (SPLU-Gen Lemma 1), ambiguity and Mondrian on a 5 %
range pool (ambiguity Section 8.3)."""

from __future__ import annotations

from functools import partial
from typing import Any

from ppdp.errors import PpdpError
from ppdp.evaluate.experiments.config import Config
from ppdp.evaluate.experiments.tables import load_hierarchies, load_table
from ppdp.evaluate.figures import bars
from ppdp.evaluate.metrics import average_relative_error
from ppdp.evaluate.publications import publish_and_score
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.evaluate.workloads import range_pool, splu_pools
from ppdp.mechanisms import Ambiguity, Mechanism, Mondrian, SPLUGen
from ppdp.mechanisms.presence import association_group_size

__all__ = ["FULL_SIZES", "QUICK_SIZES", "SIZE_SETTINGS", "size"]

SIZE_SETTINGS = (("adult", "occupation", 1 / 5), ("fars", "iage", 0.1))
"""(dataset, sensitive column, ambiguity's beta; Mondrian's l = k = ceil(1/beta))."""

QUICK_SIZES = (10_000, 20_000)
FULL_SIZES = (100_000, 200_000, 300_000, 400_000, 500_000)
"""The numbers of rows resampled (with replacement), quick and full."""


def size(config: Config) -> ExperimentResult:
    """Each mechanism's error and median publishing time at each number of rows (SPLU-Gen
    Lemma 1; ambiguity Section 8.3)."""
    sizes = QUICK_SIZES if config.quick else FULL_SIZES
    runs = config.publications(2, 3)
    settings = SIZE_SETTINGS
    result = ExperimentResult(
        "size", "Error and publishing time against the number of rows (seeded resamples)",
        {"sizes": str(sizes), "SPLU-Gen": "gamma = 5, large-count pool (0.5-5 %)",
         "ambiguity": "alpha = 0.1; beta 1/5 (Adult/occupation), 0.1 (FARS/iage)",
         "Mondrian": "frequency l-diversity, l = k = ceil(1/beta) (matched to beta), with the "
                     "ARX hierarchies",
         "publications": runs})
    for dataset, sensitive, beta in settings:
        try:
            source = load_table(config.data, dataset, sensitive)
        except PpdpError as exc:
            result.notes.append(f"{dataset} skipped: {exc}")
            continue
        size_l = association_group_size(beta)
        mechanisms: dict[str, Mechanism] = {
            "SPLU-Gen": SPLUGen(gamma=5),
            "ambiguity": Ambiguity(alpha=0.1, beta=beta),
            "Mondrian": Mondrian(k=size_l, l=size_l, diversity="frequency",
                                 hierarchies=load_hierarchies(config.data, dataset, source,
                                                              result))}
        for n in sizes:
            config.step(f"size: {dataset}, {n:,} rows")
            table = source.resample(n, random_state=config.rng)
            _, large = splu_pools(table, size=100 if config.quick else 500,
                                  random_state=config.rng)
            ranges = range_pool(table, selectivity=0.05, size=50 if config.quick else 200,
                                random_state=config.rng)
            keep = ranges.truth > 0
            row: dict[str, Any] = {"dataset": dataset, "sensitive": sensitive, "n": n}
            for name, mechanism in mechanisms.items():
                pool_truth, queries = (large.truth, large.queries) if name == "SPLU-Gen" else (
                    ranges.truth[keep], [q for q, k in zip(ranges.queries, keep, strict=True)
                                         if k])
                publish_and_score(mechanism, table, queries, runs, config.rng,
                                  partial(average_relative_error, pool_truth)
                                  ).record(row, name)
            result.rows.append(row)
    names = ("SPLU-Gen", "ambiguity", "Mondrian")
    labels = [f"{r['dataset']} {r['n'] // 1000}k" for r in result.rows]
    if result.rows:
        result.figures.append(("error_vs_size", bars(
            labels, {m: ([r[f"{m}_error"] for r in result.rows],
                         [r[f"{m}_error_std"] for r in result.rows]) for m in names},
            ylabel="average relative error", title="Error against the number of rows")))
        result.figures.append(("publish_time_vs_size", bars(
            labels, {m: ([r[f"{m}_publish_s"] for r in result.rows], [0.0] * len(labels))
                     for m in names}, ylabel="publish time (s, median)",
            title="Publishing time against the number of rows")))
        below = sum(r["ambiguity_error"] < r["Mondrian_error"] for r in result.rows)
        result.claims.append(Claim(
            "Ambiguity always errs less than generalization (ambiguity Section 8.3), at matched "
            "privacy, here at every size",
            f"lower in {below} of {len(result.rows)} (dataset, size) settings",
            below == len(result.rows)))
        for dataset in dict.fromkeys(r["dataset"] for r in result.rows):
            rows = [r for r in result.rows if r["dataset"] == dataset]
            first, last = rows[0], rows[-1]
            result.claims.append(Claim(
                f"Large counts are estimated more accurately as they grow (SPLU-Gen Lemma 1; "
                f"{dataset}, same selectivities on more rows)",
                f"{first['n']:,} rows: {first['SPLU-Gen_error']:.3f}; {last['n']:,} rows: "
                f"{last['SPLU-Gen_error']:.3f}",
                last["SPLU-Gen_error"] < first["SPLU-Gen_error"]))
    return result
