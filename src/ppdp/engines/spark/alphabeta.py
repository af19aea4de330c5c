"""Alpha-beta views of a Spark DataFrame (Rastogi, Suciu, Hong, VLDB 2007, Algorithms 1, 2, 4
and 5), with the earlier views V' held as a Spark table.

The draws are those of `ppdp.mechanisms.alphabeta.ViewStreams`, keyed by row id, position in
V' and chunk of D, so when the row ids are the rows' positions the release files are byte for
byte those `ViewSequence.publish_to` writes from the same rows, views and key, whatever the
partitioning (V''s tuples and the inserted ones are numbered past the largest row id, so
other ids share no draw with them). The driver holds no row and no distinct tuple:

1. each row's tuple key is computed in tasks; the distinct tuples and their row counts are a
   Spark ``groupBy``;
2. the alpha-step runs in tasks over runs of consecutive row ids (`ppdp.spark.source._runs`),
   each row's tuple count and V'-membership brought to it by Spark joins;
3. Algorithm 4's repeated tuples of V' run in tasks over runs of positions in V', membership
   in I brought by a join;
4. the beta-step's chunks of D are drawn in tasks (a range of chunks each), anti-joined with
   the table's tuples and V' by Spark joins, exchanged by chunk and numbered; only the count
   of inserted tuples of each chunk reaches the driver;
5. the published rows are exchanged by part (``part_of`` their rank), put in (rank, id) order
   and written by tasks with `ppdp.release.write_parquet`, V' (after the first view) by position
   in the parts `even_parts` gives; ``release.json`` last, atomic commit (`ppdp.storage`).

V' is the Parquet folder ``earlier.parquet`` of the private state directory (`save_state`),
its files in key order so that `ppdp.spark.read_parquet`'s row id is the position in V'; the
in-memory `ViewSequence` reads the same state, and this one reads the state it writes. The
state's fingerprint of the table (`ppdp.mechanisms.alphabeta.fingerprint`, one SHA-256 over
the rows' sorted keys) is hashed in a single task streaming the distinct tuples in key order:
the one step that does not spread over the cluster.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.engines.spark.rows import _PART, _RANK, _TOP_BIT, _by_part
from ppdp.engines.spark.saved import SavedTables
from ppdp.engines.spark.session import ROW_ID, in_arrow_batches, read_parquet
from ppdp.engines.spark.source import SparkSource, _codes, _in_domain, _runs
from ppdp.errors import ReleaseError
from ppdp.io.storage import commit_directory, staged_directory
from ppdp.mechanisms.alphabeta.domain import TUPLE_DOMAIN_RISK, TupleDomain
from ppdp.mechanisms.alphabeta.draws import (
    Piece,
    ViewStreams,
    repeated_keys,
    source_distribution,
    view_rates,
)
from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease, even_parts
from ppdp.mechanisms.alphabeta.same_rows import rows_record
from ppdp.mechanisms.alphabeta.views import (
    STATE_FORMAT,
    fingerprint_prefix,
    require_another_view,
    require_state,
    view_parameters,
)
from ppdp.mechanisms.base import require_declared_domains
from ppdp.plan.keyed import make_key
from ppdp.plan.order import part_count, part_of
from ppdp.randomness import RandomState
from ppdp.release.arrow import rows_to_arrow
from ppdp.release.format import part_names
from ppdp.release.target import check_target
from ppdp.release.write import commit_release, write_metadata, write_parquet

_KEY = "__key"
_COUNT = "__count"
_SEEN = "__seen"
_POSITION = "__position"
_CHUNK = "__chunk"
_INDEX = "__index"
_EARLIER = "earlier.parquet"
_PUBLISHED = f"{_RANK} long, {ROW_ID} long, {_KEY} long"

BLOCK_IDS = 1 << 16
"""Consecutive row ids (or positions in V') exchanged together for the alpha-step."""


class SparkViews:
    """Views of a Spark source: the first by Algorithm 1, the next by Algorithm 4, as
    `ViewSequence` publishes them; V' is read from the state directory as a DataFrame.

    After a view, V' grows by the view's tuples, which `save_state` writes (as Parquet, by
    tasks) before the next view can be drawn."""

    def __init__(self, mechanism: AlphaBeta, source: SparkSource) -> None:
        self.mechanism, self.source = mechanism, source
        self.domain = TupleDomain.of(source.schema)
        require_declared_domains(source, self.domain.columns, "alphabeta", TUPLE_DOMAIN_RISK)
        self.alpha, self.beta, self.d = mechanism.public_probabilities(source.n_rows,
                                                                       self.domain.size)
        self.published = 0
        self.n_earlier = 0
        self._earlier: Path | None = None  # V' as Parquet, None while it is empty
        self._pending: Any = None  # the rows of a view published since V' was written
        self._n_pending = 0
        self._fingerprint: str | None = None
        self._check_next_view()

    def _check_next_view(self) -> None:
        """Refuse the next view before drawing it when it would exceed ``max_rows``."""
        if self.published < self.mechanism.v:
            self.mechanism.check_view_size(self.source, earlier=self.n_earlier,
                                           view=self.published + 1)

    @in_arrow_batches
    def publish_to(self, directory: str | os.PathLike[str], *,
                   random_state: RandomState = None, overwrite: bool = False,
                   before_commit: Callable[[], object] | None = None) -> Path:
        """Write the next view into a release directory (the files `ViewSequence.publish_to`
        writes from the same rows, views and key); ``before_commit`` runs once the files are
        written and the view counted (``save_state``, say)."""
        return self.publish_keyed(directory, make_key(random_state), overwrite=overwrite,
                                  before_commit=before_commit)

    @in_arrow_batches
    def publish_keyed(self, directory: str | os.PathLike[str], key: int, *,
                      overwrite: bool = False,
                      before_commit: Callable[[], object] | None = None) -> Path:
        """`publish_to` with the release key itself (`ppdp.keyed.make_key`)."""
        require_another_view(self.published, self.mechanism.v)
        if self._pending is not None:
            raise ReleaseError("on Spark, V' is read from the views' state: save_state after a "
                               "view before publishing the next")
        target = Path(directory)
        check_target(target, overwrite)
        self._check_next_view()
        view, source, domain = self.published + 1, self.source, self.domain
        marginals = (source_distribution(source, domain)
                     if self.mechanism.noise == "marginal" else None)
        parameters = view_parameters(self.mechanism, self.alpha, self.beta, view, domain,
                                     marginals)
        schema = source.schema.select(domain.columns)
        keyed = _keyed(source, domain).persist()
        cached = [keyed]
        try:
            draws = ViewStreams(key, view, domain,
                                view_rates(self.alpha, self.beta, self.mechanism.v, view),
                                _ids_end(keyed), self.n_earlier, marginals)
            distinct = keyed.groupBy(_KEY).count().withColumnRenamed("count", _COUNT).persist()
            cached.append(distinct)
            earlier = None if self._earlier is None else _earlier_frame(source, self._earlier)
            noise = _noise(source, draws, distinct, earlier)
            cached.append(noise)
            published = _retained(draws, keyed, distinct, earlier)
            if earlier is not None:
                published = published.unionByName(_repeated_of(draws, distinct, earlier))
            published = published.unionByName(_numbered(draws, noise)).persist()
            cached.append(published)
            n_published = published.count()
            with staged_directory(target) as staging:
                digests: dict[str, str] = {}
                names = part_names("view", part_count(n_published))
                _write_view(published, names, schema, domain, staging, digests)
                files: dict[str, str | list[str]] = {
                    "view": names[0] if len(names) == 1 else names}
                if view > 1:
                    # V' before this view, public already: the estimator needs it.
                    names = part_names("earlier", len(even_parts(self.n_earlier)))
                    _write_earlier(earlier, self.n_earlier, names, schema, domain, staging,
                                   digests)
                    files["earlier"] = names[0] if len(names) == 1 else names
                write_metadata(staging, AlphaBetaRelease.mechanism, parameters, n_published,
                               schema, files, digests)
                self._pending, self._n_pending = published, n_published
                cached.remove(published)
                self.published = view
                commit_release(staging, target, overwrite=overwrite, before_commit=before_commit)
        finally:
            for frame in cached:
                frame.unpersist()
        return target

    @property
    def fingerprint(self) -> str:
        """The table's `ppdp.mechanisms.alphabeta.fingerprint` (private: a digest of the
        rows), hashed in one Spark task over the distinct tuples in key order."""
        if self._fingerprint is None:
            self._fingerprint = _fingerprint(self.source, self.domain)
        return self._fingerprint

    @property
    def rows(self) -> dict[str, Any]:
        """The rows apart from their columns and domains (`ppdp.mechanisms.alphabeta.
        same_rows.rows_record`), from a Spark aggregation per column."""
        return rows_record(self.source.schema, self.source.n_rows,
                           _column_histograms(self.source, self.domain))

    def save_state(self, directory: str | os.PathLike[str]) -> Path:
        """Write the publisher's private state (views published, V' as Parquet written by
        tasks, the table's fingerprint, its rows apart from columns and domains, and the
        parameters) atomically; the state
        `ViewSequence.save_state` writes, readable by either."""
        target = Path(directory)
        earlier = None if self._earlier is None else _earlier_frame(self.source, self._earlier)
        keys = None if earlier is None else earlier.select(_KEY)
        if self._pending is not None:
            pending = self._pending.select(_KEY)
            keys = pending if keys is None else keys.unionByName(pending)
        with staged_directory(target) as staging:
            n_earlier = _write_keys(keys, staging / _EARLIER, self.n_earlier + self._n_pending)
            state = {"format": STATE_FORMAT, "fingerprint": self.fingerprint,
                     "parameters": self.mechanism.parameter_values, "published": self.published,
                     "rows": self.rows}
            (staging / "state.json").write_text(json.dumps(state, indent=2) + "\n")
            commit_directory(staging, target, overwrite=True, replaceable=require_state)
        if self._pending is not None:
            self._pending.unpersist()
        self._pending, self._n_pending, self.n_earlier = None, 0, n_earlier
        self._earlier = target / _EARLIER if n_earlier else None
        return target

    def resume(self, directory: str | os.PathLike[str]) -> SparkViews:
        """Continue from the state ``save_state`` (here or in memory) wrote: this sequence,
        updated; the table and parameters must match."""
        root = Path(directory)
        try:
            state = json.loads((root / "state.json").read_text())
            if not (root / _EARLIER).exists():
                raise ValueError(f"no {_EARLIER}")
        except (OSError, ValueError) as exc:
            raise ReleaseError(f"{root} is not a readable alpha-beta view state: {exc}") from exc
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT \
                or state.get("fingerprint") != self.fingerprint:
            raise ReleaseError(f"{root} holds the state of another table")
        if state.get("parameters") != self.mechanism.parameter_values:
            raise ReleaseError(f"the views of this table were published with "
                               f"{state.get('parameters')}; later views must use the same "
                               f"parameters")
        if self._pending is not None:
            self._pending.unpersist()
        self._pending, self._n_pending = None, 0
        self.published = int(state["published"])
        self.n_earlier = _count_rows(root / _EARLIER)
        self._earlier = root / _EARLIER if self.n_earlier else None
        self._check_next_view()
        return self


class SparkView(SavedTables):
    """The first alpha-beta view of a Spark source (Algorithm 1, or 5 for marginal noise),
    drawn and written by ``save``."""

    mechanism = AlphaBetaRelease.mechanism

    def __init__(self, mechanism: AlphaBeta, source: SparkSource, key: int) -> None:
        # Refused now (domains, parameters, size) rather than when saved.
        SparkViews(mechanism, source)
        self._mechanism, self.source, self._key = mechanism, source, key

    def __repr__(self) -> str:
        return f"SparkView('alphabeta', n_rows={self.source.n_rows})"

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the view as Parquet parts and ``release.json`` (last), atomically; parts are
        written by Spark tasks, so the driver and executors must share the filesystem."""
        self.saved = SparkViews(self._mechanism, self.source).publish_keyed(
            directory, self._key, overwrite=overwrite)
        return self.saved


def publish_view(mechanism: AlphaBeta, source: SparkSource, key: int) -> SparkView:
    """The first alpha-beta view of a Spark source; `SparkViews` continues a sequence."""
    return SparkView(mechanism, source, key)


# -- the steps, as Spark plans ----------------------------------------------------------------


def _ids_end(keyed: Any) -> int:
    """Where the ids of V''s tuples and the inserted ones start: past the largest row id (n
    when the ids are the rows' positions, as in memory), so that no draw of a tuple is a
    row's."""
    from pyspark.sql import functions as F

    return int(keyed.agg(F.max(ROW_ID)).first()[0]) + 1


def _keyed(source: SparkSource, domain: TupleDomain) -> Any:
    """Each row's id and tuple key, computed in tasks (a value outside its domain refused)."""
    columns = [source.schema[c] for c in domain.columns]
    row_id = source.row_id

    def keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            codes = {c.name: _in_domain(c, _codes(c, batch.column(c.name))) for c in columns}
            yield pa.record_batch({
                ROW_ID: pa.array(batch.column(row_id).to_numpy().astype(np.int64)),
                _KEY: pa.array(domain.keys(codes).astype(np.int64))})

    return source.frame.select(*domain.columns, row_id).mapInArrow(
        keys, f"{ROW_ID} long, {_KEY} long")


def _earlier_frame(source: SparkSource, path: Path) -> Any:
    """V' as a DataFrame: each tuple's key and its position in V' (sorted)."""
    from pyspark.sql import functions as F

    frame = read_parquet(source.frame.sparkSession, path)
    return frame.select(F.col("key").alias(_KEY), F.col(ROW_ID).alias(_POSITION))


def _flagged(frame: Any, flag: str) -> Any:
    """The keys of a frame with a column ``flag`` of 1, for a left join that marks members."""
    from pyspark.sql import functions as F

    return frame.select(_KEY, F.lit(1).alias(flag))


def _pieces(piece: Piece) -> pa.RecordBatch:
    """Published rows as a batch: the rank signed with its top bit flipped, so that Spark
    sorts it as the unsigned rank, the id and the tuple key."""
    ranks, ids, keys = piece
    return pa.record_batch({_RANK: pa.array((ranks ^ _TOP_BIT).view(np.int64)),
                            ROW_ID: pa.array(ids.astype(np.int64)),
                            _KEY: pa.array(keys.astype(np.int64))})


def _retained(draws: ViewStreams, keyed: Any, distinct: Any, earlier: Any) -> Any:
    """The alpha-step: each row with its tuple's count and V'-membership (joins), kept in
    tasks over runs of consecutive row ids."""
    from pyspark.sql import functions as F

    rows = keyed.join(distinct, _KEY)
    if earlier is not None:
        rows = rows.join(_flagged(earlier, _SEEN), _KEY, "left")
    seen = F.coalesce(F.col(_SEEN), F.lit(0)) if earlier is not None else F.lit(0)
    rows = rows.select(ROW_ID, _KEY, _COUNT, seen.alias(_SEEN))

    def retain(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for start, _, values in _runs(batches, [], ROW_ID, (_KEY, _COUNT, _SEEN)):
            yield _pieces(draws.retained_rows(start, values[_KEY], values[_COUNT],
                                              values[_SEEN].astype(bool)))

    return _in_blocks(rows, ROW_ID, draws.n_rows).mapInArrow(retain, _PUBLISHED)


def _repeated_of(draws: ViewStreams, distinct: Any, earlier: Any) -> Any:
    """Algorithm 4's tuples of V' outside I: membership in I by a join, drawn in tasks over
    runs of consecutive positions in V'."""
    from pyspark.sql import functions as F

    tuples = earlier.join(_flagged(distinct, _SEEN), _KEY, "left").select(
        _POSITION, _KEY, F.coalesce(F.col(_SEEN), F.lit(0)).alias(_SEEN))

    def repeat(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for start, _, values in _runs(batches, [], _POSITION, (_KEY, _SEEN)):
            yield _pieces(draws.repeated_rows(start, values[_KEY], values[_SEEN].astype(bool)))

    return _in_blocks(tuples, _POSITION, draws.n_earlier).mapInArrow(repeat, _PUBLISHED)


def _in_blocks(frame: Any, ids: str, rows: int) -> Any:
    """The ``rows`` rows exchanged by block of ``BLOCK_IDS`` consecutive ids and sorted by id
    in each task: runs of consecutive ids stay together, a repeated id lands in one task
    (where `_runs` refuses it), and no sampling job is needed as for a range exchange."""
    from pyspark.sql import functions as F

    return frame.repartition(_tasks(frame, rows / BLOCK_IDS), F.floor(F.col(ids) / BLOCK_IDS)) \
        .sortWithinPartitions(ids)


def _tasks(frame: Any, wanted: float) -> int:
    """``wanted`` tasks for an exchange, at least one and at most Spark's number of shuffle
    partitions (small inputs are not spread over tasks that would be empty)."""
    most = int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    return max(1, min(math.ceil(wanted), most))


def _noise(source: SparkSource, draws: ViewStreams, distinct: Any, earlier: Any) -> Any:
    """The beta-step's inserted tuples, numbered within their chunk: the chunks drawn in
    tasks (a range of chunks each), anti-joined with I and V', exchanged by chunk and, in key
    order, thinned (Algorithm 5) and numbered; persisted, as its per-chunk counts are taken
    before its rows are numbered."""
    spark = source.frame.sparkSession
    tasks = max(1, min(draws.chunks, spark.sparkContext.defaultParallelism))

    def draw(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for chunk in batch.column("id").to_numpy().tolist():
                _, keys = draws.candidates(chunk)
                yield pa.record_batch({_CHUNK: pa.array(np.full(len(keys), chunk, np.int64)),
                                       _KEY: pa.array(keys.astype(np.int64))})

    def number(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for chunk, keys in _grouped(batches, _CHUNK):
            rng, _ = draws.candidates(chunk)
            keys = draws.inserted(rng, keys)
            yield pa.record_batch({_CHUNK: pa.array(np.full(len(keys), chunk, np.int64)),
                                   _KEY: pa.array(keys),
                                   _INDEX: pa.array(np.arange(len(keys), dtype=np.int64))})

    drawn = spark.range(0, draws.chunks, numPartitions=tasks).mapInArrow(
        draw, f"{_CHUNK} long, {_KEY} long")
    drawn = drawn.join(distinct.select(_KEY), _KEY, "left_anti")
    if earlier is not None:
        drawn = drawn.join(earlier.select(_KEY), _KEY, "left_anti")
    # A chunk's candidates are drawn again for Algorithm 5's thinning, whose uniforms follow
    # them in the chunk's generator.
    return drawn.repartition(_tasks(drawn, draws.chunks), _CHUNK) \
        .sortWithinPartitions(_CHUNK, _KEY).mapInArrow(
        number, f"{_CHUNK} long, {_KEY} long, {_INDEX} long").persist()


def _grouped(batches: Iterator[pa.RecordBatch], by: str) -> Iterator[tuple[int, np.ndarray]]:
    """A task's rows, sorted by column ``by`` (a chunk of D, a part), as the keys of each of
    its values, in the order they come."""
    pending: list[np.ndarray] = []
    current = None
    for batch in batches:
        chunks = batch.column(by).to_numpy()
        keys = batch.column(_KEY).to_numpy()
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(chunks)) + 1, [len(chunks)]])
        for first, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            if end == first:
                continue
            chunk = int(chunks[first])
            if current is not None and chunk != current:
                yield current, np.concatenate(pending)
                pending = []
            current = chunk
            pending.append(keys[first:end])
    if current is not None:
        yield current, np.concatenate(pending)


def _numbered(draws: ViewStreams, noise: Any) -> Any:
    """The inserted tuples as published rows: j is the chunk's first number (the inserted
    tuples of the chunks before it, counted by an aggregation) plus the index in the chunk."""
    counted = noise.groupBy(_CHUNK).count().toArrow()
    counts = np.zeros(draws.chunks, dtype=np.int64)
    counts[counted.column(_CHUNK).to_numpy()] = counted.column("count").to_numpy()
    firsts = np.cumsum(counts) - counts

    def number(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            numbers = firsts[batch.column(_CHUNK).to_numpy()] + batch.column(_INDEX).to_numpy()
            order = np.argsort(numbers, kind="stable")
            numbers, keys = numbers[order], batch.column(_KEY).to_numpy()[order]
            bounds = np.concatenate([[0], np.flatnonzero(np.diff(numbers) != 1) + 1,
                                     [len(numbers)]])
            for first, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
                if end > first:
                    yield _pieces(draws.numbered(int(numbers[first]), keys[first:end]))

    return noise.mapInArrow(number, _PUBLISHED)


def _write_view(published: Any, names: list[str], schema: Any, domain: TupleDomain,
                staging: Path, digests: dict[str, str]) -> None:
    """The view's parts written by tasks: rows exchanged by part (their rank), each part put
    in release order, by (rank, id), in its task (`ppdp.spark.rows._by_part`); a part no row
    fell in is written empty here."""
    parts, where = len(names), str(staging)

    def with_part(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ranks = batch.column(_RANK).to_numpy().view(np.uint64) ^ _TOP_BIT
            # mapInArrow takes the columns by position: those of _PUBLISHED, then the part.
            yield pa.record_batch({_RANK: batch.column(_RANK), ROW_ID: batch.column(ROW_ID),
                                   _KEY: batch.column(_KEY),
                                   _PART: pa.array(part_of(ranks, parts).astype(np.int32))})

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for index, part in _by_part(batches):
            keys = part.column(_KEY).to_numpy()
            yield _written(index, write_parquet(Path(where) / names[index], rows_to_arrow(
                schema, domain.codes(keys, schema))))

    written = (published.mapInArrow(with_part, f"{_PUBLISHED}, {_PART} int")
               .repartition(parts, _PART)
               .mapInArrow(write, "part int, digest string"))
    _collect_digests(written, names, schema, domain, staging, digests)


def _write_earlier(earlier: Any | None, n_earlier: int, names: list[str], schema: Any,
                   domain: TupleDomain, staging: Path, digests: dict[str, str]) -> None:
    """V' (before the view) in key order, cut into the parts `even_parts` gives, written by
    tasks (one empty part when V' is empty)."""
    if earlier is None:
        _collect_digests(None, names, schema, domain, staging, digests)
        return
    ends = np.cumsum(even_parts(n_earlier))
    where = str(staging)

    def with_part(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            positions = batch.column(_POSITION).to_numpy()
            yield pa.record_batch({
                _KEY: batch.column(_KEY), _POSITION: batch.column(_POSITION),
                _PART: pa.array(np.searchsorted(ends, positions, side="right")
                                .astype(np.int32))})

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for index, keys in _grouped(batches, _PART):
            yield _written(index, write_parquet(Path(where) / names[index], rows_to_arrow(
                schema, domain.codes(keys, schema))))

    written = (earlier.mapInArrow(with_part, f"{_KEY} long, {_POSITION} long, {_PART} int")
               .repartition(len(names), _PART).sortWithinPartitions(_PART, _POSITION)
               .mapInArrow(write, "part int, digest string"))
    _collect_digests(written, names, schema, domain, staging, digests)


def _written(index: int, digest: str) -> pa.RecordBatch:
    return pa.record_batch({"part": pa.array([index], pa.int32()), "digest": pa.array([digest])})


def _collect_digests(written: Any | None, names: list[str], schema: Any, domain: TupleDomain,
                     staging: Path, digests: dict[str, str]) -> None:
    """Run the writing tasks and put each part's digest in ``digests``, in name order; a part
    no row fell in is written empty here, as the other executors write it."""
    found: dict[int, str] = {}
    if written is not None:
        table = written.toArrow()
        found = dict(zip(table.column("part").to_pylist(), table.column("digest").to_pylist(),
                         strict=True))
    for index, name in enumerate(names):
        if index not in found:
            empty = rows_to_arrow(schema, domain.codes(np.zeros(0, np.int64), schema))
            found[index] = write_parquet(staging / name, empty)
        digests[name] = found[index]


def _write_keys(keys: Any, folder: Path, most: int) -> int:
    """Write distinct tuple keys as a Parquet folder whose files, in name order, hold them in
    key order (so a row's position in them is its position in V'); their number (at most
    ``most``)."""
    from pyspark.sql import functions as F

    folder.mkdir()
    if keys is None:
        pq.write_table(pa.table({"key": pa.array([], pa.int64())}), folder / "part-00000.parquet")
        return 0
    where = str(folder)
    task = "__task"

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer, rows, index = None, 0, -1
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if writer is None:
                index = int(batch.column(task)[0].as_py())
                writer = pq.ParquetWriter(Path(where) / f"part-{index:05d}.parquet",
                                          pa.schema([("key", pa.int64())]))
            writer.write_table(pa.table({"key": batch.column(_KEY)}))
            rows += batch.num_rows
        if writer is not None:
            writer.close()
            yield pa.record_batch({"rows": pa.array([rows], pa.int64())})

    # Range partitions are numbered in key order: the files' names keep it.
    written = (keys.select(_KEY).distinct().repartitionByRange(_tasks(keys, most / BLOCK_IDS),
                                                               _KEY)
               .sortWithinPartitions(_KEY)
               .select(_KEY, F.spark_partition_id().alias(task))
               .mapInArrow(write, "rows long").toArrow())
    total = int(np.sum(written.column("rows").to_numpy())) if written.num_rows else 0
    if total == 0:
        pq.write_table(pa.table({"key": pa.array([], pa.int64())}), folder / "part-00000.parquet")
    return total


def _count_rows(path: Path) -> int:
    """The rows of a Parquet file or folder, from the footers."""
    import pyarrow.dataset as ds

    return ds.dataset(path, format="parquet").count_rows()


def _column_histograms(source: SparkSource, domain: TupleDomain) -> dict[str, np.ndarray]:
    """The rows of each code of each column (`ppdp.mechanisms.alphabeta.same_rows.
    tuple_histograms`): one aggregation per column over the distinct tuples; only the counts,
    as long as the domains, reach the driver."""
    from pyspark.sql import functions as F

    distinct = _keyed(source, domain).groupBy(_KEY).count() \
        .withColumnRenamed("count", _COUNT).cache()
    histograms: dict[str, np.ndarray] = {}
    try:
        stride = 1
        for column, size in zip(domain.columns[::-1], domain.shape[::-1], strict=True):
            code = F.expr(f"pmod({_KEY} div {stride}, {size})").alias(_INDEX)
            histogram = np.zeros(size, dtype=np.int64)
            for row in distinct.groupBy(code).agg(F.sum(_COUNT).alias(_COUNT)).collect():
                histogram[int(row[_INDEX])] = int(row[_COUNT])
            histograms[column] = histogram
            stride *= size
    finally:
        distinct.unpersist()
    return {column: histograms[column] for column in domain.columns}


def _fingerprint(source: SparkSource, domain: TupleDomain) -> str:
    """The table's fingerprint: the rows' sorted keys hashed in one task, streaming the
    distinct tuples in key order with their counts (only the digest reaches the driver)."""
    prefix = fingerprint_prefix(source.schema)

    def digest(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hashed = hashlib.sha256(prefix)
        for batch in batches:
            for keys in repeated_keys(batch.column(_KEY).to_numpy(),
                                  batch.column(_COUNT).to_numpy()):
                hashed.update(keys.astype(np.int64).tobytes())
        yield pa.record_batch({"digest": pa.array([hashed.hexdigest()])})

    distinct = _keyed(source, domain).groupBy(_KEY).count().withColumnRenamed("count", _COUNT)
    return distinct.repartition(1).sortWithinPartitions(_KEY) \
        .mapInArrow(digest, "digest string").first()["digest"]
