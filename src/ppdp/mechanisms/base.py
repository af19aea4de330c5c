"""The Mechanism contract: a small immutable object holding validated parameters, whose
``publish`` turns a Table into a Release without touching the Table."""

from __future__ import annotations

import functools
import importlib
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ppdp.errors import SchemaError, UndeclaredDomainError
from ppdp.keyed import make_key
from ppdp.plans import PublishedRows, RowPlan, execute_in_memory
from ppdp.randomness import RandomState
from ppdp.release import Release
from ppdp.resources import check_memory
from ppdp.sources import Source, TableSource
from ppdp.table import Role, Schema, Table

REQUIRED = object()

Progress = Callable[[str, int, int], None]
"""Told ``(stage, rows done, rows in all)`` as a long publication advances."""


def is_spark_frame(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame (classic or Spark Connect), without importing
    pyspark."""
    return type(data).__module__.startswith("pyspark.sql.") and hasattr(data, "sparkSession")


def _taking_spark_frames(publish: Callable[..., Any]) -> Callable[..., Any]:
    """A mechanism's ``publish`` that also takes a Spark DataFrame: that goes to
    `ppdp.spark.publish` with the keyword options it takes (``sensitive``, ``domains``,
    ``row_id``...), anything else to the mechanism's own ``publish``."""

    @functools.wraps(publish)
    def publish_anything(self: Mechanism, table: Any, *args: Any, **options: Any) -> Any:
        if is_spark_frame(table):
            from ppdp.spark import publish as publish_on_spark

            return publish_on_spark(self, table, *args, **options)
        return publish(self, table, *args, **options)

    publish_anything.takes_spark_frames = True  # type: ignore[attr-defined]
    return publish_anything


@dataclass(frozen=True)
class Parameter:
    """A mechanism parameter as the CLI and docs show it, named by the paper's symbol."""

    name: str
    kind: type
    help: str
    default: Any = REQUIRED
    resource: bool = False
    """A limit on memory or size (such as ``max_rows``), not a privacy parameter: it never
    changes what is published, so ``parameter_values`` (what releases record and later views
    must repeat) leaves it out."""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def convert(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                if self.kind is int:
                    number = float(value)
                    if not number.is_integer():
                        raise ValueError
                    return int(number)
                return self.kind(value)
            except ValueError:
                raise ValueError(f"parameter {self.name!r} must be {self.kind.__name__}, got "
                                 f"{value!r}") from None
        return value


class Mechanism(ABC):
    """Publishes a Table as a Release. Subclasses set ``name``, ``summary``, ``parameters``.

    Every ``publish`` also takes a Spark DataFrame (`ppdp.spark.publish`, the same keyword
    options): its release's rows stay in Spark."""

    name: ClassVar[str]
    summary: ClassVar[str]
    parameters: ClassVar[tuple[Parameter, ...]]
    guarantee_parameters: ClassVar[tuple[Parameter, ...]] = ()
    """Keyword options of ``guarantee`` beyond the mechanism's parameters (CLI: -p)."""
    guarantee_uses_table: ClassVar[bool] = False
    """Whether ``guarantee`` takes a table (its first argument) for data-dependent bounds."""
    registry: ClassVar[dict[str, type[Mechanism]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            Mechanism.registry[cls.name] = cls
        if not getattr(cls.publish, "takes_spark_frames", False):
            cls.publish = _taking_spark_frames(cls.publish)  # type: ignore[method-assign]

    @abstractmethod
    def publish(self, table: Table, *, random_state: RandomState = None) -> Release:
        """Publish the table. ``random_state``: None (OS entropy, the default for real
        releases), an int seed (reproducible, for experiments) or a numpy Generator."""

    def publish_source(self, source: Source, directory: str | os.PathLike[str], *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       overwrite: bool = False, progress: Progress | None = None) -> Path:
        """Publish a source that need not fit in memory straight into a release directory.

        The rows are read in batches of ``batch_rows``; memory stays bounded by the batch,
        the domains and a part of the release. ``progress(stage, done, total)`` is told how
        far each pass has got. The same ``random_state`` gives the same files as
        ``publish(table).save(directory)``.
        """
        if not hasattr(self, "row_plan"):
            raise NotImplementedError(f"{self.name} cannot publish a source in batches")
        from ppdp.streaming import publish_rows_streaming

        return publish_rows_streaming(self, source, directory, random_state=random_state,
                                      batch_rows=batch_rows, overwrite=overwrite,
                                      progress=progress)

    @abstractmethod
    def guarantee(self) -> Any:
        """The paper's privacy guarantee for these parameters (an object with ``to_dict``).

        Subclasses may take the keyword options listed in ``guarantee_parameters`` and, when
        ``guarantee_uses_table``, a table as first argument."""

    @property
    def parameter_values(self) -> dict[str, Any]:
        """The privacy parameters' values: what determines the release and its guarantee
        (resource options, ``Parameter.resource``, are left out)."""
        return {p.name: getattr(self, p.name) for p in self.parameters if not p.resource}

    @property
    def resource_values(self) -> dict[str, Any]:
        """The resource options' values: limits that never change what is published."""
        return {p.name: getattr(self, p.name) for p in self.parameters if p.resource}

    def check_memory(self, table: Table) -> int:
        """Warn (``ppdp.resources.MemoryNeedWarning``) when publishing ``table`` is expected to
        need more memory than is available; the estimated need in bytes."""
        return check_memory(table, self.name, stacklevel=4)

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v!r}"
                           for k, v in {**self.parameter_values, **self.resource_values}.items())
        return f"{type(self).__name__}({values})"

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> Mechanism:
        """Build from ``name=value`` pairs (strings are converted), with clear errors."""
        known = {p.name: p for p in cls.parameters}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"mechanism {cls.name!r} has no parameter {unknown[0]!r}; its "
                             f"parameters: {', '.join(known) or 'none'}")
        kwargs = {}
        for name, parameter in known.items():
            if name in values:
                kwargs[name] = parameter.convert(values[name])
            elif parameter.required:
                raise ValueError(f"mechanism {cls.name!r} needs parameter {name!r} "
                                 f"({parameter.help}); pass -p {name}=VALUE")
        return cls(**kwargs)


MECHANISM_MODULES = {
    "alphabeta": "ppdp.mechanisms.alphabeta",
    "ambiguity": "ppdp.mechanisms.ambiguity",
    "anatomy": "ppdp.mechanisms.anatomy",
    "dbr": "ppdp.mechanisms.dbr",
    "frapp": "ppdp.mechanisms.frapp",
    "laplace": "ppdp.mechanisms.laplace",
    "mondrian": "ppdp.mechanisms.mondrian",
    "sdr": "ppdp.mechanisms.sdr",
    "splu": "ppdp.mechanisms.splu",
    "uniform": "ppdp.mechanisms.perturbation",
}
"""The module of each mechanism, imported when the mechanism is first asked for: importing
them all (scipy's sparse matrices among them) took a quarter of a command's start."""


def get_mechanism(name: str) -> type[Mechanism]:
    """The mechanism class registered under ``name`` (its module imported if need be)."""
    if name not in Mechanism.registry and name in MECHANISM_MODULES:
        importlib.import_module(MECHANISM_MODULES[name])
    try:
        return Mechanism.registry[name]
    except KeyError:
        raise ValueError(f"unknown mechanism {name!r}; known: "
                         f"{', '.join(sorted(MECHANISM_MODULES))}") from None


def all_mechanisms() -> dict[str, type[Mechanism]]:
    """Every mechanism by name (all their modules imported), in name order."""
    return {name: get_mechanism(name) for name in sorted(MECHANISM_MODULES)}


def require_integer(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def require_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def require_open_unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return float(value)


def require_unit_interval(name: str, value: Any) -> float:
    """A probability bound: 0 < value <= 1 (1 means no constraint)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"{name} must be in the interval (0, 1], got {value!r}")
    return float(value)


def publish_in_memory(mechanism: Mechanism, table: Table, random_state: RandomState
                      ) -> tuple[RowPlan, PublishedRows]:
    """Run a row-local mechanism's plan on a table in memory: the plan and its rows."""
    key = make_key(random_state)
    source = TableSource(table)
    plan = mechanism.row_plan(source, key)  # type: ignore[attr-defined]
    return plan, execute_in_memory(plan, source, key)


def publish_rows(table: Table, rng: np.random.Generator,
                 redraw: Callable[[str, np.ndarray], np.ndarray]
                 ) -> tuple[Schema, dict[str, np.ndarray]]:
    """The published columns (all but ignored ones), each sensitive column replaced by
    ``redraw(name, codes)``, rows shuffled."""
    names = [c.name for c in table.schema.columns if c.role != Role.IGNORED]
    sensitive = table.schema.sensitive
    codes = {name: redraw(name, table.codes[name]) if name in sensitive else table.codes[name]
             for name in names}
    # Positions as intp once: numpy converts int32 indices on every gather (twice the time).
    shuffle = shuffled_positions(table.n_rows, rng).astype(np.intp)
    return table.schema.select(names), {name: np.take(values, shuffle)
                                        for name, values in codes.items()}


def shuffled_positions(n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """A random permutation of the row positions (int32 where it fits, to save memory)."""
    positions = np.arange(n_rows, dtype=np.int32 if n_rows < 2**31 else np.int64)
    rng.shuffle(positions)
    return positions


def require_sensitive(table: Table | Source, mechanism: str, *, exactly_one: bool = False,
                      publishing: bool = True) -> tuple[str, ...]:
    """The sensitive columns, checked; when ``publishing``, their domains must be declared."""
    sensitive = table.schema.sensitive
    if not sensitive:
        raise SchemaError(f"{mechanism} needs a sensitive column; mark one with "
                          f"read_table(..., sensitive=...) or table.with_roles(sensitive=...) "
                          f"(CLI: --sensitive COL)")
    if exactly_one and len(sensitive) > 1:
        raise SchemaError(f"{mechanism} protects one sensitive column; got {list(sensitive)}")
    if publishing:
        require_declared_domains(
            table, sensitive, mechanism,
            "a release lists the sensitive domain, so each listed value would be known to occur "
            "in the data (for a rare value, the small count the mechanism protects)")
    return sensitive


def require_declared_domains(table: Table | Source, columns: tuple[str, ...] | list[str],
                             mechanism: str, why: str) -> None:
    """Refuse columns whose domains were taken from the data instead of being declared.

    ``why`` says what listing (or drawing from) such a domain would reveal for this mechanism.
    """
    undeclared = [c for c in columns if not table.schema[c].declared]
    if undeclared:
        raise UndeclaredDomainError(
            f"{mechanism} needs declared public domains for {', '.join(map(repr, undeclared))}, "
            f"but they were taken from the values present, and {why}; declare them "
            f"(read_table(..., domains={{...}}) or a schema file; CLI: --domains FILE, --domain "
            f"COL=MIN..MAX or COL=a,b,c, --hierarchies DIR), or, where the values present are "
            f"public, accept that with table.declare_observed_domains() (CLI: "
            f"--observed-domains)")
