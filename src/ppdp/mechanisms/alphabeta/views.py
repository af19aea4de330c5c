"""A sequence of alpha-beta views of one table: the first by Algorithm 1, the next ones by
Algorithm 4 (Section 4.4.1), with the publisher's private state (the views published, V' and
the table's fingerprint) kept between them.

Keyed draws. Every random draw of a view is a pure function of the release key
(`ppdp.plan.keyed.make_key`), the view number v and a row id or a chunk of D
(`ppdp.mechanisms.alphabeta.draws.ViewDraws`), so the views written batch by batch
(`publish_to`, the streaming engine) are the very files that ``publish`` and `Release.save`
write from a table in memory, whatever the batches and their order. The key is never written:
not to a release, not to the views' state."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.data.schema import Schema
from ppdp.errors import InfeasibleError, ReleaseError
from ppdp.io.storage import commit_directory, staged_directory
from ppdp.mechanisms.alphabeta.domain import TUPLE_DOMAIN_RISK, TupleDomain, _sorted_unique
from ppdp.mechanisms.alphabeta.draws import (
    ViewDraws,
    distinct_tuples,
    release_order,
    repeated_keys,
    source_distribution,
    view_rates,
)
from ppdp.mechanisms.alphabeta.guarantee import AlphaBetaGuarantee
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease
from ppdp.mechanisms.alphabeta.same_rows import rows_record, tuple_histograms
from ppdp.mechanisms.base import Progress, require_declared_domains
from ppdp.plan.engine import publish
from ppdp.plan.keyed import make_key
from ppdp.randomness import RandomState
from ppdp.table.source import DEFAULT_BATCH_ROWS, Batch, Source, SummarySource, TableSource
from ppdp.table.table import Table


class ViewedMechanism(Protocol):
    """What a sequence of views asks of its mechanism: `ppdp.mechanisms.alphabeta.mechanism.
    AlphaBeta`, which builds the sequences (typed here by what it offers: importing it would
    close a cycle)."""

    name: ClassVar[str]
    plan_shape: ClassVar[str]
    k: float | None
    gamma: float | None
    v: int
    noise: str
    adversary: str

    @property
    def parameter_values(self) -> dict[str, Any]: ...

    def guarantee(self, table: Table | None = None, *, n: int | None = None,
                  m: int | None = None, view: int | None = None) -> AlphaBetaGuarantee: ...

    def public_probabilities(self, n: int, m: int) -> tuple[float, float, float | None]: ...

    def check_view_size(self, table: Table | SummarySource, *, earlier: int = 0,
                        view: int = 1) -> float: ...

    def expected_view_size(self, n: int, m: int, *, earlier: int = 0,
                           view: int = 1) -> float: ...


class ViewSequence:
    """Views of one table: the first by Algorithm 1, the next ones by Algorithm 4.

    For view i, with V' the union of the views published so far and A + B = alpha + beta,
    ``B = (alpha + beta) e^(-1/v)`` and ``C = (1 - alpha - beta)^(i-1) beta``: a tuple of V' not
    in I is inserted with probability B, a tuple outside I and V' with probability C, and a tuple
    of I held by c rows has each row kept with probability ``A + B/c`` if it is in V', else
    ``alpha + beta - C + C/c`` (for c = 1 both are alpha + beta, as in Algorithm 4). ``state``
    (the views published and V') is private to the publisher: ``save_state``/``load_state``.
    """

    def __init__(self, mechanism: ViewedMechanism, table: Table | Source, *, published: int = 0,
                 earlier: np.ndarray | None = None) -> None:
        self.mechanism = mechanism
        self.table = table
        self._distinct: tuple[np.ndarray, np.ndarray] | None = None
        self._fingerprint: str | None = None
        self.domain = TupleDomain.of(table.schema)
        require_declared_domains(table, self.domain.columns, "alphabeta", TUPLE_DOMAIN_RISK)
        self.alpha, self.beta, self.d = mechanism.public_probabilities(table.n_rows,
                                                                       self.domain.size)
        self.published = published
        self.earlier = np.empty(0, dtype=np.int64) if earlier is None else np.sort(earlier)
        self._checked_view = 0
        if published < mechanism.v:
            self._check_next_view()

    def _check_next_view(self) -> None:
        """Refuse the next view before drawing it when it would exceed ``max_rows``."""
        self.mechanism.check_view_size(self.table, earlier=len(self.earlier),
                                       view=self.published + 1)
        self._checked_view = self.published + 1

    def distinct(self, progress: Progress | None = None, batch_rows: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The distinct tuples of the table (sorted keys) and their row counts: one pass over
        a source, kept for the views and the fingerprint."""
        if self._distinct is None:
            if isinstance(self.table, Table):
                batches: Iterable[Batch] = [(0, self.table.codes)]
            else:
                batches = reported(
                    self.table.batches(batch_rows or DEFAULT_BATCH_ROWS, self.domain.columns),
                    "tuples", self.table.n_rows, progress or silent)
            self._distinct = distinct_tuples(batches, self.domain)
        return self._distinct

    @property
    def fingerprint(self) -> str:
        """The table's `fingerprint` (private: it is a digest of the rows)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.table, self.distinct())
        return self._fingerprint

    @property
    def rows(self) -> dict[str, Any]:
        """The rows apart from their columns and domains (`same_rows.rows_record`: private,
        like the fingerprint), recorded in the state."""
        return rows_record(self.table.schema, self.table.n_rows,
                           tuple_histograms(self.domain, *self.distinct()))

    def next_view(self, random_state: RandomState, progress: Progress | None = None,
                   batch_rows: int | None = None) -> tuple[int, ViewDraws, dict[str, Any]]:
        """The number, keyed draws and public parameters of the next view; raises when the
        bound v on the number of views is reached."""
        v = self.mechanism.v
        require_another_view(self.published, v)
        if self._checked_view != self.published + 1:
            self._check_next_view()
        view = self.published + 1
        tuples, counts = self.distinct(progress, batch_rows)
        source = TableSource(self.table) if isinstance(self.table, Table) else self.table
        marginals = (source_distribution(source, self.domain)
                     if self.mechanism.noise == "marginal" else None)
        draws = ViewDraws(make_key(random_state), view, self.domain,
                          view_rates(self.alpha, self.beta, v, view), self.table.n_rows, tuples,
                          counts, self.earlier, marginals)
        return view, draws, view_parameters(self.mechanism, self.alpha, self.beta, view,
                                            self.domain, marginals)

    def guarantee(self) -> AlphaBetaGuarantee:
        """The guarantee of the last view published (of the first before any): its rho is that
        view's (later views are noisier, Section 4.4.1), ``rhos`` lists every view's."""
        n, m = self.table.n_rows, self.domain.size
        return self.mechanism.guarantee(n=n, m=m, view=max(self.published, 1))

    def record_view(self, view: int, keys: Sequence[np.ndarray]) -> None:
        """Count view ``view`` as published, its tuples (``keys``, in pieces) joining V'."""
        self.earlier = _sorted_unique(np.concatenate([self.earlier, *keys]))
        self.published = view

    def publish(self, *, random_state: RandomState = None) -> AlphaBetaRelease:
        """The next view, in memory; raises when the bound v on the number of views is
        reached (a source is published with `publish_to`).

        ``random_state`` makes the view's key (`ppdp.keyed.make_key`: OS entropy for None, the
        default). The draws are keyed by the view number too, so the views are independent
        whatever their keys, and the same key and view number give the same view."""
        if not isinstance(self.table, Table):
            raise TypeError("the views of a source are written to a directory: use publish_to")
        view, draws, parameters = self.next_view(random_state)
        codes = self.table.codes
        keys, part_rows = release_order([draws.retained(0, codes), draws.repeated(),
                                         *draws.noise()])
        schema = self.table.schema.select(self.domain.columns)
        release = AlphaBetaRelease(
            schema, parameters, len(keys), self.domain.codes(keys, schema),
            earlier=self.domain.codes(self.earlier, schema), part_rows=part_rows)
        self.record_view(view, [keys])
        return release

    def publish_to(self, directory: str | os.PathLike[str], *,
                   random_state: RandomState = None, batch_rows: int | None = None,
                   overwrite: bool = False, progress: Progress | None = None,
                   before_commit: Callable[[], object] | None = None) -> Path:
        """Write the next view straight into a release directory, batch by batch, on the
        streaming engine (`ppdp.engines.streaming.alphabeta`); the directory. For a table in
        memory or a source read in batches.

        The files are those ``publish`` then `Release.save` write from the same rows, views and
        key, whatever ``batch_rows`` and the order of the batches. ``before_commit`` runs once
        the files are written and the view counted (``save_state``, say); ``overwrite`` as in
        `Release.save`. ``progress(stage, done, total)`` hears of ``tuples`` and ``retain``
        (rows), ``noise`` (chunks of D) and ``write`` (parts)."""
        published = publish(self.mechanism, self.table, engine="streaming", views=self,
                            random_state=random_state, batch_rows=batch_rows,
                            progress=progress)
        path: Path = published.save(directory, overwrite=overwrite,
                                    before_commit=before_commit)
        return path

    def save_state(self, directory: str | os.PathLike[str]) -> Path:
        """Write the publisher's private state (views published, V', the table's fingerprint,
        its rows apart from columns and domains, and the parameters) atomically, for the next
        ``load_state``."""
        target = Path(directory)
        with staged_directory(target) as staging:
            pq.write_table(pa.table({"key": self.earlier}), staging / "earlier.parquet")
            state = {"format": STATE_FORMAT, "fingerprint": self.fingerprint,
                     "parameters": self.mechanism.parameter_values, "published": self.published,
                     "rows": self.rows}
            (staging / "state.json").write_text(json.dumps(state, indent=2) + "\n")
            commit_directory(staging, target, overwrite=True, replaceable=require_state)
        return target

    @classmethod
    def load_state(cls, directory: str | os.PathLike[str], mechanism: ViewedMechanism,
                   table: Table | Source) -> ViewSequence:
        """Continue a sequence from ``save_state``; the table and parameters must match."""
        return cls(mechanism, table).resume(directory)

    def resume(self, directory: str | os.PathLike[str]) -> ViewSequence:
        """Continue from the state ``save_state`` wrote (this sequence, updated); the table and
        parameters must match."""
        root = Path(directory)
        try:
            state = json.loads((root / "state.json").read_text())
            earlier = pq.read_table(root / "earlier.parquet").column("key").to_numpy()
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
            raise ReleaseError(f"{root} is not a readable alpha-beta view state: {exc}") from exc
        if state.get("format") != STATE_FORMAT or state.get("fingerprint") != self.fingerprint:
            raise ReleaseError(f"{root} holds the state of another table")
        if state.get("parameters") != self.mechanism.parameter_values:
            raise ReleaseError(f"the views of this table were published with "
                               f"{state.get('parameters')}; later views must use the same "
                               f"parameters")
        self.published, self.earlier = int(state["published"]), np.sort(earlier)
        self._checked_view = 0
        if self.published < self.mechanism.v:
            self._check_next_view()
        return self


STATE_FORMAT = "ppdp-alphabeta-views-1"


def require_another_view(published: int, v: int) -> None:
    """Refuse a view beyond the bound v on the number of views (Algorithm 4)."""
    if published >= v:
        raise InfeasibleError(f"{published} views of this table were published, the bound "
                              f"v = {v} it was set up with; more views would break the "
                              f"guarantee (publish with a larger v from the start)")


def require_state(path: Path) -> None:
    """Raise unless ``path`` holds the state of alpha-beta views (and so may be replaced)."""
    try:
        state = json.loads((path / "state.json").read_text())
        ours = isinstance(state, dict) and state.get("format") == STATE_FORMAT and {
            p.name for p in path.iterdir()} <= {"state.json", "earlier.parquet"}
    except (OSError, ValueError, RecursionError):
        ours = False
    if not ours:
        raise ReleaseError(f"{path} is not the state of alpha-beta views; it is left alone: "
                           f"choose another state directory")


def default_state_root() -> Path:
    """Where the private state of alpha-beta views is kept unless told: ``$PPDP_STATE_DIR``,
    else ``$XDG_STATE_HOME/ppdp``, else ``~/.local/state/ppdp``; one place per user, so that
    the views of a table are counted wherever their releases are written."""
    if os.environ.get("PPDP_STATE_DIR"):
        return Path(os.environ["PPDP_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ppdp"


def state_directory(root: str | os.PathLike[str], table_fingerprint: str) -> Path:
    """The state of the views of a table under ``root``, by the table's `fingerprint`: keyed
    by the table's tuples alone, so that other parameters cannot start a fresh count (they are
    refused instead)."""
    return Path(root) / f"alphabeta-{table_fingerprint[:32]}"


def fingerprint(table: Table | Source,
                distinct: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """A digest of a table's tuples, to recognise the same data again: the published columns
    with their domains and the multiset of rows, whatever the column roles and the row order
    (alpha-beta ignores roles, and a reordered copy is the same instance).

    The rows are hashed as their sorted tuple keys; from ``distinct`` (sorted keys and counts,
    `distinct_tuples`), a source's are hashed by repeating each key, chunk by chunk, so a table
    and a source of the same rows agree."""
    domain = TupleDomain.of(table.schema)
    digest = hashlib.sha256(fingerprint_prefix(table.schema))
    if distinct is None:
        if isinstance(table, Table):
            digest.update(np.sort(domain.keys(table.codes)).astype(np.int64).tobytes())
            return digest.hexdigest()
        distinct = distinct_tuples(table.batches(columns=domain.columns), domain)
    tuples, counts = distinct
    for keys in repeated_keys(tuples, counts):
        digest.update(keys.astype(np.int64).tobytes())
    return digest.hexdigest()


def fingerprint_prefix(schema: Schema) -> bytes:
    """What `fingerprint` hashes before the rows: the published columns and their domains."""
    columns = [[c, [str(v) for v in schema[c].domain]] for c in TupleDomain.of(schema).columns]
    return json.dumps(columns).encode()


def silent(stage: str, done: int, total: int) -> None:
    return None


def reported(batches: Iterable[Batch], stage: str, total: int,
              report: Progress) -> Iterator[Batch]:
    """The batches, telling ``report`` the rows done after each."""
    done = 0
    for start, codes in batches:
        yield start, codes
        done += len(next(iter(codes.values()), ()))
        report(stage, done, total)


def view_parameters(mechanism: ViewedMechanism, alpha: float, beta: float, view: int,
                    domain: TupleDomain, marginals: Sequence[np.ndarray] | None
                    ) -> dict[str, Any]:
    """The public parameters of a view (Algorithm 1, step 4): what the estimator needs."""
    parameters: dict[str, Any] = {
        "alpha": alpha, "beta": beta, "k": mechanism.k, "gamma": mechanism.gamma,
        "v": mechanism.v, "view": view}
    if mechanism.adversary != "independent":
        # Recorded only when chosen, so that other releases keep their files.
        parameters["adversary"] = mechanism.adversary
    if marginals is not None:
        parameters["source"] = {c: [float(x) for x in p]
                                for c, p in zip(domain.columns, marginals, strict=True)}
    return parameters
