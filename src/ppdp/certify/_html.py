"""A certificate as a page for people: certificate.html, from the Jinja2 template
``templates/certificate.html.j2`` (every value escaped; the page holds its own styles and
loads nothing)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ppdp.errors import MissingDependencyError
from ppdp.mechanisms import get_mechanism

__all__ = ["render_html"]

MEANINGS = {
    "splu": "Small counts stay hidden: a count of 1 to a individuals is estimated more than "
            "epsilon away (in relative terms) from its true value with at least probability "
            "T_P, so small groups cannot be told apart from the release.",
    "anatomy": "In every group of the release, at most a share 1/l of the rows hold one "
               "sensitive value: whoever finds a person's group guesses the person's "
               "sensitive value right with probability at most 1/l.",
    "ambiguity": "A tuple's presence in the data is believed with probability at most alpha, "
                 "and its sensitive value with probability at most beta.",
    "mondrian": "Every published class holds at least k rows (and, with l-diversity, l "
                "well-represented sensitive values): no person is singled out by the "
                "quasi-identifiers alone.",
    "uniform": "An adversary who believed a protected value with probability at most rho1 "
               "believes it with probability at most rho2 after seeing the release.",
    "sdr": "An adversary who believed a protected value with probability at most rho1 "
           "believes it with probability at most rho2 after seeing the release.",
    "alphabeta": "A tuple believed to be in the data with probability at most d is believed "
                 "with probability at most gamma after seeing the release.",
    "frapp": "A tuple believed to be in the data with probability at most d is believed with "
             "probability at most gamma after seeing the release.",
    "dbr": "The sensitive values are redrawn from their distribution; no privacy bound is "
           "stated.",
}
"""What each mechanism's guarantee means, in words."""


def render_html(document: Mapping[str, Any]) -> str:
    """The page of a signed certificate ``document``."""
    try:
        import jinja2
    except ImportError:
        raise MissingDependencyError("the certificate's page needs the certify extra: pip "
                                     "install 'ppdp[certify]'") from None
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("ppdp.certify", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True)
    environment.filters["number"] = number
    environment.filters["percent"] = percent
    environment.filters["when"] = when
    content = document["content"]
    release = content["release"]
    template = environment.get_template("certificate.html.j2")
    return template.render(
        document=document, content=content, release=release,
        parameters=_parameters(release["mechanism"], release["parameters"]),
        summary=_summary(release["mechanism"]),
        meaning=MEANINGS.get(release["mechanism"]),
        guarantee_rows=_guarantee_rows(content["guarantee"]),
        attacks=[_attack_row(r) for r in (content["attacks"] or {}).get("results", [])])


def number(value: Any) -> str:
    """A number as people read it: integers whole, others to 3 significant digits; a dash
    for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def when(value: str | None) -> str:
    """An ISO 8601 UTC time as people read it (``27 November 2026, 21:49:38 UTC``)."""
    if value is None:
        return "no expiry date"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    return f"{moment.day} {moment:%B %Y, %H:%M:%S} UTC"


def percent(value: Any) -> str:
    """A share as a percentage (one decimal); a dash for none."""
    if value is None:
        return "—"
    return f"{100 * float(value):.1f} %"


def _summary(mechanism: str) -> str:
    try:
        return str(get_mechanism(mechanism).summary)
    except (ValueError, KeyError):
        return mechanism


def _parameters(mechanism: str, values: Mapping[str, Any]) -> list[dict[str, str]]:
    """Each parameter with its value and what it means (the mechanism's own help)."""
    try:
        helps = {p.name: p.help for p in get_mechanism(mechanism).parameters}
    except (ValueError, KeyError):
        helps = {}
    return [{"name": name, "value": _value(value), "meaning": helps.get(name, "")}
            for name, value in values.items()]


def _value(value: Any) -> str:
    if isinstance(value, list) and len(value) > 8:
        return ", ".join(number(v) for v in value[:8]) + f", … ({len(value)} values)"
    if isinstance(value, list):
        return ", ".join(number(v) for v in value)
    return number(value)


def _guarantee_rows(guarantee: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The guarantee's scalar numbers, as (name, value) rows (its statement shown apart)."""
    if not guarantee:
        return []
    return [(key, number(value)) for key, value in guarantee.items()
            if key not in ("mechanism", "statement") and not isinstance(value, list | dict)]


def _attack_row(result: Mapping[str, Any]) -> dict[str, Any]:
    """An attack's numbers and a verdict in words: against the bound where one is stated,
    and against the baseline (an adversary without the release)."""
    success, baseline, bound = result["success"], result["baseline"], result["bound"]
    if bound is None:
        verdict = "no bound stated"
    elif success is not None and success > bound:
        verdict = "above the bound"
    else:
        verdict = "within the bound"
    gain = None if success is None or baseline is None else success - baseline
    return {**result, "verdict": verdict, "gain": gain}
