"""The query server under load: 32 clients asking count queries of one release over HTTP.

    python benchmarks/bench_serve.py RELEASE_DIR [--clients 32] [--requests 10000]
                                     [--queries 100] [--seed 0] [--port 8765]

``ppdp serve`` runs in a process of its own on 127.0.0.1 over the directory that holds
RELEASE_DIR, with an empty cache directory (the release's summaries are not cached yet). The
clients are threads of this process, each with one keep-alive connection
(``http.client``), sending ``POST /releases/NAME/count`` in turn from a pool of ``--queries``
distinct conjunctions of conditions on 1 to 3 columns (`bench_count_scale.query_pool`, seeded),
so that each query shape is asked many times, as users of a served release would.

Reported (one line of JSON): ``server_ready_s`` (from starting the command to its first
answer of ``/openapi.json``), ``cold_first_answer_s`` (the first count: the release is loaded
and verified then), then over the ``--requests`` timed requests: ``p50_ms``, ``p95_ms``,
``p99_ms`` and ``max_ms`` of each request's latency, ``errors`` (any answer but 200, or a
failed connection), ``throughput_per_s`` and ``wall_s``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# A script beside this one, found through the path set above.
from bench_count_scale import load_schema, query_pool


def request(connection: http.client.HTTPConnection, name: str, query: str
            ) -> tuple[int, float]:
    """One count over ``connection``: its status and latency in seconds."""
    start = time.perf_counter()
    connection.request("POST", f"/releases/{name}/count", json.dumps({"query": query}),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status, time.perf_counter() - start


def wait_ready(port: int, server: subprocess.Popen[bytes], limit: float = 60) -> None:
    """Wait until the server answers, or fail."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/openapi.json")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the server did not answer in time")


def load(port: int, name: str, pool: list[str], clients: int, requests: int
         ) -> tuple[list[float], int, float]:
    """``requests`` counts from ``clients`` threads: latencies, errors, wall seconds."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients

    def client(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for index in range(number, requests, clients):
            try:
                status, seconds = request(connection, name, pool[index % len(pool)])
            except (OSError, http.client.HTTPException):
                errors[number] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            latencies[number].append(seconds)
            errors[number] += status != 200
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [s for part in latencies for s in part], sum(errors), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", type=Path)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    release = args.release.resolve()
    pool = query_pool(load_schema(release), args.queries, args.seed)
    with tempfile.TemporaryDirectory() as cache:
        command = [sys.executable, "-m", "ppdp.cli", "serve", str(release.parent),
                   "--port", str(args.port)]
        started = time.perf_counter()
        server = subprocess.Popen(command, env={**os.environ, "PPDP_CACHE_DIR": cache},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(args.port, server)
            ready = time.perf_counter() - started
            first = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
            status, cold = request(first, release.name, pool[0])
            if status != 200:
                raise SystemExit(f"the first count answered {status}")
            latencies, errors, wall = load(args.port, release.name, pool, args.clients,
                                           args.requests)
        finally:
            server.terminate()
            server.wait(timeout=30)
    milliseconds = np.array(latencies) * 1_000
    report: dict[str, Any] = {
        "release": release.name, "clients": args.clients, "requests": args.requests,
        "distinct_queries": len(pool), "server_ready_s": round(ready, 3),
        "cold_first_answer_s": round(cold, 3),
        **{f"p{q}_ms": round(float(np.percentile(milliseconds, q)), 2) for q in (50, 95, 99)},
        "max_ms": round(float(milliseconds.max()), 2), "errors": errors,
        "throughput_per_s": round(args.requests / wall, 1), "wall_s": round(wall, 2)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
