"""A POS that answers like the sandbox but alters its revenue reports: hostile or broken
sources over real HTTP."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import msgspec

from pos_sandbox.app import SandboxConfig, create_app
from pos_sandbox.revenue import ENCODER
from pos_sandbox.server import serving

DECODER = msgspec.json.Decoder(float_hook=Decimal)  # numbers stay exact


class _AlterReports:
    """ASGI wrapper: ``alter(location, rows)`` rewrites every 200 revenue report."""

    def __init__(self, app, alter: Callable[[str, list[dict]], list[dict]]):
        self.app, self.alter = app, alter

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.endswith("/reports/receipts"):
            return await self.app(scope, receive, send)
        location = path.split("/")[-3]
        start: dict = {}
        chunks: list[bytes] = []

        async def capture(message):
            if message["type"] == "http.response.start":
                start.update(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            if start["status"] == 200:
                body = ENCODER.encode(self.alter(location, DECODER.decode(body)))
            headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            await send({**start, "headers": [*headers,
                                             (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)


def altered_sandbox(alter: Callable[[str, list[dict]], list[dict]],
                    config: SandboxConfig | None = None):
    """The sandbox with its revenue reports passed through ``alter``; yields the URL."""
    return serving(_AlterReports(create_app(config), alter))
