"""Parsing a count query: a bare condition or a full ``SELECT COUNT(*) ... GROUP BY``."""

from __future__ import annotations

from ppdp.query.syntax import Query


def parse_query(text: str | Query) -> Query:
    """Parse a bare condition (``age >= 40 AND sex = 'Female'``) or a full
    ``SELECT COUNT(*) FROM t [WHERE ...] [GROUP BY ...]`` (`ppdp.query_sql`)."""
    # Imported here: sqlglot loads only when a query text is parsed, not for publishing.
    from ppdp.query.sql import parse_query as parsed

    return parsed(text)
