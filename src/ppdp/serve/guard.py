"""The checks every request passes before it reaches an endpoint (`Guard`, an ASGI middleware):
the Host header, the origin, the token and the size of the body.

- **Host**: a page from another site can make a browser send requests to this server under
  the site's own name (DNS rebinding); the Host header then names that site, not the address
  the server is bound to, and is refused (400). A server bound to every interface (``0.0.0.0``,
  ``::``) has no one name to check, and relies on its token, which such a page cannot send.
- **Origin**: a request a browser sends from a page of another origin is refused (403), and no
  CORS header is ever sent, so no page of another origin reads an answer either.
- **Token**: when the server has one, every request must send ``Authorization: Bearer
  <token>`` (401 otherwise); the comparison takes the same time wherever the first difference
  is (`hmac.compare_digest`).
- **Body**: a body longer than the limit is refused (413) from its Content-Length, or, sent in
  chunks, as soon as it exceeds the limit; no more of it is read. The guard reads the body
  (the endpoints take small JSON documents) and hands it on whole.
- **WebSocket**: refused; no endpoint takes one.

Each refusal is an answer of one line of JSON, ``{"error": "..."}``, as every other."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ppdp.serve.config import ServeConfig, is_loopback
from ppdp.serve.errors import error_response

__all__ = ["Guard", "allowed_hosts"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_WILDCARDS = {"0.0.0.0", "::", "[::]", ""}
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class _BodyTooLarge(Exception):
    """The body went past the limit while it was being read."""


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host headers a server bound to ``host``:``port`` answers (with and without the
    port; the loopback names for a loopback address); None for a wildcard address (any)."""
    if host in _WILDCARDS:
        return None
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = {name.lower()}
    if is_loopback(host):
        names.update(_LOOPBACK_NAMES)
    return frozenset({*names, *(f"{n}:{port}" for n in names)})


class Guard:
    """The ASGI middleware of the module docstring, in front of ``app``."""

    def __init__(self, app: ASGIApp, *, config: ServeConfig) -> None:
        self.app = app
        self.hosts = allowed_hosts(config.host, config.port)
        self.token = None if config.token is None else config.token.encode()
        self.max_body = config.limits.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # No endpoint takes one, and none would pass the checks below: refused (403).
            await receive()
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # the server's start and end (lifespan)
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1")
                   for key, value in scope.get("headers", [])}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await error_response(*refusal)(scope, receive, send)
            return
        length = headers.get("content-length")
        if length is not None and not length.isdigit():
            await error_response(400, "the Content-Length header is not a number")(
                scope, receive, send)
            return
        if length is not None and int(length) > self.max_body:
            await error_response(413, f"the request body is larger than {self.max_body:,} "
                                      f"bytes")(scope, receive, send)
            return
        try:
            body = await _read_body(receive, self.max_body)
        except _BodyTooLarge:
            await error_response(413, f"the request body is larger than {self.max_body:,} "
                                      f"bytes")(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            # The body read above, then what the client sends next (a disconnect).
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """The status and reason of a refusal of the request, or None."""
        host = headers.get("host", "").lower()
        if self.hosts is not None and host not in self.hosts:
            return 400, "the Host header does not name this server"
        origin = headers.get("origin")
        if origin is not None:
            own = f"{scope.get('scheme', 'http')}://{host}"
            if origin.lower() != own:
                return 403, "cross-origin requests are refused"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "cross-origin requests are refused"
        if self.token is not None:
            scheme, _, given = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                    given.strip().encode("latin-1"), self.token):
                return 401, "a valid token is required: send 'Authorization: Bearer TOKEN'"
        return None


async def _read_body(receive: Receive, limit: int) -> bytes:
    """The whole body of a request, read here so that no endpoint reads more than ``limit``
    bytes of it: `_BodyTooLarge` as soon as it exceeds them."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to answer
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
