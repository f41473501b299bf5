"""HTTP plumbing of the POS client: the shared ``httpx.Client``, bounded reading of an
answer, ``Retry-After``, and the circuit that stops requests to a dead POS or with a
refused key."""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from pipeline.core.settings import SourceSettings
from pipeline.pos_api.errors import AuthError, ContractError, PosApiError, Unreachable

ACCEPT_ENCODING = "gzip, deflate"
"""What the client can decode, said explicitly: httpx would add ``br`` and ``zstd`` only
where optional packages happen to be installed."""


def parse_retry_after(value: str | None, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP-date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now() if now else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def make_http_client(base_url: str, source: SourceSettings,
                     transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """An ``httpx.Client`` for one base URL: timeouts and headers, no key, no cookies.

    The key travels with each request of a ``PosClient``, so a client shared by the
    locations never sends one location's key with another's request; and it keeps no
    cookie a server sets (a session one location's key opened is never sent along with
    another's: the API authenticates by key alone).
    """
    return httpx.Client(
        base_url=base_url,
        headers={"accept": "application/json", "accept-encoding": ACCEPT_ENCODING},
        timeout=httpx.Timeout(source.read_timeout_seconds,
                              connect=source.connect_timeout_seconds),
        transport=transport,
        cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
    )


def read_body(streamed: httpx.Response, limit_mb: int, deadline: float, where: str,
              location_id: int) -> bytes:
    """The decoded body of a streamed answer, bounded in time and size.

    httpx's read timeout is per chunk: a server that trickles a byte at a time would
    never time out, so the request's deadline bounds the whole body. The size is counted
    after decompression while streaming, so a compressed bomb stops within one chunk of
    the limit, and a body that cannot be decoded is a contract error.
    """
    limit = limit_mb * 2**20
    body = bytearray()
    try:
        for chunk in streamed.iter_bytes():
            body += chunk
            if len(body) > limit:
                raise ContractError(
                    f"{where}: the answer is larger than source.max_response_mb = {limit_mb} "
                    "MB (decompressed); it was not read further", location_id=location_id)
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the response did not complete within "
                                        "request_deadline_seconds", request=streamed.request)
    except httpx.DecodingError as exc:
        encoding = streamed.headers.get("content-encoding", "none")
        raise ContractError(
            f"{where}: the body cannot be decoded (content-encoding {encoding!r}; this "
            f"client accepts {ACCEPT_ENCODING}): {type(exc).__name__}",
            location_id=location_id) from None
    return bytes(body)


class Circuit:
    """What a load has learnt of its POS, shared by its clients: an address that could not
    be reached, a location whose key was refused. Requests there are not tried again, so a
    dead host or a wrong key fails a load in seconds with one message, not once per
    partition after its retries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.unreachable: dict[str, str] = {}
        self.refused: dict[tuple[str, int], str] = {}

    def check(self, base_url: str, location_id: int) -> None:
        if (reason := self.unreachable.get(base_url)) is not None:
            raise Unreachable(reason, location_id=location_id, tried=False)
        if (reason := self.refused.get((base_url, location_id))) is not None:
            raise AuthError(reason, location_id=location_id, status=401, tried=False)

    def trip(self, exc: PosApiError, base_url: str) -> None:
        """Remember a dead address, or a key the server does not know (401: every request
        with it fails; a 403 may concern one action only, so it trips nothing)."""
        with self._lock:
            if isinstance(exc, Unreachable):
                self.unreachable.setdefault(base_url, str(exc))
            elif isinstance(exc, AuthError) and exc.status == 401 \
                    and exc.location_id is not None:
                self.refused.setdefault((base_url, exc.location_id), str(exc))
