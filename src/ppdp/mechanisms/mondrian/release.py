"""A Mondrian release and its estimator: values assumed uniform over each class's generalized
value (over the domain values it covers) and independent between attributes inside a class
(`ppdp.estimators.group_product`); the measured k, l and presence of its classes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.data.schema import Column, Schema
from ppdp.estimators.group_product import GroupProduct
from ppdp.mechanisms.base import check_sensitive
from ppdp.mechanisms.mondrian.covers import LABEL, ROWS, VALUE, Generalized, cover_file
from ppdp.mechanisms.mondrian.partition import check_mondrian, require_diversity
from ppdp.mechanisms.parameters import require_unit_interval
from ppdp.mechanisms.presence import presence_probability
from ppdp.plan.order import split_parts
from ppdp.query.binding import BoundQuery
from ppdp.query.codes import sorted_distinct
from ppdp.release.arrow import rows_from_arrow
from ppdp.release.base import Release

if TYPE_CHECKING:
    import scipy.sparse as sp


class MondrianRelease(Release):
    """Generalized rows (a label per quasi-identifier, the true sensitive value), shuffled, and
    per quasi-identifier the domain values each label covers."""

    mechanism = "mondrian"

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """k, l and the kind of l-diversity as `Mondrian` checks them, one sensitive column
        and a quasi-identifier, and hierarchies named only for quasi-identifiers."""
        check_mondrian(parameters["k"], parameters["l"], parameters.get("diversity", "distinct"))
        check_sensitive(schema, "Mondrian", exactly_one=True)
        hierarchies = parameters.get("hierarchies", [])
        if not schema.quasi_identifiers:
            raise ValueError("Mondrian generalizes at least one quasi-identifier")
        if not isinstance(hierarchies, list) or not set(hierarchies) <= set(
                schema.quasi_identifiers):
            raise ValueError(f"hierarchies must list quasi-identifiers, got {hierarchies!r}")

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 generalized: Mapping[str, Generalized], rows: Mapping[str, np.ndarray],
                 sensitive: np.ndarray) -> None:
        # Releases written before the frequency kind existed were distinct l-diverse.
        parameters = {**parameters,
                      "diversity": require_diversity(parameters.get("diversity", "distinct"))}
        super().__init__(schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        self.quasi = schema.quasi_identifiers
        self.generalized = dict(generalized)
        self.rows = {name: np.asarray(rows[name], dtype=np.int32) for name in self.quasi}
        self.sensitive_codes = np.asarray(sensitive)
        self._class_cache: tuple[np.ndarray, dict[str, np.ndarray], int] | None = None
        self._product: GroupProduct | None = None

    # -- equivalence classes ----------------------------------------------------------------

    @property
    def _classes(self) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
        """Class of every published row (a distinct combination of labels), each class's
        node per quasi-identifier, and the number of classes."""
        if self._class_cache is None:
            self._class_cache = classes_of_rows(self.generalized, self.rows, self.n_rows)
        return self._class_cache

    def k_anonymity(self) -> int:
        """The smallest number of rows sharing a combination of generalized values."""
        key, _, n_classes = self._classes
        return int(np.bincount(key, minlength=n_classes).min()) if n_classes else 0

    def l_diversity(self) -> int:
        """The smallest number of distinct sensitive values in a class."""
        key, _, n_classes = self._classes
        if not n_classes:
            return 0
        size = self.schema[self.sensitive].size
        pairs = sorted_distinct(key * size + self.sensitive_codes)
        return int(np.bincount(pairs // size, minlength=n_classes).min())

    def ncp(self) -> float:
        """Normalized certainty penalty (Xu et al., "Utility-based anonymization", KDD 2006)
        averaged over rows and quasi-identifiers, in [0, 1]: (hi - lo) / (max - min) of the
        domain for a number without hierarchy, else |cover| / |domain| (0 for one value)."""
        if not self.n_rows:
            return 0.0
        hierarchies = set(self.parameters.get("hierarchies", ()))
        total = 0.0
        for name in self.quasi:
            column = self.schema[name]
            generalized = self.generalized[name]
            sizes = generalized.cover_sizes
            if column.kind in ("int", "float") and name not in hierarchies:
                values = column.values.astype(np.float64)
                width = values[-1] - values[0]
                low = values[generalized.codes[generalized.indptr[:-1]]]
                high = values[generalized.codes[generalized.indptr[1:] - 1]]
                penalty = (high - low) / width if width > 0 else np.zeros(len(sizes))
            else:
                penalty = np.where(sizes > 1, sizes / column.size, 0.0)
            total += float(penalty[self.rows[name]].mean())
        return total / len(self.quasi)

    def class_labels(self) -> dict[str, np.ndarray]:
        """Every equivalence class's generalized value (its node) per quasi-identifier."""
        return dict(self._classes[1])

    def class_sizes(self) -> np.ndarray:
        """|G| for every equivalence class."""
        key, _, n_classes = self._classes
        return np.bincount(key, minlength=n_classes)

    def association(self) -> np.ndarray:
        """For every class G, the largest association probability c / |G| of a sensitive
        value with an individual of G given presence, c the count of G's most frequent
        sensitive value (ambiguity paper, Definition 4.2 and Theorem 5.2; the sensitive values
        are published with the generalized rows, so c and |G| are public)."""
        key, _, n_classes = self._classes
        if not n_classes:
            return np.zeros(0)
        size = self.schema[self.sensitive].size
        pairs, counts = np.unique(key.astype(np.int64) * size + self.sensitive_codes,
                                  return_counts=True)
        # Pairs are sorted by class, and every class holds at least one.
        first = np.flatnonzero(np.diff(pairs // size, prepend=-1))
        return np.maximum.reduceat(counts, first) / self.class_sizes()

    def presence(self) -> np.ndarray:
        """For every class G, the presence probability of an individual whose
        quasi-identifiers fall in G's generalized values: ``|G| / prod_i |cover_i(G)|``
        (ambiguity paper, Definition 4.1 and Theorem 5.1), where ``|cover_i(G)|`` is the number
        of domain values G's generalized value of quasi-identifier i covers (published in the
        cover files); capped at 1, as for ambiguity's groups."""
        _, nodes, _ = self._classes
        covers = np.stack([self.generalized[name].cover_sizes[nodes[name]]
                           for name in self.quasi], axis=1)
        return presence_probability(self.class_sizes(), covers)

    def risk(self, *, alpha: float | None = None, beta: float | None = None
             ) -> dict[str, Any]:
        """k, distinct l, NCP, the number of classes, and the ambiguity paper's measures
        (Section 5): the largest presence (`presence`), the share of classes whose presence is
        1 (``|G| >= prod_i |cover_i(G)|``), the largest association (`association`) and, when
        ``alpha`` or ``beta`` is given, the share of classes above it."""
        presence, association = self.presence(), self.association()

        def largest(values: np.ndarray) -> float:
            return float(values.max()) if len(values) else 0.0

        def share(classes: np.ndarray) -> float:
            return float(classes.mean()) if len(classes) else 0.0

        measures: dict[str, Any] = {
            "k": self.k_anonymity(), "l": self.l_diversity(), "ncp": self.ncp(),
            "classes": self._classes[2], "presence_max": largest(presence),
            "presence_certain_share": share(presence >= 1.0),
            "association_max": largest(association)}
        # As for ambiguity's groups, a class within rounding of a bound counts as within it.
        if alpha is not None:
            alpha = require_unit_interval("alpha", alpha)
            measures.update({"alpha": alpha, "presence_over_alpha_share": share(
                presence > alpha * (1 + 1e-12))})
        if beta is not None:
            beta = require_unit_interval("beta", beta)
            measures.update({"beta": beta, "association_over_beta_share": share(
                association > beta * (1 + 1e-12))})
        return measures

    def covers(self, column: str) -> dict[str, tuple[Any, ...]]:
        """The domain values each label of a quasi-identifier covers."""
        generalized = self.generalized[column]
        domain = self.schema[column].domain
        return {label: tuple(domain[c] for c in generalized.cover(j).tolist())
                for j, label in enumerate(generalized.labels)}

    def generalized_rows(self) -> pa.Table:
        """The published rows as plain labels and sensitive values (for external checkers)."""
        columns = {name: pa.array(list(self.generalized[name].labels), pa.string()).take(
            pa.array(self.rows[name])) for name in self.quasi}
        column = self.schema[self.sensitive]
        columns[self.sensitive] = pa.array(list(column.domain)).take(
            pa.array(self.sensitive_codes.astype(np.int32)))
        return pa.table(columns)

    # -- estimation -------------------------------------------------------------------------

    def _estimator(self) -> GroupProduct:
        # Built on the first query, not at publishing time.
        if self._product is None:
            sizes = self.schema.sizes()
            matrices = {name: self.generalized[name].matrix(sizes[name]) for name in self.quasi}
            self._product = GroupProduct(class_factors(
                matrices, self._classes, self.sensitive, self.sensitive_codes, sizes), sizes)
        return self._product

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        estimator = self._estimator()
        return [(np.asarray(estimator.estimate(q.predicate, q.group_by), dtype=np.float64), None)
                for q in queries]

    # -- files ------------------------------------------------------------------------------

    def _tables(self) -> dict[str, Any]:
        rows = _rows_table(self.schema, self.generalized, self.rows, self.sensitive_codes)
        return {ROWS: split_parts(rows, self.part_rows),
                **_cover_tables(self.schema, self.generalized)}

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> MondrianRelease:
        (sensitive,) = schema.sensitive
        generalized = read_generalized(schema, parameters, tables)
        rows_table = tables[ROWS]
        if rows_table.num_rows != n_rows:
            raise ValueError(f"expected {n_rows} rows, found {rows_table.num_rows}")
        rows = {}
        for name in schema.quasi_identifiers:
            if name not in rows_table.column_names:
                raise ValueError(f"column {name!r} is missing")
            labels = pa.array(list(generalized[name].labels), pa.string())
            rows[name] = label_nodes(name, rows_table.column(name), labels)
        codes = rows_from_arrow(schema.select([sensitive]), rows_table.select([sensitive]),
                                n_rows)[sensitive]
        return cls(schema, parameters, n_rows, generalized, rows, codes)


def read_generalized(schema: Schema, parameters: Mapping[str, Any],
                     tables: Mapping[str, pa.Table]) -> dict[str, Generalized]:
    """Every quasi-identifier's generalized values, from its cover table, checked."""
    quasi = schema.quasi_identifiers
    hierarchies = parameters.get("hierarchies", [])
    if not isinstance(hierarchies, list) or not set(hierarchies) <= set(quasi):
        raise ValueError("parameter 'hierarchies' must list quasi-identifiers")
    return {name: _read_covers(schema[name], tables[cover_file(position)])
            for position, name in enumerate(quasi)}


def classes_of_rows(generalized: Mapping[str, Generalized], rows: Mapping[str, np.ndarray],
                    n_rows: int) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """The class of every published row (its distinct combination of generalized values, one
    node per quasi-identifier in ``rows``), each class's node per quasi-identifier, and the
    number of classes."""
    key = np.zeros(n_rows, dtype=np.int64)
    bound = 1
    for name in rows:
        n_nodes = generalized[name].n_nodes
        if bound * n_nodes >= 2**62:
            # Renumbering keeps the combined key below n_rows (it costs a sort).
            key = np.unique(key, return_inverse=True)[1].reshape(-1)
            bound = int(key.max()) + 1 if n_rows else 1
        key = key * n_nodes + rows[name]
        bound *= n_nodes
    key = np.unique(key, return_inverse=True)[1].reshape(-1)
    n_classes = int(key.max()) + 1 if n_rows else 0
    nodes = {}
    for name in rows:
        node = np.zeros(n_classes, dtype=np.int64)
        node[key] = rows[name]
        nodes[name] = node
    return key, nodes, n_classes


def class_factors(matrices: Mapping[str, sp.csr_array],
                  classes: tuple[np.ndarray, dict[str, np.ndarray], int], sensitive: str,
                  sensitive_codes: np.ndarray, sizes: Mapping[str, int]
                  ) -> dict[str, sp.csr_array]:
    """The `GroupProduct` factors of classes (`classes_of_rows`): per quasi-identifier, each
    class's row of its node in ``matrices`` (`Generalized.matrix`, uniform over the cover);
    for the sensitive column, each class's counts of its rows' values."""
    import scipy.sparse as sp

    key, nodes, n_classes = classes
    factors = {name: sp.csr_array(matrix[nodes[name]]) for name, matrix in matrices.items()}
    counts = sp.coo_array((np.ones(len(key)), (key, sensitive_codes)),
                          shape=(n_classes, sizes[sensitive]))
    factors[sensitive] = sp.csr_array(counts.tocsr())
    return factors


def label_nodes(name: str, column: pa.ChunkedArray | pa.Array, labels: pa.Array) -> np.ndarray:
    """The node of each published label of a quasi-identifier (its position in ``labels``),
    refusing a label without a cover."""
    plain = _plain(column, pa.string())
    found = pc.index_in(plain, value_set=labels)
    if found.null_count:
        missing = pc.unique(pc.filter(plain, pc.is_null(found))).to_pylist()[:5]
        raise ValueError(f"labels of {name!r} without a cover: {missing}")
    return found.to_numpy(zero_copy_only=False).astype(np.int32)


def _rows_table(schema: Schema, generalized: Mapping[str, Generalized],
               rows: Mapping[str, np.ndarray], sensitive: np.ndarray) -> pa.Table:
    """Published rows as Arrow: each quasi-identifier's labels, the sensitive values."""
    arrays, names = [], []
    for name in schema.quasi_identifiers:
        labels = pa.array(list(generalized[name].labels), pa.string())
        arrays.append(pa.DictionaryArray.from_arrays(pa.array(rows[name]), labels))
        names.append(name)
    (name,) = schema.sensitive
    arrays.append(pa.DictionaryArray.from_arrays(pa.array(sensitive.astype(np.int32)),
                                                 pa.array(list(schema[name].domain))))
    names.append(name)
    return pa.table(arrays, names=names)


def _cover_tables(schema: Schema, generalized: Mapping[str, Generalized]
                  ) -> dict[str, pa.Table]:
    """Per quasi-identifier, the domain values each label covers (one row per pair)."""
    tables = {}
    for position, name in enumerate(schema.quasi_identifiers):
        values = generalized[name]
        node = np.repeat(np.arange(values.n_nodes), values.cover_sizes)
        tables[cover_file(position)] = pa.table({
            LABEL: pa.array(list(values.labels), pa.string()).take(pa.array(node)),
            VALUE: pa.array(list(schema[name].domain)).take(pa.array(values.codes)),
        })
    return tables


def _plain(array: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if not array.type.equals(kind):
        try:
            array = pc.cast(array, kind)
        except pa.ArrowException as exc:
            raise ValueError(f"expected {kind} values, found {array.type}") from exc
    return array


def _read_covers(column: Column, table: pa.Table) -> Generalized:
    """A cover table (label, value) checked against the column's domain."""
    if set(table.column_names) != {LABEL, VALUE}:
        raise ValueError(f"the covers of {column.name!r} must have columns {LABEL!r} and "
                         f"{VALUE!r}, found {table.column_names}")
    labels = _plain(table.column(LABEL), pa.string())
    if labels.null_count:
        raise ValueError(f"the covers of {column.name!r} hold an empty label")
    domain = pa.array(list(column.domain))
    values = _plain(table.column(VALUE), domain.type)
    codes = pc.index_in(values, value_set=domain)
    if codes.null_count:
        raise ValueError(f"the covers of {column.name!r} hold values outside its domain")
    names = pc.unique(labels)
    node = pc.index_in(labels, value_set=names).to_numpy(zero_copy_only=False).astype(np.int64)
    code = codes.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((code, node))
    node, code = node[order], code[order]
    if len(code) > 1 and np.any((np.diff(node) == 0) & (np.diff(code) == 0)):
        raise ValueError(f"the covers of {column.name!r} repeat a value under one label")
    sizes = np.bincount(node, minlength=len(names))
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Generalized(tuple(names.to_pylist()), indptr, code)
