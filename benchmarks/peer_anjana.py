"""Anonymize a CSV with the anjana library, the peer of ``bench_peers.py``; run in anjana's venv.

    python peer_anjana.py DATA.csv --hierarchies DIR --sensitive occupation --k 10 \
        [--l 5] [--supp-level 0] [--sep ';'] -o OUTPUT_DIR

Reads the table with pandas and every ``*hierarchy_<column>.csv`` of DIR (ARX format: one
line per leaf, ``leaf;level1;...;*``) as anjana's hierarchies (level i is column i of the
file), takes every column but the sensitive one as a quasi-identifier, and runs anjana's
``k_anonymity`` (or ``l_diversity`` with ``--l``): a greedy full-domain generalization that
raises the level of the quasi-identifier with the most distinct values until the classes
reach k (and l distinct sensitive values), suppressing classes only within ``--supp-level``
percent of the rows. Writes ``OUTPUT_DIR/anonymized.csv`` and prints one JSON line: the
seconds of the anonymization call alone, the rows kept, the equivalence classes, and the
quasi-identifiers generalized to a single value.

This script imports only pandas and anjana, so that it runs in a virtual environment of its
own (``pip install anjana``), apart from ppdp's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time
from pathlib import Path

import pandas as pd
from anjana.anonymity import k_anonymity, l_diversity


def read_hierarchies(folder: Path, columns: list[str]) -> dict[str, dict]:
    """anjana's hierarchies ({column: {level: values}}) from the ARX files of ``columns``."""
    hierarchies = {}
    for column in columns:
        (path,) = folder.glob(f"*hierarchy_{column}.csv")
        hierarchies[column] = dict(pd.read_csv(path, sep=";", header=None))
    return hierarchies


def main() -> None:
    """Anonymize the CSV, write the result and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--hierarchies", type=Path, required=True)
    parser.add_argument("--sensitive", required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--l", type=int, default=None, help="also distinct l-diversity")
    parser.add_argument("--supp-level", type=float, default=0.0,
                        help="percentage of rows anjana may suppress (0 to 100)")
    parser.add_argument("--sep", default=";")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    data = pd.read_csv(args.data, sep=args.sep)
    quasi_identifiers = [column for column in data.columns if column != args.sensitive]
    hierarchies = read_hierarchies(args.hierarchies, quasi_identifiers)
    start = time.perf_counter()
    # anjana prints progress notes on stdout; keep stdout for the JSON summary.
    with contextlib.redirect_stdout(io.StringIO()):
        if args.l is None:
            anonymized = k_anonymity(data, [], quasi_identifiers, args.k, args.supp_level,
                                     hierarchies)
        else:
            anonymized = l_diversity(data, [], quasi_identifiers, args.sensitive, args.k,
                                     args.l, args.supp_level, hierarchies)
    seconds = time.perf_counter() - start
    args.output.mkdir(parents=True, exist_ok=True)
    anonymized.to_csv(args.output / "anonymized.csv", sep=args.sep, index=False)
    classes = len(anonymized.groupby(quasi_identifiers)) if len(anonymized) else 0
    print(json.dumps({
        "seconds": seconds, "rows": len(anonymized), "classes": classes,
        "single_valued": [column for column in quasi_identifiers
                          if len(anonymized) and anonymized[column].nunique() == 1]}))


if __name__ == "__main__":
    main()
