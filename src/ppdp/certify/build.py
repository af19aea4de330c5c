"""A release's certificate: what was published, what it guarantees, what was measured on it,
signed by the custodian.

    document = certify("adult-anatomy", table, private_key=key, commitment_key=secret,
                       source="adult")
    write_certificate(document, "adult-anatomy/certificate")

`certify` gathers what ppdp computes about a release of ``table``: the mechanism's guarantee
for the release's parameters, the privacy measured on the release against its bound
(`ppdp.risk.measured.measured_privacy`), the attacks against their baseline and bound
(`ppdp.attack.run_attacks`: results only, no individual and no seed), the accuracy of counts by
size (`ppdp.certify._accuracy`), a keyed commitment to the source (`ppdp.certify.commitment`),
what none of this covers, the software's versions, and signs it
(`ppdp.release.certificate.sign_certificate`). `write_certificate` writes certificate.json,
a page for people (certificate.html) and, where a browser is found, its PDF.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow

from ppdp import __version__
from ppdp.attack import run_attacks
from ppdp.certify._accuracy import accuracy_by_band
from ppdp.certify._html import render_html
from ppdp.certify._limits import not_covered
from ppdp.certify._pdf import find_browser, print_pdf
from ppdp.certify.commitment import source_commitment
from ppdp.data.schema import Ordered
from ppdp.errors import OutputError, OutputExistsError, SchemaError
from ppdp.io.storage import commit_directory, staged_directory
from ppdp.jsonable import json_ready
from ppdp.mechanisms.base import mechanism_of
from ppdp.randomness import RandomState, make_rng
from ppdp.release.base import Release
from ppdp.release.certificate import (
    CERTIFICATE_FILE,
    HTML_FILE,
    PDF_FILE,
    certificate_bytes,
    release_summary,
    sign_certificate,
)
from ppdp.release.format import METADATA_FILE, parse_metadata
from ppdp.release.keys import key_fingerprint
from ppdp.release.load import load_release
from ppdp.release.target import holds_certificate
from ppdp.risk.measured import measured_privacy
from ppdp.table.table import Table

__all__ = ["Progress", "certify", "write_certificate"]


Progress = Callable[[str, int, int], None]
"""Told ``(what is being done, steps done, steps in all)``."""

_STEPS = ("reading the release", "computing the guarantee", "measuring privacy",
          "running the attacks", "measuring accuracy", "committing to the source", "signing")


def certify(release_dir: str | os.PathLike[str], table: Table, *, private_key: Any,
            commitment_key: bytes, source: str | os.PathLike[str],
            signer: str | None = None, valid_days: int | None = 365, attacks: bool = True,
            random_state: RandomState = None, progress: Progress | None = None
            ) -> dict[str, Any]:
    """The signed certificate of the release in ``release_dir``, published from ``table``.

    ``private_key``: the signer's Ed25519 private key (`ppdp.release.keys.load_private_key`).
    ``commitment_key``: the custodian's secret for the source commitment (never written).
    ``source``: the file ``table`` was read from, or a bundled dataset's name (its base name
    goes into the certificate). ``signer``: a name for the signer (optional). ``valid_days``:
    days until the certificate expires (None: never). ``attacks``: run the attacks (False
    leaves them out, and says so). ``random_state`` draws the attacks' split into targets
    and population and the accuracy queries; it is not recorded.
    """
    if valid_days is not None and (isinstance(valid_days, bool) or not isinstance(valid_days, int)
                                   or valid_days < 1):
        raise ValueError(f"valid_days must be a whole number of days >= 1 (or None: no "
                         f"expiry), got {valid_days!r}")
    if signer is not None and not signer.strip():
        raise ValueError("signer must be a name, not empty text")
    tell = progress or (lambda *_: None)
    steps = len(_STEPS)
    tell(_STEPS[0], 0, steps)
    directory = Path(release_dir)
    release = load_release(directory)
    # Read as loading read it (duplicate keys refused): the summary signed is of that file.
    metadata = parse_metadata((directory / METADATA_FILE).read_bytes())
    published = _as_published(table, release)
    rng = make_rng(random_state)

    tell(_STEPS[1], 1, steps)
    mechanism = mechanism_of(release)
    guarantee = _guarantee(mechanism, release, published)

    tell(_STEPS[2], 2, steps)
    measured = [{"measure": m.measure, "largest": m.largest, "bound": m.bound,
                 "share_over": m.share_over, "margin": m.margin}
                for m in measured_privacy(mechanism, release, published)]

    tell(_STEPS[3], 3, steps)
    attack_results = None
    if attacks:
        report = run_attacks(release, published, random_state=rng)
        attack_results = {"results": [_attack(r.to_dict()) for r in report.results],
                          "not_applicable": dict(report.not_applicable)}

    tell(_STEPS[4], 4, steps)
    accuracy, without_stderr = accuracy_by_band(release, published, rng)
    queries = sum(band["queries"] for band in accuracy["bands"])

    tell(_STEPS[5], 5, steps)
    commitment = source_commitment(source, table, commitment_key)

    tell(_STEPS[6], 6, steps)
    signed_at = datetime.now(UTC).replace(microsecond=0)
    content = {
        "release": release_summary(metadata),
        "guarantee": guarantee,
        "measured_privacy": measured,
        "attacks": attack_results,
        "accuracy": accuracy,
        "source": {"name": _source_name(source), "n_rows": table.n_rows,
                   "commitment": commitment},
        "not_covered": not_covered(release.mechanism, guarantee, attack_results,
                                   without_stderr, queries),
        "software": software_versions(),
        "signer": {"name": signer.strip() if signer is not None else None,
                   "key_fingerprint": key_fingerprint(private_key.public_key())},
        "signed_at": _iso(signed_at),
        "valid_until": None if valid_days is None
        else _iso(signed_at + timedelta(days=valid_days)),
    }
    document = sign_certificate(json_ready(content), private_key)
    tell("done", steps, steps)
    return document


def write_certificate(document: Mapping[str, Any], directory: str | os.PathLike[str], *,
                      overwrite: bool = False) -> list[Path]:
    """Write ``document`` into ``directory`` (made atomically): certificate.json, the page
    certificate.html and, when a browser is found (`ppdp.certify._pdf.find_browser`),
    certificate.pdf. ``overwrite`` replaces a directory that holds a certificate and nothing
    else of note; any other existing directory is refused. The paths written, in that order.
    """
    target = Path(directory)
    if (target / METADATA_FILE).exists():
        raise OutputError(f"{target} is a release directory; write its certificate beside its "
                          f"files, in {target / 'certificate'}")
    # Decided again under a lock when the directory is committed; asked here first so that
    # a refusal comes before the page is printed.
    if os.path.lexists(target):
        if not overwrite:
            raise OutputExistsError(f"{target} already exists")
        _replaceable(target)
    names = [CERTIFICATE_FILE, HTML_FILE]
    page = render_html(document)
    browser = find_browser()
    with staged_directory(target) as staging:
        (staging / CERTIFICATE_FILE).write_bytes(certificate_bytes(document))
        (staging / HTML_FILE).write_text(page, encoding="utf-8")
        if browser is not None:
            print_pdf(staging / HTML_FILE, staging / PDF_FILE, browser=browser)
            names.append(PDF_FILE)
        commit_directory(staging, target, overwrite=overwrite, replaceable=_replaceable)
    return [target / name for name in names]


def software_versions() -> dict[str, str]:
    """The versions of ppdp, Python, numpy and pyarrow that made a certificate."""
    return {"ppdp": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "pyarrow": pyarrow.__version__}


def _replaceable(target: Path) -> None:
    """Refuse to replace a directory that is not a certificate's (ours to replace)."""
    if not holds_certificate(target):
        raise OutputError(f"{target} exists and holds no ppdp certificate, or files besides a "
                          f"certificate's; it is not replaced")


def _as_published(table: Table, release: Release) -> Table:
    """The source's columns that the release publishes, with the release's roles and domains
    (codes numbered as the release numbers them)."""
    schema = release.schema
    missing = [name for name in schema.names if name not in table.schema]
    if missing:
        raise SchemaError(f"the source has no column {missing[0]!r}, which the release "
                          f"publishes; certify the release with the table it was published "
                          f"from")
    view = table.select(schema.names).with_roles(
        sensitive=schema.sensitive, quasi_identifiers=schema.quasi_identifiers)
    return view.with_domains({c.name: Ordered(c.domain) if c.ordered else c.domain
                              for c in schema.columns})


def _guarantee(mechanism: Any, release: Release, table: Table) -> dict[str, Any] | None:
    """The mechanism's guarantee for the release's parameters, on ``table`` where it depends
    on the data; None for a mechanism that states none."""
    result = mechanism.guarantee(table) if mechanism.guarantee_uses_table \
        else mechanism.guarantee()
    if result is None:
        return None
    data: dict[str, Any] = json_ready(result.to_dict())
    return data


def _attack(result: Mapping[str, Any]) -> dict[str, Any]:
    """An attack's result as the certificate keeps it: its numbers, adversary and source;
    no per-individual risk (left out by ``to_dict``) and no time (it varies by machine)."""
    return {key: result[key] for key in ("attack", "measure", "success", "baseline", "bound",
                                         "adversary", "source", "details")}


def _source_name(source: str | os.PathLike[str]) -> str:
    """A file's base name (the custodian's folders stay private), or a bundled dataset's."""
    return Path(source).name


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

