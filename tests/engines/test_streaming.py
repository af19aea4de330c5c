"""The streaming executor against the in-memory one: same key, same release files."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.plan.order
from ppdp.errors import MissingValuesError, ReleaseError
from ppdp.io.read import write_table
from ppdp.io.scan import scan_table
from ppdp.mechanisms import DBR, FRAPP, PerturbationPartitioning, UniformPerturbation
from ppdp.plan.keyed import KeyedStream, make_key
from ppdp.release.load import load_release
from ppdp.table.source import TableSource

MECHANISMS = {
    "uniform": lambda: UniformPerturbation(rho1=0.1, rho2=0.5),
    "sdr": lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2),
    "dbr": DBR,
    "frapp": lambda: FRAPP(k=0.01, gamma=0.2),
}


@pytest.fixture(scope="module")
def table():
    adult = ppdp.datasets.adult(sensitive="occupation")
    # FRAPP draws tuples from the product of all domains: keep it small and declared.
    return adult.select(["age", "sex", "race", "salary-class", "workclass", "occupation"])


class ShuffledBatches:
    """A source that hands out its batches in a random order (ids unchanged)."""

    def __init__(self, source, seed):
        self.source, self.seed = source, seed
        self.schema, self.n_rows, self.name = source.schema, source.n_rows, source.name

    def histogram(self, columns):
        return self.source.histogram(columns)

    def batches(self, batch_rows=1 << 20, columns=None):
        batches = list(self.source.batches(batch_rows, columns))
        order = np.random.default_rng(self.seed).permutation(len(batches))
        return iter([batches[i] for i in order])


def release_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_same_key_same_files_whatever_the_batches(name, table, tmp_path, monkeypatch):
    # Small parts, so that a release of Adult is written in several.
    monkeypatch.setattr(ppdp.plan.order, "ROWS_PER_PART", 7_000)
    mechanism = MECHANISMS[name]()
    expected = release_files(mechanism.publish(table, random_state=11).save(tmp_path / "memory"))
    assert sum(f.startswith("rows-") for f in expected) == 5
    for batch_rows in (3_333, 10_000, 1_000_000):
        for source in (TableSource(table), ShuffledBatches(TableSource(table), batch_rows)):
            target = tmp_path / f"streamed-{batch_rows}-{type(source).__name__}"
            mechanism.publish_source(source, target, random_state=11, batch_rows=batch_rows)
            assert release_files(target) == expected, (batch_rows, type(source).__name__)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_file_read_in_batches_gives_the_release_of_the_table_read_whole(suffix, tmp_path):
    path = tmp_path / f"adult{suffix}"
    write_table(ppdp.datasets.adult().to_arrow(), path)
    mechanism = PerturbationPartitioning(rho1=0.077, rho2=0.2)
    whole = ppdp.read_table(path, sensitive="occupation", observed_domains=True)
    expected = release_files(mechanism.publish(whole, random_state=5).save(tmp_path / "a"))
    source = scan_table(path, sensitive="occupation", observed_domains=True, batch_rows=4_096)
    assert source.schema == whole.schema and source.n_rows == whole.n_rows
    mechanism.publish_source(source, tmp_path / "b", random_state=5, batch_rows=4_096)
    assert release_files(tmp_path / "b") == expected


def test_dropped_rows_and_values_only_in_them(tmp_path):
    """With missing="drop", ids count the kept rows, and a value found only in a dropped row
    is in no domain, as read_table has it."""
    path = tmp_path / "t.csv"
    path.write_text("a,s\n1,x\n2,?\n3,y\n?,z\n4,x\n5,y\n")
    whole = ppdp.read_table(path, sensitive="s", missing="drop", observed_domains=True)
    source = scan_table(path, sensitive="s", missing="drop", observed_domains=True,
                        batch_rows=2)
    assert source.schema == whole.schema and source.dropped_rows == whole.dropped_rows == 2
    rows = [(start, codes["a"].tolist()) for start, codes in source.batches(2)]
    assert [r for _, part in rows for r in part] == whole.codes["a"].tolist()
    assert [start for start, _ in rows] == [0, 1, 2]
    with pytest.raises(MissingValuesError, match="s \\(1\\)"):
        scan_table(path, sensitive="s")


@pytest.mark.parametrize("third", ["?", "b "])
def test_row_groups_with_their_own_dictionaries(third, tmp_path):
    """Each Parquet row group has its own dictionary (other values, another order, values
    to clean, and a missing one or not): scanned codes equal read_table's, whatever the batch
    size."""
    import pyarrow as pa

    groups = [["b", "a", "b", "c"], [" a", "c ", third, "a"], ["c", "c", "b", "a"], ["a"] * 4]
    path = tmp_path / "groups.parquet"
    schema = pa.schema([("s", pa.string()), ("n", pa.int64())])
    with pq.ParquetWriter(path, schema) as writer:
        for index, values in enumerate(groups):
            writer.write_table(pa.table({"s": values, "n": [index] * 4}, schema=schema))
    assert pq.ParquetFile(path).num_row_groups == 4
    whole = ppdp.read_table(path, sensitive="s", missing="drop", observed_domains=True)
    assert whole.dropped_rows == (third == "?")
    for batch_rows in (1, 3, 4, 100):
        source = scan_table(path, sensitive="s", missing="drop", observed_domains=True,
                            batch_rows=batch_rows)
        assert source.schema == whole.schema
        batches = list(source.batches(batch_rows))
        for name in ("s", "n"):
            codes = np.concatenate([codes[name] for _, codes in batches])
            assert codes.tolist() == whole.codes[name].tolist(), (batch_rows, name)


def test_integer_columns_of_every_width_and_range(tmp_path):
    """Integer columns are counted over their range when it is small, hashed otherwise:
    domains, counts and codes equal read_table's for the extremes of each width, a range too
    wide to count over, and a column with a missing value."""
    import pyarrow as pa

    rng = np.random.default_rng(3)
    columns = {"s": pa.array(rng.choice(["a", "b"], 600))}
    for kind in (np.int8, np.uint8, np.int16, np.int64, np.uint64):
        info = np.iinfo(kind)
        values = rng.integers(0, 50, 600).astype(kind)
        values[:2] = info.min, min(info.max, 2 ** 63 - 1)  # read_table's int64 holds them
        columns[np.dtype(kind).name] = pa.array(values)
    columns["wide"] = pa.array(rng.integers(-2 ** 62, 2 ** 62, 600))
    columns["gap"] = pa.array([None, *range(599)], pa.int32())
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=250)
    whole = ppdp.read_table(path, sensitive="s", missing="drop", observed_domains=True)
    source = scan_table(path, sensitive="s", missing="drop", observed_domains=True,
                        batch_rows=100)
    assert source.schema == whole.schema and source.n_rows == whole.n_rows == 599
    batches = list(source.batches(100))
    for name in columns:
        codes = np.concatenate([codes[name] for _, codes in batches])
        assert codes.tolist() == whole.codes[name].tolist(), name
        assert source.histogram([name]).tolist() == \
            np.bincount(whole.codes[name], minlength=whole.schema[name].size).tolist(), name


def test_a_different_key_changes_almost_every_draw(table):
    n = table.n_rows
    first, second = make_key(1), make_key(2)
    for stream in ("rank", "perturb", "redraw/occupation"):
        same = KeyedStream(first, stream).raw(0, n) == KeyedStream(second, stream).raw(0, n)
        assert same.sum() == 0
    # DBR redraws each value from the marginal: two keys agree where two independent draws
    # do, with probability sum p^2 (5 binomial sds around it).
    a = DBR().publish(table, random_state=1).codes["occupation"]
    b = DBR().publish(table, random_state=2).codes["occupation"]
    p = np.bincount(table.codes["occupation"]) / n
    agree, expected = float(np.mean(a == b)), float(np.sum(p ** 2))
    assert abs(agree - expected) < 5 * np.sqrt(expected * (1 - expected) / n)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_no_key_or_seed_in_any_release_file(name, table, tmp_path):
    seed = 987_654_321
    key = make_key(seed)
    MECHANISMS[name]().publish_source(TableSource(table), tmp_path / "r", random_state=seed)
    forms = [str(seed), f"{seed:x}", str(key), f"{key:x}", f"{key:X}"]
    raw = [key.to_bytes(16, "big"), key.to_bytes(16, "little")]
    for path in (tmp_path / "r").iterdir():
        data = path.read_bytes()
        assert not any(form.encode() in data for form in forms), path.name
        assert not any(form in data for form in raw), path.name


def test_an_unseeded_release_uses_a_fresh_key(table):
    a = DBR().publish(table).codes["occupation"]
    b = DBR().publish(table).codes["occupation"]
    assert not np.array_equal(a, b)


CHILD = """
import sys
# A child's peak RSS starts from its parent's at fork: reset it (Linux), so the peak is ours.
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")
import ppdp.plan.order
from ppdp.mechanisms import DBR
from ppdp.io.scan import scan_table
ppdp.plan.order.ROWS_PER_PART = int(sys.argv[3])
source = scan_table(sys.argv[1], sensitive="occupation", observed_domains=True,
                    batch_rows=int(sys.argv[4]))
DBR().publish_source(source, sys.argv[2], random_state=1, batch_rows=int(sys.argv[4]))
print(int(next(line.split()[1] for line in open("/proc/self/status")
               if line.startswith("VmHWM:"))))
"""


def resampled(path: Path, n_rows: int) -> Path:
    table = ppdp.datasets.adult().resample(n_rows, random_state=3)
    # Row groups as small as the batches: a reader decodes a whole row group at a time.
    pq.write_table(table.to_arrow(), path, row_group_size=1 << 16)
    return path


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                    reason="peak memory is reset through Linux's /proc")
def test_memory_stays_bounded_as_rows_grow(tmp_path):
    """Peak memory is two batches, the domains and two parts: ten times the rows add far less
    than their codes. From 1.2 * 10^6 to 1.2 * 10^7 rows, the codes alone grow by 97 MB (nine
    one-byte columns), which the in-memory path holds several times over; the streaming
    path's peak grew by 28 and 42 MB in two runs (threads' allocators warming up, not rows:
    from 6 * 10^6 to 1.8 * 10^7 rows it did not grow)."""
    peaks = []
    for n_rows in (1_200_000, 12_000_000):
        source = resampled(tmp_path / f"in-{n_rows}.parquet", n_rows)
        result = subprocess.run([sys.executable, "-c", CHILD, str(source),
                                 str(tmp_path / f"out-{n_rows}"), str(1 << 18), str(1 << 16)],
                                capture_output=True, text=True, check=True)
        peaks.append(int(result.stdout.split()[-1]) * 1024)
        assert load_release(tmp_path / f"out-{n_rows}").n_rows == n_rows
    assert peaks[1] - peaks[0] < 64 << 20, peaks


def test_a_killed_streaming_publish_leaves_no_release(tmp_path):
    source = resampled(tmp_path / "in.parquet", 3_000_000)
    target = tmp_path / "out"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(source), str(target),
                              str(1 << 18), str(1 << 14)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    # Kill it once it is writing (a staging directory beside the target exists).
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".ppdp-partial") for p in tmp_path.iterdir()):
        assert child.poll() is None and time.monotonic() < deadline, "finished too soon"
        time.sleep(0.01)
    time.sleep(0.5)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert not target.exists()
    with pytest.raises(ReleaseError):
        load_release(target)
    # The next write beside it removes the leftover.
    DBR().publish(ppdp.datasets.adult(sensitive="occupation"), random_state=1).save(
        tmp_path / "next")
    assert not any(p.name.endswith(".ppdp-partial") for p in tmp_path.iterdir())


def test_a_polars_lazy_frame_publishes_on_the_streaming_engine(table, tmp_path):
    """``mechanism.publish(LazyFrame, ...)`` takes scan_table's options and writes, on
    ``save``, the files of the table published in memory with the same key."""
    import polars as pl

    path = tmp_path / "table.parquet"
    pq.write_table(table.to_arrow(), path)
    domains = {c.name: list(c.domain) for c in table.schema.columns}
    published = DBR().publish(pl.scan_parquet(path), random_state=3, sensitive="occupation",
                              domains=domains)
    assert not isinstance(published, ppdp.Release)
    streamed = published.save(tmp_path / "streamed")
    in_memory = DBR().publish(table, random_state=3).save(tmp_path / "in-memory")
    assert release_files(streamed) == release_files(in_memory)
