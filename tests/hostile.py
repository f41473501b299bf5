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


REPORTS = "/reports/receipts"
VOUCHER_LIST = "/voucherservice/api/v1/vouchers"


class _Alter:
    """ASGI wrapper: ``alter(location, body)`` rewrites every 200 answer of a path ending in
    ``suffix`` (the location is the revenue path's, else None)."""

    def __init__(self, app, alter: Callable, suffix: str):
        self.app, self.alter, self.suffix = app, alter, suffix

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.endswith(self.suffix):
            return await self.app(scope, receive, send)
        location = path.split("/")[-3] if self.suffix == REPORTS else None
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


def altered_sandbox(alter: Callable, config: SandboxConfig | None = None,
                    suffix: str = REPORTS):
    """The sandbox with its answers on ``suffix`` (default: the revenue reports) passed
    through ``alter``; yields the URL."""
    return serving(_Alter(create_app(config), alter, suffix))
