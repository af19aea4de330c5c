"""How the workbench reads a table, and the command line and Python code that read it the same
way and publish it: one `Recipe` per choice of roles and domains, so that what the workbench
publishes and what the shown command publishes come from the same table."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp.data.domains import parse_domain_options
from ppdp.data.schema import Column
from ppdp.engines.memory.engine import open_dataset
from ppdp.io.read import read_table
from ppdp.mechanisms.parameters import number_text
from ppdp.table.table import Table

__all__ = ["Recipe", "domain_text", "release_name"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def release_name(text: str) -> str:
    """A release's name as the workspace stores it (a folder name: letters, digits, '.', '_',
    '-'; at most 64), or the one line that says why not."""
    name = text.strip()
    if not _NAME.fullmatch(name):
        raise ValueError(f"a release name is 1 to 64 letters, digits, '.', '_' or '-', "
                         f"starting with a letter or digit; got {name[:80]!r}")
    return name


def domain_text(column: Column) -> str:
    """A column's domain in the syntax of ``--domain COL=SPEC``: MIN..MAX for a run of
    integers, else its values separated by commas."""
    values = list(column.domain)
    if column.kind == "int" and values and values == list(range(values[0], values[-1] + 1)) \
            and len(values) > 2:
        return f"{values[0]}..{values[-1]}"
    return ",".join(str(v) for v in values)


@dataclass(frozen=True)
class Recipe:
    """A table as the workbench reads it: the source, its roles, its declared domains (each as
    the text of ``--domain``) and whether the values present are taken as the other domains."""

    source: str
    """What the command line reads: a bundled dataset's name or the file's name."""
    path: Path | None
    """The stored file (None for a bundled dataset)."""
    sensitive: str
    quasi_identifiers: tuple[str, ...]
    domains: Mapping[str, str] = field(default_factory=dict)
    observed: bool = False
    drop_missing: bool = False
    all_quasi_identifiers: bool = True
    """Every column but the sensitive one is a quasi-identifier (no --qi needed)."""

    def declared(self) -> dict[str, Any]:
        """The declared domains, parsed (a bad one raises its one line)."""
        return dict(parse_domain_options([f"{k}={v}" for k, v in self.domains.items()]))

    def read(self) -> Table:
        """The table, read as `options` and the Python code read it."""
        if self.path is None:
            return open_dataset(self.source, sensitive=self.sensitive,
                                quasi_identifiers=list(self.quasi_identifiers),
                                domains=self.declared(), observed_domains=self.observed)
        return read_table(self.path, sensitive=self.sensitive,
                          quasi_identifiers=list(self.quasi_identifiers),
                          domains=self.declared(), observed_domains=self.observed,
                          missing="drop" if self.drop_missing else "error")

    def options(self) -> list[str]:
        """The options of ``ppdp publish`` that read the table as `read` does."""
        words = ["-s", self.sensitive]
        if not self.all_quasi_identifiers:
            words += ["--qi", ",".join(self.quasi_identifiers)]
        for name, spec in self.domains.items():
            words += ["--domain", f"{name}={spec}"]
        if self.drop_missing:
            words.append("--drop-missing")
        if self.observed:
            words.append("--observed-domains")
        return words

    def command(self, mechanism: str, parameters: Mapping[str, Any], output: str) -> str:
        """The ``ppdp publish`` line that makes the same release (from OS entropy: no seed)."""
        words = ["ppdp", "publish", self.source, "-m", mechanism]
        for key, value in parameters.items():
            words += ["-p", f"{key}={number_text(value)}"]
        return shlex.join([*words, *self.options(), "-o", output])

    def python(self, mechanism: str, parameters: Mapping[str, Any], output: str) -> str:
        """Python code that makes the same release (from OS entropy: no seed)."""
        arguments = [repr(self.source), f"sensitive={self.sensitive!r}",
                     f"quasi_identifiers={list(self.quasi_identifiers)!r}"]
        domains = {k: _literal(v) for k, v in self.declared().items()}
        lines = ["import ppdp", ""]
        if self.path is None:
            lines.append(f"table = ppdp.datasets.load({', '.join(arguments)})")
            if domains:
                # Table.with_domains takes the values themselves: a range, not {min, max}.
                ranges = {k: _range_literal(v) for k, v in self.declared().items()}
                lines.append("table = table.with_domains({" + ", ".join(
                    f"{k!r}: {v}" for k, v in ranges.items()) + "})")
            if self.observed:
                lines.append("table = table.declare_observed_domains()")
        else:
            if domains:
                arguments.append(f"domains={domains!r}")
            if self.observed:
                arguments.append("observed_domains=True")
            if self.drop_missing:
                arguments.append("missing='drop'")
            lines.append("table = ppdp.read_table(\n    " + ",\n    ".join(arguments) + ")")
        chosen = ", ".join(f"{k}={v!r}" for k, v in parameters.items())
        lines += [f"mechanism = ppdp.get_mechanism({mechanism!r})({chosen})",
                  "release = mechanism.publish(table)  # no seed: drawn from OS entropy",
                  f"release.save({output!r})", ""]
        return "\n".join(lines)


def _literal(domain: Any) -> Any:
    """A parsed domain as a Python literal that `read_table` takes back."""
    if isinstance(domain, range):
        return {"min": domain.start, "max": domain.stop - 1}
    return list(domain)


def _range_literal(domain: Any) -> str:
    """A parsed domain as the Python text of its values (a run of integers as a range)."""
    if isinstance(domain, range):
        return f"range({domain.start}, {domain.stop})"
    return repr(list(domain))
