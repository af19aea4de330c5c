"""A SPLU-Gen release and its estimators (Sections 4-5).

- a sensitive value alone: its published count (Theorem 2, the MLE), with the binomial
  variance f(1 - 1/gamma) (Section 4);
- conditions mixing non-sensitive attributes P with sensitive values (IN lists, OR, NOT and
  GROUP BY rewritten as sums of terms by `ppdp.query.splitting.split`): by default the
  value-level model of ``decoy_transition`` (a transition per sensitive value, unbiased when P
  correlates with the sensitive value, with a standard error for every answer); with
  ``estimator = "paper"``, Section 5's iterative Bayesian reconstruction over the 2^(w+1)
  states (P?, s_1?, .., s_w?) with ``M = M_0 (x) M_1 (x) .. (x) M_w`` (Eq. 13-14). Where the
  iteration stops at ``max_iterations`` before converging, the answers concerned are its last
  iterate: ``count`` flags them (``Estimate.converged`` False) and both ``count`` and
  ``count_all`` warn (`ppdp.errors.ConvergenceWarning`).

In Section 5's model the rate at which a row whose value is not s publishes s is approximated by
f_s/N (Section 5.1, from "f_s of the N/gamma groups contain s"). Exactly, the f_s groups holding
s have f_s (gamma - 1) other rows out of N - f_s, each publishing s with probability 1/gamma, so
the rate is f_s (gamma - 1) / (gamma (N - f_s)). ppdp's two-state model uses the exact rate: with
it the expected published count of s is exactly f_s, consistent with Theorem 2."""

from __future__ import annotations

import string
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdp.data.schema import Schema
from ppdp.errors import ConvergenceWarning
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.estimators.reconstruct import delta_method_variance, iterative_bayesian
from ppdp.mechanisms.base import check_sensitive
from ppdp.mechanisms.parameters import require_integer
from ppdp.mechanisms.splu.decoy_transition import ValueModel, estimate_variance
from ppdp.query.binding import BoundQuery, bind
from ppdp.query.cube import count_histogram
from ppdp.query.predicates import AllOf, Const, Predicate, simplify
from ppdp.query.splitting import split
from ppdp.query.syntax import Query
from ppdp.release.base import RowsRelease

ESTIMATORS = ("layout", "paper")
"""SPLU-Gen's estimators: the value-level model (default) and Section 5's two-state model."""


def check_gamma(gamma: Any) -> int:
    """SPLU-Gen's decoy group size gamma: an integer >= 2 (Section 3.1)."""
    return require_integer("gamma", gamma, 2)


class SpluRelease(RowsRelease):
    """A SPLU-Gen release: the randomized rows and gamma.

    ``estimator`` (attribute) chooses how conditions mixing sensitive and other columns are
    answered: ``"layout"`` (default) inverts the transition per sensitive value that the decoy
    layout gives at the published frequencies (``decoy_transition``), unbiased when conditions
    correlate with the sensitive value; ``"paper"`` is Section 5's iterative Bayesian
    reconstruction over two states per attribute (Eq. 13-14), whose ``tolerance`` and
    ``max_iterations`` (attributes) control it; an answer whose reconstruction stopped at
    ``max_iterations`` is flagged ``converged=False`` and warned of (`ConvergenceWarning`).
    """

    mechanism = "splu"
    estimator = "layout"
    tolerance = 1e-6
    max_iterations = 10_000

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray]) -> None:
        super().__init__(schema, parameters, n_rows, codes)
        self.gamma = require_integer("gamma", int(self.parameters["gamma"]), 2)
        self._models: dict[tuple[str, ...], ValueModel] = {}

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """Sensitive columns and gamma as `SPLUGen` checks them, and gamma no larger than
        each sensitive domain (a decoy group holds gamma distinct values, Section 3.1)."""
        gamma = check_gamma(parameters["gamma"])
        for name in check_sensitive(schema, "SPLU-Gen"):
            if gamma > schema[name].size:
                raise ValueError(f"gamma = {gamma} exceeds the {schema[name].size} values of "
                                 f"{name!r}: decoy groups hold gamma distinct values")

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"unknown SPLU-Gen estimator {self.estimator!r}; choose one of "
                             f"{', '.join(ESTIMATORS)}")
        if self.estimator == "paper":
            outputs, unsettled = self._estimate_two_state(queries)
            # Pointed at the caller of count_all (which calls this method).
            _warn_unsettled(unsettled, self.max_iterations, stacklevel=3)
            return outputs
        answers: list[tuple[np.ndarray, np.ndarray | None] | None] = []
        # Conjunction-like queries (one term, no GROUP BY) are unmixed together, per set of
        # sensitive columns: one vectorised pass instead of one per query.
        single: dict[tuple[str, ...], list[tuple[int, Predicate, np.ndarray]]] = {}
        for index, query in enumerate(queries):
            answers.append(self._estimate_by_value(query, single, index))
        for mentioned, batch in single.items():
            self._estimate_single_terms(mentioned, batch, answers)
        filled = [answer for answer in answers if answer is not None]
        assert len(filled) == len(queries), "every query is answered"
        return filled

    def count(self, query: str | Query) -> Estimate | GroupedEstimate:
        """Estimate a count query (SQL text or Query) from the release; with ``estimator =
        "paper"``, an answer whose reconstruction did not converge is flagged
        (``converged=False``) and warned of."""
        if self.estimator != "paper":
            return super().count(query)
        bound = bind(query, self.schema, table_name=self.name, any_table=True)
        outputs, unsettled = self._estimate_two_state([bound])
        _warn_unsettled(unsettled, self.max_iterations, stacklevel=2)
        values, stderr = outputs[0]
        return self._answer(bound, values, stderr, unconverged=unsettled[0])

    def value_model(self, columns: Sequence[str]) -> ValueModel:
        """The value-level transition of these sensitive columns (computed once, then kept)."""
        key = tuple(columns)
        if key not in self._models:
            marginals = [self._cube.histogram([c]) for c in key]
            self._models[key] = ValueModel.from_published(marginals, self.gamma)
        return self._models[key]

    def _exact(self, query: BoundQuery) -> tuple[np.ndarray, np.ndarray]:
        """A query on non-sensitive columns only: they are published unchanged, so exact."""
        counts = np.asarray(count_histogram(self._cube, query.predicate, query.group_by),
                            dtype=np.float64)
        return counts, np.zeros(counts.shape)

    def _estimate_by_value(self, query: BoundQuery,
                           single: dict[tuple[str, ...], list[tuple[int, Predicate, np.ndarray]]],
                           index: int) -> tuple[np.ndarray, np.ndarray] | None:
        """One query by the value-level model: every term of ``split`` unmixed, summed.

        A query of one term without GROUP BY is added to ``single`` instead (None returned).
        """
        sizes = self.schema.sizes()
        shape = tuple(sizes[c] for c in query.group_by)
        mentioned = [c for c in self.schema.sensitive if c in query.columns]
        if not mentioned:
            return self._exact(query)
        plain_groups = [c for c in query.group_by if c not in mentioned]
        value_groups = [c for c in query.group_by if c in mentioned]
        terms = split(query.predicate, mentioned, sizes)
        if not terms:
            return np.zeros(shape), np.zeros(shape)
        order = [(plain_groups + value_groups).index(c) for c in query.group_by]
        if len(mentioned) == 1 and not plain_groups and all(
                isinstance(rest, Const) for rest, _ in terms):
            # Values alone: their published counts (Theorem 2), whose variance is at most the
            # binomial f (1 - 1/gamma) of their union (Section 4).
            chosen = np.logical_or.reduce([combos for _, combos in terms])
            counts = np.where(chosen, self._cube.histogram(mentioned), 0.0)
            if not value_groups:
                counts = np.asarray(counts.sum())
            return counts, np.sqrt(np.maximum(counts, 0.0) * (1 - 1 / self.gamma))
        if len(terms) == 1 and not query.group_by:
            single.setdefault(tuple(mentioned), []).append((index, *terms[0]))
            return None
        model = self.value_model(mentioned)
        domain_shape = tuple(sizes[c] for c in mentioned)
        weights = [_term_weights(combos, mentioned, value_groups, domain_shape)
                   for _, combos in terms]

        def unmixed(predicate: Predicate) -> np.ndarray:
            counts = count_histogram(self._cube, predicate, plain_groups + mentioned)
            return model.unmix(np.asarray(counts, dtype=np.float64).reshape(-1, *domain_shape))

        estimates = [unmixed(rest) for rest, _ in terms]
        values = sum(x.reshape(len(x), -1) @ a.reshape(len(a), -1).T
                     for x, a in zip(estimates, weights, strict=True))
        group_shape = tuple(sizes[c] for c in plain_groups + value_groups)
        values = np.transpose(np.asarray(values).reshape(group_shape), order)
        if not model.identifiable or len(terms) > MAX_COVARIED_TERMS:
            return values, np.full(shape, np.nan)
        overlaps = {(t, t): np.maximum(x, 0.0) for t, x in enumerate(estimates)}
        for t in range(len(terms)):
            for u in range(t + 1, len(terms)):
                both = simplify(AllOf((terms[t][0], terms[u][0])))
                overlaps[(t, u)] = np.maximum(unmixed(both), 0.0)
        everything = np.maximum(model.unmix(self._cube.histogram(mentioned)), 0.0)
        variance = estimate_variance(model, weights, overlaps, everything)
        return values, np.sqrt(np.transpose(variance.reshape(group_shape), order))

    def _estimate_single_terms(self, mentioned: tuple[str, ...],
                               batch: Sequence[tuple[int, Predicate, np.ndarray]],
                               answers: list[tuple[np.ndarray, np.ndarray | None] | None]
                               ) -> None:
        """Queries ``rest AND (sensitive values in combos)``, all at once, into ``answers``."""
        model = self.value_model(mentioned)
        sizes = self.schema.sizes()
        domain_shape = tuple(sizes[c] for c in mentioned)
        counts = np.stack([np.asarray(count_histogram(self._cube, rest, mentioned), np.float64)
                           for _, rest, _ in batch])
        weights = np.stack([np.broadcast_to(combos, domain_shape) for _, _, combos in batch]
                           ).astype(np.float64)[:, None]                      # (Q, 1, *D)
        estimates = model.unmix(counts)
        values = (estimates[:, None] * weights).reshape(len(batch), -1).sum(axis=1)
        if model.identifiable:
            everything = np.maximum(model.unmix(self._cube.histogram(mentioned)), 0.0)
            variance = estimate_variance(model, [weights],
                                         {(0, 0): np.maximum(estimates, 0.0)}, everything)
            stderr = np.sqrt(variance[:, 0])
        else:
            stderr = np.full(len(batch), np.nan)
        for k, (index, _, _) in enumerate(batch):
            answers[index] = (np.asarray(values[k]), np.asarray(stderr[k]))

    def _estimate_two_state(self, queries: Sequence[BoundQuery]
                            ) -> tuple[list[tuple[np.ndarray, np.ndarray | None]],
                                       list[np.ndarray]]:
        """Every query by Section 5's reconstruction: its estimates and standard errors, and
        per query the cells (its GROUP BY domains) whose reconstruction did not converge."""
        sizes = self.schema.sizes()
        sensitive = self.schema.sensitive
        problems: dict[int, _Problems] = {}
        outputs: list[tuple[np.ndarray, np.ndarray | None]] = []
        unsettled: list[np.ndarray] = []
        for index, query in enumerate(queries):
            shape = tuple(sizes[c] for c in query.group_by)
            unsettled.append(np.zeros(shape, dtype=bool))
            mentioned = [c for c in sensitive if c in query.columns]
            if not mentioned:
                outputs.append(self._exact(query))
                continue
            outputs.append((np.zeros(shape), np.zeros(shape)))
            plain_groups = [c for c in query.group_by if c not in sensitive]
            totals = self._cube.histogram(mentioned)
            for rest, combos in split(query.predicate, mentioned, sizes):
                counts = count_histogram(self._cube, rest, plain_groups + mentioned)
                observed = observed_states(counts, totals, len(plain_groups))
                selected = np.nonzero(np.broadcast_to(combos, counts.shape))
                axes = [selected[plain_groups.index(c)] if c in plain_groups
                        else selected[len(plain_groups) + mentioned.index(c)]
                        for c in query.group_by]
                cells = (np.ravel_multi_index(axes, shape) if axes
                         else np.zeros(len(selected[0]), dtype=np.int64))
                # A value alone (no other condition): the variances of several values add up
                # to at most the binomial bound of their union (Section 4).
                summable = (isinstance(rest, Const) and len(mentioned) == 1
                            and not plain_groups)
                problems.setdefault(len(mentioned), _Problems()).add(
                    observed[selected], index, cells, summable)
        for width, batch in problems.items():
            self._solve(width, batch, outputs, unsettled)
        return outputs, unsettled

    def _solve(self, width: int, batch: _Problems,
               outputs: list[tuple[np.ndarray, np.ndarray | None]],
               unsettled: list[np.ndarray]) -> None:
        """Reconstruct one width's problems at once into ``outputs``, marking in
        ``unsettled`` the cells where any of their terms did not converge."""
        observed = np.concatenate(batch.observed)
        query_of = np.concatenate(batch.query)
        cell_of = np.concatenate(batch.cell)
        summable = np.concatenate(batch.summable)
        model = _DecoyModel(self.gamma, self.n_rows, width)
        result = iterative_bayesian(observed, lambda x, rows: model.transition(x),
                                    tolerance=self.tolerance,
                                    max_iterations=self.max_iterations,
                                    feasible=model.feasible)
        counts = result.counts
        last = counts.shape[1] - 1
        variance = delta_method_variance(model.jacobian(counts), model.covariance(counts), last)
        for query in np.unique(query_of):
            rows = query_of == query
            values, stderr = outputs[query]
            size = values.size
            cells = cell_of[rows]
            flat_values = values.reshape(-1)
            flat_values += np.bincount(cells, weights=counts[rows, last], minlength=size)
            terms = np.bincount(cells, minlength=size)
            total_variance = np.bincount(cells, weights=variance[rows], minlength=size)
            all_summable = np.bincount(cells, weights=~summable[rows], minlength=size) == 0
            known = (terms <= 1) | all_summable
            assert stderr is not None
            flat_stderr = stderr.reshape(-1)
            flat_stderr[:] = np.where(known, np.sqrt(total_variance), np.nan)
            stopped = np.bincount(cells, weights=~result.converged[rows], minlength=size) > 0
            unsettled[query].reshape(-1)[:] |= stopped


def _warn_unsettled(unsettled: Sequence[np.ndarray], max_iterations: int, *,
                    stacklevel: int) -> None:
    """Warn (ConvergenceWarning) when any query's reconstruction did not converge: silently
    returning the last iterate would pass it off as Eq. 13's fixed point. ``stacklevel``
    counts from the function that calls this one (2: its caller)."""
    stopped = sum(bool(cells.any()) for cells in unsettled)
    if stopped:
        warnings.warn(
            f"SPLU-Gen's Section 5 reconstruction did not converge within max_iterations = "
            f"{max_iterations} for {stopped} of {len(unsettled)} queries; their answers are the "
            f"last iterate (count() flags them converged=False); raise release.max_iterations "
            f"or release.tolerance", ConvergenceWarning, stacklevel=stacklevel + 1)


def _term_weights(combos: np.ndarray, mentioned: Sequence[str], value_groups: Sequence[str],
                  domain_shape: tuple[int, ...]) -> np.ndarray:
    """a_t of one term: per output cell (the GROUP BY keys on sensitive columns), the weight of
    every combination of sensitive values; shape (O, *D)."""
    weights = np.broadcast_to(combos, domain_shape).astype(np.float64)
    weights = weights.reshape((1,) * len(value_groups) + domain_shape)
    for i, column in enumerate(value_groups):
        j = mentioned.index(column)
        view = [1] * (len(value_groups) + len(domain_shape))
        view[i] = view[len(value_groups) + j] = domain_shape[j]
        eye = np.eye(domain_shape[j]).reshape([domain_shape[j] if k in (i, len(value_groups) + j)
                                               else 1 for k in range(len(view))])
        weights = weights * eye
    return weights.reshape(-1, *domain_shape)


MAX_COVARIED_TERMS = 16
"""Most terms (distinct conditions on the other columns) whose covariances are computed."""


@dataclass
class _Problems:
    """Reconstruction problems of one width w, gathered across queries."""

    observed: list[np.ndarray] = field(default_factory=list)
    query: list[np.ndarray] = field(default_factory=list)
    cell: list[np.ndarray] = field(default_factory=list)
    summable: list[np.ndarray] = field(default_factory=list)

    def add(self, observed: np.ndarray, query: int, cells: np.ndarray, summable: bool) -> None:
        self.observed.append(observed)
        self.query.append(np.full(len(observed), query))
        self.cell.append(cells)
        self.summable.append(np.full(len(observed), summable))


def observed_states(counts: np.ndarray, totals: np.ndarray, n_group_axes: int) -> np.ndarray:
    """Observed counts y of the 2^(w+1) states (Definition 5), for every cell.

    ``counts[g..., u_1..u_w]``: published rows satisfying P (per group key g) with published
    sensitive values u; ``totals[u_1..u_w]``: all published rows. Returns an array of shape
    ``counts.shape + (2^(w+1),)`` whose last axis, at cell (g, v), is y over the states
    (P bit, [u_1 = v_1], .., [u_w = v_w]) in the order of M_0 (x) M_1 (x) .. (x) M_w.
    By inclusion-exclusion over the marginals of ``counts`` and ``totals``.
    """
    width = totals.ndim
    totals = totals.reshape((1,) * n_group_axes + totals.shape)
    matching: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for subset in range(1 << width):
        # Rows whose published values equal v on the attributes in `subset` (bit w-1-i is
        # attribute i, so that state indices follow the Kronecker order).
        free = tuple(n_group_axes + i for i in range(width) if not subset >> (width - 1 - i) & 1)
        inside = np.broadcast_to(counts.sum(axis=free, keepdims=True), counts.shape)
        everywhere = np.broadcast_to(totals.sum(axis=free, keepdims=True), counts.shape)
        matching[subset] = (inside, everywhere - inside)
    states = np.zeros((*counts.shape, 2 << width))
    for bits in range(1 << width):
        for superset in range(1 << width):
            if superset & bits != bits:
                continue
            sign = -1.0 if bin(superset ^ bits).count("1") % 2 else 1.0
            inside, outside = matching[superset]
            states[..., (1 << width) | bits] += sign * inside
            states[..., bits] += sign * outside
    return states


class _DecoyModel:
    """The transition model of SPLU-Gen for w sensitive attributes (Section 5.2)."""

    def __init__(self, gamma: int, n_rows: int, width: int) -> None:
        self.gamma = gamma
        self.n_rows = n_rows
        self.width = width
        letters = string.ascii_lowercase
        bits, rows, cols = letters[:width + 1], letters[8:9 + width], letters[17:18 + width]
        factors = ",".join(f"z{rows[t]}{cols[t]}" for t in range(width + 1))
        self._kron = f"{factors}->z{rows}{cols}"
        mixed = ",".join(f"z{bits[t]}{rows[t]}{cols[t]}" for t in range(width + 1))
        self._second_moment = f"z{bits},{mixed}->z{rows}{cols}"

    def _raw_frequencies(self, x: np.ndarray) -> list[np.ndarray]:
        shaped = x.reshape((len(x),) + (2,) * (self.width + 1))
        return [shaped.take(1, axis=2 + i).reshape(len(x), -1).sum(axis=1)
                for i in range(self.width)]

    def _frequencies(self, x: np.ndarray) -> list[np.ndarray]:
        return [np.clip(f, 0.0, self.n_rows / self.gamma) for f in self._raw_frequencies(x)]

    def feasible(self, x: np.ndarray) -> np.ndarray:
        """Counts the model describes: every value fits its decoy groups (f_i < N/gamma; at
        N/gamma the value is in every group and the two rows of M_i coincide)."""
        limit = self.n_rows / self.gamma
        return np.all([f < limit for f in self._raw_frequencies(x)], axis=0)

    def _decoy_rate(self, f: np.ndarray) -> np.ndarray:
        """Probability that a row without value s publishes s: f_s (gamma-1)/(gamma (N-f_s))."""
        gamma = self.gamma
        return f * (gamma - 1) / (gamma * np.maximum(self.n_rows - f, 1e-12))

    def _kronecker(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        k = 2 << self.width
        return np.einsum(self._kron, *factors).reshape(-1, k, k)

    def _factors(self, x: np.ndarray) -> list[np.ndarray]:
        rows = len(x)
        identity = np.broadcast_to(np.eye(2), (rows, 2, 2))
        return [identity] + [self._attribute_matrix(self._decoy_rate(f))
                             for f in self._frequencies(x)]

    def _attribute_matrix(self, rate: np.ndarray) -> np.ndarray:
        # M_i of Section 5.2, rows: true value is not s / is s; columns: published not s / s.
        matrix = np.empty((len(rate), 2, 2))
        matrix[:, 0, 0] = 1.0 - rate
        matrix[:, 0, 1] = rate
        matrix[:, 1, 0] = 1.0 - 1.0 / self.gamma
        matrix[:, 1, 1] = 1.0 / self.gamma
        return matrix

    def transition(self, x: np.ndarray) -> np.ndarray:
        return self._kronecker(self._factors(x))

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """d/dx of g(x) = M(x)^T x, including M's dependence on the frequencies f_i(x)."""
        factors = self._factors(x)
        jacobian = np.swapaxes(self._kronecker(factors), 1, 2).copy()
        gamma, n_rows = self.gamma, self.n_rows
        states = np.arange(2 << self.width)
        for i, f in enumerate(self._frequencies(x)):
            slope = (gamma - 1) * n_rows / (gamma * np.maximum(n_rows - f, 1e-12) ** 2)
            derivative = np.zeros((len(x), 2, 2))
            derivative[:, 0, 0] = -slope
            derivative[:, 0, 1] = slope
            varied = factors.copy()
            varied[1 + i] = derivative
            direction = np.einsum("rkj,rk->rj", self._kronecker(varied), x)
            has_value = (states >> (self.width - 1 - i)) & 1
            jacobian += direction[:, :, None] * has_value[None, None, :]
        return jacobian

    def covariance(self, x: np.ndarray) -> np.ndarray:
        """Covariance of the observed state counts given true counts x.

        Rows are independent; a row's published state has mean M[k] for its true state k.
        Whether a row without value s sits in one of the f_s groups holding s is fixed by the
        (hidden) partition; averaging over it, that row publishes s with probability 1/gamma
        with chance pi = f_s (gamma-1)/(N - f_s) and never otherwise. Hence
        Cov(y) = diag(M^T x) - sum_k x_k E[m_k m_k^T] with E[m m^T] a Kronecker product of
        per-attribute second moments.
        """
        rows = len(x)
        gamma = self.gamma
        keep = np.array([1.0 - 1.0 / gamma, 1.0 / gamma])
        never = np.array([1.0, 0.0])
        retained = np.outer(keep, keep)
        moments = [np.broadcast_to(np.stack([np.diag([1.0, 0.0]), np.diag([0.0, 1.0])]),
                                   (rows, 2, 2, 2))]
        for f in self._frequencies(x):
            chance = np.clip(gamma * self._decoy_rate(f), 0.0, 1.0)
            other = chance[:, None, None] * retained + (1 - chance)[:, None, None] * np.outer(
                never, never)
            moments.append(np.stack([other, np.broadcast_to(retained, (rows, 2, 2))], axis=1))
        shaped = x.reshape((rows,) + (2,) * (self.width + 1))
        k = 2 << self.width
        second = np.einsum(self._second_moment, shaped, *moments).reshape(rows, k, k)
        mean = np.einsum("rk,rkj->rj", x, self.transition(x))
        return np.einsum("rj,jk->rjk", mean, np.eye(k)) - second
