"""Which mechanism for a table: every mechanism configured for one privacy target
(`ppdp.evaluate.advice`), published several times, answering the same count queries, with its
error by count size, its measured privacy, its time and size, and a recommendation.

    import ppdp
    table = ppdp.datasets.adult(sensitive="occupation")
    result = ppdp.compare(table, privacy="rho1=1/13,rho2=0.2", quick=True)
    result.recommendation.mechanism, result.recommendation.reason
    result.write("compare-report")                   # report.html and results.json

The queries are the user's (SQL count queries) or, without them, SPLU-Gen's pools on the
table's columns (Section 6.1): small counts (1 to 10) and large counts (selectivity 0.5 to
5 %). A mechanism's *error* is the mean relative error |true - estimate| / true over the
user's queries with a true count above 0, or over the large-count pool (the small-count pool
shows what stays hidden); each point is the mean over publications with a 95 % Student t
interval across them. Its *measured privacy* is every measure of `measured_privacy` that the
target bounds, the largest over publications (for small-count privacy, the share of counts
1..a recovered within eps, over every publication). The *recommendation* is the mechanism
with the lowest error among those whose measured privacy meets the target.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.data.schema import list_names
from ppdp.errors import InfeasibleError, QueryError
from ppdp.evaluate.advice import (
    Advice,
    PrivacyTarget,
    SmallCountPrivacy,
    advise,
    parse_privacy,
)
from ppdp.evaluate.compare_report import (
    Comparison,
    MechanismResult,
    Recommendation,
    comparison_figures,
)
from ppdp.evaluate.metrics import relative_errors
from ppdp.evaluate.publications import publish_and_score
from ppdp.evaluate.workloads import format_condition, splu_pools
from ppdp.query.binding import bind
from ppdp.query.parse import parse_query
from ppdp.query.syntax import Query
from ppdp.randomness import RandomState, make_rng
from ppdp.risk.measured import Measured, small_count_recovery
from ppdp.table.table import Table, exact_counts

__all__ = ["BANDS", "Comparison", "MechanismResult", "Recommendation", "compare",
           "read_queries"]

BANDS = ((1, 10), (11, 100), (101, 1_000), (1_001, 10_000), (10_001, math.inf))
"""Bands of true counts over which errors are averaged."""

DEFAULT_PRIVACY = "beta=0.2"
"""The target when none is stated: association at most 1/5 (l = 5 of the papers' Adult runs)."""

QUICK_RUNS, FULL_RUNS = 3, 5
QUICK_POOL, FULL_POOL = 200, 1000
"""Queries per generated pool."""

Progress = Callable[[str, int, int], None]
"""Told ``(what is being done, steps done, steps in all)``."""


def read_queries(path: str | os.PathLike[str]) -> list[str]:
    """SQL count queries from a text file: separated by ``;`` when the file holds one, else
    one a line; blank lines and lines starting with ``--`` are skipped. Each is a condition
    or ``SELECT COUNT(*) FROM t WHERE ...`` without GROUP BY."""
    text = Path(path).read_text(encoding="utf-8")
    kept = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))
    parts = kept.split(";") if ";" in kept else kept.splitlines()
    queries = [" ".join(part.split()) for part in parts if part.strip()]
    if not queries:
        raise ValueError(f"{path} holds no queries (one per line, or separated by ';')")
    return queries


def compare(table: Table, *, sensitive: str | None = None,
            privacy: PrivacyTarget | str = DEFAULT_PRIVACY,
            queries: Sequence[str | Query] | None = None, runs: int | None = None,
            quick: bool = False, random_state: RandomState = None,
            hierarchies: Mapping[str, Any] | None = None,
            progress: Progress | None = None) -> Comparison:
    """Configure every mechanism for ``privacy`` (`ppdp.evaluate.advice`), publish each
    eligible one ``runs`` times, answer ``queries`` (default: the small- and large-count pools
    of SPLU-Gen Section 6.1 on the table's columns) and measure error, privacy, time and size.

    ``sensitive``: the one sensitive column (default: the table's). ``runs``: publications
    per mechanism (default 5; 3 with ``quick``, which also shrinks the generated pools from
    1,000 to 200 queries each). ``hierarchies``: Mondrian's generalization hierarchies.
    Domains not declared are taken from the values present: the releases stay in memory,
    only their measurements are written.
    """
    start = time.perf_counter()
    target = parse_privacy(privacy) if isinstance(privacy, str) else privacy
    table = _prepare(table, sensitive)
    column = table.schema.sensitive[0]
    runs = (QUICK_RUNS if quick else FULL_RUNS) if runs is None else runs
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    rng = make_rng(random_state)
    advice = advise(table, target)
    eligible = [a for a in advice if a.eligible]
    notes: list[str] = []
    tell = progress or (lambda *_: None)
    total = 1 + len(eligible) * runs
    tell("drawing the query pools" if queries is None else "counting the queries", 0, total)
    workload = _Workload.of(table, column, target, queries, QUICK_POOL if quick else FULL_POOL,
                            rng, notes)
    results = []
    done = 1
    for item in advice:
        if not item.eligible:
            results.append(MechanismResult(item, "not eligible"))
            continue
        tell(f"{item.mechanism}: publishing {runs} times", done, total)
        results.append(_measure(item, table, workload, target, runs, rng, hierarchies,
                                _each_run(tell, item.mechanism, done, runs, total)))
        done += runs
    recommendation, reason = _recommend(results, target, workload.scope)
    comparison = Comparison(
        table.name or "table", table.n_rows, column, target, workload.description,
        workload.scope, runs, results, recommendation, reason, notes)
    comparison.figures = comparison_figures(comparison)
    comparison.seconds = time.perf_counter() - start
    tell("done", total, total)
    return comparison


def _each_run(tell: Progress, mechanism: str, done: int, runs: int, total: int
              ) -> Callable[[int], None]:
    """Tells ``tell`` of each of ``runs`` publications of ``mechanism``, after ``done`` steps of
    ``total``."""
    return lambda run: tell(f"{mechanism}: publication {run} of {runs}", done + run, total)


def _prepare(table: Table, sensitive: str | None) -> Table:
    if sensitive is not None and tuple(table.schema.sensitive) != (sensitive,):
        table = table.with_roles(sensitive=[sensitive])
    if len(table.schema.sensitive) != 1:
        raise ValueError(f"compare needs exactly one sensitive column (sensitive=...); the "
                         f"table has {len(table.schema.sensitive)}: "
                         f"{list_names(table.schema.sensitive) or 'none'}")
    # Nothing is released: the values present may serve as domains.
    return table.declare_observed_domains(warn=False)


@dataclass(frozen=True)
class _Workload:
    """Every query a publication answers, in one batch: the workload, the small-count probe
    (small-count privacy) and each sensitive value alone (for the papers' error bounds)."""

    queries: tuple[Query, ...]
    truth: np.ndarray
    workload: slice
    scored: np.ndarray
    """Positions, within the workload, of the queries the ranking error is taken over."""
    probe: slice
    values: slice
    description: str
    scope: str

    @classmethod
    def of(cls, table: Table, column: str, target: PrivacyTarget,
           queries: Sequence[str | Query] | None, size: int, rng: np.random.Generator,
           notes: list[str]) -> _Workload:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            small = None
            if queries is None or isinstance(target, SmallCountPrivacy):
                small, large = splu_pools(table, size=size, random_state=rng)
        notes.extend(str(w.message) for w in caught)
        if queries is None:
            assert small is not None
            work = [*small.queries, *large.queries]
            truth = np.concatenate([small.truth, large.truth])
            if not work:
                raise ValueError("no query of SPLU-Gen's pools has a true count above 0 on "
                                 "this table; give queries (--queries)")
            scored = np.arange(len(small), len(work)) if len(large) else np.arange(len(small))
            description = (f"generated: {len(small)} small counts (true count 1-10) and "
                           f"{len(large)} large counts (selectivity 0.5-5 %), SPLU-Gen "
                           f"Section 6.1")
            scope = "the large-count pool" if len(large) else \
                "the small-count pool (no large count was found)"
        else:
            work = [_checked(table, q, i) for i, q in enumerate(queries, start=1)]
            truth = exact_counts(table, work)
            scored = np.flatnonzero(truth > 0)
            if not scored.size:
                raise ValueError("every query has a true count of 0 on this table: relative "
                                 "errors need counts above 0")
            zero = len(work) - scored.size
            description = f"{len(work)} given" + (f" ({zero} with true count 0, left out of "
                                                  f"relative errors)" if zero else "")
            scope = "the given queries with a true count above 0"
        probe: list[Query] = []
        probe_truth = np.empty(0)
        if isinstance(target, SmallCountPrivacy) and small is not None:
            keep = small.truth <= target.a
            probe = [q for q, k in zip(small.queries, keep, strict=True) if k]
            probe_truth = small.truth[keep]
            if target.a > small.truth.max(initial=0):
                notes.append(f"small-count privacy is measured on the generated pool's counts "
                             f"1..{small.truth.max(initial=0):.0f}, not up to a = {target.a}")
        domain = table.schema[column].domain
        present = np.flatnonzero(np.bincount(table.codes[column], minlength=len(domain)))
        values = [parse_query(format_condition([(column, domain[v])])) for v in present]
        value_truth = exact_counts(table, values)
        every = (*work, *probe, *values)
        n_work, n_probe = len(work), len(probe)
        return cls(every, np.concatenate([truth, probe_truth, value_truth]),
                   slice(0, n_work), scored, slice(n_work, n_work + n_probe),
                   slice(n_work + n_probe, len(every)), description, scope)


def _checked(table: Table, query: str | Query, number: int) -> Query:
    """The query parsed and checked against the table, or an error that names it."""
    try:
        parsed = parse_query(query)
        if bind(parsed, table.schema, table_name=table.name).group_by:
            raise QueryError("GROUP BY is not taken here: write one query per group")
    except QueryError as exc:
        raise ValueError(f"query {number} ({str(query)[:60]!r}): {exc}") from None
    return parsed


def _interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and 95 % Student t interval of per-publication values (NaN ends for one)."""
    array = np.asarray(values, dtype=np.float64)
    mean = float(array.mean())
    if len(array) < 2:
        return mean, float("nan"), float("nan")
    # scipy.stats is slow to import: only a comparison that computes an interval pays for it.
    from scipy.stats import t

    half = float(t.ppf(0.975, len(array) - 1) * array.std(ddof=1) / math.sqrt(len(array)))
    return mean, mean - half, mean + half


def _measure(advice: Advice, table: Table, workload: _Workload, target: PrivacyTarget,
             runs: int, rng: np.random.Generator, hierarchies: Mapping[str, Any] | None,
             each_run: Callable[[int], None]) -> MechanismResult:
    """Publish one configured mechanism ``runs`` times and measure what it gives."""
    mechanism = advice.build(hierarchies)
    try:
        published = publish_and_score(mechanism, table, workload.queries, runs, rng,
                                      lambda estimates: estimates, measure_each=True,
                                      each_run=each_run)
    except InfeasibleError as exc:
        return MechanismResult(advice, "infeasible", note=str(exc))
    estimates = np.vstack(published.errors)
    truth = workload.truth
    work, work_truth = estimates[:, workload.workload], truth[workload.workload]
    positive = work_truth > 0
    errors = np.vstack([relative_errors(work_truth[positive], row[positive]) for row in work])
    scored = np.zeros(len(work_truth), dtype=bool)
    scored[workload.scored] = True
    error, low, high = _interval(errors[:, scored[positive]].mean(axis=1))
    result = MechanismResult(advice, "compared", runs=runs, error=error,
                             error_interval=(low, high),
                             publish_seconds=float(np.median(published.seconds)))
    band_truth = work_truth[positive]
    for lo, hi in BANDS:
        inside = (band_truth >= lo) & (band_truth <= hi)
        if inside.any():
            mean, band_low, band_high = _interval(errors[:, inside].mean(axis=1))
            label = f"{lo:,}-{hi:,}" if math.isfinite(hi) else f"{lo:,}+"
            result.bands.append({"band": label, "queries": int(inside.sum()), "error": mean,
                                 "interval": [band_low, band_high]})
    measured = _worst(published.privacy_by_run)
    if isinstance(target, SmallCountPrivacy):
        measured.append(small_count_recovery(
            np.tile(truth[workload.probe], runs), estimates[:, workload.probe],
            epsilon=target.epsilon, bound=1 - target.t_p))
    bounds = target.bounds
    result.privacy = [{"measure": m.measure, "largest": m.largest, "bound": m.bound,
                       "target_bound": bounds.get(m.measure), "margin": m.margin}
                      for m in measured]
    held = [m for m in measured if m.measure in bounds]
    result.meets = bool(held) and all(
        m.largest <= bounds[m.measure] + m.margin + 1e-12 for m in held)
    if not held:
        result.note = "no measure of this target applies to its release"
    result.predicted = _predicted(advice, estimates, workload)
    result.release_rows = published.release.n_rows
    result.release_bytes = _saved_size(published.release)
    return result


def _worst(by_run: Sequence[Sequence[Measured]]) -> list[Measured]:
    """Each measure's largest value over publications."""
    worst: dict[str, Measured] = {}
    for measures in by_run:
        for measured in measures:
            kept = worst.get(measured.measure)
            if kept is None or measured.largest > kept.largest:
                worst[measured.measure] = measured
    return list(worst.values())


def _predicted(advice: Advice, estimates: np.ndarray, workload: _Workload
               ) -> dict[str, Any] | None:
    """The bound next to what was measured: the share of counts within it."""
    bound = advice.predicted
    if bound is None:
        return None
    part = workload.values if bound.scope == "values" else workload.workload
    truth = workload.truth[part]
    limit = bound.absolute(truth)
    error = np.abs(estimates[:, part] - truth)
    return {**bound.to_dict(), "counts": int(truth.size),
            "bound_at_median_count": float(np.median(limit)),
            "share_within": float(np.mean(error <= limit)),
            "largest_error_over_bound": float(np.max(error / limit))}


def _saved_size(release: Any) -> int:
    """The bytes of the release saved as a directory."""
    with tempfile.TemporaryDirectory() as directory:
        target = release.save(Path(directory) / "release")
        return sum(f.stat().st_size for f in target.rglob("*") if f.is_file())


def _recommend(results: Sequence[MechanismResult], target: PrivacyTarget, scope: str
               ) -> tuple[Recommendation | None, str]:
    """The lowest error among the mechanisms whose measured privacy meets the target."""
    meeting = sorted((r for r in results if r.status == "compared" and r.meets),
                     key=lambda r: r.error)
    compared = [r for r in results if r.status == "compared"]
    if not meeting:
        why = ("no mechanism could be configured for it" if not compared
               else "no release's measured privacy met it")
        return None, f"no recommendation for {target.text()}: {why}"
    best = meeting[0]
    reason = (f"lowest mean relative error on {scope} ({best.error:.3g}, 95 % interval "
              f"{_span(best.error_interval)}) among the {len(meeting)} mechanisms whose "
              f"measured privacy meets {target.text()}")
    if len(meeting) == 1:
        reason = (f"the only mechanism whose measured privacy meets {target.text()} "
                  f"(mean relative error {best.error:.3g} on {scope})")
    else:
        second = meeting[1]
        reason += f"; next: {second.name} ({second.error:.3g})"
        if best.error_interval[1] >= second.error_interval[0]:
            reason += ", within the spread of these publications: more runs may reorder them"
    return Recommendation(best.name, dict(best.advice.parameters or {}), reason), reason


def _span(interval: tuple[float, float]) -> str:
    low, high = interval
    return "n/a (one publication)" if not math.isfinite(low) else f"{low:.3g}-{high:.3g}"

