"""The Mechanism contract: a small immutable object holding validated parameters, whose
``publish`` turns data into a Release without touching the data, and the shapes of plan a
mechanism declares for the engines to run (`ppdp.plan.engine`)."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ppdp.data.schema import Schema
from ppdp.errors import SchemaError, UndeclaredDomainError
from ppdp.mechanisms.parameters import Parameter
from ppdp.plan.engine import publish
from ppdp.plan.registry import MECHANISM_MODULES, mechanism_module
from ppdp.plan.resources import Footprint, check_memory, memory_need
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.randomness import RandomState
from ppdp.release.base import Release
from ppdp.table.source import Source, SummarySource
from ppdp.table.table import Table

Progress = Callable[[str, int, int], None]
"""Told ``(stage, rows done, rows in all)`` as a long publication advances."""


class Mechanism(ABC):
    """Publishes data as a Release. Subclasses set ``name``, ``summary``, ``parameters`` and
    ``plan_shape`` (`ppdp.plan.engine.PLAN_SHAPES`), and define what their shape needs.

    ``publish`` takes a Table (published in memory), a source read in batches or a polars
    LazyFrame (the streaming engine: ``save`` writes the release) or a Spark DataFrame (the
    Spark engine: the release's rows stay in Spark), with that engine's options."""

    name: ClassVar[str]
    summary: ClassVar[str]
    parameters: ClassVar[tuple[Parameter, ...]]
    plan_shape: ClassVar[str]
    """How engines run this mechanism: ``rows``, ``blocks``, ``steps`` or ``session``."""
    footprint: ClassVar[Footprint | None] = None
    """The memory publishing a table in memory takes per row (`ppdp.plan.resources`), where it
    was measured."""
    guarantee_parameters: ClassVar[tuple[Parameter, ...]] = ()
    """Keyword options of ``guarantee`` beyond the mechanism's parameters (CLI: -p)."""
    guarantee_uses_table: ClassVar[bool] = False
    """Whether ``guarantee`` takes a table (its first argument) for data-dependent bounds."""
    registry: ClassVar[dict[str, type[Mechanism]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            Mechanism.registry[cls.name] = cls

    def publish(self, data: Any, *, random_state: RandomState = None,
                engine: str | None = None, **options: Any) -> Any:
        """Publish ``data`` on the engine that takes it, or the one named (`ppdp.plan.engine`).

        ``random_state``: None (OS entropy, the default for real releases), an int seed
        (reproducible, for experiments) or a numpy Generator. A Table gives the Release in
        memory, and so does a pandas or polars DataFrame or an Arrow table, read with the
        options of `ppdp.io.read.read_table` (``sensitive``, ``domains``...); a Spark DataFrame
        takes the options of `ppdp.engines.spark.publish` (``sensitive``, ``domains``,
        ``row_id``...) and gives what ``save`` writes."""
        return publish(self, data, engine=engine, random_state=random_state, **options)

    def publish_source(self, source: Source, directory: str | os.PathLike[str], *,
                       random_state: RandomState = None, batch_rows: int | None = None,
                       overwrite: bool = False, progress: Progress | None = None) -> Path:
        """Publish a source that need not fit in memory straight into a release directory.

        The rows are read in batches of ``batch_rows``; memory stays bounded by the batch,
        the domains and a part of the release (a block, for group mechanisms). ``progress(stage,
        done, total)`` is told how far each pass has got. The same ``random_state`` gives the
        same files as ``publish(table).save(directory)``.
        """
        published = publish(self, source, engine="streaming", random_state=random_state,
                            batch_rows=batch_rows, progress=progress)
        path: Path = published.save(directory, overwrite=overwrite)
        return path

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
        """Warn (``ppdp.plan.resources.MemoryNeedWarning``) when publishing ``table`` is
        expected to need more memory than is available; the estimated need in bytes."""
        # The warning names the user's line: check_memory, this method, the engine's publish,
        # `ppdp.plan.engine.publish`, `publish`, then the caller.
        return check_memory(table, self.name, need=memory_need(table, self.footprint),
                            stacklevel=6)

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


class RowMechanism(Mechanism):
    """A row-local mechanism (uniform, sdr, dbr, frapp): each row published from its own
    values, summaries of the rows and keyed draws (`ppdp.plan.rows.RowPlan`)."""

    plan_shape = "rows"

    @abstractmethod
    def row_plan(self, source: SummarySource, key: int) -> RowPlan:
        """The plan for these rows and this key: passes, kernel and published schema."""

    @abstractmethod
    def release_of(self, plan: RowPlan, rows: PublishedRows) -> Release:
        """The release held in memory of a plan's published rows (the memory engine's)."""


class GroupMechanism(Mechanism):
    """A mechanism whose guarantees hold per group of rows (splu, anatomy, ambiguity): engines
    run ``publish_block`` on the whole table in memory, or on each block of a larger source
    (`ppdp.plan.blocks`)."""

    plan_shape = "blocks"

    @abstractmethod
    def sensitive_columns(self, data: Table | SummarySource) -> tuple[str, ...]:
        """The sensitive columns, once the schema is checked to suit the mechanism."""

    @abstractmethod
    def publish_block(self, table: Table, rng: np.random.Generator) -> Release:
        """Publish a table (a whole table, or one block of a source), drawing from ``rng``."""


class StepsMechanism(Mechanism):
    """A mechanism of its own steps (Mondrian, alpha-beta): ``publish_table`` is the reference
    in memory; the other engines run the same steps their own way."""

    plan_shape = "steps"

    @abstractmethod
    def publish_table(self, table: Table, *, random_state: RandomState = None) -> Release:
        """Publish a table held in memory."""


def get_mechanism(name: str) -> type[Mechanism]:
    """The mechanism class registered under ``name`` (its module imported if need be)."""
    if name not in Mechanism.registry:
        mechanism_module(name)
    return Mechanism.registry[name]


def mechanism_with(name: str, parameters: Mapping[str, Any]) -> Mechanism:
    """The mechanism registered under ``name`` with a release's ``parameters``: those its
    constructor takes (a release also records ones it derived)."""
    cls = get_mechanism(name)
    names = {p.name for p in cls.parameters}
    return cls.from_params({k: v for k, v in parameters.items() if k in names})


def mechanism_of(release: Release) -> Mechanism:
    """The mechanism with a release's public parameters (`mechanism_with`)."""
    return mechanism_with(release.mechanism, release.parameters)


def all_mechanisms() -> dict[str, type[Mechanism]]:
    """Every mechanism by name (all their modules imported), in name order."""
    return {name: get_mechanism(name) for name in sorted(MECHANISM_MODULES)}


def require_sensitive(table: Table | SummarySource, mechanism: str, *, exactly_one: bool = False,
                      publishing: bool = True) -> tuple[str, ...]:
    """The sensitive columns, checked; when ``publishing``, their domains must be declared."""
    sensitive = check_sensitive(table.schema, mechanism, exactly_one=exactly_one)
    if publishing:
        require_declared_domains(
            table, sensitive, mechanism,
            "a release lists the sensitive domain, so each listed value would be known to occur "
            "in the data (for a rare value, the small count the mechanism protects)")
    return sensitive


def check_sensitive(schema: Schema, mechanism: str, *, exactly_one: bool = False
                    ) -> tuple[str, ...]:
    """The sensitive columns of a schema, refused when there is none (or, ``exactly_one``,
    several): what publishing checks of the data, and loading of a release's roles."""
    sensitive = schema.sensitive
    if not sensitive:
        raise SchemaError(f"{mechanism} needs a sensitive column; mark one with "
                          f"read_table(..., sensitive=...) or table.with_roles(sensitive=...) "
                          f"(CLI: --sensitive COL)")
    if exactly_one and len(sensitive) > 1:
        raise SchemaError(f"{mechanism} protects one sensitive column; got {list(sensitive)}")
    return sensitive


def require_declared_domains(table: Table | SummarySource, columns: tuple[str, ...] | list[str],
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
