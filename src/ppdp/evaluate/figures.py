"""The evaluation's figures as PNG bytes, for reports that embed them.

matplotlib is imported when a figure is drawn (`_pyplot`): it is slow to import, and only a
run that draws a figure should pay for it.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["bars", "lines", "png", "scatter"]


def png(figure: Any) -> bytes:
    """A matplotlib figure as PNG bytes (the figure is closed)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def _pyplot() -> Any:
    """matplotlib's pyplot, drawing off screen (the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(axes: Any, *, ylabel: str, title: str, log: bool, legend_size: int) -> None:
    """Label the y axis, title the axes, scale y by logarithm if asked, add the legend."""
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if log:
        axes.set_yscale("log")
    axes.legend(fontsize=legend_size)


def bars(groups: Sequence[str], series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
         *, ylabel: str, title: str, log: bool = False) -> bytes:
    """Grouped bars, one series a label with (heights, error-bar half-widths): one standard
    deviation or an interval's half-width, as the caller says in the title or label."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(max(6.0, 0.9 * len(groups) * len(series) / 2), 3.6))
    width = 0.8 / max(len(series), 1)
    positions = np.arange(len(groups))
    for index, (label, (means, stds)) in enumerate(series.items()):
        axes.bar(positions + index * width, means, width, yerr=np.nan_to_num(stds),
                 label=label, capsize=2)
    axes.set_xticks(positions + width * (len(series) - 1) / 2, groups, rotation=20,
                    ha="right")
    _finish(axes, ylabel=ylabel, title=title, log=log, legend_size=8)
    return png(figure)


def scatter(truth: np.ndarray, estimates: dict[str, np.ndarray], *, title: str) -> bytes:
    """One panel per mechanism: estimate against true count, with the diagonal."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(estimates), figsize=(3.2 * len(estimates), 3.2),
                                sharex=True, sharey=True, squeeze=False)
    top = float(max(truth.max(initial=1), *(e.max(initial=1) for e in estimates.values())))
    for axis, (name, values) in zip(axes[0], estimates.items(), strict=True):
        axis.scatter(truth, values, s=4, alpha=0.5)
        axis.plot([0, top], [0, top], color="black", linewidth=0.8)
        axis.set_title(name)
        axis.set_xlabel("act")
    axes[0][0].set_ylabel("est")
    figure.suptitle(title, fontsize=9)
    return png(figure)


def lines(series: Mapping[str, tuple[Sequence[float], Sequence[float], str]], *, xlabel: str,
          ylabel: str, title: str, log: bool = False) -> bytes:
    """Curves, one a label with (x, y, matplotlib format: "-" a line, "--" dashed, "o"
    points, "-o" both, led by a colour such as "C1")."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.0, 3.6))
    for label, (x, y, style) in series.items():
        axes.plot(x, y, style, label=label, markersize=4, linewidth=1.2)
    axes.set_xlabel(xlabel)
    _finish(axes, ylabel=ylabel, title=title, log=log, legend_size=7)
    return png(figure)
