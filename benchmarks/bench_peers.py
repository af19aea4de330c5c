"""Paired end-to-end runs of the ppdp command line against anjana and Qiyuan Gong's Mondrian
and Anatomy.

    python benchmarks/bench_peers.py [--data FILE] [--hierarchies DIR] [--pairs 7]
                                     [--peer-python PYTHON] [--supp-level 0]
                                     [--qiyuangong-mondrian DIR] [--qiyuangong-anatomy DIR]
                                     [--jobs start mondrian anatomy mondrian-qiyuangong
                                             anatomy-qiyuangong]
                                     [--workdir DIR] [--json FILE]

Five jobs, each a pair of commands run as processes of their own on the 30,162-row Adult
table (``--data``, default ``../shared/datasets/adult/adult-arx-9attr.csv`` beside the
repository, ';'-separated, nine columns) with its ARX hierarchies (``--hierarchies``):

- start: ``ppdp --help`` against ``python -c "import anjana.anonymity"`` (anjana is a library
  without a command line, so its start is its import);
- mondrian: ``ppdp publish DATA -m mondrian -s occupation -p k=10 --hierarchies DIR`` against
  ``peer_anjana.py --k 10``, anjana's ``k_anonymity`` with the same hierarchies and k (anjana
  has no Mondrian: it generalizes full domains greedily, one quasi-identifier at a time);
- anatomy: ``ppdp publish DATA -m anatomy -s occupation -p l=5`` (domains declared by the same
  hierarchies) against ``peer_anjana.py --k 1 --l 5``, anjana's ``l_diversity`` (anjana has no
  Anatomy; distinct 5-diversity by generalization is its nearest job);
- mondrian-qiyuangong: the same ``ppdp publish ... -m mondrian`` against
  ``peer_qiyuangong_mondrian.py --k 10``, Qiyuan Gong's pure-Python strict Mondrian (as is
  ppdp's) on the same eight quasi-identifiers and sensitive occupation. It uses no hierarchy:
  it cuts age as a number (as ppdp does: age's hierarchy orders the ages numerically) and the
  text attributes by their positions in the depth-first order of their hierarchy files (the
  order ppdp cuts them in), and publishes each class's range of ages or run of adjacent
  values (``Private~Self-emp-not-inc``) where ppdp publishes the range's lowest common
  hierarchy node; its rows keep their class order where ppdp shuffles them. Its source is
  not a package: ``git clone https://github.com/qiyuangong/Mondrian`` and ``git checkout
  b1014b2f46b823ead3ac0ebdd627a7ebe6bf2f1b`` (the launcher imports only its ``mondrian.py``
  and ``utils/utility.py``), then ``--qiyuangong-mondrian`` names that directory; without it
  the job is skipped with a message;
- anatomy-qiyuangong: the same ``ppdp publish ... -m anatomy`` against
  ``peer_qiyuangong_anatomy.py --l 5 --seed 1``, Qiyuan Gong's pure-Python Anatomy (its
  ``anatomize(data, L)``: groups of L distinct sensitive values taken from the L largest
  remaining sensitive values, the residue spread over groups lacking its value) on the same
  eight quasi-identifiers, published as a QIT and an ST as ppdp publishes them (its QIT rows in
  group order, where ppdp shuffles them). Its source is the file ``algorithm/anatomize.py``
  of https://github.com/qiyuangong/ppdpes_core at commit
  ``b22805415c82f03bb8f858336919d6051ee2f604``, Python 2, which the launcher converts in
  memory (see its docstring); ``--qiyuangong-anatomy`` names the directory holding it, and
  without it the job is skipped with a message.

Both sides read the CSV and write their result into a fresh directory; ppdp runs with
``--seed 1``; anjana may suppress ``--supp-level`` percent of the rows (default 0: ppdp's
Mondrian and Anatomy suppress none, nor does Qiyuan Gong's Mondrian; his Anatomy drops
the rows it cannot place, counted as ``suppressed``). A job runs ``--pairs``
pairs, the order within a pair alternating (ppdp first in even pairs), and reports the median
wall time and peak RSS (the child's ``ru_maxrss``) of each side and the median of the per-pair
ratios ppdp / peer. Linux
counts the launching process's RSS in a child's ``ru_maxrss``, so this script imports nothing
heavy (its own RSS, about 15 MB, is in the results as ``launcher_rss_mb``). Beside the
end-to-end times: ppdp's in-process times of reading the CSV (``read_table``), the
mechanism's publish alone and saving the release (medians over ``--pairs`` repetitions in a
process of their own), and the peer's anonymization call alone (median of the times the peer
script reports). When the median ``ppdp --help`` takes more than ``--importtime-above``
seconds (default 0.3), the largest cumulative entries of ``python -X importtime -c "import
ppdp.cli"`` are printed too; and when a publish spends more than that outside reading,
publishing and saving, those of ``python -X importtime -m ppdp.cli publish ...``. The load
averages (``os.getloadavg``) before and after the jobs are printed and kept in the results:
other work on the machine slows both sides.

The peers run in a virtual environment of their own (``--peer-python``, default
``.venv-peers/bin/python`` in the repository: ``python -m venv .venv-peers &&
.venv-peers/bin/pip install anjana``; Qiyuan Gong's Mondrian needs only the standard
library, and his Anatomy too, through its ``lib2to3``, which Python 3.13 removed). Results are
printed and written to ``benchmarks/results/peers.json`` unless ``--json`` names another file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT / ".." / "shared" / "datasets" / "adult"
HERE = Path(__file__).resolve().parent
PEER_SCRIPTS = {"mondrian": HERE / "peer_anjana.py", "anatomy": HERE / "peer_anjana.py",
                "mondrian-qiyuangong": HERE / "peer_qiyuangong_mondrian.py",
                "anatomy-qiyuangong": HERE / "peer_qiyuangong_anatomy.py"}
JOBS = ("start", "mondrian", "anatomy", "mondrian-qiyuangong", "anatomy-qiyuangong")
MECHANISMS = {"mondrian": "mondrian", "anatomy": "anatomy", "mondrian-qiyuangong": "mondrian",
              "anatomy-qiyuangong": "anatomy"}
PPDP_PARAMETERS = {"mondrian": ["-p", "k=10"], "anatomy": ["-p", "l=5"]}
PEER_PARAMETERS = {"mondrian": ["--k", "10"], "anatomy": ["--k", "1", "--l", "5"],
                   "mondrian-qiyuangong": ["--k", "10"],
                   "anatomy-qiyuangong": ["--l", "5", "--seed", "1"]}
SOURCES = {"mondrian-qiyuangong": ("qiyuangong_mondrian", ("mondrian.py", "utils/utility.py"),
                                   "a checkout of https://github.com/qiyuangong/Mondrian"),
           "anatomy-qiyuangong": ("qiyuangong_anatomy", ("anatomize.py",),
                                  "the algorithm directory of a checkout of "
                                  "https://github.com/qiyuangong/ppdpes_core")}
"""The jobs whose peer runs from a source directory: its option, the files it needs, what it is."""
OUTPUT_KEYS = ("rows", "suppressed", "classes", "groups", "smallest_class",
               "fewest_distinct_sensitive", "single_valued")


def ppdp_command() -> list[str]:
    """The ``ppdp`` script installed beside this Python, else ``python -m ppdp.cli``."""
    script = Path(sys.executable).with_name("ppdp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ppdp.cli"]


def run(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and standard output of one command in a process of its own."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{stderr.read().decode()}")
        return elapsed, usage.ru_maxrss / 1024, stdout.read().decode()


def commands(job: str, args: argparse.Namespace, workdir: Path) -> tuple[list[str], list[str],
                                                                          Path, Path]:
    """The arguments of ppdp, the peer's command, and the output directory each creates."""
    ppdp_out, peer_out = workdir / f"ppdp-{job}", workdir / f"peer-{job}"
    if job == "start":
        return (["--help"], [str(args.peer_python), "-c", "import anjana.anonymity"],
                ppdp_out, peer_out)
    mechanism = MECHANISMS[job]
    ppdp = ["publish", str(args.data), "-m", mechanism, "-s", "occupation",
            *PPDP_PARAMETERS[mechanism], "--hierarchies", str(args.hierarchies), "--sep", ";",
            "--seed", "1", "-o", str(ppdp_out)]
    if job in SOURCES:
        script = [str(PEER_SCRIPTS[job]), "--source", str(getattr(args, SOURCES[job][0]))]
    else:
        script = [str(PEER_SCRIPTS[job]), "--supp-level", str(args.supp_level)]
    # Anatomy publishes quasi-identifiers unchanged: Qiyuan Gong's needs no hierarchy.
    hierarchies = ([] if job == "anatomy-qiyuangong"
                   else ["--hierarchies", str(args.hierarchies)])
    peer = [str(args.peer_python), *script, str(args.data), *hierarchies, "--sensitive",
            "occupation", *PEER_PARAMETERS[job], "--sep", ";", "-o", str(peer_out)]
    return ppdp, peer, ppdp_out, peer_out


def paired(job: str, args: argparse.Namespace, workdir: Path) -> dict:
    """``args.pairs`` alternating runs of the job's two commands: times, peaks and ratios."""
    ppdp_arguments, peer, ppdp_out, peer_out = commands(job, args, workdir)
    ppdp = [*ppdp_command(), *ppdp_arguments]
    sides: dict[str, dict[str, list]] = {
        "ppdp": {"seconds": [], "peak_mb": [], "stdout": []},
        "peer": {"seconds": [], "peak_mb": [], "stdout": []}}
    for pair in range(args.pairs):
        order = [("ppdp", ppdp), ("peer", peer)]
        for side, command in order if pair % 2 == 0 else order[::-1]:
            shutil.rmtree(ppdp_out, ignore_errors=True)
            shutil.rmtree(peer_out, ignore_errors=True)
            seconds, peak, stdout = run(command)
            sides[side]["seconds"].append(seconds)
            sides[side]["peak_mb"].append(peak)
            sides[side]["stdout"].append(stdout)
    ratios = [a / b for a, b in zip(sides["ppdp"]["seconds"], sides["peer"]["seconds"],
                                    strict=True)]
    result = {"ppdp_arguments": ppdp_arguments, "ppdp_command": ppdp, "peer_command": peer,
              "ratios": ratios,
              "median_ratio": statistics.median(ratios)}
    for side, runs in sides.items():
        result[side] = {"seconds": runs["seconds"], "peak_mb": runs["peak_mb"],
                        "median_seconds": statistics.median(runs["seconds"]),
                        "median_peak_mb": statistics.median(runs["peak_mb"])}
    if job != "start":
        reports = [json.loads(stdout) for stdout in sides["peer"]["stdout"]]
        result["peer"]["in_process_seconds"] = statistics.median(r["seconds"] for r in reports)
        result["peer"]["output"] = {key: reports[-1][key] for key in OUTPUT_KEYS
                                    if key in reports[-1]}
    return result


def in_process(job: str, args: argparse.Namespace, workdir: Path) -> dict:
    """Medians of ppdp's reading, publishing and saving of the job in this process."""
    from ppdp.data.domains import hierarchy_domains
    from ppdp.data.hierarchy import read_hierarchies
    from ppdp.io.read import read_table
    from ppdp.mechanisms import Anatomy, Mondrian

    hierarchies = read_hierarchies(args.hierarchies)
    mechanism = (Mondrian(k=10, hierarchies=hierarchies) if MECHANISMS[job] == "mondrian"
                 else Anatomy(l=5))
    output = workdir / f"in-process-{job}"
    steps: dict[str, list[float]] = {"read": [], "publish": [], "save": []}
    for _ in range(args.pairs):
        shutil.rmtree(output, ignore_errors=True)
        start = time.perf_counter()
        table = read_table(args.data, sensitive="occupation", sep=";",
                           domains=hierarchy_domains(hierarchies))
        read = time.perf_counter()
        release = mechanism.publish(table, random_state=1)
        published = time.perf_counter()
        release.save(output)
        saved = time.perf_counter()
        steps["read"].append(read - start)
        steps["publish"].append(published - read)
        steps["save"].append(saved - published)
    shutil.rmtree(output, ignore_errors=True)
    result = {f"{step}_seconds": statistics.median(times) for step, times in steps.items()}
    if MECHANISMS[job] == "mondrian":
        result["classes"] = release.risk()["classes"]
    return result


def import_times(arguments: list[str], top: int = 15) -> dict:
    """Imports of ``python -X importtime ARGUMENTS``: their total and the ``top`` largest.

    The total adds every module's own time; the entries are the largest cumulative ones.
    """
    completed = subprocess.run([sys.executable, "-X", "importtime", *arguments],
                               capture_output=True, text=True, check=True)
    entries = []
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        entries.append({"module": name.strip(), "self_us": int(own),
                        "cumulative_us": int(cumulative)})
    entries.sort(key=lambda entry: -entry["cumulative_us"])
    return {"command": ["python", "-X", "importtime", *arguments],
            "total_seconds": sum(entry["self_us"] for entry in entries) / 1e6,
            "largest": entries[:top]}


def print_imports(job: str, imports: dict) -> None:
    """One job's ``import_times`` result, in milliseconds."""
    command = imports["command"]
    shown = " ".join(command[:6]) + (f" ... -m {MECHANISMS[job]} ..." if len(command) > 6
                                     else "")
    print(f"\n{shown}: imports {imports['total_seconds']:.2f} s in all; largest cumulative "
          f"(ms):")
    for entry in imports["largest"]:
        print(f"  {entry['cumulative_us'] / 1000:8.1f}  {entry['module']}")


def main() -> None:
    """Run the jobs in pairs, print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATASETS / "adult-arx-9attr.csv")
    parser.add_argument("--hierarchies", type=Path, default=DATASETS / "hierarchies")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--peer-python", type=Path,
                        default=ROOT / ".venv-peers" / "bin" / "python")
    parser.add_argument("--supp-level", type=float, default=0.0)
    parser.add_argument("--qiyuangong-mondrian", type=Path, default=None,
                        help="a checkout of github.com/qiyuangong/Mondrian (job "
                             "mondrian-qiyuangong; skipped without it)")
    parser.add_argument("--qiyuangong-anatomy", type=Path, default=None,
                        help="the algorithm directory of a checkout of "
                             "github.com/qiyuangong/ppdpes_core (job anatomy-qiyuangong; "
                             "skipped without it)")
    parser.add_argument("--jobs", nargs="+", choices=JOBS, default=list(JOBS))
    parser.add_argument("--importtime-above", type=float, default=0.3)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the outputs are written (default: a temporary directory)")
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "peers.json")
    parser.add_argument("--in-process", choices=JOBS[1:], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so every ppdp module is compiled at each "
              "start (an installed ppdp has its bytecode); unset it to time what users run",
              flush=True)
    for option, needed, what in SOURCES.values():
        source = getattr(args, option)
        missing = [name for name in needed if source and not (source / name).is_file()]
        if missing:
            parser.error(f"--{option.replace('_', '-')}: {source} has no "
                         f"{' or '.join(missing)} ({what})")
    if args.in_process:
        with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
            print(json.dumps(in_process(args.in_process, args, Path(scratch))))
        return

    results: dict = {"pairs": args.pairs, "supp_level": args.supp_level,
                     "launcher_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                     "load_average_before": os.getloadavg(), "jobs": {}}
    with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
        workdir = Path(scratch)
        for job in args.jobs:
            if job in SOURCES and getattr(args, SOURCES[job][0]) is None:
                option, _, what = SOURCES[job]
                print(f"{job}: skipped, --{option.replace('_', '-')} DIR not given ({what}; "
                      f"see --help)", flush=True)
                continue
            result = paired(job, args, workdir)
            ppdp = result["ppdp"]
            if job == "start":
                if ppdp["median_seconds"] > args.importtime_above:
                    ppdp["imports"] = import_times(["-c", "import ppdp.cli"])
            else:
                steps = ppdp["in_process"] = json.loads(run([
                    sys.executable, __file__, "--in-process", job, "--data", str(args.data),
                    "--hierarchies", str(args.hierarchies), "--pairs", str(args.pairs),
                    "--workdir", str(workdir)])[2])
                ppdp["outside_seconds"] = ppdp["median_seconds"] - sum(
                    steps[f"{step}_seconds"] for step in ("read", "publish", "save"))
                if ppdp["outside_seconds"] > args.importtime_above:
                    shutil.rmtree(workdir / f"ppdp-{job}", ignore_errors=True)
                    ppdp["imports"] = import_times(["-m", "ppdp.cli",
                                                    *result["ppdp_arguments"]])
            results["jobs"][job] = result
            print(f"{job:19s} ppdp {ppdp['median_seconds']:7.3f} s "
                  f"{ppdp['median_peak_mb']:5.0f} MB   peer "
                  f"{result['peer']['median_seconds']:7.3f} s "
                  f"{result['peer']['median_peak_mb']:5.0f} MB   median ratio "
                  f"{result['median_ratio']:.3f}", flush=True)
    results["load_average_after"] = os.getloadavg()
    print("load averages (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}, after: {:.2f} {:.2f} "
          "{:.2f}".format(*results["load_average_before"], *results["load_average_after"]))
    for job, result in results["jobs"].items():
        if "imports" in result["ppdp"]:
            print_imports(job, result["ppdp"]["imports"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    if results["jobs"]:
        print_table(results["jobs"])


def print_table(jobs: dict) -> None:
    """The results as a Markdown table."""
    print("\n| job | ppdp end to end (s) | peer end to end (s) | ppdp / peer, median of pairs "
          "| ppdp in process: read, publish, save (s) | peer in process (s) "
          "| peak RSS ppdp / peer (MB) |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for job, result in jobs.items():
        ppdp, peer = result["ppdp"], result["peer"]
        steps = ppdp.get("in_process")
        shown = (f"{steps['read_seconds']:.3f}, {steps['publish_seconds']:.3f}, "
                 f"{steps['save_seconds']:.3f}" if steps else "")
        peer_alone = f"{peer['in_process_seconds']:.3f}" if "in_process_seconds" in peer else ""
        print(f"| {job} | {ppdp['median_seconds']:.3f} | {peer['median_seconds']:.3f} | "
              f"{result['median_ratio']:.3f} | {shown} | {peer_alone} | "
              f"{ppdp['median_peak_mb']:.0f} / {peer['median_peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
