"""An Anatomy release and its estimator (Small Domain Randomization, Appendix 10.10).

A query with non-sensitive condition P and sensitive value x is estimated by
``sum_g c(g, P) * c(g, x) / |g|``: every QIT row counts towards each sensitive value of its
group in proportion to that value's share of the group."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.schema import Schema
from ppdp.errors import ReleaseError, first_line
from ppdp.mechanisms.anatomy.pairs import PAIR_COUNTS, PairCounts, count_pair_parts
from ppdp.mechanisms.base import check_sensitive
from ppdp.mechanisms.parameters import require_integer
from ppdp.plan.blocks import GROUP_COLUMN
from ppdp.plan.engine import ScannedFiles
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.splitting import split
from ppdp.release.arrow import joined_parts, rows_from_arrow, rows_to_arrow
from ppdp.release.base import Release
from ppdp.release.format import METADATA_FILE


def check_l(l: Any) -> int:  # noqa: E741 - the paper's symbol
    """Anatomy's diversity l: an integer >= 2 (distinct sensitive values per group)."""
    return require_integer("l", l, 2)


class AnatomyRelease(Release):
    """An Anatomy release: QIT (quasi-identifiers, GroupID) and ST (GroupID, value, count).

    Counts come from its pair counts (`ppdp.mechanisms.anatomy.pairs`), which the publisher
    writes beside the QIT and the ST: a release loaded with them reads neither until asked for
    (`qit`, `qit_groups`, `st`; saving it again, say); one without them reads both and counts
    its pairs on the first query."""

    mechanism = "anatomy"
    # The quasi-identifier table and the sensitive table: neither is the main one.
    main_table = None
    # Left in their files where the pair counts were published (`_from_files`).
    scanned = frozenset({"qit", "st"})
    summary = PAIR_COUNTS

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 qit: Mapping[str, np.ndarray] | None, qit_groups: np.ndarray | None,
                 st: tuple[np.ndarray, np.ndarray, np.ndarray] | None, *,
                 pairs: pa.Table | None = None,
                 read: Callable[[], AnatomyRelease] | None = None) -> None:
        super().__init__(schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        if qit is None or qit_groups is None or st is None:
            if read is None:
                raise ValueError("an Anatomy release needs its QIT and ST, or a way to read "
                                 "them")
            self._read: AnatomyRelease | None = None
        else:
            self._read = self
            self._qit = dict(qit)
            self._qit_groups = np.asarray(qit_groups, dtype=np.int32)
            self._st = tuple(np.asarray(a) for a in st)
        self._reader = read
        self._pairs = pairs
        # Published pair counts are checked now, on loading, not on the first query.
        self._counts = None if pairs is None else self._count_from(pairs)

    def _in_memory(self) -> AnatomyRelease:
        """The release with its QIT and ST in memory: itself, or read from its files."""
        if self._read is None:
            assert self._reader is not None
            self._read = self._reader()
        return self._read

    @property
    def qit(self) -> dict[str, np.ndarray]:
        """The QIT's quasi-identifier codes, by column."""
        return self._in_memory()._qit

    @property
    def qit_groups(self) -> np.ndarray:
        """The QIT's group ids (GroupID), one per row."""
        return self._in_memory()._qit_groups

    @property
    def st(self) -> tuple[np.ndarray, ...]:
        """The ST's lines: group ids, sensitive codes and counts c(g, x)."""
        return self._in_memory()._st

    def _summary_parts(self) -> list[Any]:
        return count_pair_parts(self._pairs_schema(), self.qit, self.qit_groups, self.st,
                                self.n_groups)

    def _summary_table(self, *, bounded: bool = True) -> pa.Table | None:
        """The pair counts T (`ppdp.mechanisms.anatomy.pairs`): published, or counted from
        the QIT and the ST; None beyond the size the file may hold, unless not ``bounded``.
        Only what the file may hold is kept: `save` writes the same files whatever was
        counted before."""
        if self._pairs is not None:
            return self._pairs
        pairs = super()._summary_table(bounded=bounded)
        if bounded:
            self._pairs = pairs
        return pairs

    def _pairs_schema(self) -> Schema:
        return self.schema.select([*self.schema.quasi_identifiers, self.sensitive])

    @property
    def _cubes(self) -> tuple[Cube, Cube]:
        """The cubes counts come from: the quasi-identifier counts n(k), and the expected
        counts E(k, x) in which the sensitive column holds each row's share of its group's
        values (`PairCounts`)."""
        if self._counts is None:
            pairs = self._summary_table()
            if pairs is None:  # too many to be written (`MAX_COUNTED_ROWS`): counted anyway
                pairs = self._summary_table(bounded=False)
            assert pairs is not None  # counted, however many
            self._counts = self._count_from(pairs)
        return self._counts.plain, self._counts.expected

    def _count_from(self, pairs: pa.Table) -> PairCounts:
        return PairCounts(self._pairs_schema(), pairs, n_rows=self.n_rows,
                          n_groups=self.n_groups, l=int(self.parameters["l"]))

    @property
    def n_groups(self) -> int:
        """How many groups the release holds."""
        return int(self.parameters["n_groups"])

    def _tables(self) -> dict[str, pa.Table]:
        quasi = self.schema.select(self.schema.quasi_identifiers)
        qit = rows_to_arrow(quasi, self.qit, {GROUP_COLUMN: self.qit_groups})
        groups, values, counts = self.st
        column = self.schema[self.sensitive]
        st = pa.table({
            GROUP_COLUMN: groups,
            self.sensitive: pa.DictionaryArray.from_arrays(pa.array(values.astype(np.int32)),
                                                           pa.array(list(column.domain))),
            "count": counts,
        })
        return {"qit": qit, "st": st}

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """One sensitive column and l as `Anatomy` checks them, l no larger than its domain
        (each group holds l distinct values), and a whole number of groups."""
        l = check_l(parameters["l"])  # noqa: E741 - the paper's symbol
        (sensitive,) = check_sensitive(schema, "Anatomy", exactly_one=True)
        if l > schema[sensitive].size:
            raise ValueError(f"l = {l} exceeds the {schema[sensitive].size} values of "
                             f"{sensitive!r}: each group holds l distinct values")
        require_integer("n_groups", parameters["n_groups"], 1)

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> AnatomyRelease:
        (sensitive,) = schema.sensitive
        quasi = schema.select(schema.quasi_identifiers)
        qit = rows_from_arrow(quasi, tables["qit"], n_rows)
        qit_groups = tables["qit"].column(GROUP_COLUMN).to_numpy()
        st_table = tables["st"]
        values = rows_from_arrow(schema.select([sensitive]), st_table.select([sensitive]),
                                 st_table.num_rows)[sensitive]
        st = (st_table.column(GROUP_COLUMN).to_numpy(), values,
              st_table.column("count").to_numpy())
        n_groups = int(parameters["n_groups"])
        if len(qit_groups) and (qit_groups.min() < 0 or qit_groups.max() >= n_groups):
            raise ValueError("QIT group ids out of range")
        if (len(st[0]) and (st[0].min() < 0 or st[0].max() >= n_groups)) or not np.array_equal(
                np.bincount(st[0], weights=st[2], minlength=n_groups),
                np.bincount(qit_groups, minlength=n_groups)):
            raise ValueError("ST counts do not add up to the QIT group sizes")
        return cls(schema, parameters, n_rows, qit, qit_groups, st,
                   pairs=tables.get(PAIR_COUNTS))

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: ScannedFiles) -> AnatomyRelease:
        """With its pair counts, a release whose QIT and ST stay in their files until asked
        for (read and checked then as `_from_tables` checks them); without, both read now."""

        def read() -> AnatomyRelease:
            try:
                return cls._from_tables(schema, parameters, n_rows,
                                        {**tables, **{stem: _read_whole(scans, stem)
                                                      for stem in ("qit", "st")}})
            except (ValueError, KeyError, pa.ArrowException) as exc:
                raise ReleaseError(f"{Path(scans['qit'][0]).parent} does not match its "
                                   f"{METADATA_FILE}: {first_line(exc)}") from exc

        pairs = tables.get(PAIR_COUNTS)
        if pairs is None:
            return read()
        qit_rows = sum(pq.read_metadata(os.fspath(path)).num_rows
                       for path in scans.readable("qit"))
        if qit_rows != n_rows:
            raise ValueError(f"expected {n_rows} QIT rows, found {qit_rows}")
        return cls(schema, parameters, n_rows, None, None, None, pairs=pairs, read=read)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        sizes = self.schema.sizes()
        plain_cube, expected_cube = self._cubes
        results: list[tuple[np.ndarray, np.ndarray | None]] = []
        for query in queries:
            if self.sensitive not in query.columns:
                counts = count_histogram(plain_cube, query.predicate, query.group_by)
                results.append((np.asarray(counts, dtype=float), np.zeros(counts.shape)))
                continue
            plain = [c for c in query.group_by if c != self.sensitive]
            values = np.zeros((*tuple(sizes[c] for c in plain), sizes[self.sensitive]))
            for rest, combos in split(query.predicate, [self.sensitive], sizes):
                values += count_histogram(expected_cube, rest,
                                          [*plain, self.sensitive]) * combos
            if self.sensitive in query.group_by:
                order = [plain.index(c) if c in plain else len(plain) for c in query.group_by]
                values = np.transpose(values, order)
            else:
                values = values.sum(axis=-1)
            results.append((values, None))
        return results


def _read_whole(scans: ScannedFiles, stem: str) -> pa.Table:
    """The files of a scanned stem read whole, their parts joined."""
    return joined_parts([pq.read_table(os.fspath(path)) for path in scans.readable(stem)])
