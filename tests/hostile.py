"""A POS that answers like the sandbox but alters its revenue reports: hostile or broken
sources over real HTTP."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from decimal import Decimal

import msgspec

from pos_sandbox.app import SandboxConfig, create_app
from pos_sandbox.profiles import rewrite_response
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

        def altered(status, headers, body):
            if status == 200:
                body = ENCODER.encode(self.alter(location, DECODER.decode(body)))
            return headers, body

        await rewrite_response(self.app, scope, receive, send, altered)


def altered_sandbox(alter: Callable, config: SandboxConfig | None = None,
                    suffix: str = REPORTS):
    """The sandbox with its answers on ``suffix`` (default: the revenue reports) passed
    through ``alter``; yields the URL."""
    return serving(_Alter(create_app(config), alter, suffix))


class _Trickle:
    """ASGI app: every revenue report answers 200 and then one byte every 0.1 s, for 8 s
    (bounded, so a test whose client failed to cut it still ends)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"[", "more_body": True})
        for _ in range(80):
            await asyncio.sleep(0.1)
            await send({"type": "http.response.body", "body": b" ", "more_body": True})
        await send({"type": "http.response.body", "body": b"]"})


def trickling_pos():
    """A POS whose revenue report trickles one byte at a time; yields the URL."""
    return serving(_Trickle())


def endless_pages(config: SandboxConfig | None = None):
    """The sandbox, but every revenue page is full of receipts never seen before, whatever
    the cursor: paging would never end. Yields the URL."""
    app = create_app(config)

    async def endless(scope, receive, send):
        if scope["type"] == "http" and scope["path"].endswith(REPORTS):
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            request = DECODER.decode(body)
            template = DECODER.decode(ENCODER.encode(_day_receipts(scope, request)))[0]
            page = [{**template, "transactionId": str(uuid.uuid4())}
                    for _ in range(request.get("limit") or 100)]
            payload = ENCODER.encode(page)
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        await app(scope, receive, send)

    return serving(endless)


def _day_receipts(scope, request) -> list:
    from datetime import datetime, timedelta

    from pos_sandbox.receipts import SandboxData, receipts_on, wire_receipt

    location = int(scope["path"].split("/")[-3])
    # ``after`` is the business day's start less the margin: the day is the one after it
    day = (datetime.fromisoformat(request["after"]) + timedelta(days=1)).date()
    plain = SandboxData(quirks=False)
    return [wire_receipt(r, plain) for r in receipts_on(location, day, plain)[:1]]


async def _drain(receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _streaming(chunks, headers: list[tuple[bytes, bytes]] = ()):
    """ASGI app: every revenue report and catalog answer is 200 with ``chunks()`` streamed
    (each answer made as it is sent, so the server itself stays small)."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await _drain(receive)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), *headers]})
        for chunk in chunks(scope):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def bomb_pos(expands_to_mb: int = 600):
    """A POS whose revenue report is a gzip body of a few hundred KB that expands to
    ``expands_to_mb`` MB. Yields the URL."""
    import zlib
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    blank = b" " * 2**20
    body = packer.compress(b"[") + b"".join(packer.compress(blank)
                                            for _ in range(expands_to_mb))
    body += packer.compress(b"]") + packer.flush()
    return serving(_streaming(lambda scope: [body[i:i + 2**16]
                                             for i in range(0, len(body), 2**16)],
                              [(b"content-encoding", b"gzip")]))


def flooding_pos(receipts: int = 100_404):
    """A POS whose every revenue page holds ``receipts`` new receipts (about 700 MB),
    whatever ``limit`` asked. Yields the URL."""
    from datetime import date

    from pos_sandbox.receipts import SandboxData, receipts_on, wire_receipt
    # the day's longest receipt on the wire (about 2 KB): a page of them is the flood
    template = max((ENCODER.encode(wire_receipt(r, SandboxData()))
                    for r in receipts_on(1001, date(2026, 11, 20), SandboxData())), key=len)
    txn = DECODER.decode(template)["transactionId"].encode()

    def chunks(scope):
        yield b"["
        for n in range(receipts):
            yield (b"," if n else b"") + template.replace(txn, str(uuid.uuid4()).encode())

    return serving(_streaming(lambda scope: (c for c in chunks(scope))))


def endless_catalog(total: int = 10**9):
    """A POS whose catalog pages say ``total`` records and keep coming. Yields the URL."""

    def chunks(scope):
        from urllib.parse import parse_qs
        query = parse_qs(scope["query_string"].decode())
        skip, take = int(query["skip"][0]), int(query["take"][0])
        data = [{"id": skip + n, "name": "x" * 200} for n in range(take)]
        yield ENCODER.encode({"page": {"offset": skip, "limit": take, "total": total},
                              "data": data})

    return serving(_streaming(chunks))


class _Status:
    """ASGI wrapper: every answer of a path ending in ``suffix`` becomes ``status`` with
    ``body`` and ``headers`` (a proxy's 202, a redirect whose body is ``[]``)."""

    def __init__(self, app, suffix: str, status: int, body: bytes,
                 headers: list[tuple[bytes, bytes]]):
        self.app, self.suffix = app, suffix
        self.status, self.body, self.headers = status, body, headers

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope.get("path", "").endswith(self.suffix):
            return await self.app(scope, receive, send)
        await _drain(receive)
        await send({"type": "http.response.start", "status": self.status, "headers": [
            (b"content-type", b"application/json"), *self.headers,
            (b"content-length", str(len(self.body)).encode())]})
        await send({"type": "http.response.body", "body": self.body})


def status_sandbox(status: int, body: bytes = b"[]", suffix: str = REPORTS,
                   headers: list[tuple[bytes, bytes]] = (),
                   config: SandboxConfig | None = None):
    """The sandbox, but every answer on ``suffix`` is ``status`` with ``body``; yields the
    URL."""
    return serving(_Status(create_app(config), suffix, status, body, list(headers)))
