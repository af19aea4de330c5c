"""What ``ppdp compare`` measured (`Comparison`, one `MechanismResult` per mechanism, the
`Recommendation`) and its report: ``results.json`` and one self-contained HTML page (the
recommendation and its reason, the mechanisms side by side, error by count size, predicted
against measured error, the mechanisms left out and why, figures embedded as PNG), built from
the evaluation report's pieces.

The result types live here rather than beside `ppdp.evaluate.compare.compare`, which makes
them, so that the page can read them and ``Comparison.write`` can render the page without
either module importing the other.
"""

from __future__ import annotations

import html
import json
import math
import os
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ppdp.evaluate.advice import Advice, PrivacyTarget
from ppdp.evaluate.figures import bars
from ppdp.evaluate.report import html_figure, html_page, html_rows
from ppdp.io.storage import write_atomic
from ppdp.jsonable import json_ready
from ppdp.mechanisms.parameters import number_text

__all__ = ["Comparison", "MechanismResult", "Recommendation", "comparison_figures",
           "comparison_html", "number_cell", "publish_command"]


@dataclass(frozen=True)
class Recommendation:
    """The mechanism to publish with, its parameters and why."""

    mechanism: str
    parameters: dict[str, Any]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "parameters": self.parameters,
                "reason": self.reason}


@dataclass
class MechanismResult:
    """One mechanism in a comparison: its advice and, when it was published, what it gave."""

    advice: Advice
    status: str
    """"compared", "not eligible" (no parameter meets the target, `Advice.reason`) or
    "infeasible" (publishing failed on this table, ``note``)."""
    note: str = ""
    runs: int = 0
    error: float = float("nan")
    error_interval: tuple[float, float] = (float("nan"), float("nan"))
    bands: list[dict[str, Any]] = field(default_factory=list)
    """Per band of true counts: label, queries, mean error and its 95 % interval."""
    privacy: list[dict[str, Any]] = field(default_factory=list)
    """Per measure: its largest value over publications, the mechanism's own bound, the
    target's bound and the sampling margin."""
    meets: bool = False
    publish_seconds: float = float("nan")
    release_bytes: int | None = None
    release_rows: int | None = None
    predicted: dict[str, Any] | None = None
    """The paper's error bound (`PredictedError`) and what was measured against it: the share
    of counts within the bound and the largest |error| / bound."""

    @property
    def name(self) -> str:
        return self.advice.mechanism

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.name, "status": self.status, "reason": self.advice.reason,
                "note": self.note, "parameters": self.advice.parameters, "runs": self.runs,
                "error": self.error, "error_interval": list(self.error_interval),
                "bands": self.bands, "privacy": self.privacy, "meets": self.meets,
                "publish_seconds": self.publish_seconds, "release_bytes": self.release_bytes,
                "release_rows": self.release_rows, "predicted": self.predicted,
                "advice": self.advice.extra}


@dataclass
class Comparison:
    """What `compare` measured."""

    table: str
    n_rows: int
    sensitive: str
    target: PrivacyTarget
    queries: str
    """Where the queries came from, and how many."""
    error_scope: str
    """Which queries the error that ranks mechanisms is taken over."""
    runs: int
    mechanisms: list[MechanismResult]
    recommendation: Recommendation | None
    recommendation_reason: str
    notes: list[str] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    seconds: float = 0.0
    publish_options: tuple[str, ...] = ()
    """The options of ``ppdp publish`` that read the table as it was read here (``--qi``,
    ``--sep``, the domains ...), for the recommended command."""
    source: str = "SOURCE"
    """What the recommended command reads (the command line's file or dataset name; from
    Python, a placeholder)."""

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "n_rows": self.n_rows, "sensitive": self.sensitive,
                "privacy": {"form": self.target.kind, "text": self.target.text(),
                            "statement": self.target.describe(),
                            "bounds": self.target.bounds},
                "queries": self.queries, "error_scope": self.error_scope, "runs": self.runs,
                "seconds": self.seconds,
                "recommendation": None if self.recommendation is None
                else self.recommendation.to_dict(),
                "recommendation_reason": self.recommendation_reason,
                "publish_command": publish_command(self),
                "mechanisms": [m.to_dict() for m in self.mechanisms], "notes": self.notes}

    def write(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``report.html`` and ``results.json`` (each atomically) into ``directory``."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        data = json.dumps(json_ready(self.to_dict()), indent=1, allow_nan=False)
        return [write_atomic(root / "results.json", data.encode()),
                write_atomic(root / "report.html", comparison_html(self).encode())]


def publish_command(comparison: Comparison, source: str | None = None) -> str | None:
    """The ``ppdp publish`` line that makes the recommended release, as a shell reads it: the
    parameters as they read back exactly (`number_text`: 1/13, not 0.07692307692307693) and
    the options that read the table as the comparison did (``publish_options``)."""
    chosen = comparison.recommendation
    if chosen is None:
        return None
    words = ["ppdp", "publish", comparison.source if source is None else source, "-m",
             chosen.mechanism, "-s", comparison.sensitive]
    for key, value in chosen.parameters.items():
        words += ["-p", f"{key}={number_text(value)}"]
    words += [*comparison.publish_options, "-o", f"{chosen.mechanism}-release"]
    return shlex.join(words)


def comparison_html(comparison: Comparison) -> str:
    """The report page."""
    compared = [m for m in comparison.mechanisms if m.status == "compared"]
    left_out = [m for m in comparison.mechanisms if m.status != "compared"]
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<p>{html.escape(comparison.table)}: {comparison.n_rows:,} rows, sensitive column "
        f"<b>{html.escape(comparison.sensitive)}</b>. Privacy stated: "
        f"<code>{html.escape(comparison.target.text())}</code>, "
        f"{html.escape(comparison.target.describe())}. Queries: "
        f"{html.escape(comparison.queries)}. {comparison.runs} publications per mechanism; "
        f"the error is the mean relative error |true - estimate| / true on "
        f"{html.escape(comparison.error_scope)}, with a 95 % Student t interval across "
        f"publications. Run time {comparison.seconds:.1f} s; generated "
        f"{html.escape(generated)}.</p>",
        "<h2>Recommendation</h2>"]
    chosen = comparison.recommendation
    if chosen is None:
        parts.append(f"<p class='note'>{html.escape(comparison.recommendation_reason)}</p>")
    else:
        parameters = ", ".join(f"{k} = {v}" for k, v in chosen.parameters.items())
        parts.append(f"<p><b>{html.escape(chosen.mechanism)}</b> ({html.escape(parameters)}): "
                     f"{html.escape(chosen.reason)}.</p>"
                     f"<p><code>{html.escape(publish_command(comparison) or '')}</code></p>")
    parts.append("<h2>Mechanisms at this privacy</h2>")
    parts.append(html_rows([_summary_row(m) for m in compared]) if compared
                 else "<p>None could be configured for this target.</p>")
    if compared:
        parts.append("<h2>Error by true count</h2>")
        parts.append(html_rows(_band_rows(compared)))
        predicted = [m for m in compared if m.predicted is not None]
        if predicted:
            parts.append("<h2>Predicted against measured error</h2>"
                         "<p>Each paper's bound on the absolute error of a count, and the "
                         "share of counts (over every publication) that stayed within it.</p>")
            parts.append(html_rows([_predicted_row(m) for m in predicted]))
    if left_out:
        parts.append("<h2>Not compared</h2><ul>" + "".join(
            f"<li><b>{html.escape(m.name)}</b> ({html.escape(m.status)}): "
            f"{html.escape(m.note or m.advice.reason)}</li>" for m in left_out) + "</ul>")
    for note in comparison.notes:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    parts.extend(html_figure(name, png) for name, png in comparison.figures)
    parts.append("<p>Every number is also in results.json.</p>")
    return html_page(f"Which mechanism for {comparison.table}? (ppdp compare)", parts)


def number_cell(value: float | None, digits: int = 3) -> str:
    """A measured number as a report's cell shows it: ``digits`` significant digits, "-" for
    none (None, NaN or infinite)."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.{digits}g}"


def _interval(mean: float, interval: tuple[float, float] | list[float]) -> str:
    low, high = interval
    if not math.isfinite(low):
        return number_cell(mean)
    return f"{number_cell(mean)} [{number_cell(low)}, {number_cell(high)}]"


def _summary_row(result: MechanismResult) -> dict[str, Any]:
    measures = "; ".join(
        f"{p['measure']} {number_cell(p['largest'])}"
        + ("" if p["target_bound"] is None else f" (target <= {number_cell(p['target_bound'])}"
           + (f" + margin {number_cell(p['margin'], 2)}" if p["margin"] else "") + ")")
        for p in result.privacy)
    size = "-" if result.release_bytes is None else \
        f"{result.release_bytes / 1e6:.2f} MB, {result.release_rows:,} rows"
    return {"mechanism": result.name,
            "parameters": ", ".join(f"{k}={v}" for k, v in (result.advice.parameters or {}
                                                             ).items()),
            "how chosen": result.advice.reason, "measured privacy": measures,
            "meets target": "yes" if result.meets else "no",
            "error [95 % interval]": _interval(result.error, result.error_interval),
            "publish s (median)": number_cell(result.publish_seconds),
            "release size": size}


def _band_rows(compared: list[MechanismResult]) -> list[dict[str, Any]]:
    rows = []
    for result in compared:
        row: dict[str, Any] = {"mechanism": result.name}
        for band in result.bands:
            row[f"true count {band['band']} ({band['queries']} queries)"] = _interval(
                band["error"], band["interval"])
        rows.append(row)
    return rows


def _predicted_row(result: MechanismResult) -> dict[str, Any]:
    predicted = result.predicted or {}
    scope = {"values": "each sensitive value's count over the whole table",
             "any": "every query"}[predicted["scope"]]
    return {"mechanism": result.name, "bound": predicted["source"],
            "counts": f"{scope} ({predicted['counts']})",
            "predicted |error| <= (median count)": number_cell(predicted["bound_at_median_count"]),
            "with probability": number_cell(predicted["confidence"]),
            "measured share within": number_cell(predicted["share_within"]),
            "largest |error| / bound": number_cell(predicted["largest_error_over_bound"]),
            "note": predicted["note"]}


def comparison_figures(comparison: Comparison) -> list[tuple[str, bytes]]:
    """Error by band of true counts, measured privacy against the target, publishing time."""
    compared = [m for m in comparison.mechanisms if m.status == "compared"]
    if not compared:
        return []
    labels = list(dict.fromkeys(b["band"] for m in compared for b in m.bands))
    series = {}
    for result in compared:
        by_band = {b["band"]: b for b in result.bands}
        means = [by_band[b]["error"] if b in by_band else math.nan for b in labels]
        halves = [(by_band[b]["interval"][1] - by_band[b]["interval"][0]) / 2
                  if b in by_band else math.nan for b in labels]
        series[result.name] = (means, halves)
    figures = [("error_by_true_count", bars(
        [f"true count {b}" for b in labels], series, log=True,
        ylabel="mean relative error", title="Error by true count (bars: 95 % interval across "
                                            "publications)"))]
    measures = list(dict.fromkeys(p["measure"] for m in compared for p in m.privacy
                                  if p["target_bound"] is not None))
    ratios = {measure: ([next((p["largest"] / p["target_bound"] for p in m.privacy
                               if p["measure"] == measure), math.nan) for m in compared],
                        [0.0] * len(compared)) for measure in measures}
    figures.append(("measured_privacy", bars(
        [m.name for m in compared], ratios, ylabel="measured / target bound",
        title=f"Measured privacy against {comparison.target.text()} (at most 1 meets it)")))
    figures.append(("publish_time", bars(
        [m.name for m in compared],
        {"median": ([m.publish_seconds for m in compared], [0.0] * len(compared))},
        ylabel="seconds", title="Publishing time")))
    return figures
