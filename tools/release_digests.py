"""Publish every mechanism with every engine under a fixed seed and print the SHA-256 digest
of every release file and every answer, as JSON: run it before and after a change that must
not change behaviour, and compare the two outputs (``diff``).

    python tools/release_digests.py > before.json      # on the old code
    python tools/release_digests.py > after.json       # on the new code
    diff before.json after.json

Small limits (rows per part, rows per block, rows partitioned in memory) are set so that the
streaming and Spark engines write several parts and blocks. ``--no-spark`` leaves Spark out.
Only the public API is used (the same calls work before and after a change of layout).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import ppdp

SEED = 20261127
COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "education", "occupation"]
QUERIES = [
    "sex = 'Male' AND occupation = 'Adm-clerical'",
    "age >= 40 AND occupation IN ('Sales', 'Tech-support')",
    "race = 'White'",
    "SELECT COUNT(*) FROM t WHERE age < 30 GROUP BY occupation",
    "SELECT COUNT(*) FROM t WHERE sex = 'Female' GROUP BY sex, salary-class",
]
MECHANISMS: dict[str, Callable[[], Any]] = {
    "splu": lambda: ppdp.SPLUGen(gamma=5),
    "anatomy": lambda: ppdp.Anatomy(l=5),
    "ambiguity": lambda: ppdp.Ambiguity(alpha=0.3, beta=0.2),
    "dbr": lambda: ppdp.DBR(),
    "uniform": lambda: ppdp.UniformPerturbation(rho1=0.1, rho2=0.5),
    "sdr": lambda: ppdp.PerturbationPartitioning(rho1=0.077, rho2=0.2),
    "frapp": lambda: ppdp.FRAPP(k=0.01, gamma=0.2),
    "alphabeta": lambda: ppdp.AlphaBeta(alpha=0.3, beta=0.05),
    "mondrian": lambda: ppdp.Mondrian(k=10, l=3),
    "laplace": lambda: ppdp.LaplaceCounts(epsilon=0.5),
}
SMALL_LIMITS = {
    # (constant, value): where the constant lives, newest layout first.
    ("ROWS_PER_PART", 7_000): ("ppdp.plan.order", "ppdp.plans"),
    ("BLOCK_ROWS", 8_000): ("ppdp.plan.blocks", "ppdp.blocks"),
    ("LOCAL_ROWS", 9_000): ("ppdp.mechanisms.mondrian.steps", "ppdp.mechanisms.mondrian"),
}


def _module(candidates: tuple[str, ...]) -> Any:
    for name in candidates:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                module = importlib.import_module(name)
        except ImportError:
            continue
        return module
    raise ImportError(f"none of {candidates}")


@contextlib.contextmanager
def small_limits() -> Iterator[None]:
    saved = []
    for (constant, value), candidates in SMALL_LIMITS.items():
        module = _module(candidates)
        saved.append((module, constant, getattr(module, constant)))
        setattr(module, constant, value)
    try:
        yield
    finally:
        for module, constant, value in saved:
            setattr(module, constant, value)


def digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.iterdir())}


def answers(release: Any) -> list[Any]:
    out = []
    for query in QUERIES:
        try:
            answer = release.count(query)
        except Exception as exc:  # an answer refused is part of the behaviour
            out.append(f"{type(exc).__name__}: {exc}")
            continue
        out.append(answer.to_dict())
    return out


def scan(path: Path) -> Any:
    module = _module(("ppdp.io.scan", "ppdp.scan"))
    return module.scan_table(path, sensitive="occupation", domains=declared_domains())


def declared_domains() -> dict[str, Any]:
    """The bundled codebook's domains of `COLUMNS`."""
    import importlib.resources

    module = _module(("ppdp.data.domains", "ppdp.declared_domains"))
    with importlib.resources.as_file(importlib.resources.files("ppdp.datasets")
                                     / "adult.domains.json") as path:
        domains = module.read_domains_file(path)
    return {name: domains[name] for name in COLUMNS}


def views(root: Path, table: Any, source_file: Path, frame: Any) -> dict[str, Any]:
    """Two alpha-beta views of the table (Algorithm 4 for the second) with every engine."""
    def mechanism() -> Any:
        return ppdp.AlphaBeta(alpha=0.3, beta=0.05, v=2)

    out: dict[str, Any] = {}
    in_memory = ppdp.mechanisms.ViewSequence(mechanism(), table)
    streamed = ppdp.mechanisms.ViewSequence(mechanism(), scan(source_file))
    on_spark = None
    if frame is not None:
        spark_module = _module(("ppdp.engines.spark", "ppdp.spark"))
        views_module = _module(("ppdp.engines.spark.alphabeta", "ppdp.spark.alphabeta"))
        on_spark = views_module.SparkViews(mechanism(), spark_module.SparkSource(
            frame, sensitive="occupation", domains=declared_domains()))
    for view in (1, 2):
        directory = root / f"view{view}-memory"
        in_memory.publish(random_state=SEED + view).save(directory)
        out[f"alphabeta views/memory/view {view}"] = digests(directory)
        directory = root / f"view{view}-streaming"
        with small_limits():
            streamed.publish_to(directory, random_state=SEED + view, batch_rows=4096)
        out[f"alphabeta views/streaming/view {view}"] = digests(directory)
        out[f"alphabeta views/streaming/view {view} answers"] = answers(
            ppdp.load_release(directory))
        if on_spark is not None:
            directory = root / f"view{view}-spark"
            with small_limits():
                on_spark.publish_to(directory, random_state=SEED + view)
            on_spark.save_state(root / f"spark-state-{view}")
            out[f"alphabeta views/spark/view {view}"] = digests(directory)
    return out


def command_line(root: Path, source_file: Path) -> dict[str, Any]:
    """``ppdp publish`` and ``ppdp count`` as a user runs them."""
    ppdp_command = str(Path(sys.executable).parent / "ppdp")
    domains = root / "domains.json"
    domains.write_text(json.dumps({"domains": {
        name: list(values) if not isinstance(values, range)
        else {"min": values.start, "max": values.stop - 1}
        for name, values in declared_domains().items()}}))
    out: dict[str, Any] = {}
    cases = {
        "splu": ["-m", "splu", "-s", "occupation", "-p", "gamma=4"],
        "sdr": ["-m", "sdr", "-s", "occupation", "-p", "rho1=0.077", "-p", "rho2=0.2"],
        "mondrian": ["-m", "mondrian", "-s", "occupation", "-p", "k=20"],
        "alphabeta": ["-m", "alphabeta", "-p", "alpha=0.3", "-p", "beta=0.05", "-p", "v=2",
                      "--state-dir", str(root / "state")],
    }
    for name, arguments in cases.items():
        for engine in ("memory", "streaming"):
            if name == "alphabeta" and engine == "streaming":
                continue
            directory = root / f"cli-{name}-{engine}"
            subprocess.run([ppdp_command, "publish", str(source_file), *arguments, "--seed",
                            str(SEED), "--domains", str(domains), "--engine", engine, "-o",
                            str(directory)], check=True, capture_output=True)
            out[f"cli/{name}/{engine}/files"] = digests(directory)
            counted = subprocess.run([ppdp_command, "count", str(directory), QUERIES[0],
                                      "--json"], check=True, capture_output=True, text=True)
            out[f"cli/{name}/{engine}/count"] = json.loads(counted.stdout)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--only", help="comma-separated mechanisms")
    options = parser.parse_args()
    names = options.only.split(",") if options.only else list(MECHANISMS)
    table = ppdp.datasets.adult(sensitive="occupation").select(COLUMNS)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source_file = root / "adult.parquet"
        pq.write_table(table.to_arrow(), source_file)
        spark = None
        if not options.no_spark:
            spark_module = _module(("ppdp.engines.spark", "ppdp.spark"))
            spark = spark_module.spark_session()
            spark.conf.set("spark.sql.shuffle.partitions", "4")
            frame = spark_module.read_parquet(spark, source_file)
        for name in names:
            print(name, file=sys.stderr)
            if name == "laplace":
                result["laplace/memory"] = answers(
                    MECHANISMS[name]().publish(table, random_state=SEED))
                if spark is not None:
                    session = MECHANISMS[name]().publish(
                        frame, sensitive="occupation", random_state=SEED,
                        domains=declared_domains())
                    result["laplace/spark"] = answers(session)
                continue
            memory = root / f"{name}-memory"
            release = MECHANISMS[name]().publish(table, random_state=SEED)
            result[f"{name}/memory/in-memory answers"] = answers(release)
            release.save(memory)
            runs = {"memory": memory}
            if name != "alphabeta":
                streaming = root / f"{name}-streaming"
                with small_limits():
                    MECHANISMS[name]().publish_source(scan(source_file), streaming,
                                                      random_state=SEED, batch_rows=4096)
                runs["streaming"] = streaming
            if spark is not None:
                on_spark = root / f"{name}-spark"
                with small_limits():
                    MECHANISMS[name]().publish(
                        frame, sensitive="occupation", random_state=SEED,
                        domains=declared_domains()
                    ).save(on_spark)
                runs["spark"] = on_spark
            for engine, directory in runs.items():
                result[f"{name}/{engine}/files"] = digests(directory)
                result[f"{name}/{engine}/answers"] = answers(ppdp.load_release(directory))
                if spark is not None:
                    result[f"{name}/{engine}/answers on spark"] = answers(
                        ppdp.load_release(directory, engine="spark"))
        if not options.only or "alphabeta" in names:
            result.update(views(root, table, source_file, frame if spark is not None else None))
        if not options.only:
            result.update(command_line(root, source_file))
        if spark is not None:
            spark.stop()
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
