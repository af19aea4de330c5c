"""The evaluation report: one self-contained HTML page (figures embedded as PNG), the raw rows
of every experiment as CSV, and the claims table (paper says / we measured / verdict: holds,
holds at matched privacy only, does not hold, not comparable).

Every file is written atomically; the HTML escapes every text it shows.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.io.storage import write_atomic

__all__ = ["html_figure", "html_page", "html_rows", "write_report"]

_STYLE = """
body { font-family: sans-serif; max-width: 72em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: left; }
td.yes { background: #e3f4e3; } td.no { background: #f8dede; } td.na { background: #eee; }
.note { color: #844; }
"""


def _verdict(claim: Claim) -> tuple[str, str]:
    """The claim's verdict and its cell's style."""
    return claim.verdict, {None: "na", True: "yes", False: "no"}[claim.holds]


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write_report(results: Sequence[ExperimentResult], directory: str | os.PathLike[str]
                 ) -> list[Path]:
    """Write ``report.html``, ``claims.csv`` and ``<experiment>.csv`` into ``directory``."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    claims = io.StringIO()
    writer = csv.writer(claims, lineterminator="\n")
    writer.writerow(["experiment", "paper says", "we measured", "verdict"])
    for result in results:
        for claim in result.claims:
            writer.writerow([result.name, claim.paper, claim.measured, _verdict(claim)[0]])
        if result.rows:
            buffer = io.StringIO()
            fields = list(dict.fromkeys(k for row in result.rows for k in row))
            rows = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
            rows.writeheader()
            rows.writerows(result.rows)
            written.append(write_atomic(root / f"{result.name}.csv",
                                        buffer.getvalue().encode()))
    written.append(write_atomic(root / "claims.csv", claims.getvalue().encode()))
    written.append(write_atomic(root / "report.html", _html(results).encode()))
    return written


def _html(results: Sequence[ExperimentResult]) -> str:
    parts = [f"<p>Generated {html.escape(datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC'))}. "
             "Every point is a mean over publications; ± is one standard deviation.</p>",
             "<h2>Summary: paper says / we measured</h2>", _claims_table(results)]
    for result in results:
        parts.append(f"<h2 id='{html.escape(result.name)}'>{html.escape(result.title)}</h2>")
        setting = "; ".join(f"{html.escape(str(k))}: {html.escape(str(v))}"
                            for k, v in result.setting.items())
        parts.append(f"<p>{setting}. Run time {result.seconds:.1f} s.</p>")
        parts.append(_claims_table([result], with_experiment=False))
        for note in result.notes:
            parts.append(f"<p class='note'>{html.escape(note)}</p>")
        parts.extend(html_figure(name, png) for name, png in result.figures)
        if result.rows:
            parts.append(f"<details><summary>raw results ({len(result.rows)} rows, also in "
                         f"{html.escape(result.name)}.csv)</summary>{html_rows(result.rows)}"
                         f"</details>")
    return html_page("ppdp evaluation report", parts)


def html_page(title: str, parts: Sequence[str]) -> str:
    """A self-contained HTML page: the title as heading, then ``parts`` (HTML already
    escaped)."""
    return "\n".join(["<!DOCTYPE html><html><head><meta charset='utf-8'>",
                      f"<title>{html.escape(title)}</title>",
                      f"<style>{_STYLE}</style></head><body>",
                      f"<h1>{html.escape(title)}</h1>", *parts, "</body></html>"])


def html_figure(name: str, png: bytes) -> str:
    """A PNG embedded as a data URI, captioned with its name."""
    encoded = base64.b64encode(png).decode()
    return (f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{encoded}'>"
            f"<figcaption>{html.escape(name)}</figcaption></figure>")


def html_rows(rows: Sequence[Mapping[str, object]]) -> str:
    """Rows of values as a table, one column per key (in order of first appearance)."""
    fields = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{html.escape(f)}</th>" for f in fields)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(row.get(f, '')))}</td>"
                                    for f in fields) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _claims_table(results: Sequence[ExperimentResult], *, with_experiment: bool = True) -> str:
    head = ("<th>experiment</th>" if with_experiment else "") + \
        "<th>paper says</th><th>we measured</th><th>verdict</th>"
    rows = []
    for result in results:
        for claim in result.claims:
            verdict, css = _verdict(claim)
            first = f"<td>{html.escape(result.name)}</td>" if with_experiment else ""
            rows.append(f"<tr>{first}<td>{html.escape(claim.paper)}</td>"
                        f"<td>{html.escape(claim.measured)}</td>"
                        f"<td class='{css}'>{verdict}</td></tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"
