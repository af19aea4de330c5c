"""Certifying and verifying a large release: ``ppdp certify`` and ``ppdp verify`` in fresh
processes, their wall and CPU time and peak RSS.

    python benchmarks/bench_verify.py SOURCE.parquet [--mechanism splu] [--runs 3]
                                      [--workdir DIR] [--attacks]

SOURCE is published once with ``ppdp publish --engine streaming`` (Adult's columns,
``occupation`` sensitive, the bundled codebook's domains, seed 1); keys are made with ``ppdp
keys create``; the release is certified once (``--no-attacks`` unless ``--attacks``: the
attacks read every row of the source in memory) and verified ``--runs`` times, each with an
empty cache directory, so that every file is hashed afresh (`ppdp.release.verify` otherwise
remembers files verified before). Reported: one line of JSON per step, with ``wall_s``,
``cpu_s`` and ``peak_rss_mb``, and the release's size on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# A script beside this one, found through the path set above.
from bench_executors import MECHANISMS, domains_file


def timed(command: list[str]) -> dict[str, float]:
    """Wall and CPU seconds and peak RSS of ``command`` in a fresh process (run by `step`'s
    wrapper, whose only child it is: ru_maxrss of the children is theirs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "peak_rss_mb": round(after.ru_maxrss / 1024, 1)}


def ppdp(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "ppdp.cli", *arguments]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--mechanism", default="splu", choices=sorted(MECHANISMS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--attacks", action="store_true")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-verify-"))
    work.mkdir(parents=True, exist_ok=True)
    release, keys = work / "release", work / "keys"
    # Each step through a wrapper process of its own (`step`): ru_maxrss of a process's
    # children is the largest so far, so one parent would report publish's for every step.
    publish = ppdp("publish", args.source, "-m", args.mechanism, "-s", "occupation",
                   "--domains", domains_file(), "--engine", "streaming", "--seed", "1",
                   "-o", str(release), "--overwrite")
    for value in MECHANISMS[args.mechanism]:
        publish += ["-p", value]
    step("publish", publish)
    size = sum(path.stat().st_size for path in release.iterdir())
    print(json.dumps({"step": "release", "bytes": size,
                      "files": len(list(release.iterdir()))}), flush=True)
    if not keys.exists():
        subprocess.run(ppdp("keys", "create", str(keys)), check=True, stdout=subprocess.DEVNULL)
    certify = ppdp("certify", str(release), "--source", args.source, "--key",
                   str(keys / "signing.key"), "--overwrite", "--seed", "1")
    step("certify", certify if args.attacks else [*certify, "--no-attacks"])
    for run in range(args.runs):
        cache = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
        step(f"verify {run + 1}", ppdp("verify", str(release), "--public-key",
                                       str(keys / "signing.pub")),
             {**os.environ, "PPDP_CACHE_DIR": str(cache)})


def step(name: str, command: list[str], env: dict[str, str] | None = None) -> None:
    """Run ``command`` under a wrapper process of its own, so that its peak RSS is its own,
    and print the step's line."""
    wrapper = [sys.executable, __file__, "--run-one", json.dumps(command)]
    result = subprocess.run(wrapper, check=True, capture_output=True, text=True, env=env)
    print(json.dumps({"step": name, **json.loads(result.stdout)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run-one":
        print(json.dumps(timed(json.loads(sys.argv[2]))))
    else:
        main()
