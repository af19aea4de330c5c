"""What the attacks found: one result per attack, the report of a run, and its files.

A result puts an attack's success beside the baseline (the same measure for an adversary
without the release) and the bound the mechanism states for it. The per-individual risks
stay with the custodian: `AttackReport.write` puts them in a directory of the custodian's
choosing and refuses any directory that is, or lies inside, a ppdp release.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from ppdp.io.storage import write_atomic
from ppdp.release.format import FORMAT_NAME, METADATA_FILE
from ppdp.table.table import Table

__all__ = ["AttackReport", "AttackResult", "refuse_release_directory"]

INDIVIDUALS_FILE = "individuals.csv"
SUMMARY_FILE = "attacks.csv"
FIGURE_FILE = "attack-risk.png"


@dataclass(frozen=True)
class AttackResult:
    """One attack on one release: its success beside the prior-only baseline and the stated
    bound, who the adversary is, where the attack comes from, and what it cost."""

    attack: str
    measure: str
    """What ``success``, ``baseline`` and ``bound`` measure."""
    success: float
    baseline: float
    """The same measure for an adversary who has only an independent sample of the
    population (or only the prior the guarantee assumes), not the release."""
    bound: float | None
    """The mechanism's stated bound on this measure (None where it states none)."""
    adversary: str
    source: str
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)
    risk: np.ndarray | None = field(default=None, repr=False, compare=False)
    """Per source row, what the attack learns about that individual (see ``risk_meaning``);
    NaN where it learns nothing. For the custodian only."""
    risk_meaning: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The result without the per-individual risks."""
        return {"attack": self.attack, "measure": self.measure, "success": self.success,
                "baseline": self.baseline, "bound": self.bound, "adversary": self.adversary,
                "source": self.source, "seconds": self.seconds, "details": self.details,
                "risk": self.risk_meaning}


@dataclass
class AttackReport:
    """The attacks run against one release of one source table."""

    mechanism: str
    parameters: dict[str, Any]
    table: Table = field(repr=False)
    results: list[AttackResult] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)
    """Attacks that do not apply to this release, with the reason."""

    def __getitem__(self, attack: str) -> AttackResult:
        for result in self.results:
            if result.attack == attack:
                return result
        raise KeyError(f"no result of attack {attack!r}; results: "
                       f"{', '.join(r.attack for r in self.results) or 'none'}")

    def to_dict(self) -> dict[str, Any]:
        """Everything but the per-individual risks (safe to print and share)."""
        return {"mechanism": self.mechanism, "parameters": self.parameters,
                "rows": self.table.n_rows,
                "attacks": [result.to_dict() for result in self.results],
                "not_applicable": dict(self.not_applicable)}

    def individuals(self, top: int | None = None) -> pa.Table:
        """The individuals most at risk, first: each source row (its position and values) with
        its highest risk over the attacks, the attack that gives it, and every attack's risk.
        ``top`` keeps that many rows (None: all). For the custodian only."""
        assessed = [r for r in self.results if r.risk is not None]
        risks = np.stack([cast(np.ndarray, r.risk) for r in assessed], axis=1) if assessed \
            else np.full((self.table.n_rows, 0), np.nan)
        filled = np.where(np.isnan(risks), -np.inf, risks)
        highest = filled.max(axis=1, initial=-np.inf)
        which = filled.argmax(axis=1) if assessed else np.zeros(self.table.n_rows, dtype=int)
        order = np.argsort(-highest, kind="stable")
        if top is not None:
            order = order[:top]
        columns: dict[str, Any] = {"row": pa.array(order, pa.int64())}
        values = self.table.take(order).to_arrow()
        for name in values.column_names:
            columns[name] = values.column(name)
        columns["risk"] = pa.array(np.where(np.isfinite(highest[order]), highest[order],
                                            np.nan))
        names = np.asarray([r.attack for r in assessed] or [""])
        columns["attack"] = pa.array(np.where(np.isfinite(highest[order]),
                                              names[which[order]], ""))
        for index, result in enumerate(assessed):
            columns[f"risk_{result.attack}"] = pa.array(risks[order, index])
        return pa.table(columns)

    def write(self, directory: str | os.PathLike[str], *, top: int | None = 1000
              ) -> list[Path]:
        """Write ``attacks.csv`` (the results), ``individuals.csv`` (the ``top`` individuals
        most at risk) and ``attack-risk.png`` (risk against the guarantee) into
        ``directory``, created if needed. A directory that is or lies inside a ppdp release
        is refused: the per-individual risks must never travel with a release."""
        root = Path(directory)
        refuse_release_directory(root)
        root.mkdir(parents=True, exist_ok=True)
        summary = io.StringIO()
        writer = csv.writer(summary)
        writer.writerow(["attack", "measure", "success", "baseline", "bound", "adversary",
                         "source", "seconds", "details"])
        for r in self.results:
            writer.writerow([r.attack, r.measure, r.success, r.baseline,
                             "" if r.bound is None else r.bound, r.adversary, r.source,
                             f"{r.seconds:.3f}",
                             json.dumps(r.details, default=lambda number: number.item())])
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(self.individuals(top), sink)
        return [write_atomic(root / SUMMARY_FILE, summary.getvalue().encode()),
                write_atomic(root / INDIVIDUALS_FILE, sink.getvalue().to_pybytes()),
                write_atomic(root / FIGURE_FILE, self.figure())]

    def figure(self) -> bytes:
        """PNG: each attack's success beside its baseline and bound (left), and the share of
        individuals at each level of risk with the bounds marked (right)."""
        # Imported here, not at the top: choosing the Agg backend is process-wide, so it
        # happens only when a figure is drawn, never on importing ppdp.attack.
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        names = [r.attack for r in self.results]
        positions = np.arange(len(names))
        left.bar(positions - 0.2, [r.baseline for r in self.results], 0.4,
                 label="baseline (no release)", color="#bbbbbb")
        left.bar(positions + 0.2, [r.success for r in self.results], 0.4,
                 label="attack on the release", color="#c0392b")
        labelled = False
        for position, result in zip(positions, self.results, strict=True):
            if result.bound is not None:
                left.hlines(result.bound, position - 0.45, position + 0.45, colors="black",
                            linestyles="dashed", label=None if labelled else "stated bound")
                labelled = True
        left.set_xticks(positions, names, rotation=20, ha="right")
        left.set_ylim(0, 1.05)
        left.set_ylabel("success (each attack's measure)")
        left.set_title(f"{self.mechanism}: attacks against the guarantee", fontsize=9)
        left.legend(fontsize=7)
        for result in self.results:
            if result.risk is None:
                continue
            risk = np.sort(result.risk[np.isfinite(result.risk)])[::-1]
            if not len(risk):
                continue
            line, = right.step(risk, np.arange(1, len(risk) + 1) / len(risk), where="post",
                               label=result.attack)
            if result.bound is not None:
                right.axvline(result.bound, color=line.get_color(), linestyle="dotted")
        right.set_xlabel("risk of an individual (dotted: the attack's stated bound)")
        right.set_ylabel("share of individuals at or above")
        right.set_xlim(0, 1.02)
        right.set_title("individuals by risk", fontsize=9)
        if right.get_legend_handles_labels()[0]:
            right.legend(fontsize=7)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
        plt.close(figure)
        return buffer.getvalue()


def refuse_release_directory(path: Path) -> None:
    """Raise when ``path`` is a ppdp release directory or lies inside one (the custodian's
    per-individual output must not be written among a release's files)."""
    for folder in (path, *path.resolve().parents):
        metadata = folder / METADATA_FILE
        try:
            is_release = json.loads(metadata.read_text()).get("format") == FORMAT_NAME
        except (OSError, ValueError, AttributeError):
            is_release = False
        if is_release:
            raise ValueError(f"{path} is {'inside ' if folder != path else ''}a ppdp release "
                             f"directory{f' ({folder})' if folder != path else ''}; the "
                             f"per-individual risks are for the custodian only and never go "
                             f"with a release: choose another output directory")

