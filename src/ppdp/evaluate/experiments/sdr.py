"""Small Domain Randomization's experiments: Perturbation Partitioning against Uniform
Perturbation at the same (rho1, rho2), and PP, UP and Anatomy against L and |T| (Small Domain
Randomization Section 6)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ppdp.errors import InfeasibleError, PpdpError
from ppdp.evaluate.experiments.config import Config
from ppdp.evaluate.experiments.tables import load_table
from ppdp.evaluate.figures import bars, scatter
from ppdp.evaluate.metrics import error_above_selectivity
from ppdp.evaluate.publications import Publications, mean_std, publish_and_score
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.evaluate.workloads import SDR_SELECTIVITIES, sdr_pool
from ppdp.mechanisms import Anatomy, Mechanism, PerturbationPartitioning, UniformPerturbation
from ppdp.mechanisms.sdr.partition import perturbation_partition
from ppdp.risk.measured import perturbation_posterior
from ppdp.table.table import Table

__all__ = ["AXES_QUICK_SIZES", "AXES_SETTINGS", "sdr", "sdr_axes"]

AXES_SETTINGS = (("adult", "occupation", 1 / 13, (6, 5, 4, 3), "Figure 2"),
                 ("fars", "iinjury", 1 / 30, (10, 8, 6, 4), "Figure 4"))
"""`sdr_axes`'s data: (dataset, sensitive column, rho1, the levels L (rho2 = 1/L, Anatomy's
l = L), the paper's figure)."""

SKEWED_FIGURE = "Figure 4"
"""The skewed setting of `AXES_SETTINGS` (Section 6.3), where PP degenerates into UP."""

AXES_QUICK_SIZES = (15_000, 30_000)
"""`sdr_axes`'s resampled sizes in a quick run (the L axis uses the largest)."""


def sdr(config: Config) -> ExperimentResult:
    """PP against UP on Adult and FARS, by least selectivity, with their retention and the
    posterior each measurably allows (Small Domain Randomization Section 6, Appendix 10.9)."""
    runs = config.publications(3, 10)
    settings = [("adult", "occupation", 1 / 13, 1 / 5, False),
                ("fars", "iinjury", 1 / 30, 1 / 6, True)]
    result = ExperimentResult(
        "sdr", "Perturbation Partitioning against Uniform Perturbation (Small Domain "
               "Randomization Section 6, Appendix 10.9)",
        {"pool": "200 conditions on 1-3 attributes x every sensitive value (seeded)",
         "publications": runs, "settings": "Adult/occupation (1/13, 1/5); "
                                          "FARS/iinjury (1/30, 1/6)"})
    labels, up_means, up_stds, pp_means, pp_stds = [], [], [], [], []
    for dataset, sensitive, rho1, rho2, skewed in settings:
        try:
            table = load_table(config.data, dataset, sensitive)
        except PpdpError as exc:
            result.notes.append(f"{dataset} skipped: {exc}")
            continue
        pool = sdr_pool(table, conditions=100 if config.quick else 200, random_state=config.rng)
        up = UniformPerturbation(rho1=rho1, rho2=rho2)
        pp = PerturbationPartitioning(rho1=rho1, rho2=rho2)
        mechanisms: dict[str, UniformPerturbation | PerturbationPartitioning] = {"UP": up,
                                                                                 "PP": pp}
        errors: dict[str, dict[float, list[float]]] = {m: {s: [] for s in SDR_SELECTIVITIES}
                                                       for m in mechanisms}
        for run in range(runs):
            config.step(f"sdr: {dataset}, publication {run + 1} of {runs}")
            for name, mechanism in mechanisms.items():
                values, _ = mechanism.publish(table, random_state=config.rng).count_all(
                    pool.queries)
                for s in SDR_SELECTIVITIES:
                    errors[name][s].append(error_above_selectivity(
                        pool.truth, values, table.n_rows, s)[1])
        retention_up = up.guarantee(table).retention
        pp_guarantee = pp.guarantee(table)
        retention_pp = pp_guarantee.partition_statistics()["row_weighted_retention"]
        # The table gives the domain size, so both retentions are known.
        assert retention_up is not None and retention_pp is not None
        # Both held to the same (rho1, rho2): the posterior each measurably allows.
        posterior = {name: perturbation_posterior(mechanism, table).largest
                     for name, mechanism in mechanisms.items()}
        for s in SDR_SELECTIVITIES:
            up_error, pp_error = mean_std(errors["UP"][s]), mean_std(errors["PP"][s])
            result.rows.append({"dataset": dataset, "sensitive": sensitive, "rho1": rho1,
                                "rho2": rho2, "min_selectivity": s, "up_error": up_error[0],
                                "up_error_std": up_error[1], "pp_error": pp_error[0],
                                "pp_error_std": pp_error[1], "up_retention": retention_up,
                                "pp_retention": retention_pp, "up_posterior": posterior["UP"],
                                "pp_posterior": posterior["PP"]})
            labels.append(f"{dataset} s>={s:.1%}")
            up_means.append(up_error[0])
            up_stds.append(up_error[1])
            pp_means.append(pp_error[0])
            pp_stds.append(pp_error[1])
        first = result.rows[-len(SDR_SELECTIVITIES)]
        measured = (f"s >= 0.1 %: PP {first['pp_error']:.3f} ± {first['pp_error_std']:.3f}, UP "
                    f"{first['up_error']:.3f} ± {first['up_error_std']:.3f}")
        if skewed:
            parts = pp_guarantee.subtables
            gammas = (f"PP's gamma_1 = {parts[0].gamma:.3g} (rho1_1 = {parts[0].rho1:.3g}), "
                      if len(parts) == 1 else
                      f"PP's mean gamma_i = "
                      f"{pp_guarantee.partition_statistics()['mean_gamma'] or 0:.3g}, ")
            result.claims += degenerate_claims(
                f"{dataset}/{sensitive}", measured, len(parts) or 1,
                gammas + f"UP's gamma = {up.guarantee(table).gamma:.3g} (rho1 = {rho1:.3g})",
                alike=abs(first["pp_error"] - first["up_error"]) <= _margin(first, runs))
        else:
            result.claims.append(Claim(
                f"PP errs less than UP at the same (rho1, rho2) ({dataset}/{sensitive}; "
                f"Section 6.2, Fig. 2)", measured, first["pp_error"] < first["up_error"]))
        result.claims.append(Claim(
            f"PP's retention probability is above UP's (Table 2; {dataset}/{sensitive})",
            f"PP {retention_pp:.3f}, UP {retention_up:.3f}", retention_pp > retention_up))
    if labels:
        result.figures.append(("sdr_errors", bars(
            labels, {"UP": (up_means, up_stds), "PP": (pp_means, pp_stds)},
            ylabel="average relative error", title="Queries of selectivity >= s")))
    return result


def sdr_axes(config: Config) -> ExperimentResult:
    """Error against L and |T| on balanced data (Adult, occupation: Figure 2) and skewed data
    (FARS, iinjury: Figure 4), estimates against truth, retention against L, PP's sub-tables,
    runtime (Small Domain Randomization Figures 2-5, Tables 2 and 3)."""
    runs = config.publications(2, 3)
    fixed_size = AXES_QUICK_SIZES[-1] if config.quick else 300_000
    sizes = AXES_QUICK_SIZES if config.quick else (100_000, 200_000, 300_000, 400_000, 500_000)
    settings = AXES_SETTINGS
    result = ExperimentResult(
        "sdr_axes", "PP, UP and Anatomy against L and |T| (Small Domain Randomization Figures "
                    "2-5, Tables 2 and 3)",
        {"balanced": "Adult resampled, occupation, rho1 = 1/13, L = 6, 5, 4, 3",
         "skewed": "FARS resampled, iinjury, rho1 = 1/30, L = 10, 8, 6, 4",
         "|T| for the L axis": fixed_size, "sizes": str(sizes), "publications": runs,
         "selectivity": ">= 0.1 %"})
    for dataset, sensitive, rho1, levels, figure in settings:
        try:
            source = load_table(config.data, dataset, sensitive)
        except PpdpError as exc:
            result.notes.append(f"{dataset} skipped: {exc}")
            continue
        _sdr_axes_of(config, result, source, dataset, rho1, levels, figure, fixed_size, sizes,
                     runs)
    return result


def _sdr_axes_of(config: Config, result: ExperimentResult, source: Table, dataset: str,
                 rho1: float, levels: Sequence[int], figure: str, fixed_size: int,
                 sizes: Sequence[int], runs: int) -> None:
    """One dataset's points, figures and claims of `sdr_axes`."""
    shown: dict[str, Any] = {}

    def measure(table: Table, level: int) -> dict[str, Any]:
        pool = sdr_pool(table, conditions=100 if config.quick else 200, random_state=config.rng)
        up = UniformPerturbation(rho1=rho1, rho2=1 / level)
        pp = PerturbationPartitioning(rho1=rho1, rho2=1 / level)
        mechanisms: dict[str, Mechanism] = {"UP": up, "PP": pp, "Anatomy": Anatomy(l=level)}
        row: dict[str, Any] = {"dataset": dataset, "n": table.n_rows, "L": level}
        estimates: dict[str, np.ndarray] = {}
        for name, mechanism in mechanisms.items():
            try:
                scored = publish_and_score(
                    mechanism, table, pool.queries, runs, config.rng,
                    lambda e: error_above_selectivity(pool.truth, e, table.n_rows, 0.001)[1])
            except InfeasibleError:
                # Anatomy's l-diversity is infeasible on skewed data (Section 6.3).
                scored = Publications()
            scored.record(row, name)
            if scored.estimates is not None:
                estimates[name] = scored.estimates
        row["UP_retention"] = up.guarantee(table).retention
        statistics = pp.guarantee(table).partition_statistics()
        row["PP_retention"] = statistics["row_weighted_retention"]
        # Table 3's columns: initial groups t, sub-tables, their mean domain size m_i and
        # mean gamma_i.
        row["PP_initial_groups"] = initial_groups(table, rho1, 1 / level)
        row["PP_subtables"] = statistics["subtables"]
        row["PP_mean_m"] = statistics["mean_m"]
        row["PP_mean_gamma"] = statistics["mean_gamma"]
        row["UP_gamma"] = up.guarantee(table).gamma
        row["m"] = table.schema[table.schema.sensitive[0]].size
        if level == levels[0] and table.n_rows == fixed_size:
            shown.update(truth=pool.truth, estimates=estimates,
                         keep=pool.truth >= 0.001 * table.n_rows)
        return row

    base = source.resample(fixed_size, random_state=config.rng)
    by_level = []
    for level in levels:
        config.step(f"sdr_axes: {dataset}, L = {level}")
        by_level.append({"axis": "L", **measure(base, level)})
    by_size = []
    for size in sizes:
        config.step(f"sdr_axes: {dataset}, |T| = {size:,}")
        by_size.append({"axis": "|T|", **measure(source.resample(size, random_state=config.rng),
                                                   levels[0])})
    result.rows += by_level + by_size
    names = ("UP", "PP", "Anatomy")
    for axis, rows, key in (("L", by_level, "L"), ("|T|", by_size, "n")):
        result.figures.append((f"sdr_{dataset}_error_vs_{'L' if axis == 'L' else 'size'}", bars(
            [str(r[key]) for r in rows],
            {m: ([r[f"{m}_error"] for r in rows], [r[f"{m}_error_std"] for r in rows])
             for m in names}, ylabel="average relative error (s >= 0.1 %)",
            title=f"{dataset}: error against {axis} ({figure})")))
    result.figures.append((f"sdr_{dataset}_runtime_vs_size", bars(
        [str(r["n"]) for r in by_size], {m: ([r[f"{m}_publish_s"] for r in by_size],
                                              [0.0] * len(by_size)) for m in names},
        ylabel="publish time (s, median)", title=f"{dataset}: runtime against |T| (Figure 5)")))
    if shown:
        result.figures.append((f"sdr_{dataset}_estimate_vs_truth", scatter(
            shown["truth"][shown["keep"]],
            {m: v[shown["keep"]] for m, v in shown["estimates"].items()},
            title=f"{dataset}: est vs act, |T| = {fixed_size:,}, L = {levels[0]}, "
                  f"s >= 0.1 % (Figure 3)")))
    rows = by_level + by_size
    if figure == SKEWED_FIGURE:
        # Section 6.3: on skewed data PP degenerates into UP (and Anatomy needs suppression,
        # which ppdp does not do: it is infeasible here).
        alike = sum(abs(r["PP_error"] - r["UP_error"]) <= 3 * np.sqrt(
            (r["PP_error_std"] ** 2 + r["UP_error_std"] ** 2) / runs) for r in rows)
        lower = sum(r["PP_error"] < r["UP_error"] for r in rows)
        result.claims += degenerate_claims(
            dataset, f"PP below UP in {lower} of {len(rows)} settings, within 3 standard errors "
                     f"of it in {alike}", max(r["PP_subtables"] for r in rows),
            f"PP's gamma_1 {_span(r['PP_mean_gamma'] for r in rows)} against UP's gamma "
            f"{_span(r['UP_gamma'] for r in rows)} (rho1 = {rho1:.3g}) over L",
            alike=alike == len(rows))
    else:
        pp_best = sum(r["PP_error"] < np.nanmin([r["UP_error"], r["Anatomy_error"]])
                      for r in rows)
        result.claims.append(Claim(
            f"PP incurs less error than Anatomy and UP ({dataset}; Section 6.2, {figure})",
            f"lowest in {pp_best} of {len(rows)} settings", pp_best == len(rows)))
    if figure != SKEWED_FIGURE:
        _table_3_claims(result, dataset, levels[0], by_size)
    first, last = by_level[0], by_level[-1]
    result.claims.append(Claim(
        f"As L decreases (weaker privacy), PP's error falls ({dataset}; {figure})",
        f"L = {first['L']}: {first['PP_error']:.3f}; L = {last['L']}: {last['PP_error']:.3f}",
        last["PP_error"] < first["PP_error"]))
    retention = [(r["PP_retention"], r["UP_retention"]) for r in by_level]
    paper = (" 9.0/12.3/17.3/25.7 % against 2.9/4.0/5.9/9.4 % for L = 6..3 on OCC-300k"
             if dataset == "adult" else "")
    result.claims.append(Claim(
        f"PP's retention is above UP's at every L ({dataset};{paper} Table 2)",
        "PP " + "/".join(f"{p:.1%}" for p, _ in retention) + " against UP "
        + "/".join(f"{u:.1%}" for _, u in retention), all(p > u for p, u in retention)))
    largest = by_size[-1]
    result.claims.append(Claim(
        f"PP publishes 500k rows in at most 30 s ({dataset}; Section 6.4, Figure 5)",
        f"{largest['n']:,} rows in {largest['PP_publish_s']:.2f} s",
        largest["PP_publish_s"] <= 30 if largest["n"] >= 500_000 else None))


def _margin(row: dict[str, Any], runs: int) -> float:
    """Three standard errors of the difference of PP's and UP's mean errors over ``runs``
    publications."""
    return 3 * float(np.sqrt((row["pp_error_std"] ** 2 + row["up_error_std"] ** 2) / runs))


def degenerate_claims(where: str, errors: str, subtables: int, gammas: str, *, alike: bool
                      ) -> list[Claim]:
    """Section 6.3 on skewed data: "PP degenerates into UP because the small domain size ...
    make[s] it unnecessary to partition T" (Figure 4). Two statements, judged apart: PP makes
    one sub-table; and PP and UP then err alike. ppdp's one sub-table still differs from UP:
    its gamma_1 comes from the largest share of a protected value in the data (Eq. 9: rho1_1),
    UP's from rho1 itself, so the measured text says which gamma each used (``gammas``)."""
    return [
        Claim(f"On skewed data PP degenerates into UP: it does not partition the table ({where}; "
              f"Section 6.3, Fig. 4)", f"{subtables} sub-table{'s' if subtables > 1 else ''}",
              subtables == 1),
        Claim(f"...so PP and UP err alike ({where}; Section 6.3, Fig. 4). Compared: PP's "
              f"sub-table perturbed with gamma_1 from the largest share of a protected value in "
              f"the data (Eq. 9) against UP with gamma from rho1; alike = within 3 standard "
              f"errors", f"{errors}; {gammas}", alike),
    ]


def _span(values: Iterable[float]) -> str:
    """The smallest and largest of the values, as "a-b" (or "a" when they agree)."""
    ordered = sorted(values)
    low, high = f"{ordered[0]:.3g}", f"{ordered[-1]:.3g}"
    return low if low == high else f"{low}-{high}"


def initial_groups(table: Table, rho1: float, rho2: float) -> int:
    """t, the number of initial groups of PP's balancing phase on this table (Section 5.1;
    Small Domain Randomization Table 3's first row)."""
    (sensitive,) = table.schema.sensitive
    counts = np.bincount(table.codes[sensitive], minlength=table.schema[sensitive].size)
    return int(perturbation_partition(counts, rho1=rho1, rho2=rho2).groups.shape[0])


def _table_3_claims(result: ExperimentResult, dataset: str, level: int,
                    rows: list[dict[str, Any]]) -> None:
    """Table 3 (OCC-|T|, rho2 = 1/6): t, the sub-tables, their mean m_i and gamma_i at each
    |T|, as a note and two claims: t stays small and nearly constant as |T| grows (so the
    partition's work after counting does not grow with |T|, Theorem 4), and the sub-tables'
    domains are much smaller than T's while gamma_i stays close to T's gamma (Section 6.2)."""
    result.notes.append(
        f"Table 3 ({dataset}, rho2 = 1/{level}; the paper: OCC, m = 50, t = 17/18/19/20/20, "
        f"sub-tables 15/8/10/11/12, mean m_i 15.0-20.9, mean gamma_i 2.6-2.8 against "
        f"gamma = 2.5 for |T| = 100k..500k): " + "; ".join(
            f"|T| = {r['n']:,}: t = {r['PP_initial_groups']}, {r['PP_subtables']} sub-tables, "
            f"mean m_i {r['PP_mean_m']:.1f} (m = {r['m']}), mean gamma_i "
            f"{r['PP_mean_gamma']:.2f} (UP's gamma {r['UP_gamma']:.2f})" for r in rows))
    t = [r["PP_initial_groups"] for r in rows]
    result.claims.append(Claim(
        f"The number of initial groups t stays small and nearly constant as |T| grows ({dataset}; "
        f"Table 3: 17-20 for 100k-500k rows); nearly constant = largest at most 1.5 times the "
        f"smallest",
        ", ".join(f"{r['n'] // 1000}k: {r['PP_initial_groups']}" for r in rows)
        + f" (m = {rows[0]['m']})", max(t) <= 1.5 * min(t)))
    ratio = [r["PP_mean_gamma"] / r["UP_gamma"] for r in rows]
    result.claims.append(Claim(
        f"PP's sub-tables have much smaller domains than T, with gamma_i close to T's gamma "
        f"({dataset}; Section 6.2, Table 3: mean m_i 15-21 against m = 50, gamma_i 2.6-2.8 "
        f"against 2.5); close = within 30 %",
        f"mean m_i {_span(r['PP_mean_m'] for r in rows)} against m = {rows[0]['m']}; mean "
        f"gamma_i / gamma {_span(ratio)}",
        all(r["PP_mean_m"] < r["m"] for r in rows) and all(0.7 <= x <= 1.3 for x in ratio)))
