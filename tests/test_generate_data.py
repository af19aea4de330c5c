"""Tests of the benchmark data generator benchmarks/generate_data.py."""

from __future__ import annotations

import argparse
import importlib.util
import math
from importlib import resources
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "generate_data.py"
ROWS = 10_000
# 10^4 rows in one chunk, and in four chunks (the last one shorter).
CHUNK_SIZES = (ROWS, 3_000)
SEED = 20240607
# Every cell below is checked against its binomial standard deviation. The seed is fixed, so
# the outcome is deterministic; 5 sigma keeps the chance that a correct sampler fails for a
# given seed below 10^-4 over the ~130 cells checked (Bonferroni), while a wrong conditional
# table shifts the cells by far more at 10^4 rows.
SIGMAS = 5.0


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate_data = _load_script()


def _adult() -> pa.Table:
    with resources.as_file(resources.files("ppdp.datasets") / "adult.parquet") as path:
        return pq.read_table(path)


def _write(tmp_path: Path, kind: str, chunk_rows: int, seed: int = SEED,
           name: str | None = None) -> Path:
    out = tmp_path / (name or f"{kind}-{chunk_rows}.parquet")
    generate_data.main(["--kind", kind, "--rows", "10**4", "--seed", str(seed),
                        "--out", str(out), "--chunk-rows", str(chunk_rows),
                        "--row-group-rows", "4096"])
    return out


@pytest.mark.parametrize("text", ["100000000", "100_000_000", "1e8", "10**8", "1.0E8"])
def test_parse_count_accepts_the_usual_spellings(text: str) -> None:
    assert generate_data.parse_count(text) == 10**8


@pytest.mark.parametrize("text", ["1.5", "-1", "1e-3", "ten", "2**", "10**-1", "10**99999999",
                                  "inf", "nan"])
def test_parse_count_rejects_the_rest(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        generate_data.parse_count(text)


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_adult_resample(tmp_path: Path, chunk_rows: int,
                        capsys: pytest.CaptureFixture[str]) -> None:
    out = _write(tmp_path, "adult", chunk_rows)
    assert f"wrote {ROWS:,} rows" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary left
    adult = _adult()
    metadata = pq.ParquetFile(out).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [
        4096, 4096, 1808]
    table = pq.read_table(out)
    assert table.num_rows == ROWS
    assert table.schema.equals(adult.schema, check_metadata=False)
    for name in adult.column_names:
        assert pc.all(pc.is_in(table[name], value_set=adult[name].unique())).as_py(), name


@pytest.mark.parametrize("kind", generate_data.KINDS)
@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_same_seed_and_chunk_size_give_the_same_table(tmp_path: Path, kind: str,
                                                      chunk_rows: int) -> None:
    first = pq.read_table(_write(tmp_path, kind, chunk_rows, name="first.parquet"))
    second = pq.read_table(_write(tmp_path, kind, chunk_rows, name="second.parquet"))
    other_seed = pq.read_table(_write(tmp_path, kind, chunk_rows, seed=SEED + 1,
                                      name="other.parquet"))
    assert first.equals(second)
    assert not first.equals(other_seed)


def _check_cells(table: pa.Table, columns: tuple[str, str],
                 values: tuple[tuple[str, ...], tuple[str, ...]],
                 probabilities: np.ndarray) -> None:
    """Observed counts of every pair of values against n p, within SIGMAS binomial sds."""
    counts = table.group_by(list(columns)).aggregate([([], "count_all")]).to_pylist()
    observed = {(row[columns[0]], row[columns[1]]): row["count_all"] for row in counts}
    assert set(observed) <= {(a, b) for a in values[0] for b in values[1]}
    n = table.num_rows
    for i, a in enumerate(values[0]):
        for j, b in enumerate(values[1]):
            p = probabilities[i, j]
            expected, sd = n * p, math.sqrt(n * p * (1 - p))
            assert abs(observed.get((a, b), 0) - expected) <= SIGMAS * sd, (columns, a, b)


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_correlated_follows_its_model(tmp_path: Path, chunk_rows: int) -> None:
    g = generate_data
    table = pq.read_table(_write(tmp_path, "correlated", chunk_rows))
    assert table.num_rows == ROWS
    assert table.column_names == ["age_group", "sex", "region", "education", "disease"]
    assert all(pa.types.is_string(t) for t in table.schema.types)
    joint, education = g.correlated_joint()  # (region, age, sex, disease), (age, education)
    assert math.isclose(joint.sum(), 1.0)
    _check_cells(table, ("age_group", "disease"), (g.AGE_GROUPS, g.DISEASES),
                 joint.sum(axis=(0, 2)))
    _check_cells(table, ("sex", "disease"), (g.SEXES, g.DISEASES), joint.sum(axis=(0, 1)))
    _check_cells(table, ("region", "disease"), (g.REGIONS, g.DISEASES), joint.sum(axis=(1, 2)))
    _check_cells(table, ("region", "age_group"), (g.REGIONS, g.AGE_GROUPS),
                 joint.sum(axis=(2, 3)))
    _check_cells(table, ("age_group", "education"), (g.AGE_GROUPS, g.EDUCATIONS),
                 joint.sum(axis=(0, 2, 3))[:, None] * education)

    # The promised dependence itself: heart disease is far more frequent at 70+ than at
    # 18-29, by more than SIGMAS standard errors of the difference under independence.
    def heart_rate(age_group: str) -> tuple[float, int]:
        rows = table.filter(pc.equal(table["age_group"], age_group))
        return pc.sum(pc.equal(rows["disease"], "heart-disease")).as_py() / len(rows), len(rows)

    (old, n_old), (young, n_young) = heart_rate("70+"), heart_rate("18-29")
    pooled = (old * n_old + young * n_young) / (n_old + n_young)
    standard_error = math.sqrt(pooled * (1 - pooled) * (1 / n_old + 1 / n_young))
    assert old - young > SIGMAS * standard_error


def test_failed_write_leaves_no_file(tmp_path: Path) -> None:
    target = tmp_path / "taken.parquet"
    target.mkdir()  # the final rename onto a directory fails after the data are written
    with pytest.raises(OSError):
        generate_data.generate(target, 100, kind="correlated")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.parquet"]
    assert not any(target.iterdir())
