"""Anatomize a CSV with Qiyuan Gong's pure-Python Anatomy, a peer of ``bench_peers.py``.

    python peer_qiyuangong_anatomy.py DATA.csv --source DIR --sensitive occupation --l 5 \
        [--seed 1] [--sep ';'] -o OUTPUT_DIR

``--source`` is the ``algorithm`` directory of a checkout of
https://github.com/qiyuangong/ppdpes_core (MIT licence), which holds its Anatomy (Xiao and Tao
2006) as ``anatomize.py``; this launcher runs that file's ``anatomize(data, L)`` and changes
none of its files. The module is Python 2 (``print`` statements): the launcher reads its source
text, converts it in memory with the ``print`` fixer of the standard library's ``lib2to3``
(deprecated, shipped up to Python 3.12; its deprecation warning is silenced), and executes
the result as a module. Two more things stand in for Python 2 at run time, without touching
the source:

- its heap holds ``(-size, bucket)`` pairs, so buckets of equal size are compared with each
  other, which Python 2 did by address and Python 3 refuses; the launcher gives its
  ``SABucket`` class a ``__lt__`` comparing ``id`` (the address in CPython), as Python 2
  did, though as a Python-level method where Python 2 compared in C (so its output depends
  on the allocation order as well as on the seed; repeated runs on Adult wrote the same
  tables);
- it imports ``list_to_str`` from the repository's ``utils/utility.py`` for set-valued
  sensitive values, which a CSV's single sensitive column never reaches, and that module
  cannot be loaded by Python 3 (a default argument is the builtin ``cmp``): the launcher
  registers a stand-in ``utils.utility`` whose ``list_to_str`` raises.

Every column but ``--sensitive`` is a quasi-identifier. ``data`` is built as ``anatomize``
expects it: one list per row, the quasi-identifiers first and the sensitive value last, every
value the text read from the CSV (Anatomy publishes quasi-identifiers unchanged). Python's
``random`` (it shuffles each sensitive value's rows and picks groups for the residue) is
seeded with ``--seed``; its ``L=5`` line on stdout is captured. Only the ``anatomize`` call is
timed. It returns the groups of rows; rows it could not place are dropped.

Writes the two tables Anatomy publishes (Xiao and Tao 2006, Section 3) as CSV:
``OUTPUT_DIR/qit.csv`` (the quasi-identifiers and ``GroupID``, rows in group order: the peer
does not shuffle them) and ``OUTPUT_DIR/st.csv`` (``GroupID``, the sensitive value and its
count in the group), and prints one JSON line: the seconds of the ``anatomize`` call alone,
the rows kept, the suppressed rows, the groups, and the fewest distinct sensitive values in a
group. Only the standard library is imported, besides the peer.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import random
import sys
import time
import types
import warnings
from collections import Counter
from pathlib import Path

GROUP_COLUMN = "GroupID"


def without_print_statements(source: str, name: str) -> str:
    """Python 2 source with its ``print`` statements turned into calls by ``lib2to3``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        from lib2to3.refactor import RefactoringTool

        tool = RefactoringTool(["lib2to3.fixes.fix_print"])
        return str(tool.refactor_string(source, name))


def set_valued_only(*_args: object, **_kwargs: object) -> str:
    """Stand-in for ``utils.utility.list_to_str``, which only set-valued data reaches."""
    raise NotImplementedError("set-valued sensitive values are not supported by this launcher")


def load_anatomize(source: Path) -> types.ModuleType:
    """Its ``anatomize.py`` converted and executed as the module ``anatomize``."""
    path = source / "anatomize.py"
    utils, utility = types.ModuleType("utils"), types.ModuleType("utils.utility")
    utility.list_to_str = set_valued_only
    utils.utility = utility
    sys.modules["utils"], sys.modules["utils.utility"] = utils, utility
    module = types.ModuleType("anatomize")
    module.__file__ = str(path)
    code = compile(without_print_statements(path.read_text(), str(path)), str(path), "exec")
    exec(code, module.__dict__)
    module.SABucket.__lt__ = lambda self, other: id(self) < id(other)
    return module


def main() -> None:
    """Anatomize the CSV, write the tables and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--source", type=Path, required=True,
                        help="the algorithm directory of github.com/qiyuangong/ppdpes_core")
    parser.add_argument("--sensitive", required=True)
    parser.add_argument("--l", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sep", default=";")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    if not (args.source / "anatomize.py").is_file():
        parser.error(f"--source: {args.source} has no anatomize.py")
    peer = load_anatomize(args.source)

    with args.data.open(newline="") as handle:
        reader = csv.reader(handle, delimiter=args.sep)
        header = next(reader)
        rows = [row for row in reader if row]
    if args.sensitive not in header:
        parser.error(f"--sensitive: {args.sensitive} is not a column of {args.data}")
    sensitive = header.index(args.sensitive)
    quasi = [index for index in range(len(header)) if index != sensitive]
    data = [[row[index] for index in quasi] + [row[sensitive]] for row in rows]

    random.seed(args.seed)
    with contextlib.redirect_stdout(io.StringIO()):
        start = time.perf_counter()
        groups = peer.anatomize(data, args.l)
        seconds = time.perf_counter() - start

    args.output.mkdir(parents=True, exist_ok=True)
    with (args.output / "qit.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter=args.sep)
        writer.writerow([*(header[index] for index in quasi), GROUP_COLUMN])
        for group_id, members in enumerate(groups):
            writer.writerows([*record[:-1], group_id] for record in members)
    counts = [Counter(record[-1] for record in members) for members in groups]
    with (args.output / "st.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter=args.sep)
        writer.writerow([GROUP_COLUMN, header[sensitive], "count"])
        for group_id, values in enumerate(counts):
            writer.writerows([group_id, value, count] for value, count in values.items())
    kept = sum(len(members) for members in groups)
    print(json.dumps({
        "seconds": seconds, "rows": kept, "suppressed": len(data) - kept,
        "groups": len(groups),
        "fewest_distinct_sensitive": min((len(values) for values in counts), default=0)}))


if __name__ == "__main__":
    main()
