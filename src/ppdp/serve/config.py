"""What a query server is told: the directory of releases, where it listens, its token, the
public key of its certificates and its limits (`ServeConfig`), checked before it starts.

A server on the loopback interface answers only this machine; one that listens elsewhere
answers anyone who reaches the port, so it must be given a token (`check_bind`), and every
request must then carry it."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from ppdp.query import MAX_QUERY_CHARS

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MIN_TOKEN_CHARS", "TOKEN_ENV", "Limits",
           "ServeConfig", "check_bind", "is_loopback", "read_token"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
TOKEN_ENV = "PPDP_SERVE_TOKEN"
"""The environment variable that may hold the token (else ``--token-file``)."""
MIN_TOKEN_CHARS = 16
"""A shorter token could be guessed by trying."""


@dataclass(frozen=True)
class Limits:
    """What one request may ask: the bytes of its body, the characters of a query (the
    command line's own limit, `ppdp.query.MAX_QUERY_CHARS`) and the queries of a batch."""

    max_body_bytes: int = 2 * MAX_QUERY_CHARS
    max_query_chars: int = MAX_QUERY_CHARS
    max_batch: int = 1_000

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_query_chars", "max_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class ServeConfig:
    """A query server's settings (`ppdp.serve.create_app`).

    ``directory`` (a path or its text) holds the releases, one directory each; ``host`` and
    ``port`` say where the server listens (the Host header of a request must name them);
    ``token``, when set, must come with every request as ``Authorization: Bearer <token>``;
    ``public_key`` (a key file), when set, is the key every release's certificate must be
    signed with."""

    directory: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = field(default=None, repr=False)
    public_key: Path | None = None
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        # Paths given as text are taken as paths (the dataclass is frozen: set through object).
        object.__setattr__(self, "directory", Path(self.directory))
        if self.public_key is not None:
            object.__setattr__(self, "public_key", Path(self.public_key))
        if not self.directory.is_dir():
            raise ValueError(f"{self.directory} is not a directory of releases")
        if not 0 <= self.port <= 65_535:
            raise ValueError(f"port must be between 0 and 65535, got {self.port}")
        if self.token is not None and len(self.token) < MIN_TOKEN_CHARS:
            raise ValueError(f"the token has {len(self.token)} characters; use at least "
                             f"{MIN_TOKEN_CHARS} (python -c 'import secrets; "
                             f"print(secrets.token_urlsafe())' makes one)")
        if self.public_key is not None and not self.public_key.is_file():
            raise ValueError(f"the public key {self.public_key} is not a file")
        check_bind(self.host, self.token)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names the loopback interface only (``localhost``, 127.0.0.0/8,
    ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name other than localhost: it may resolve anywhere
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond the loopback interface without a token."""
    if token is None and not is_loopback(host):
        raise ValueError(f"--host {host} answers other machines: give a token "
                         f"(--token-file FILE or the {TOKEN_ENV} environment variable), "
                         f"which every request must then send as 'Authorization: Bearer "
                         f"TOKEN'")


def read_token(token_file: Path | None) -> str | None:
    """The token of ``token_file`` (its first line), else of the `TOKEN_ENV` environment
    variable, else None."""
    if token_file is not None:
        try:
            lines = token_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"the token file {token_file} cannot be read: {exc}") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise ValueError(f"the token file {token_file} is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    return token or None
