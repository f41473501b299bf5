"""The sandbox's ASGI app: the POS integration API of the spec over HTTP."""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import random
import time
from dataclasses import dataclass, field
from threading import Lock

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pipeline.pos_api import models as m
from pos_sandbox import catalog, world
from pos_sandbox.endpoints import extra_routes
from pos_sandbox.filters import BadRequest, parse_catalog_query
from pos_sandbox.menu import MenuStore
from pos_sandbox.orders import OrderDesk
from pos_sandbox.profiles import Compressing, ServerProfile
from pos_sandbox.receipts import SandboxData
from pos_sandbox.revenue import ENCODER, RevenueBook, UnknownCursor
from pos_sandbox.vouchers import VoucherLedger

RETRY_AFTER_FORMS = ("seconds", "http-date", "none")


@dataclass(frozen=True)
class Faults:
    """Fault injection, off by default: shares of 429 and 5xx answers, bursts of 503,
    added latency."""

    rate_429: float = 0.0
    rate_5xx: float = 0.0
    latency_ms: float = 0.0
    retry_after_seconds: int = 1
    retry_after_form: str = "seconds"
    """How a 429 says when to come back: ``seconds``, an ``http-date``, or ``none``."""
    burst_every: int = 0
    """Every this many requests a burst of ``burst_length`` 503 answers in a row (0: none)."""
    burst_length: int = 3
    seed: int = 7

    def __post_init__(self) -> None:
        if self.retry_after_form not in RETRY_AFTER_FORMS:
            raise ValueError(f"retry_after_form must be one of {RETRY_AFTER_FORMS}")

    @property
    def any(self) -> bool:
        return bool(self.rate_429 or self.rate_5xx or self.latency_ms or self.burst_every)

    def retry_after(self) -> dict[str, str]:
        """The Retry-After header of a 429 in this form (none for ``none``)."""
        if self.retry_after_form == "none":
            return {}
        if self.retry_after_form == "http-date":
            return {"Retry-After": email.utils.formatdate(
                time.time() + self.retry_after_seconds, usegmt=True)}
        return {"Retry-After": str(self.retry_after_seconds)}


@dataclass(frozen=True)
class SandboxConfig:
    data: SandboxData = field(default_factory=SandboxData)
    faults: Faults = field(default_factory=Faults)
    server: ServerProfile = field(default_factory=ServerProfile)
    locations: int = len(world.FIXED_LOCATIONS)
    """How many locations it serves: ids 1001 to 1000 + N (``world.chain``)."""
    days_kept: int = 24
    """Service days whose encoded receipts it keeps (``RevenueBook``; some 1 MB each at
    300 transactions a day): a day asked for again after it left is generated again."""

    @property
    def chain(self) -> world.Chain:
        return world.chain(self.locations)


def json_response(payload, status: int = 200, headers: dict | None = None) -> Response:
    body = payload if isinstance(payload, bytes) else ENCODER.encode(payload)
    return Response(body, status_code=status, headers=headers,
                    media_type="application/json")


def error(status: int, message: str) -> Response:
    return json_response({"status": status, "message": message}, status=status)


class Unauthorized(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def create_app(config: SandboxConfig | None = None) -> Starlette:
    """The sandbox app for ``config`` (default data, no faults)."""
    config = config or SandboxConfig()
    chain = config.chain

    def key_location(request: Request) -> world.SandboxLocation:
        """The location the request's ``x-api-key`` is bound to; 401 when missing or invalid."""
        key = request.headers.get("x-api-key")
        if not key:
            raise Unauthorized(401, "missing x-api-key")
        loc = chain.by_key(key)
        if loc is None:
            raise Unauthorized(401, "invalid x-api-key")
        return loc
    book = RevenueBook(config.data, config.days_kept)
    fault_rng = random.Random(config.faults.seed)
    fault_lock = Lock()

    async def receipts(request: Request) -> Response:
        try:
            loc = key_location(request)
        except Unauthorized as exc:
            return error(exc.status, str(exc))
        path_location = request.path_params.get("location")
        if path_location is not None and path_location not in (str(loc.id), loc.short_code):
            return error(403, "the key is not authorised for this location")
        try:
            body = m.RevenueRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            return error(400, f"invalid request body: {exc.errors(include_url=False)}")

        def collect() -> list[bytes]:
            rows = book.window(loc.id, body.after, body.before, body.after_transaction_id,
                               server=config.server)
            return list(itertools.islice(rows, config.server.page_limit(body.limit)))

        try:
            chunks = await run_in_threadpool(collect)
        except UnknownCursor as exc:
            return error(400, str(exc))
        return json_response(b"[" + b",".join(chunks) + b"]")

    def catalog_endpoint(name: str):
        select = catalog.ENDPOINTS[name]

        async def endpoint(request: Request) -> Response:
            try:
                key_loc = key_location(request)
                query = parse_catalog_query(request.url.query)
                loc = catalog.resolve_location(query, chain)
                if loc.id != key_loc.id:
                    return error(403, "the key is not authorised for this location")
                rows = select(query, loc)
            except Unauthorized as exc:
                return error(exc.status, str(exc))
            except BadRequest as exc:
                return error(400, str(exc))
            page = rows[query.skip:query.skip + query.take]
            return json_response({
                "page": {"offset": query.skip, "limit": query.take, "total": len(rows)},
                "data": [r.model_dump(mode="python", by_alias=True) for r in page],
            })

        return endpoint

    menus, ledger = MenuStore(chain), VoucherLedger(seed=config.data.seed)
    desk = OrderDesk(book, chain=chain)
    routes = [
        *extra_routes(menus, desk, ledger, json_response=json_response, error=error,
                      key_location=key_location, unauthorized=Unauthorized),
        Route("/api/v1/reports/receipts", receipts, methods=["POST"]),
        Route("/api/v1/locations/{location}/reports/receipts", receipts, methods=["POST"]),
        *(Route(f"/api/v1/external/{name}", catalog_endpoint(name), methods=["GET"])
          for name in catalog.ENDPOINTS),
    ]
    app = Starlette(routes=routes)
    app.state.config = config
    app.state.book = book
    app.state.menus, app.state.desk, app.state.ledger = menus, desk, ledger
    faults = config.faults
    if faults.any:
        app.add_middleware(_FaultMiddleware, faults=faults, rng=fault_rng, lock=fault_lock)
    if config.server.content_encoding:
        app.add_middleware(Compressing, encoding=config.server.content_encoding)
    return app


class _FaultMiddleware:
    """Answers a share of requests with 429 (with Retry-After in its form) or 503, bursts
    of 503, and adds latency."""

    def __init__(self, app, faults: Faults, rng: random.Random, lock: Lock):
        self.app, self.faults, self.rng, self.lock = app, faults, rng, lock
        self.count = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        with self.lock:
            draw = self.rng.random()
            self.count += 1
            n = self.count
        if self.faults.latency_ms:
            await asyncio.sleep(self.faults.latency_ms / 1000)
        every = self.faults.burst_every
        if every and n % every < self.faults.burst_length:
            return await error(503, "service unavailable (burst)")(scope, receive, send)
        if draw < self.faults.rate_429:
            response = error(429, "rate limit reached")
            response.headers.update(self.faults.retry_after())
            return await response(scope, receive, send)
        if draw < self.faults.rate_429 + self.faults.rate_5xx:
            return await error(503, "service unavailable")(scope, receive, send)
        return await self.app(scope, receive, send)

