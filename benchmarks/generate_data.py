"""Seeded benchmark tables of up to 10^9 rows, written to Parquet chunk by chunk.

    python benchmarks/generate_data.py --rows 1e8 --out adult-1e8.parquet
                                       [--kind adult|correlated] [--seed 0]
                                       [--chunk-rows 2**20] [--row-group-rows 2**20]

Only one chunk (plus at most one row group waiting to be written) is held in memory, so the
peak memory does not grow with N. The table goes to a temporary file beside the target, which
is renamed to the target once complete: a reader never sees a partial file. Progress (rows
written, rate) goes to stderr every few seconds, then the total time, file size and peak RSS.
Numbers accept ``100000000``, ``100_000_000``, ``1e8`` and ``10**8``.

Kinds:

``adult`` (default)
    A resample with replacement of the bundled UCI Adult table (30,162 rows): every row is an
    Adult row drawn uniformly. The columns and their types are those of the bundled file
    (eight strings and the int64 ``age``).

``correlated``
    A synthetic table of five string columns, ``age_group``, ``sex``, ``region``,
    ``education`` and ``disease``, drawn from a fixed model (the tables are the constants
    below; `correlated_joint` gives the exact distribution)::

        region     ~ REGION_P                          North South East West Central
        age_group  | region      ~ AGE_P[region]       18-29 30-39 40-49 50-59 60-69 70+
        sex        | age_group   ~ FEMALE_P[age_group]
        education  | age_group   ~ EDUCATION_P[age_group]
        disease    | age_group, sex, region ~ softmax(score)

    ``AGE_P[r][a]`` is proportional to ``AGE_BASE[a] * exp(AGE_TILT[r] * (a - 2.5) / 2.5)``, so
    some regions are older than others. The disease score of ``none`` is 0 and that of any
    other disease ``d`` is ``DISEASE_ALPHA[d] + DISEASE_AGE[d] * a + DISEASE_FEMALE[d] * f +
    DISEASE_REGION[r][d]``, with ``a`` the age group's index (0..5) and ``f`` 1 for women. So
    flu and asthma fall slowly with age; the odds of diabetes, heart disease and cancer against
    ``none`` grow by e^0.45 to e^0.55 per age group (P(heart-disease) is about 1 % at 18-29 and
    11 % at 70+, and lower for women); and the regions raise or lower single diseases (the
    South has about twice the diabetes of the North). Education depends only on the age group
    and is independent of disease given the age group. Every column depends on every other one
    through the age group.

Reproducibility: chunk ``i`` (``--chunk-rows`` rows, the last one shorter) is drawn with its own
generator ``numpy.random.default_rng([seed, i])``, so the content depends on the seed, N and
the chunk size, not on the row group size; the same (seed, N, --chunk-rows) gives the same
table (with the same numpy release: numpy does not promise its Generator streams across
releases). A different ``--chunk-rows`` gives a different, equally distributed, table.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Iterator, Sequence
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import NamedTuple, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

KINDS = ("adult", "correlated")
DEFAULT_CHUNK_ROWS = 2**20
DEFAULT_ROW_GROUP_ROWS = 2**20
PROGRESS_SECONDS = 5.0

# The correlated model (see the module docstring).
REGIONS = ("North", "South", "East", "West", "Central")
AGE_GROUPS = ("18-29", "30-39", "40-49", "50-59", "60-69", "70+")
SEXES = ("Male", "Female")
EDUCATIONS = ("Primary", "Secondary", "Tertiary")
DISEASES = ("none", "flu", "asthma", "diabetes", "heart-disease", "cancer")

REGION_P = (0.25, 0.20, 0.20, 0.20, 0.15)
AGE_BASE = (0.21, 0.18, 0.17, 0.17, 0.15, 0.12)
AGE_TILT = (0.0, 0.4, -0.3, 0.1, 0.6)
FEMALE_P = (0.49, 0.50, 0.50, 0.51, 0.53, 0.58)
EDUCATION_P = ((0.10, 0.50, 0.40), (0.12, 0.48, 0.40), (0.15, 0.50, 0.35),
               (0.20, 0.50, 0.30), (0.28, 0.48, 0.24), (0.38, 0.44, 0.18))
# Per disease other than "none" (flu, asthma, diabetes, heart-disease, cancer).
DISEASE_ALPHA = (-2.2, -2.8, -3.6, -4.2, -4.4)
DISEASE_AGE = (-0.05, -0.10, 0.45, 0.55, 0.45)
DISEASE_FEMALE = (0.10, 0.20, -0.10, -0.60, -0.10)
DISEASE_REGION = ((0.4, 0.0, -0.2, 0.0, 0.0), (0.0, 0.0, 0.5, 0.4, 0.0),
                  (0.0, 0.4, 0.0, 0.0, 0.0), (-0.2, 0.0, 0.0, -0.2, 0.3),
                  (0.0, -0.3, 0.3, 0.0, 0.0))


class Result(NamedTuple):
    """What `generate` wrote: rows, wall seconds and the size of the file in bytes."""

    rows: int
    seconds: float
    bytes: int


def parse_count(text: str) -> int:
    """A non-negative integer written as ``100000000``, ``100_000_000``, ``1e8`` or ``10**8``.

    Raises ``argparse.ArgumentTypeError`` for anything else (no expression is evaluated).
    """
    cleaned = text.strip().replace("_", "").replace(",", "")
    try:
        if "**" in cleaned:
            base, exponent = cleaned.split("**")
            value = Decimal(int(base)) ** int(exponent)
        else:
            # Decimal, not float: 1.000000001e9 must not round to another integer.
            value = Decimal(cleaned)
    except (ValueError, ArithmeticError):  # decimal's InvalidOperation, Overflow
        raise argparse.ArgumentTypeError(f"not a row count: {text!r}") from None
    if not value.is_finite() or value != value.to_integral_value() or value < 0:
        raise argparse.ArgumentTypeError(f"not a non-negative integer: {text!r}")
    return int(value)


def _positive_count(text: str) -> int:
    """`parse_count` for counts that must be at least 1 (chunk and row group sizes)."""
    value = parse_count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def adult_source() -> pa.Table:
    """The bundled Adult table as Arrow, its string columns dictionary-encoded.

    Taking rows of dictionary-encoded columns moves int32 indices instead of strings, and the
    Parquet writer stores dictionary arrays without hashing every value again; both are several
    times faster than on plain strings. The file still reads back as plain strings (see
    `generate`).
    """
    with resources.as_file(resources.files("ppdp.datasets") / "adult.parquet") as path:
        table = pq.read_table(path).combine_chunks()
    columns = [column.dictionary_encode() if pa.types.is_string(column.type) else column
               for column in table.columns]
    return pa.table(columns, names=table.column_names).combine_chunks()


def _thresholds(probabilities: np.ndarray) -> np.ndarray:
    """The inner cumulative sums of each row of a (conditions, values) probability table.

    Row c holds ``p[c, 0]``, ``p[c, 0] + p[c, 1]``, ... without the final 1: a uniform draw
    ``u`` gives the value with code ``#{j : u >= thresholds[c, j]}`` (see `_draw`).
    """
    cumulative = np.cumsum(probabilities / probabilities.sum(axis=1, keepdims=True), axis=1)
    return np.ascontiguousarray(cumulative[:, :-1])


def _draw(rng: np.random.Generator, thresholds: np.ndarray, condition: np.ndarray | int,
          size: int) -> np.ndarray:
    """Value codes drawn from row ``condition`` (per row, or one for all) of `_thresholds`."""
    uniform = rng.random(size)
    codes = np.zeros(size, dtype=np.int8)
    # One gather and comparison per value: with six values at most this is faster than a
    # binary search per row (np.searchsorted on per-condition offsets).
    for column in thresholds.T:
        codes += uniform >= column[condition]
    return codes


def _age_given_region() -> np.ndarray:
    """P(age group | region), shape (regions, age groups)."""
    steps = (np.arange(len(AGE_GROUPS)) - 2.5) / 2.5
    weights = np.asarray(AGE_BASE) * np.exp(np.outer(AGE_TILT, steps))
    return weights / weights.sum(axis=1, keepdims=True)


def _disease_given() -> np.ndarray:
    """P(disease | age group, sex, region), shape (ages, sexes, regions, diseases)."""
    age = np.arange(len(AGE_GROUPS))[:, None, None, None]
    female = np.arange(len(SEXES))[None, :, None, None]
    region = np.asarray(DISEASE_REGION)[None, None, :, :]
    scores = (np.asarray(DISEASE_ALPHA) + np.asarray(DISEASE_AGE) * age
              + np.asarray(DISEASE_FEMALE) * female + region)
    # "none" scores 0; softmax over the six diseases.
    weights = np.concatenate([np.ones((*scores.shape[:3], 1)), np.exp(scores)], axis=3)
    return weights / weights.sum(axis=3, keepdims=True)


def correlated_joint() -> tuple[np.ndarray, np.ndarray]:
    """The exact distribution of the ``correlated`` kind.

    Returns P(region, age_group, sex, disease), shape (5, 6, 2, 6) in the order of REGIONS,
    AGE_GROUPS, SEXES, DISEASES, and P(education | age_group), shape (6, 3).
    """
    region = np.asarray(REGION_P) / np.sum(REGION_P)
    age = _age_given_region()
    female = np.asarray(FEMALE_P)
    sex = np.stack([1 - female, female], axis=1)
    disease = _disease_given().transpose(2, 0, 1, 3)  # (regions, ages, sexes, diseases)
    joint = region[:, None, None, None] * age[:, :, None, None] * sex[None, :, :, None] * disease
    education = np.asarray(EDUCATION_P)
    return joint, education / education.sum(axis=1, keepdims=True)


def _dictionary_column(codes: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    """Value codes as an Arrow dictionary array over ``values``."""
    return pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int8()), values)


def _correlated_chunks(rows: int, seed: int, chunk_rows: int) -> Iterator[pa.Table]:
    """The ``correlated`` table, chunk by chunk, each column drawn given its parents."""
    region_thresholds = _thresholds(np.asarray([REGION_P]))
    age_thresholds = _thresholds(_age_given_region())
    sex_thresholds = _thresholds(np.stack([1 - np.asarray(FEMALE_P), FEMALE_P], axis=1))
    education_thresholds = _thresholds(np.asarray(EDUCATION_P))
    disease_thresholds = _thresholds(_disease_given().reshape(-1, len(DISEASES)))
    dictionaries = [pa.array(names) for names in (AGE_GROUPS, SEXES, REGIONS, EDUCATIONS,
                                                   DISEASES)]
    for index, size in _chunk_sizes(rows, chunk_rows):
        rng = np.random.default_rng([seed, index])
        region = _draw(rng, region_thresholds, 0, size)
        age = _draw(rng, age_thresholds, region, size)
        sex = _draw(rng, sex_thresholds, age, size)
        education = _draw(rng, education_thresholds, age, size)
        # The row index of (age, sex, region) in the flattened (6, 2, 5, 6) disease table.
        cell = (age.astype(np.int64) * len(SEXES) + sex) * len(REGIONS) + region
        disease = _draw(rng, disease_thresholds, cell, size)
        columns = [_dictionary_column(codes, values) for codes, values
                   in zip((age, sex, region, education, disease), dictionaries, strict=True)]
        yield pa.table(columns, schema=_correlated_schema())


def _correlated_schema() -> pa.Schema:
    """The in-memory schema of the ``correlated`` chunks (strings read back from the file)."""
    return pa.schema([(name, pa.dictionary(pa.int8(), pa.string()))
                      for name in ("age_group", "sex", "region", "education", "disease")])


def _adult_chunks(source: pa.Table, rows: int, seed: int,
                  chunk_rows: int) -> Iterator[pa.Table]:
    """The ``adult`` resample, chunk by chunk: rows of ``source`` drawn uniformly."""
    for index, size in _chunk_sizes(rows, chunk_rows):
        rng = np.random.default_rng([seed, index])
        yield source.take(rng.integers(0, source.num_rows, size=size))


def _chunk_sizes(rows: int, chunk_rows: int) -> Iterator[tuple[int, int]]:
    """(index, size) of each chunk: ``chunk_rows`` rows each, the last one what is left."""
    for index in range(-(-rows // chunk_rows)):
        yield index, min(chunk_rows, rows - index * chunk_rows)


class _RowGroupWriter:
    """Writes tables to a ParquetWriter in row groups of exactly ``row_group_rows`` rows.

    Each ``write_table`` call ends a row group, so chunks smaller than a row group are kept
    (zero-copy) until a full group is there; only the last group is shorter.
    """

    def __init__(self, writer: pq.ParquetWriter, row_group_rows: int) -> None:
        self.writer = writer
        self.row_group_rows = row_group_rows
        self.pending: list[pa.Table] = []
        self.pending_rows = 0

    def write(self, table: pa.Table) -> None:
        """Add ``table``'s rows; write every full row group now pending."""
        self.pending.append(table)
        self.pending_rows += table.num_rows
        if self.pending_rows >= self.row_group_rows:
            ready = self.pending_rows - self.pending_rows % self.row_group_rows
            combined = pa.concat_tables(self.pending)
            self.writer.write_table(combined.slice(0, ready), row_group_size=self.row_group_rows)
            rest = combined.slice(ready)
            self.pending, self.pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> None:
        """Write the rows still pending as the last (shorter) row group."""
        if self.pending_rows:
            self.writer.write_table(pa.concat_tables(self.pending),
                                    row_group_size=self.row_group_rows)
        self.pending, self.pending_rows = [], 0


def peak_rss_bytes() -> int:
    """The peak resident set size of this process so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def generate(out: Path, rows: int, *, kind: str = "adult", seed: int = 0,
             chunk_rows: int = DEFAULT_CHUNK_ROWS, row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
             progress: TextIO | None = None) -> Result:
    """Write a seeded ``rows``-row table of the given kind to ``out`` (Parquet, zstd).

    The file appears at ``out`` only when complete (temporary file beside it, then renamed);
    on any error the temporary file is removed. Progress lines, then a summary, go to
    ``progress`` (the command line gives stderr) every PROGRESS_SECONDS; None is silent.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; known kinds: {', '.join(KINDS)}")
    if rows < 0 or chunk_rows < 1 or row_group_rows < 1:
        raise ValueError("rows must be >= 0, chunk_rows and row_group_rows >= 1")
    if kind == "adult":
        source = adult_source()
        schema, chunks = source.schema, _adult_chunks(source, rows, seed, chunk_rows)
    else:
        schema, chunks = _correlated_schema(), _correlated_chunks(rows, seed, chunk_rows)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Beside the target, so the final rename stays on one file system and is atomic.
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    start = last_report = time.perf_counter()
    written = 0
    try:
        # store_schema=False: the columns are dictionary arrays for speed, and without the
        # stored Arrow schema they read back as the plain strings they stand for.
        with pq.ParquetWriter(temporary, schema, compression="zstd",
                              store_schema=False) as writer:
            groups = _RowGroupWriter(writer, row_group_rows)
            for chunk in chunks:
                groups.write(chunk)
                written += chunk.num_rows
                now = time.perf_counter()
                if progress is not None and now - last_report >= PROGRESS_SECONDS:
                    last_report = now
                    print(f"{written:,} / {rows:,} rows ({100 * written / max(rows, 1):.1f} %), "
                          f"{written / (now - start):,.0f} rows/s", file=progress, flush=True)
            groups.close()
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())  # the data must be on disk before the name points at it
        os.replace(temporary, out)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    seconds = time.perf_counter() - start
    result = Result(rows=written, seconds=seconds, bytes=out.stat().st_size)
    if progress is not None:
        print(f"wrote {written:,} rows to {out} in {seconds:.1f} s "
              f"({written / max(seconds, 1e-9):,.0f} rows/s), {result.bytes / 2**20:,.1f} MiB, "
              f"peak RSS {peak_rss_bytes() / 2**20:,.0f} MiB", file=progress, flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line (``argv``, default sys.argv) and run `generate`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=KINDS, default="adult")
    parser.add_argument("--rows", type=parse_count, required=True,
                        help="number of rows N (1e8 and 10**8 are accepted)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="the Parquet file to write")
    parser.add_argument("--chunk-rows", type=_positive_count, default=DEFAULT_CHUNK_ROWS,
                        help="rows drawn at a time; the content depends on it (default 2**20)")
    parser.add_argument("--row-group-rows", type=_positive_count,
                        default=DEFAULT_ROW_GROUP_ROWS,
                        help="rows per Parquet row group (default 2**20)")
    args = parser.parse_args(argv)
    generate(args.out, args.rows, kind=args.kind, seed=args.seed, chunk_rows=args.chunk_rows,
             row_group_rows=args.row_group_rows, progress=sys.stderr)


if __name__ == "__main__":
    main()
