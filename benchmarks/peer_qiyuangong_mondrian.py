"""Anonymize a CSV with Qiyuan Gong's pure-Python Mondrian, a peer of ``bench_peers.py``.

    python peer_qiyuangong_mondrian.py DATA.csv --source DIR --hierarchies DIR \
        --sensitive occupation --k 10 [--relax] [--sep ';'] -o OUTPUT_DIR

``--source`` is a checkout of https://github.com/qiyuangong/Mondrian (MIT licence); this
launcher imports its ``mondrian.mondrian`` and ``utils.utility.covert_to_raw`` from there and
changes none of its files. Its own command line (``anonymizer.py``) reads only a fixed
``data/adult.data`` with its own choice of columns (sensitive attribute ``class``), and opens
it in mode ``'rU'``, which Python 3.11 removed; this launcher builds the same kind of input
instead: one list per row, the quasi-identifiers first and the sensitive value last, numbers as
ints and every other value as its integer position in a total order, which its Mondrian cuts
as a number.

Every column but ``--sensitive`` is a quasi-identifier. A column whose values are all integers
(age) is passed as those integers, as its Adult reader does; a text column is ordered
depth-first by its ARX hierarchy ``DIR/*hierarchy_<column>.csv`` (one line per leaf,
``leaf;level1;...;*``; siblings ordered by the alphabetically first leaf under each), so that
the values under a node are adjacent: the order in which ppdp's Mondrian cuts a text column
with a hierarchy. Without a hierarchy file a column is ordered by first appearance, as its
reader does. Its Mondrian uses no hierarchy: a class publishes, per quasi-identifier, the range
between its smallest and largest position, written back by its ``covert_to_raw`` as every
value of the range joined by ``~``.

Runs the strict Mondrian (``--relax``: the relaxed one) with ``--k``, writes
``OUTPUT_DIR/anonymized.csv`` and prints one JSON line: the seconds of the ``mondrian`` call
alone, the rows kept, the equivalence classes, the smallest class and the quasi-identifiers
generalized to a single value. Only the standard library is imported, besides the peer.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path


def depth_first_order(path: Path) -> list[str]:
    """The leaves of an ARX hierarchy file depth-first, siblings by their first leaf in
    alphabetical order."""
    with path.open(newline="") as handle:
        lines = sorted((line for line in csv.reader(handle, delimiter=";") if line),
                       key=lambda line: line[0])
    first_mention: list[dict[str, int]] = [{} for _ in lines[0]]
    for line in lines:
        for level, label in enumerate(line):
            first_mention[level].setdefault(label, len(first_mention[level]))

    def path_from_top(line: list[str]) -> tuple[int, ...]:
        return tuple(first_mention[level][line[level]] for level in reversed(range(len(line))))

    return [line[0] for line in sorted(lines, key=path_from_top)]


def value_order(column: str, values: list[str], hierarchies: Path) -> list[str]:
    """A text column's values in the order its Mondrian cuts them (see the module docstring)."""
    files = sorted(hierarchies.glob(f"*hierarchy_{column}.csv"))
    if not files:
        return list(dict.fromkeys(values))
    order = depth_first_order(files[0])
    missing = set(values) - set(order)
    if missing:
        raise SystemExit(f"{column}: values not in {files[0].name}: {sorted(missing)[:5]}")
    return order


def main() -> None:
    """Anonymize the CSV, write the result and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--source", type=Path, required=True,
                        help="a checkout of github.com/qiyuangong/Mondrian")
    parser.add_argument("--hierarchies", type=Path, required=True)
    parser.add_argument("--sensitive", required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--relax", action="store_true", help="relaxed Mondrian (default strict)")
    parser.add_argument("--sep", default=";")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    sys.path.insert(0, str(args.source.resolve()))
    # Its modules compare with `is not ''`, which Python 3.8+ warns about when compiling.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        from mondrian import mondrian
        from utils.utility import covert_to_raw

    with args.data.open(newline="") as handle:
        reader = csv.reader(handle, delimiter=args.sep)
        header = next(reader)
        rows = [row for row in reader if row]
    sensitive = header.index(args.sensitive)
    quasi = [index for index in range(len(header)) if index != sensitive]
    # covert_to_raw reads an empty order as "a number, published as it is".
    orders: list[list[str]] = []
    encoders: list[dict[str, int]] = []
    for index in quasi:
        values = {row[index] for row in rows}
        if all(value.lstrip("-").isdigit() for value in values):
            orders.append([])
            encoders.append({value: int(value) for value in values})
        else:
            order = value_order(header[index], [row[index] for row in rows], args.hierarchies)
            orders.append(order)
            encoders.append({value: rank for rank, value in enumerate(order)})
    data = [[encoder[row[index]] for encoder, index in zip(encoders, quasi, strict=True)]
            + [row[sensitive]] for row in rows]

    start = time.perf_counter()
    result, _ = mondrian(data, args.k, args.relax)
    seconds = time.perf_counter() - start

    published = covert_to_raw(result, orders)
    args.output.mkdir(parents=True, exist_ok=True)
    with (args.output / "anonymized.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter=args.sep)
        writer.writerow([*(header[index] for index in quasi), header[sensitive]])
        writer.writerows(published)
    sizes = Counter(tuple(row[:len(quasi)]) for row in published)
    print(json.dumps({
        "seconds": seconds, "rows": len(published), "classes": len(sizes),
        "smallest_class": min(sizes.values()) if sizes else 0,
        "single_valued": [header[index] for position, index in enumerate(quasi)
                          if len({row[position] for row in published}) == 1]}))


if __name__ == "__main__":
    main()
