"""The alpha-beta paper's experiment (Section 5): every equality query over up to three
attributes, estimated from an alpha-beta view and from a FRAPP view at the same privacy.

A query ``A_i = a AND A_j = b AND A_k = c`` is one cell of the GROUP BY A_i, A_j, A_k count, so
all queries on one set of attributes are answered at once: the true counts from the table's
contingency table, the estimates from the release's grouped estimate (n_V per cell from the
view's contingency table, n_D per cell from the domain counter).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.mechanisms import FRAPP, AlphaBeta, Mechanism
from ppdp.query.binding import bind
from ppdp.query.syntax import Query, TrueCondition
from ppdp.randomness import RandomState, make_rng
from ppdp.release.base import Release
from ppdp.table.table import Table

__all__ = ["EqualityQueryResults", "cumulative_error", "equality_query_estimates",
           "reproduce_section5"]


@dataclass(frozen=True)
class EqualityQueryResults:
    """True counts and estimates of every equality query over 1..max_attributes attributes."""

    truth: np.ndarray
    estimate: np.ndarray
    attributes: np.ndarray  # how many attributes each query conditions on

    def average_absolute_error(self) -> float:
        return float(np.mean(np.abs(self.estimate - self.truth)))


def equality_query_estimates(release: Release, table: Table, *,
                             max_attributes: int = 3) -> EqualityQueryResults:
    """Estimates of all equality queries on up to ``max_attributes`` of the release's columns,
    one GROUP BY per attribute set."""
    names = list(release.schema.names)
    truths, estimates, sizes = [], [], []
    for size in range(1, max_attributes + 1):
        for columns in itertools.combinations(names, size):
            bound = bind(Query(TrueCondition(), tuple(columns),
                               f"SELECT COUNT(*) GROUP BY {', '.join(columns)}"), release.schema)
            values, _ = release._estimate([bound])[0]
            truth = table.cube.histogram(columns)
            truths.append(np.asarray(truth, dtype=float).reshape(-1))
            estimates.append(np.asarray(values, dtype=float).reshape(-1))
            sizes.append(np.full(truths[-1].size, size, dtype=np.int8))
    return EqualityQueryResults(np.concatenate(truths), np.concatenate(estimates),
                                np.concatenate(sizes))


def cumulative_error(results: EqualityQueryResults) -> tuple[np.ndarray, np.ndarray]:
    """Figure 3's curve: for each x, the average |estimate - truth| over queries with
    truth >= x (x over the distinct true counts, increasing)."""
    order = np.argsort(results.truth)[::-1]
    truth = results.truth[order]
    errors = np.abs(results.estimate - results.truth)[order]
    means = np.cumsum(errors) / np.arange(1, len(errors) + 1)
    # For each distinct x keep the mean over all queries with truth >= x: the last position
    # of x in the decreasing order.
    last = np.concatenate([truth[1:] != truth[:-1], [True]])
    return truth[last][::-1], means[last][::-1]


@dataclass
class Section5Result:
    """What ``reproduce_section5`` measured."""

    k: float
    gamma: float
    n: int
    m: int
    queries: int
    alphabeta_error: list[float] = field(default_factory=list)
    frapp_error: list[float] = field(default_factory=list)
    estimate_seconds: list[float] = field(default_factory=list)
    publish_seconds: list[float] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """FRAPP's average absolute error over alpha-beta's (the paper: about 4.5)."""
        return float(np.mean(self.frapp_error) / np.mean(self.alphabeta_error))

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "ratio": self.ratio}


def reproduce_section5(table: Table, output_dir: str | os.PathLike[str] | None = None, *,
                       k: float = 10, gamma: float = 0.2, repeats: int = 3,
                       random_state: RandomState = None) -> Section5Result:
    """Section 5: (k n/m, gamma)-privacy for alpha-beta and FRAPP, every equality query over up
    to three attributes, average absolute errors and their ratio over ``repeats`` publications
    of each; with ``output_dir``, results.json, the scatter of Figure 2 and the cumulative
    error curve of Figure 3 (from the first publication)."""
    rng = make_rng(random_state)
    alphabeta = AlphaBeta(k=k, gamma=gamma)
    mechanisms: dict[str, Mechanism] = {"alphabeta": alphabeta, "frapp": FRAPP(k=k, gamma=gamma)}
    first: dict[str, EqualityQueryResults] = {}
    guarantee = alphabeta.guarantee(table)
    # The table gives the domain size m.
    assert guarantee.m is not None
    result = Section5Result(k=k, gamma=gamma, n=table.n_rows, m=int(guarantee.m), queries=0)
    for _ in range(repeats):
        for name, mechanism in mechanisms.items():
            start = time.perf_counter()
            release = mechanism.publish(table, random_state=rng)
            published = time.perf_counter() - start
            start = time.perf_counter()
            results = equality_query_estimates(release, table)
            estimated = time.perf_counter() - start
            first.setdefault(name, results)
            getattr(result, f"{name}_error").append(results.average_absolute_error())
            if name == "alphabeta":
                result.publish_seconds.append(published)
                result.estimate_seconds.append(estimated)
    result.queries = len(first["alphabeta"].truth)
    if output_dir is not None:
        directory = Path(output_dir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "section5.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        result.files = [str(directory / "section5.json"),
                        str(_plot_scatter(first, directory / "figure2_scatter.png")),
                        str(_plot_cumulative(first, directory / "figure3_cumulative.png"))]
    return result


def _plot_scatter(results: dict[str, EqualityQueryResults], path: Path) -> Path:
    # matplotlib is slow to import: only a run that writes figures pays for it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    for index, (name, label) in enumerate((("frapp", "FRAPP"), ("alphabeta", "alpha-beta"))):
        axes = figure.add_subplot(1, 2, index + 1)
        data = results[name]
        axes.scatter(data.truth, data.estimate, s=1, alpha=0.3, rasterized=True)
        top = float(data.truth.max())
        axes.plot([0, top], [0, top], color="black", linewidth=0.8)
        axes.set_xlabel("true count Q(I)")
        axes.set_ylabel("estimate")
        axes.set_title(f"{label}: estimate vs truth")
    figure.savefig(path, dpi=110)
    return path


def _plot_cumulative(results: dict[str, EqualityQueryResults], path: Path) -> Path:
    # matplotlib is slow to import: only a run that writes figures pays for it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for name, label in (("frapp", "FRAPP"), ("alphabeta", "alpha-beta")):
        x, y = cumulative_error(results[name])
        axes.plot(x, y, label=label)
    axes.set_xscale("symlog")
    axes.set_xlabel("x (queries with Q(I) >= x)")
    axes.set_ylabel("average absolute error")
    axes.set_title("Cumulative average error vs Q(I)")
    axes.legend()
    figure.savefig(path, dpi=110)
    return path
