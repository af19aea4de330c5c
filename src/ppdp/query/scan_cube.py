"""Counting over the Parquet files of published rows without holding them (`ScanCube`):
contingency tables as streaming Polars aggregations, the counts of the distinct rows when the
publisher wrote them, and the check that the files still are those verified on loading."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.schema import code_dtype
from ppdp.errors import QueryError, ReleaseError
from ppdp.query.cache import (
    CACHE_FORMAT,
    FileIdentity,
    _arrays_digest,
    cache_directory,
    file_identity,
    write_cache_file,
)
from ppdp.query.codes import _add_distinct, _radix_groups, pack_codes, unpack_codes
from ppdp.query.cube import MAX_CUBE_CELLS, Cube, flat_key
from ppdp.query.encoding import _check_stored_type, encode_values
from ppdp.query.predicates import Predicate
from ppdp.query.row_counts import COUNT_COLUMN
from ppdp.query.syntax import _first_line

SCAN_BATCH_ROWS = 1 << 20
"""Rows per batch where a condition must be evaluated on the rows of a `ScanCube`."""


Summary = tuple[frozenset[str], dict[str, np.ndarray], np.ndarray]
"""The distinct value combinations of some columns (codes by column) and their row counts."""


class ScanCube(Cube):
    """A Cube of rows kept in Parquet files: contingency tables are summed from the counts of
    the files' distinct rows, aggregated once, or else come from streaming Polars aggregations
    over the files, ``group_by(columns).agg(len)``; either way they are cached like a Cube's.

    The rows are never all in memory. Given ``row_counts`` (the counts of the files' distinct
    rows that the publisher wrote, `ppdp.row_counts`), construction checks the files' footers
    and those counts and reads no row. Otherwise it reads every row once, as decoding them
    would, to check that the files hold ``n_rows`` rows and every column and that every value
    of each column lies in its domain; that pass also counts each column's values and the
    distinct rows (value combinations of every column), up to `MAX_SUMMARY_ROWS` of them.
    Published rows repeat: rows of Adult's nine columns, however many, hold at most some
    400,000 distinct rows (170,840 in a DBR release of 10^8 rows), so every table, and any
    condition evaluated on the cells of one, is then summed from those instead of a pass over
    the files (milliseconds instead of a minute per 10^9 rows). With more distinct rows, a
    table over some columns costs one pass over those columns, and `prefetch` counts the
    tables of many queries in a few passes; conditions whose table would be too large are
    evaluated on the summary's distinct rows, or else on batches of rows (`class_histograms`).
    ``codes`` is empty: `read_codes` decodes every row, for whoever needs them all.

    Given ``digests`` (the SHA-256 of files, by their `file_identity` when hashed: load_release
    passes those it has verified), what that pass finds is kept in the user's cache directory
    (`cache_directory`), named by a digest of the files' digests and the domains, so that the
    next construction over the same bytes reads it instead (about 0.05 s for Adult-shaped
    rows, against 25 CPU-seconds per 10^8 rows for the pass). The cache holds counts of published
    rows only, which anyone holding the release can compute: nothing private. A file in it is
    used only if its own digest, its name, and its counts (every code inside its domain, every
    total ``n_rows``) agree; otherwise, or without ``digests``, the files are read. Like the
    release's digests, this catches accidents, not someone who may write to the cache
    directory (which must be the user's own).

    Every new table or pass first checks that the files are those it was built on (same
    inode, size and modification time), and raises a ReleaseError otherwise, even when the
    answer would come from a summary. Files given by path must stay in place; files given as
    opened on loading (`ppdp.io.snapshot.SnapshotFile`: ``os.fspath`` where they are read,
    ``str`` their path) are read through their descriptors, which the cube keeps open, so a
    release saved over them changes nothing (only a file written in place is refused).

    ``domains`` gives, per column of the files, its values in code order (the files may store
    them plainly or dictionary-encoded); ``constants`` names columns absent from the files
    whose every row has code 0 (a domain of one value), never read.
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]], domains: Mapping[str, pa.Array],
                 n_rows: int, *, constants: Sequence[str] = (),
                 digests: Mapping[FileIdentity, str] | None = None,
                 row_counts: pa.Table | None = None) -> None:
        sizes = {name: len(values) for name, values in domains.items()}
        sizes.update({name: 1 for name in constants})
        super().__init__({}, sizes, n_rows)
        self.paths = tuple(os.fspath(path) for path in paths)
        """Where the files are read: their paths, or their descriptors' paths."""
        # Kept: files opened on loading stay open as long as the cube lives.
        self._files = tuple(paths)
        self.domains = dict(domains)
        self._summaries: list[Summary] = []
        self._identity = [file_identity(path) for path in self.paths]
        self._check(digests, row_counts)

    def _require_unchanged(self) -> None:
        """Refuse to read files replaced or removed since the cube was built (a release saved
        over, say): their rows were never checked, and counts would mix two releases."""
        for path, file, identity in zip(self.paths, self._files, self._identity, strict=True):
            try:
                same = file_identity(path) == identity
            except OSError:
                same = False
            if not same:
                raise ReleaseError(f"{file} was changed, replaced or removed since the release "
                                   f"was loaded; load the release again")

    def _check(self, digests: Mapping[FileIdentity, str] | None,
               row_counts: pa.Table | None) -> None:
        self._check_footers()
        if row_counts is not None:
            self._summaries = self._counted(row_counts)
            return
        known = [digests.get(identity) for identity in self._identity] if digests else [None]
        key = self._cache_key([d for d in known if d is not None]) if None not in known \
            else None
        cached = self._read_cache(key) if key is not None else None
        if cached is not None:
            self._summaries = cached
            return
        self._summaries = self._summarize()
        if key is not None:
            self._write_cache(key)

    def _check_footers(self) -> None:
        """Check the files' footers: ``n_rows`` rows in all, every column, in a stored type
        its domain's values can be read from."""
        metadata = [pq.read_metadata(path) for path in self.paths]
        found = sum(m.num_rows for m in metadata)
        if found != self.n_rows:
            raise ValueError(f"expected {self.n_rows} rows, found {found}")
        for part in metadata:
            schema = part.schema.to_arrow_schema()
            for name, domain in self.domains.items():
                if name not in schema.names:
                    raise ValueError(f"column {name!r} is missing")
                _check_stored_type(name, schema.field(name).type, domain.type)

    def _counted(self, row_counts: pa.Table) -> list[Summary]:
        """The summaries of the files' rows from the counts of their distinct rows that the
        publisher wrote (`ppdp.row_counts`), checked as a cached summary is."""
        names = list(self.domains)
        missing = [name for name in [*names, COUNT_COLUMN] if name not in row_counts.column_names]
        if missing:
            raise ValueError(f"the row counts lack the columns {missing}")
        counts = row_counts.column(COUNT_COLUMN).to_numpy(zero_copy_only=False)
        if counts.dtype != np.int64:
            raise ValueError("the row counts are not 64-bit integers")
        codes = {name: encode_values(name, row_counts.column(name), self.domains[name])
                 .astype(code_dtype(self.sizes[name])) for name in names}
        summaries: list[Summary] = []
        for name in names:
            marginal = np.bincount(codes[name], weights=counts, minlength=self.sizes[name])
            values = np.flatnonzero(marginal)
            summaries.append((frozenset([name]), {name: values.astype(codes[name].dtype)},
                              marginal[values].astype(np.int64)))
        summaries.append((frozenset(names), codes, counts))
        if not all(self._consistent(summary) for summary in summaries):
            raise ValueError("the row counts do not add up to the release's rows")
        return summaries

    def _summarize(self) -> list[Summary]:
        """Read every row once: check it, and count each column's values and the distinct rows
        (if at most `MAX_SUMMARY_ROWS`), as summaries."""
        names = list(self.domains)
        if not names:
            return []
        # Files one at a time: Arrow's reading and Polars' grouping already use every core,
        # and two files at once measured no faster, with 250 MB more memory (10^7 rows).
        files = [self._summarize_file(path) for path in self.paths]
        # Arrow's memory pool keeps the buffers of the batches read; give them back.
        pa.default_memory_pool().release_unused()
        summaries: list[Summary] = []
        for name in names:
            marginal = sum((counts[name] for counts, _ in files),
                           np.zeros(self.sizes[name], dtype=np.int64))
            values = np.flatnonzero(marginal)
            summaries.append((frozenset([name]),
                              {name: values.astype(code_dtype(self.sizes[name]))},
                              marginal[values]))
        frames = [distinct for _, distinct in files]
        merged = _add_distinct(frames) if all(f is not None for f in frames) else None
        if merged is not None:
            keys = [merged[key].to_numpy() for key in merged.columns if key != "n"]
            codes = unpack_codes(keys, [self.sizes[name] for name in names])
            summaries.append((frozenset(names), dict(zip(names, codes, strict=True)),
                              merged["n"].to_numpy().astype(np.int64)))
        return summaries

    def _summarize_file(self, path: str) -> tuple[dict[str, np.ndarray], Any]:
        """The counts of each column's values in one file, and its distinct rows with their
        counts (a Polars frame of keys ``k0, k1, ...`` and counts ``n``; None when too
        many). Arrow decodes dictionary columns to their indices, all this pass needs:
        measured about twice as fast as Polars reading them as text."""
        import polars as pl

        names = list(self.domains)
        sizes = [self.sizes[name] for name in names]
        counts = {name: np.zeros(self.sizes[name], dtype=np.int64) for name in names}
        keys = [f"k{index}" for index in range(len(_radix_groups(sizes)))]
        distinct: pl.DataFrame | None = pl.DataFrame(schema={key: pl.Int64
                                                             for key in [*keys, "n"]})
        for batch in pq.ParquetFile(path).iter_batches(batch_size=SCAN_BATCH_ROWS,
                                                       columns=names):
            codes = [encode_values(name, batch.column(name), self.domains[name])
                     for name in names]
            for name, values in zip(names, codes, strict=True):
                counts[name] += np.bincount(values, minlength=self.sizes[name])
            if distinct is not None:
                rows = pl.DataFrame(dict(zip(keys, pack_codes(codes, sizes), strict=True)))
                distinct = _add_distinct([distinct, rows.with_columns(n=pl.lit(1, pl.Int64))])
        return counts, distinct

    def _cache_key(self, digests: Sequence[str]) -> str:
        """The name of the cache file of files with these digests, read with these domains."""
        described = repr((CACHE_FORMAT, self.n_rows, list(digests),
                          [(name, str(values.type), values.to_pylist())
                           for name, values in self.domains.items()]))
        return hashlib.sha256(described.encode()).hexdigest()

    def _read_cache(self, key: str) -> list[Summary] | None:
        """The summaries kept under this key, if there, intact and consistent with the cube."""
        directory = cache_directory()
        if directory is None:
            return None
        path = directory / f"{key}.npz"
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            digest = str(arrays.pop("digest"))
            summaries = [(frozenset(str(c) for c in arrays[f"columns{i}"]),
                          {str(c): arrays[f"codes{i}_{j}"]
                           for j, c in enumerate(arrays[f"columns{i}"])},
                          arrays[f"counts{i}"])
                         for i in range(sum(name.startswith("counts") for name in arrays))]
        # Whatever is wrong with a cache file (missing, truncated, edited), the rows are read.
        except Exception:
            return None
        if digest != _arrays_digest(key, arrays) or not all(
                self._consistent(summary) for summary in summaries):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: trimmed last
        return summaries

    def _consistent(self, summary: Summary) -> bool:
        """Whether a summary read from the cache could be one of these files' rows: known
        columns, codes inside their domains, positive counts adding up to ``n_rows``."""
        columns, codes, counts = summary
        if not (columns <= self.domains.keys() and codes.keys() == columns
                and counts.dtype == np.int64 and counts.ndim == 1
                and bool(np.all(counts > 0)) and int(counts.sum()) == self.n_rows):
            return False
        return all(values.dtype.kind == "u" and values.shape == counts.shape
                   and (not values.size or int(values.max()) < self.sizes[name])
                   for name, values in codes.items())

    def _write_cache(self, key: str) -> None:
        """Keep the summaries under this key."""
        arrays: dict[str, np.ndarray] = {}
        for i, (columns, codes, counts) in enumerate(self._summaries):
            names = sorted(columns)
            arrays[f"columns{i}"] = np.asarray(names, dtype=str)
            arrays.update({f"codes{i}_{j}": codes[name] for j, name in enumerate(names)})
            arrays[f"counts{i}"] = counts
        arrays["digest"] = np.asarray(_arrays_digest(key, arrays))
        # allow_pickle is given (its default) so that the arrays fill only savez's **kwds.
        write_cache_file(f"{key}.npz",
                         lambda handle: np.savez(handle, allow_pickle=True, **arrays))

    def _aggregate(self, groups: Sequence[Sequence[str]]
                   ) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
        """For each group of columns, its distinct value combinations (as codes) and their
        row counts: one streaming aggregation per group.

        The aggregations run one after the other: each already uses every core, and run
        together they only add up their memory."""
        import polars as pl

        self._require_unchanged()
        scan = pl.scan_parquet(list(self.paths))
        results = []
        for columns in groups:
            # Longer than every column name: the count cannot clash with a grouped column.
            count = pl.len().alias("_" * (1 + max(len(c) for c in columns)))
            try:
                results.append(scan.group_by(list(columns)).agg(count)
                               .collect(engine="streaming"))
            # A panic is how Polars reports some malformed files; it is not an Exception.
            except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:
                raise ValueError(f"the rows cannot be read: {_first_line(exc)}") from exc
        return [({c: encode_values(c, frame[c].to_arrow(), self.domains[c]) for c in columns},
                 frame.to_series(len(columns)).to_numpy())
                for columns, frame in zip(groups, results, strict=True)]

    def _histogram(self, columns: tuple[str, ...], mask: np.ndarray | None) -> np.ndarray:
        if mask is not None:
            raise TypeError("a ScanCube holds no rows to mask; use histogram_where")
        shape = tuple(self.sizes[c] for c in columns)
        if not columns:
            return np.asarray(self.n_rows)
        if not self.fits(columns):
            raise QueryError(f"the columns {list(columns)} span {np.prod(shape):.3g} value "
                             f"combinations, too many to count densely")
        # Even from a summary: a release saved over since must be loaded again.
        self._require_unchanged()
        counts = np.zeros(math.prod(shape), dtype=np.int64)
        # Columns of one value leave the flat cell index unchanged: only the others are read.
        read = [c for c in columns if self.sizes[c] > 1]
        if not read:
            counts[0] = self.n_rows
            return counts.reshape(shape)
        codes, found = self._summary_of(read) or self._aggregate([read])[0]
        # A summary may hold several combinations per cell: they add up (float64 weights are
        # exact for counts below 2^53).
        counts += np.bincount(flat_key(codes, read, self.sizes), weights=found,
                              minlength=len(counts)).astype(np.int64)
        return counts.reshape(shape)

    def prefetch(self, column_sets: Iterable[Iterable[str]]) -> None:
        """Count, in a few passes over the files, the tables over these sets of columns
        (nothing to do when the distinct rows were summarized on loading: every set is
        covered).

        A pass costs about the decoding of the columns it reads, whatever it computes, so
        rather than one aggregation per set, the sets are packed greedily (largest first) into
        unions of at most `MAX_CUBE_CELLS` value combinations, each set into the union it adds
        the fewest columns to, and each union is counted by one aggregation. The distinct
        combinations of a union and their counts are kept as a summary, from which any table
        over a subset of the union is then summed without reading the files. Memory: a
        union's summary has at most as many entries as the union has cells. Sets whose table
        is cached, or can come from a summary, or is too large to build, are left out.
        """
        unions: list[set[str]] = []
        wanted = {frozenset(c for c in columns if self.sizes[c] > 1) for columns in column_sets}
        for columns in sorted(wanted, key=lambda c: (-self._cells(c), sorted(c))):
            if (not columns or not self.fits(tuple(columns))
                    or tuple(sorted(columns)) in self._cache
                    or self._summary_of(columns) is not None):
                continue
            # Into the union it adds the fewest columns to (then the fewest cells), if any.
            room = [(len(columns - union), self._cells(union | columns), index)
                    for index, union in enumerate(unions)
                    if self._cells(union | columns) <= MAX_CUBE_CELLS]
            if room:
                unions[min(room)[2]] |= columns
            else:
                unions.append(set(columns))
        groups = [tuple(sorted(union)) for union in unions]
        if not groups:
            return
        for group, (codes, counts) in zip(groups, self._aggregate(groups), strict=True):
            self._summaries.append((frozenset(group), codes, counts))

    def _cells(self, columns: Iterable[str]) -> int:
        return math.prod(self.sizes[c] for c in columns)

    def _summary_of(self, columns: Iterable[str]
                    ) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
        """The smallest kept summary over a superset of these columns, if any."""
        wanted = set(columns)
        covering = [(len(counts), index) for index, (names, _, counts)
                    in enumerate(self._summaries) if wanted <= names]
        if not covering:
            return None
        _, codes, counts = self._summaries[min(covering)[1]]
        return codes, counts

    def histogram_where(self, predicate: Predicate, dims: Sequence[str]) -> np.ndarray:
        """Counts over ``dims`` of the rows where ``predicate`` holds (see class_histograms)."""
        classes = dict(self.class_histograms([predicate], dims))
        shape = tuple(self.sizes[c] for c in dims)
        return classes.get(1, np.zeros(shape, dtype=np.int64))

    def class_histograms(self, predicates: Sequence[Predicate], dims: Sequence[str]
                         ) -> list[tuple[int, np.ndarray]]:
        """Counts over ``dims`` of each class of rows that satisfy the same predicates (as
        `Cube.class_histograms`, with the same integer counts).

        Rows with the same values on the predicates' columns and ``dims`` satisfy the same
        predicates: they are evaluated once per non-empty cell of the (cached) contingency
        table over those columns, weighted by its count. When that table would exceed
        `MAX_CUBE_CELLS`, they are evaluated likewise on the distinct rows of a summary of
        those columns, if any; else on the rows, in batches of `SCAN_BATCH_ROWS` read from the
        files, each batch's counts added up; memory stays that of a batch and of the counts
        over ``dims``. The predicates run as they are (the same
        numpy evaluation as in memory) rather than translated into Polars expressions, so that
        every answer is the in-memory one whatever the condition: arithmetic in float64,
        division checks, text order and ordered columns all stay in one place.
        """
        dims = tuple(dims)
        if not self.fits(dims):
            shape = tuple(self.sizes[c] for c in dims)
            raise QueryError(f"the columns {list(dims)} span {np.prod(shape):.3g} value "
                             f"combinations, too many to count densely")
        columns = tuple(sorted(set(dims).union(*(p.columns for p in predicates))))
        classes: dict[int, np.ndarray] = {}
        if not columns:  # constant predicates: every row in one cell
            self._add_classes(classes, predicates, dims, {}, np.asarray([self.n_rows]))
        elif self.fits(columns):
            table = self.histogram(columns)
            cells = np.nonzero(table)
            self._add_classes(classes, predicates, dims, dict(zip(columns, cells, strict=True)),
                              table[cells])
        elif (summary := self._summary_of(c for c in columns if c in self.domains)) is not None:
            # Each distinct row of the summary stands for its count of rows; int64 codes, as
            # the predicates get from the rows.
            codes, counts = summary
            self._require_unchanged()
            self._add_classes(classes, predicates, dims,
                              {c: codes[c].astype(np.int64) if c in codes
                               else np.zeros(len(counts), dtype=np.int64) for c in columns},
                              counts)
        else:
            self._add_classes_of_rows(classes, predicates, dims, columns)
        return sorted(classes.items())

    def _add_classes_of_rows(self, classes: dict[int, np.ndarray],
                             predicates: Sequence[Predicate], dims: tuple[str, ...],
                             columns: tuple[str, ...]) -> None:
        """Add each class's counts over ``dims`` with the predicates evaluated on the rows,
        batch by batch."""
        for codes in self.code_batches(columns):
            self._add_classes(classes, predicates, dims, codes, None)

    def _add_classes(self, classes: dict[int, np.ndarray], predicates: Sequence[Predicate],
                     dims: tuple[str, ...], codes: Mapping[str, np.ndarray],
                     weights: np.ndarray | None) -> None:
        """Add the counts over ``dims`` of each class among these rows (or weighted cells)."""
        n = len(weights) if weights is not None else len(next(iter(codes.values())))
        membership = np.zeros(n, dtype=np.int64)
        for bit, predicate in enumerate(predicates):
            membership |= predicate.evaluate(codes, n).astype(np.int64) << bit
        shape = tuple(self.sizes[c] for c in dims)
        for member in np.unique(membership[membership > 0]):
            chosen = membership == member
            if not dims:
                counts = np.asarray(np.count_nonzero(chosen) if weights is None
                                    else weights[chosen].sum(), dtype=np.int64)
            else:
                key = flat_key(codes, dims, self.sizes, chosen)
                counts = np.bincount(key, weights=None if weights is None else weights[chosen],
                                     minlength=math.prod(shape))
                # Weighted bincount adds in float64: exact for counts below 2^53.
                counts = counts.astype(np.int64).reshape(shape)
            previous = classes.get(int(member))
            classes[int(member)] = counts if previous is None else previous + counts

    def code_batches(self, columns: Sequence[str]) -> Iterator[dict[str, np.ndarray]]:
        """The codes of these columns, batch by batch (`SCAN_BATCH_ROWS` rows), files in
        order."""
        self._require_unchanged()
        read = [c for c in columns if c in self.domains]
        for path in self.paths:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=SCAN_BATCH_ROWS,
                                                           columns=read):
                codes = {c: encode_values(c, batch.column(c), self.domains[c]) for c in read}
                codes.update({c: np.zeros(batch.num_rows, dtype=np.int64)
                              for c in columns if c not in self.domains})
                yield codes

    def read_codes(self) -> dict[str, np.ndarray]:
        """Every row's codes, by column: the whole table in memory."""
        parts: dict[str, list[np.ndarray]] = {name: [] for name in self.sizes}
        for codes in self.code_batches(list(self.sizes)):
            for name, values in codes.items():
                # Narrowed batch by batch, so that int64 codes never exist for every row.
                parts[name].append(values.astype(code_dtype(self.sizes[name])))
        return {name: np.concatenate(values) if values
                else np.zeros(0, dtype=code_dtype(self.sizes[name]))
                for name, values in parts.items()}
