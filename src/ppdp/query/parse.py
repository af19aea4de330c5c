"""Parsing a count query: a bare condition or a full ``SELECT COUNT(*) ... GROUP BY``."""

from __future__ import annotations

from ppdp.query.syntax import Query


def parse_query(text: str | Query) -> Query:
    """Parse a bare condition (``age >= 40 AND sex = 'Female'``) or a full
    ``SELECT COUNT(*) FROM t [WHERE ...] [GROUP BY ...]`` (`ppdp.query.sql`)."""
    # Deferred for start-up speed, not for a cycle (`ppdp.query.sql` imports only the syntax):
    # importing sqlglot takes 0.2-0.3 s (python -X importtime), and publishing, loading or
    # saving a release never parses a query.
    from ppdp.query.sql import parse_query as parsed

    return parsed(text)
