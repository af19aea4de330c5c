"""Mondrian: strict multidimensional median partitioning into k-anonymous classes, with
optional l-diversity of one of two kinds:

* distinct (Machanavajjhala et al. 2006): every class holds at least l distinct sensitive
  values;
* frequency (Xiao and Tao, "Anatomy", VLDB 2006, their l-diverse partition): no sensitive
  value makes up more than 1/l of a class, so that an individual's association with a
  sensitive value, given its presence, is at most 1/l (the ambiguity paper's beta-association
  with beta = 1/l, Theorem 5.2).

Rows are published in a keyed random order (stream ``"mondrian"``, by row id) and written in
parts of that order (`ppdp.plan.order`), so that every engine writes the same files from the same
``random_state``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.hierarchy import BoundHierarchy, Hierarchy
from ppdp.data.schema import Schema, list_names
from ppdp.errors import InfeasibleError, SchemaError
from ppdp.mechanisms.base import StepsMechanism, require_declared_domains, require_sensitive
from ppdp.mechanisms.mondrian.covers import Covers, Generalized
from ppdp.mechanisms.mondrian.guarantee import GeneralizationGuarantee, mondrian_guarantee
from ppdp.mechanisms.mondrian.partition import _Partition, _partition, check_mondrian
from ppdp.mechanisms.mondrian.release import MondrianRelease
from ppdp.mechanisms.parameters import Parameter
from ppdp.plan.keyed import KeyedStream, make_key
from ppdp.plan.order import part_count, part_of, rank_order
from ppdp.plan.resources import Footprint
from ppdp.randomness import RandomState
from ppdp.table.source import SummarySource, TableSource
from ppdp.table.table import Table

STREAM = "mondrian"
"""The keyed stream of the release order: rows are published in the order of their 64-bit
draws (ties by row id), which is the only random choice Mondrian makes."""

QUASI_DOMAIN_RISK = (
    "a release lists each quasi-identifier's domain, so every value present would be listed, "
    "those its generalized rows hide in ranges among them (a value held by one person, say)")


@dataclass(frozen=True)
class MondrianSetup:
    """A checked input's quasi-identifiers, sensitive column and bound hierarchies."""

    schema: Schema
    sensitive: str
    bound: dict[str, BoundHierarchy]

    @property
    def quasi(self) -> tuple[str, ...]:
        return self.schema.quasi_identifiers

    @property
    def n_ranks(self) -> list[int]:
        return [self.schema[name].size for name in self.quasi]

    @property
    def published(self) -> Schema:
        return self.schema.select([*self.quasi, self.sensitive])

    def parameters(self, k: int, l: int, diversity: str) -> dict[str, Any]:  # noqa: E741
        return {"k": k, "l": l, "diversity": diversity,
                "hierarchies": [n for n in self.quasi if n in self.bound]}

    def ranks(self, codes: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return _ranks(self.quasi, self.bound, codes)

    def covers(self) -> dict[str, Covers]:
        return {name: Covers(self.schema[name], self.bound.get(name)) for name in self.quasi}


def _ranks(quasi: Sequence[str], bound: Mapping[str, BoundHierarchy],
           codes: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Each quasi-identifier's rank per row, from its codes."""
    ranks = []
    for name in quasi:
        values = codes[name]
        # A lookup table of the codes' own width keeps the per-row ranks small.
        ranks.append(bound[name].rank.astype(values.dtype)[values] if name in bound
                     else values)
    return ranks


@dataclass(frozen=True)
class _Anonymized:
    """A table's classes and the generalized value of each class per quasi-identifier."""

    setup: MondrianSetup
    partition: _Partition
    generalized: dict[str, Generalized]
    node_of_class: dict[str, np.ndarray]


class Mondrian(StepsMechanism):
    """Mondrian: strict multidimensional median partitioning into k-anonymous (and
    l-diverse, distinct or frequency) classes, published as generalized rows."""

    name = "mondrian"
    summary = ("Mondrian: k-anonymous (optionally l-diverse) multidimensional generalization "
               "of the quasi-identifiers")
    # Measured (`ppdp.plan.resources`): 53.5 and 67.1 bytes a row for 4 and 9 columns.
    footprint = Footprint(per_row=41, per_column=4)
    parameters = (
        Parameter("k", int, "anonymity k (>= 1): rows sharing each generalized combination"),
        Parameter("l", int, "l-diversity (>= 1; 1 = none) of the kind 'diversity' names",
                  default=1),
        Parameter("diversity", str, "'distinct' (at least l distinct sensitive values per "
                                    "class) or 'frequency' (no sensitive value in more than "
                                    "1/l of a class's rows: association at most 1/l)",
                  default="distinct"),
    )

    def __init__(self, *, k: int, l: int = 1,  # noqa: E741 - the usual symbol
                 diversity: str = "distinct",
                 hierarchies: Mapping[str, Hierarchy] | None = None) -> None:
        self.k, self.l, self.diversity = check_mondrian(k, l, diversity)
        hierarchies = dict(hierarchies or {})
        for column, hierarchy in hierarchies.items():
            if not isinstance(hierarchy, Hierarchy):
                raise ValueError(f"the hierarchy for {column!r} must be a Hierarchy "
                                 f"(ppdp.hierarchy.read_hierarchy), got "
                                 f"{type(hierarchy).__name__}")
        self.hierarchies = hierarchies

    def guarantee(self) -> GeneralizationGuarantee:
        return mondrian_guarantee(k=self.k, l=self.l, diversity=self.diversity)

    def ranks(self, table: Table) -> list[np.ndarray]:
        """Each quasi-identifier's rank per row: hierarchy depth-first order when one is
        given, else the domain order (numeric for numbers, the declared order for ordered
        text, alphabetical for other text)."""
        return _ranks(table.schema.quasi_identifiers, self._bind(table.schema), table.codes)

    def partition(self, table: Table) -> np.ndarray:
        """The equivalence class of every row, in the table's row order."""
        return self._anonymize(table).partition.classes

    def generalize(self, table: Table) -> pa.Table:
        """The generalized rows in the table's own order (for the data holder's checks;
        ``publish`` shuffles them)."""
        result = self._anonymize(table)
        classes = result.partition.classes
        sensitive = result.setup.sensitive
        columns = {name: pa.array(list(result.generalized[name].labels), pa.string()).take(
            pa.array(result.node_of_class[name][classes])) for name in result.setup.quasi}
        columns[sensitive] = pa.array(list(table.schema[sensitive].domain)).take(
            pa.array(table.codes[sensitive].astype(np.int32)))
        return pa.table(columns)

    def publish_table(self, table: Table, *, random_state: RandomState = None
                      ) -> MondrianRelease:
        """Partition the table in memory and publish its rows generalized, in the order of
        their keyed draws (the reference that the other engines' files equal)."""
        self.check_memory(table)
        result = self._anonymize(table)
        setup = result.setup
        draws = KeyedStream(make_key(random_state), STREAM).raw(0, table.n_rows)
        order = rank_order(draws)
        classes = result.partition.classes[order]
        rows = {name: result.node_of_class[name][classes] for name in setup.quasi}
        del classes
        release = MondrianRelease(setup.published,
                                  setup.parameters(self.k, self.l, self.diversity),
                                  table.n_rows, result.generalized, rows,
                                  table.codes[setup.sensitive][order])
        parts = part_count(table.n_rows)
        release.part_rows = tuple(
            int(n) for n in np.bincount(part_of(draws, parts), minlength=parts))
        return release

    def _bind(self, schema: Schema) -> dict[str, BoundHierarchy]:
        unknown = sorted(set(self.hierarchies) - set(schema.names))
        if unknown:
            raise SchemaError(f"hierarchies given for columns not in the table: {unknown} "
                              f"(columns: {list_names(schema.names)})")
        return {name: self.hierarchies[name].bind(schema[name])
                for name in schema.quasi_identifiers if name in self.hierarchies}

    def setup(self, data: Table | SummarySource) -> MondrianSetup:
        """The input's roles and hierarchies, checked, and k and l checked against it."""
        (sensitive,) = require_sensitive(data, "Mondrian", exactly_one=True)
        if not data.schema.quasi_identifiers:
            raise SchemaError("Mondrian needs at least one quasi-identifier column to "
                              "generalize")
        require_declared_domains(data, data.schema.quasi_identifiers, "Mondrian",
                                 QUASI_DOMAIN_RISK)
        bound = self._bind(data.schema)
        if self.k > data.n_rows:
            raise InfeasibleError(f"k = {self.k} exceeds the number of rows "
                                  f"({data.n_rows}); k must be at most {data.n_rows}")
        source = TableSource(data) if isinstance(data, Table) else data
        counts = source.histogram([sensitive])
        if self.diversity == "frequency":
            # Every class meeting the bound means the whole table meets it (it is their union).
            code = int(np.argmax(counts))
            largest = int(counts[code])
            if largest * self.l > data.n_rows:
                value = data.schema[sensitive].domain[code]
                raise InfeasibleError(
                    f"l = {self.l} (frequency) allows each value of {sensitive!r} in at most "
                    f"1/{self.l} = {1 / self.l:.4g} of a class, but {value!r} makes up "
                    f"{largest / data.n_rows:.4g} of the table ({largest} of {data.n_rows} "
                    f"rows); l must be at most {data.n_rows // largest}")
        else:
            present = int(np.count_nonzero(counts))
            if self.l > present:
                raise InfeasibleError(f"l = {self.l} needs {self.l} distinct values of "
                                      f"{sensitive!r} in every class, but the table holds "
                                      f"{present}; l must be at most {present}")
        return MondrianSetup(data.schema, sensitive, bound)

    def _anonymize(self, table: Table) -> _Anonymized:
        setup = self.setup(table)
        partition = _partition(setup.ranks(table.codes), table.codes[setup.sensitive], k=self.k,
                               l=self.l, n_ranks=setup.n_ranks, diversity=self.diversity)
        generalized, node_of_class = {}, {}
        for position, (name, covers) in enumerate(setup.covers().items()):
            keys = covers.of_partition(partition, position, table.codes[name])
            generalized[name] = covers.finish()
            node_of_class[name] = covers.nodes(keys)
        return _Anonymized(setup, partition, generalized, node_of_class)


