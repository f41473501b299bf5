"""Server profiles: how the sandbox answers where the spec says "not shown" or leaves room.

Each field is one way a real vendor's server may behave, off by default (the default is
the strict reading of the spec). The pipeline must load every one of them exactly; the
test matrix (``tests/integration/test_server_profiles.py``) proves it over real HTTP.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ServerProfile:
    """How the revenue report pages and how every answer travels."""

    limit_cap: int | None = None
    """Serve at most this many receipts per page, whatever ``limit`` asks (its maximum is
    not shown; real servers cap at 100, 250 or 1,000)."""
    ignore_limit: bool = False
    """Serve the whole rest of the window in one page, longer than ``limit``."""
    order_by_id: bool = False
    """Order rows (and page) by ``transactionId`` instead of by time."""
    inclusive_bounds: bool = False
    """Read ``after``/``before`` as inclusive instead of exclusive."""
    repeat_cursor_row: bool = False
    """Start each page after the first with the cursor's own row again (the same receipt
    on both sides of a page boundary)."""
    content_encoding: str | None = None
    """Compress every answer (``gzip`` or ``deflate``), as a proxy in front of the POS
    would, whatever the client asked for."""

    def __post_init__(self) -> None:
        if self.content_encoding not in (None, "gzip", "deflate"):
            raise ValueError(f"content_encoding must be gzip or deflate, not "
                             f"{self.content_encoding!r}")
        if self.limit_cap is not None and self.limit_cap < 1:
            raise ValueError("limit_cap must be 1 or more")

    def page_limit(self, asked: int | None) -> int | None:
        """How many rows this server puts on a page when ``asked`` for ``limit``."""
        if self.ignore_limit:
            return self.limit_cap
        if self.limit_cap is None:
            return asked
        return min(asked or self.limit_cap, self.limit_cap)

    def describe(self) -> str:
        """The profile's non-default settings, for the banner."""
        changed = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                   if getattr(self, f.name) != f.default]
        return ", ".join(changed) or "strict (the spec's reading)"


def compress(body: bytes, encoding: str) -> bytes:
    """``body`` in a content-encoding: gzip, or deflate (zlib-wrapped, as RFC 9110 says)."""
    if encoding == "gzip":
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    else:
        packer = zlib.compressobj(6, zlib.DEFLATED, 15)
    return packer.compress(body) + packer.flush()


async def rewrite_response(app, scope, receive, send, change) -> None:
    """Run the ASGI ``app`` and send its answer as ``change(status, headers, body)`` returns
    it, ``(headers, body)``; the content-length is set anew."""
    start: dict = {}
    chunks: list[bytes] = []

    async def capture(message):
        if message["type"] == "http.response.start":
            start.update(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        headers, body = change(start["status"], start.get("headers", []), b"".join(chunks))
        headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers,
                                         (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    await app(scope, receive, capture)


class Compressing:
    """ASGI middleware: every HTTP answer compressed in ``encoding``."""

    def __init__(self, app, encoding: str):
        self.app, self.encoding = app, encoding

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        def compressed(status, headers, body):
            headers = [(k, v) for k, v in headers if k.lower() != b"content-encoding"]
            return ([*headers, (b"content-encoding", self.encoding.encode())],
                    compress(body, self.encoding))

        await rewrite_response(self.app, scope, receive, send, compressed)
