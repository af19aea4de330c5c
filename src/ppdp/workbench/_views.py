"""What the pages show, computed from ppdp's objects: the columns and their suggested domains,
the privacy goals in plain words, the mechanisms' risk and utility, answers with their error
bars beside the true counts, and the attacks against their baseline and bound."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppdp.attack.report import AttackReport
from ppdp.data.schema import KIND_NAMES, Role
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.evaluate.advice import PRIVACY_FORMS, parse_privacy
from ppdp.evaluate.compare_report import Comparison, MechanismResult, number_cell
from ppdp.mechanisms.parameters import number_text
from ppdp.table.table import Table
from ppdp.workbench._recipe import domain_text

__all__ = ["GOALS", "answer_rows", "attack_rows", "column_rows", "mechanism_rows",
           "parameters_text", "risk_utility_svg"]

GOALS: list[dict[str, str]] = [
    {"form": "association", "example": "beta=0.25",
     "plain": "No one can be linked to a sensitive value with a probability above beta (0.25: "
              "one chance in four). Add alpha=0.1 to also keep anyone from being sure above "
              "alpha that a person's record is in the table."},
    {"form": "posterior", "example": "rho1=1/13,rho2=0.2",
     "plain": "Whatever an adversary believed at most rho1 likely about a person's sensitive "
              "value before the release, they believe at most rho2 likely after it."},
    {"form": "small counts", "example": "small-count:a=3,eps=0.3",
     "plain": "Small groups stay hidden: no count from 1 to a people is recovered within eps "
              "(30 %) with a probability above 1 - tp (tp is 0.5 unless given), while large "
              "counts stay accurate."},
    {"form": "whole records", "example": "k=10,gamma=0.2",
     "plain": "No whole record that was unlikely to be in the table beforehand (prior at most "
              "d = k n/m) becomes likely (above gamma) to be in it after the release."},
]
"""The forms ``ppdp compare --privacy`` takes, each with an example and what it means."""
for _goal in GOALS:
    _goal["statement"] = parse_privacy(_goal["example"]).describe()
FORMS_LINE = "; ".join(PRIVACY_FORMS)

OBSERVED_WARNING = (
    "A release lists the domain of every column it publishes. Where no domain is declared, "
    "ppdp takes the values present in the data as the domain, and the release then reveals "
    "which values occur: that a rare value (a rare disease, a small town) is present, or that "
    "another is absent. Type the public domain (from a codebook or a standard list) wherever "
    "that must not be revealed; leave it empty only where the values present are public.")


def column_rows(table: Table, *, sensitive: str | None) -> list[dict[str, Any]]:
    """One row per column: its kind, how many values it holds, its suggested domain (the
    codebook's where declared) and its default role."""
    rows = []
    for index, column in enumerate(table.schema.columns):
        present = np.flatnonzero(np.bincount(np.asarray(table.codes[column.name]),
                                             minlength=column.size))
        values = [column.domain[i] for i in present[:6]]
        shown = ", ".join(str(v) for v in values) + (", ..." if len(present) > 6 else "")
        role = "sensitive" if column.name == sensitive else (
            "ignored" if column.role == Role.IGNORED else "quasi-identifier")
        rows.append({"index": index, "name": column.name, "kind": KIND_NAMES[column.kind],
                     "distinct": len(present), "declared": column.declared,
                     "domain": domain_text(column) if column.declared else "",
                     "present": shown, "role": role})
    return rows


def _risk(result: MechanismResult) -> float:
    """The largest measured privacy over the target's bound (at most 1 meets it)."""
    ratios = [p["largest"] / p["target_bound"] for p in result.privacy
              if p["target_bound"] not in (None, 0) and p["largest"] is not None]
    return max(ratios) if ratios else math.nan


def parameters_text(parameters: Mapping[str, Any] | None) -> str:
    """A mechanism's parameters as the page shows them: ``k = 0.2, rho1 = 1/13`` (each value
    as the command line takes it back, `number_text`)."""
    return ", ".join(f"{k} = {number_text(v)}" for k, v in (parameters or {}).items())


def mechanism_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """Every mechanism of a comparison: what it was set to, its error and privacy, or why it
    was left out."""
    chosen = comparison.recommendation.mechanism if comparison.recommendation else None
    rows = []
    for m in comparison.mechanisms:
        low, high = m.error_interval
        rows.append({
            "name": m.name, "status": m.status, "recommended": m.name == chosen,
            "parameters": parameters_text(m.advice.parameters) or "-",
            "error": number_cell(m.error),
            "interval": "" if not math.isfinite(low)
                        else f"{number_cell(low)} to {number_cell(high)}",
            "risk": number_cell(_risk(m)), "meets": "yes" if m.meets else "no",
            "why": m.note or m.advice.reason})
    return rows


def risk_utility_svg(comparison: Comparison) -> str:
    """An inline SVG scatter: each compared mechanism's measured privacy over the target's
    bound (risk, x) against its mean relative error (y, log scale); 1 on x is the target."""
    points = [(m.name, _risk(m), m.error) for m in comparison.mechanisms
              if m.status == "compared" and math.isfinite(m.error) and m.error > 0]
    points = [(n, r if math.isfinite(r) else 0.0, e) for n, r, e in points]
    if not points:
        return ""
    width, height, left, bottom, top, right = 560, 300, 70, 50, 20, 130
    x_max = max(1.2, max(r for _, r, _ in points) * 1.1)
    logs = [math.log10(e) for _, _, e in points]
    y_low, y_high = math.floor(min(logs)), math.ceil(max(logs))
    if y_high == y_low:
        y_high += 1

    def x(value: float) -> float:
        return left + value / x_max * (width - left - right)

    def y(value: float) -> float:
        return top + (y_high - math.log10(value)) / (y_high - y_low) * (height - top - bottom)

    parts = [f"<svg class='chart' viewBox='0 0 {width} {height}' role='img' "
             f"aria-labelledby='ru-title'><title id='ru-title'>Risk and error of each mechanism: "
             + "; ".join(f"{html.escape(n)} risk {r:.2f}, error {e:.3g}" for n, r, e in points)
             + "</title>",
             f"<line x1='{left}' y1='{height - bottom}' x2='{width - right}' "
             f"y2='{height - bottom}' class='axis'/>",
             f"<line x1='{left}' y1='{top}' x2='{left}' y2='{height - bottom}' class='axis'/>",
             f"<line x1='{x(1):.1f}' y1='{top}' x2='{x(1):.1f}' y2='{height - bottom}' "
             f"class='target'/>",
             f"<text x='{x(1) + 4:.1f}' y='{top + 12}' class='label'>target</text>",
             f"<text x='{(left + width - right) / 2:.0f}' y='{height - 10}' class='label' "
             f"text-anchor='middle'>measured privacy / target bound (risk; at most 1 meets "
             f"it)</text>",
             f"<text x='14' y='{(top + height - bottom) / 2:.0f}' class='label' "
             f"transform='rotate(-90 14 {(top + height - bottom) / 2:.0f})' "
             f"text-anchor='middle'>mean relative error (log)</text>"]
    for power in range(y_low, y_high + 1):
        parts.append(f"<text x='{left - 6}' y='{y(10.0 ** power) + 4:.1f}' class='tick' "
                     f"text-anchor='end'>{10.0 ** power:g}</text>")
    for tick in np.linspace(0, x_max, 5):
        parts.append(f"<text x='{x(tick):.1f}' y='{height - bottom + 16}' class='tick' "
                     f"text-anchor='middle'>{tick:.2g}</text>")
    # Labels of points that (nearly) coincide are stacked, not drawn over each other.
    placed: list[tuple[float, float]] = []
    for name, risk, error in sorted(points, key=lambda p: (p[2], p[1])):
        label_y = y(error) + 4
        while any(abs(label_y - b) < 13 and abs(x(risk) - a) < 60 for a, b in placed):
            label_y -= 13
        placed.append((x(risk), label_y))
        parts.append(f"<circle cx='{x(risk):.1f}' cy='{y(error):.1f}' r='5' class='point'/>"
                     f"<text x='{x(risk) + 8:.1f}' y='{label_y:.1f}' "
                     f"class='label'>{html.escape(name)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _bar(low: float, high: float, value: float, truth: float | None, top: float
         ) -> dict[str, float]:
    scale = 100.0 / top if top > 0 else 0.0
    return {"low": max(low, 0.0) * scale, "width": max(high - max(low, 0.0), 0.0) * scale,
            "value": value * scale, "truth": -1.0 if truth is None else truth * scale}


def answer_rows(estimate: Estimate | GroupedEstimate,
                truth: Estimate | GroupedEstimate | None) -> list[dict[str, Any]]:
    """One row per answer (per group of a GROUP BY): the estimate, its standard error and 95 %
    interval, the true count where the source is known, and where each lies on a bar."""
    if isinstance(estimate, GroupedEstimate):
        truths: dict[tuple[Any, ...], float] = {}
        if isinstance(truth, GroupedEstimate):
            truths = {tuple(k.values()): t.value for k, t in truth.groups}
        pairs: Sequence[tuple[str, Estimate, float | None]] = [
            (", ".join(f"{c} = {v}" for c, v in key.items()), e,
             truths.get(tuple(key.values()), 0.0 if truth is not None else None))
            for key, e in estimate.groups]
    else:
        pairs = [("all rows matching", estimate,
                  truth.value if isinstance(truth, Estimate) else None)]
    top = max([max(e.value, e.ci95[1] if e.ci95 else e.value, t or 0.0)
               for _, e, t in pairs] + [1.0]) * 1.05
    rows = []
    for label, e, t in pairs:
        low, high = e.ci95 if e.ci95 is not None else (e.value, e.value)
        rows.append({"label": label, "value": f"{e.value:,.1f}",
                     "stderr": "-" if e.stderr is None else f"{e.stderr:,.1f}",
                     "interval": "none given" if e.ci95 is None
                     else f"{low:,.1f} to {high:,.1f}",
                     "truth": "-" if t is None else f"{t:,.0f}",
                     "inside": None if t is None or e.ci95 is None else low <= t <= high,
                     "bar": _bar(low, high, e.value, t, top)})
    return rows


def attack_rows(report: AttackReport) -> list[dict[str, Any]]:
    """Each attack's success beside its baseline and the mechanism's stated bound."""
    rows = []
    for r in report.results:
        top = max(r.success, r.baseline, r.bound or 0.0, 1e-9) * 1.1
        rows.append({"attack": r.attack, "measure": r.measure, "success": number_cell(r.success),
                     "baseline": number_cell(r.baseline), "bound": number_cell(r.bound),
                     "above": r.bound is not None and r.success > r.bound,
                     "adversary": r.adversary,
                     "bars": [("release", r.success / top * 100, "success"),
                              ("baseline", r.baseline / top * 100, "baseline")]
                     + ([] if r.bound is None else [("bound", r.bound / top * 100, "bound")])})
    return rows
