"""Count queries: parsed from SQL (a condition, or ``SELECT COUNT(*) ... GROUP BY``), bound to
a schema's domains, split on the columns a mechanism randomizes, and counted exactly over
encoded rows or over the files of a release.

Modules: `syntax` (the query tree and its limits), `parse` and `sql` (parsing; sqlglot is
imported only when a text is parsed), `predicates` (conditions bound to codes), `binding`
(names and literals resolved against a schema), `splitting`, `cube` (contingency tables over
code arrays), `scan_cube` (over Parquet files, with `cache`, `codes` and `encoding`), `grouped`
(answers over GROUP BY domains), `domain_count` (tuples of a whole domain satisfying a
condition), `row_counts` (the counts of a release's distinct rows). Exact answers on a table
are the table's (`ppdp.table.Table.count`).
"""

from ppdp.query.binding import BoundQuery, bind
from ppdp.query.cube import MAX_CUBE_CELLS, Cube, count_histogram
from ppdp.query.parse import parse_query
from ppdp.query.predicates import (
    AllOf,
    AnyOf,
    ColumnSet,
    Const,
    Negation,
    Predicate,
    RowCondition,
    simplify,
)
from ppdp.query.scan_cube import ScanCube
from ppdp.query.splitting import split
from ppdp.query.syntax import MAX_DEPTH, MAX_QUERY_CHARS, MAX_TERMS, PARSED_CACHE_SIZE, Query

__all__ = ["MAX_CUBE_CELLS", "MAX_DEPTH", "MAX_QUERY_CHARS", "MAX_TERMS", "PARSED_CACHE_SIZE",
           "AllOf", "AnyOf", "BoundQuery", "ColumnSet", "Const", "Cube", "Negation",
           "Predicate", "Query", "RowCondition", "ScanCube", "bind", "count_histogram",
           "grouped", "parse_query", "simplify", "split"]
