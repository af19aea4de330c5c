"""The SPLU-Gen evaluation (Section 6) in small: every mechanism on the bundled Adult table.

``run_demo`` builds the small-count and large-count query pools of Section 6.1 once, then for
SPLU-Gen, Anatomy (l = gamma), DBR, Laplace counts (epsilon = ln 2 and ln 3), and the two
mechanisms of Small Domain Randomization under (rho1, rho2)-privacy (Uniform Perturbation and
Perturbation Partitioning) publishes the table, estimates both pools and reports the average
relative errors, the timings and, where the mechanism reports standard errors, how often the
95 % interval covers the true count. SPLU-Gen's publication is answered twice: by ppdp's
default value-level estimator and by Section 5's (`SPLU_PAPER`), which the paper measured.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ppdp import datasets
from ppdp.errors import ConvergenceWarning, MissingDependencyError, OutputExistsError
from ppdp.estimate import Z95
from ppdp.evaluate.figures import bars
from ppdp.evaluate.metrics import average_relative_error
from ppdp.evaluate.publications import mean_std
from ppdp.evaluate.report import write_report
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.evaluate.workloads import QueryPool, splu_pools
from ppdp.io.storage import (
    commit_directory,
    require_outside_working_directory,
    staged_directory,
    write_atomic,
)
from ppdp.mechanisms import (
    DBR,
    Anatomy,
    LaplaceCounts,
    Mechanism,
    PerturbationPartitioning,
    SPLUGen,
    UniformPerturbation,
)
from ppdp.mechanisms.splu.release import SpluRelease
from ppdp.progress import progress_bar
from ppdp.randomness import RandomState, make_rng

__all__ = ["SPLU_PAPER", "DemoResult", "DemoRow", "run_demo", "splu_result"]

DATASET = "adult"
SENSITIVE = "occupation"
FILES = ("results.csv", "results.json", "errors.png", "splu.csv", "claims.csv", "report.html")
"""What ``run_demo`` writes: its results, their figure and the evaluation report of the run
(`ppdp.evaluate.report`); an output directory holding only these may be overwritten."""

SPLU_PAPER = "SPLU-Gen (paper)"
"""The row of SPLU-Gen's publication answered by Section 5's estimator (``estimator =
"paper"``), beside the ``SPLU-Gen`` row of its default estimator."""

_CSV_FIELDS = ("mechanism", "parameters", "small_error", "large_error", "publish_seconds",
               "estimate_seconds", "coverage")


@dataclass(frozen=True)
class DemoRow:
    """One mechanism's results: average relative errors per pool, timings, interval coverage."""

    mechanism: str
    parameters: dict[str, Any]
    small_error: float
    large_error: float
    publish_seconds: float
    estimate_seconds: float
    coverage: float | None
    """Share of queries (both pools) whose 95 % interval holds the true count; None when the
    mechanism reports no standard errors."""


@dataclass(frozen=True)
class DemoResult:
    """What ``run_demo`` measured, with the setting it measured it in."""

    rows: tuple[DemoRow, ...]
    n_rows: int
    gamma: int
    rho1: float
    rho2: float
    size: int
    n_small: int
    n_large: int
    seed: int | None = None
    notes: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()
    seconds: float = 0.0
    """Wall-clock time of the run: the pools, every publication and estimate (not the writing
    of the files)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the setting and the rows."""
        return {
            "dataset": DATASET,
            "sensitive": SENSITIVE,
            "n_rows": self.n_rows,
            "gamma": self.gamma,
            "rho1": self.rho1,
            "rho2": self.rho2,
            "pool_size": self.size,
            "n_small": self.n_small,
            "n_large": self.n_large,
            "seed": self.seed,
            "seconds": self.seconds,
            "notes": list(self.notes),
            "rows": [_json_safe(asdict(row)) for row in self.rows],
        }

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        """Write ``to_dict()`` as JSON (atomically)."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"
        return write_atomic(Path(path), text.encode())

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """Write one line per mechanism as CSV (atomically); parameters as ``key=value;..``."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(_CSV_FIELDS)
        for row in self.rows:
            writer.writerow([
                row.mechanism,
                ";".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in row.parameters.items()),
                _number(row.small_error), _number(row.large_error),
                f"{row.publish_seconds:.4f}", f"{row.estimate_seconds:.4f}",
                "" if row.coverage is None else _number(row.coverage),
            ])
        return write_atomic(Path(path), buffer.getvalue().encode())


DEFAULT_RHO1 = 1 / 13
"""The prior bound of the SDR paper's balanced experiment (Section 6.2)."""


def run_demo(output_dir: str | Path | None, *, gamma: int = 5, rho1: float = DEFAULT_RHO1,
             rho2: float | None = None, size: int = 5000, random_state: RandomState = None,
             overwrite: bool = False, progress: bool = True) -> DemoResult:
    """Run the Section 6 comparison on Adult (sensitive ``occupation``) and write the results.

    What the paper reports (Section 6.2), qualitatively: SPLU-Gen's relative errors on small
    counts (1 to 10) are far above those on large counts, so small sums stay private while large
    sums stay useful (Fig. 7, 9a); Anatomy's large-count errors are higher than SPLU-Gen's and do
    not fall with selectivity (Fig. 8, 9b); DBR loses the link between the sensitive and the other
    attributes and errs more on large counts (Fig. 9c); Laplace counts with epsilon = ln 2 or
    ln 3 have small relative errors even on small counts, i.e. little small-sum privacy (Fig. 7).
    Small Domain Randomization (Section 6.2): Perturbation Partitioning, perturbing within
    sub-tables of small domains, errs less than Uniform Perturbation at the same
    (rho1, rho2); ``rho2`` defaults to 1/gamma, the posterior bound matching l-diversity with
    l = gamma, and ``rho1`` to 1/13 as in the paper.

    On Adult the large-count pool cannot reach 5,000 distinct queries (the table holds about
    2,100 of the required form); the shortfall is recorded in ``notes``. With ``output_dir``,
    writes `FILES` there (``results.csv``, ``results.json``, ``errors.png`` and the run's
    evaluation report), all at once: a directory that exists and is not empty is refused
    before any work, unless ``overwrite`` is given and it holds nothing but those files.
    ``random_state``: an int for a reproducible run, None for OS entropy. Prints nothing;
    ``progress`` shows a bar.
    """
    began = time.perf_counter()
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    rho2 = 1 / gamma if rho2 is None else rho2
    mechanisms: list[tuple[str, Mechanism]] = [
        ("SPLU-Gen", SPLUGen(gamma=gamma)),
        ("Anatomy", Anatomy(l=gamma)),
        ("DBR", DBR()),
        ("Laplace eps=ln 2", LaplaceCounts(epsilon=math.log(2))),
        ("Laplace eps=ln 3", LaplaceCounts(epsilon=math.log(3))),
        ("Uniform perturbation", UniformPerturbation(rho1=rho1, rho2=rho2)),
        ("SDR (PP)", PerturbationPartitioning(rho1=rho1, rho2=rho2)),
    ]
    if output_dir is not None:
        _check_output(Path(output_dir), overwrite=overwrite)
    seed = int(random_state) if isinstance(random_state, int | np.integer) else None
    if random_state is None:
        streams: list[Any] = [None] * (1 + len(mechanisms))
    else:
        streams = list(make_rng(random_state).spawn(1 + len(mechanisms)))

    with _StepProgress(progress, 2 + 2 * len(mechanisms) + (output_dir is not None)) as step:
        step("loading Adult and building the query pools")
        table = datasets.load(DATASET, sensitive=SENSITIVE)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            small, large = splu_pools(table, sensitive=SENSITIVE, size=size,
                                      random_state=streams[0])
        notes = [str(w.message) for w in caught]
        rows = []
        for (label, mechanism), stream in zip(mechanisms, streams[1:], strict=True):
            step(f"{label}: publishing")
            start = time.perf_counter()
            try:
                release = mechanism.publish(table, random_state=stream)
            except MissingDependencyError as missing:
                # Laplace counts without a seed need OpenDP, an extra: the demo runs the other
                # mechanisms and says which it left out and why.
                step(f"{label}: left out")
                notes.append(f"{label} left out: {missing}")
                continue
            published = time.perf_counter() - start
            answers: list[tuple[str, str | None]] = [(label, None)]
            if isinstance(release, SpluRelease):
                answers.append((SPLU_PAPER, "paper"))
            for name, estimator in answers:
                step(f"{name}: estimating {len(small) + len(large)} queries")
                if isinstance(release, SpluRelease) and estimator is not None:
                    release.estimator = estimator
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as stopped:
                    warnings.simplefilter("always", ConvergenceWarning)
                    estimates = [release.count_all(pool.queries) for pool in (small, large)]
                notes.extend(f"{name}: {w.message}" for w in stopped)
                estimated = time.perf_counter() - start
                rows.append(DemoRow(
                    mechanism=name,
                    parameters=dict(mechanism.parameter_values),
                    small_error=_average(small, estimates[0][0]),
                    large_error=_average(large, estimates[1][0]),
                    publish_seconds=published,
                    estimate_seconds=estimated,
                    coverage=_coverage((small, large), estimates),
                ))
        result = DemoResult(rows=tuple(rows), n_rows=table.n_rows, gamma=gamma, rho1=rho1,
                            rho2=rho2, size=size, n_small=len(small), n_large=len(large),
                            seed=seed, notes=tuple(notes), seconds=time.perf_counter() - began)
        if output_dir is None:
            return result
        step(f"writing {output_dir}")
        return replace(result, files=_save(result, Path(output_dir), overwrite=overwrite))


def _save(result: DemoResult, directory: Path, *, overwrite: bool) -> tuple[Path, ...]:
    """Write `FILES` into a staging directory and commit it as ``directory``
    (`ppdp.io.storage`): every file appears at once, or none."""
    with staged_directory(directory) as staging:
        written = [result.to_csv(staging / FILES[0]), result.to_json(staging / FILES[1]),
                   plot_errors(result, staging / FILES[2]),
                   *write_report([splu_result([result])], staging)]
        # Checked again under the commit's lock: the directory may have changed meanwhile.
        commit_directory(staging, directory, overwrite=True,
                         replaceable=lambda target: _check_output(target, overwrite=overwrite))
    return tuple(directory / path.name for path in written)


def splu_result(demos: Sequence[DemoResult]) -> ExperimentResult:
    """The SPLU-Gen Section 6 experiment from one or more demo runs (``run_demo`` results):
    errors per mechanism over the runs, the figure and the claims.

    ``ppdp demo`` reports its single run this way, and the ``splu`` experiment its several;
    it lives beside the demo so that the demo writes its report without importing the
    experiments, which run the demo."""
    runs = len(demos)
    first = demos[0]
    per_mechanism: dict[str, dict[str, list[float]]] = {}
    result = ExperimentResult(
        "splu", "SPLU-Gen against Anatomy, DBR, Laplace and small domain randomization "
                "(SPLU-Gen Section 6)",
        {"dataset": f"Adult ({first.n_rows:,} rows)", "sensitive": "occupation",
         "gamma = l": first.gamma, "(rho1, rho2)": f"({first.rho1:.3g}, {first.rho2:.3g})",
         "queries per pool": first.size, "publications": runs},
        # The runs' own time (`run_experiment` replaces it by the whole experiment's).
        seconds=sum(demo.seconds for demo in demos))
    for demo in demos:
        for row in demo.rows:
            errors = per_mechanism.setdefault(row.mechanism, {"small": [], "large": []})
            errors["small"].append(row.small_error)
            errors["large"].append(row.large_error)
    summary = {}
    for mechanism, errors in per_mechanism.items():
        small, large = mean_std(errors["small"]), mean_std(errors["large"])
        summary[mechanism] = (small[0], large[0])
        result.rows.append({"mechanism": mechanism, "small_error": small[0],
                            "small_error_std": small[1], "large_error": large[0],
                            "large_error_std": large[1], "publications": runs})
    names = list(per_mechanism)
    result.figures.append(("splu_errors", bars(
        names, {pool: ([mean_std(per_mechanism[m][pool])[0] for m in names],
                       [mean_std(per_mechanism[m][pool])[1] for m in names])
                for pool in ("small", "large")},
        ylabel="average relative error", title="Small counts (1-10) and large counts "
                                               "(0.5-5 %), Adult", log=True)))
    splu_small, splu_large = summary["SPLU-Gen"]
    # The default estimator's claims, with Section 5's numbers beside them.
    paper = summary.get(SPLU_PAPER)
    result.claims.append(Claim(
        "SPLU-Gen: small counts (1..10) are estimated with large relative error, large counts "
        "with small error (Section 6.2, Figs. 7 and 9a)",
        f"small {splu_small:.3f}, large {splu_large:.3f} (x{splu_small / splu_large:.1f})"
        + ("" if paper is None else f"; Section 5's estimator: small {paper[0]:.3f}, large "
                                    f"{paper[1]:.3f}"),
        splu_small > 3 * splu_large))
    anatomy_large = summary["Anatomy"][1]
    result.claims.append(Claim(
        "Anatomy errs more than SPLU-Gen on large counts (Section 6.2, Fig. 8)",
        f"Anatomy {anatomy_large:.3f}, SPLU-Gen {splu_large:.3f}"
        + ("" if paper is None else f" (Section 5's estimator {paper[1]:.3f})"),
        anatomy_large > splu_large))
    laplace = [m for m in summary if m.startswith("Laplace")]
    if laplace:
        laplace_small = min(summary[m][0] for m in laplace)
        result.claims.append(Claim(
            "Laplace counts at epsilon = ln 2, ln 3 answer small counts with less error than "
            "SPLU-Gen: little small-sum privacy (Section 6.2, Fig. 7)",
            f"Laplace small-count error {laplace_small:.3f}, SPLU-Gen {splu_small:.3f}",
            laplace_small < splu_small))
    return result


def _check_output(directory: Path, *, overwrite: bool) -> None:
    """Raise unless ``directory`` may take the demo's output: absent, an empty directory, or,
    with ``overwrite``, a directory holding nothing but `FILES` (an earlier run's), so that
    nothing else is ever replaced."""
    if not os.path.lexists(directory):
        return
    require_outside_working_directory(directory)
    if directory.is_symlink() or not directory.is_dir():
        kind = "a symbolic link" if directory.is_symlink() else "a file"
        raise FileExistsError(f"{directory} is {kind}, not a directory; choose another output "
                              f"directory")
    entries = sorted(path.name for path in directory.iterdir())
    if not entries:
        return
    if not overwrite:
        raise OutputExistsError(f"{directory} already exists and is not empty")
    others = [name for name in entries if name not in FILES]
    if others:
        shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
        raise FileExistsError(f"{directory} holds files that are not the demo's ({shown}); "
                              f"overwrite would delete them, so it is refused; move them or "
                              f"choose another output directory")


def plot_errors(result: DemoResult, path: str | os.PathLike[str]) -> Path:
    """Grouped bars of the average relative error, small vs large pool, per mechanism (PNG)."""
    # matplotlib is slow to import: only a run that writes its files pays for it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.0, 4.8), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = np.arange(len(result.rows))
    width = 0.38
    pools = ((f"small counts (1..10, {result.n_small} queries)", "small_error", "#c0504d"),
             (f"large counts (selectivity 0.5-5 %, {result.n_large} queries)", "large_error",
              "#4f81bd"))
    for offset, (label, attribute, colour) in zip((-width / 2, width / 2), pools, strict=True):
        values = [getattr(row, attribute) for row in result.rows]
        bars = axes.bar(positions + offset, values, width, label=label, color=colour)
        axes.bar_label(bars, labels=[f"{v:.3g}" for v in values], fontsize=7, padding=1)
    axes.set_yscale("log", nonpositive="clip")
    axes.set_xticks(positions, [row.mechanism for row in result.rows], fontsize=7,
                    rotation=20, ha="right")
    axes.set_ylabel("average relative error")
    axes.set_title(f"Adult (N = {result.n_rows:,}, sensitive {SENSITIVE}), gamma = l = "
                   f"{result.gamma}, (rho1, rho2) = ({result.rho1:.3g}, {result.rho2:.3g})",
                   fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(axis="y", which="major", alpha=0.3)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    return write_atomic(Path(path), buffer.getvalue())


def _average(pool: QueryPool, estimates: np.ndarray) -> float:
    return average_relative_error(pool.truth, estimates) if len(pool) else float("nan")


def _coverage(pools: Sequence[QueryPool],
              estimates: Sequence[tuple[np.ndarray, np.ndarray]]) -> float | None:
    truth = np.concatenate([pool.truth for pool in pools])
    values = np.concatenate([v for v, _ in estimates])
    stderr = np.concatenate([s for _, s in estimates])
    known = np.isfinite(stderr)
    if not known.any():
        return None
    low = np.maximum(values[known] - Z95 * stderr[known], 0.0)
    high = values[known] + Z95 * stderr[known]
    return float(np.mean((low <= truth[known]) & (truth[known] <= high)))


class _StepProgress:
    """A context manager giving a function that advances a rich progress bar by one step."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self._progress: Any = None

    def __enter__(self) -> Callable[[str], None]:
        if not self.enabled:
            return lambda description: None
        self._progress = progress_bar()
        self._progress.start()
        task = self._progress.add_task("starting", total=self.total)
        started = [False]

        def step(description: str) -> None:
            if started[0]:
                self._progress.advance(task)
            started[0] = True
            self._progress.update(task, description=description)

        return step

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.6g}"


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in data.items()}
