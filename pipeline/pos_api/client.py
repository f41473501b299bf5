"""The POS API client: one ``httpx.Client`` per location, retries, paging, exact decimals.

Every request goes through ``_request``, which retries 429, 5xx and transport errors
with exponential backoff and full jitter (honouring ``Retry-After``) inside a bounded
budget, and turns every failure into the project's own exceptions. Those name the
location and the status; the key never appears in a message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import msgspec
from pydantic import BaseModel
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from pipeline.core.settings import SourceSettings
from pipeline.core.untrusted import Redactor, redact_url
from pipeline.pos_api.answers import (
    DECODER,
    ENCODER,
    TEXT_DECODER,
    ReceiptPage,
    receipt_page,
    refuse_repeated_keys,
)
from pipeline.pos_api.budget import RequestBudget
from pipeline.pos_api.errors import (
    AuthError,
    ContractError,
    RequestError,
    RetryableStatus,
    TransientError,
    Unreachable,
)
from pipeline.pos_api.http import Circuit, make_http_client, parse_retry_after, read_body


def encode_body(model: BaseModel) -> bytes:
    """A request body from a spec model: wire names, no nulls, decimals as JSON numbers."""
    return ENCODER.encode(model.model_dump(mode="python", by_alias=True, exclude_none=True))


CATALOG_TAKE_MAX = 500

SPEC_OK = frozenset({200})
"""The status of a successful read (revenue, catalog, menu, vouchers): the spec's answers are
bodies of 200; any other status, a 2xx or a redirect included, is not a page."""
ORDER_OK = frozenset(range(200, 300))
"""An order's success status is not shown in the spec (4.3): any 2xx, and nothing else."""


def _statuses(expect: frozenset[int]) -> str:
    return "any 2xx" if expect == ORDER_OK else \
        " or ".join(f"HTTP {s}" for s in sorted(expect))


@dataclass
class ClientStats:
    """What a client did, for run metadata."""

    requests: int = 0
    retries: int = 0
    pages: int = 0


def _only_the_cursors_neighbours(rows: list, cursor: dict | None, where: str,
                                 location_id: int) -> None:
    """A page of receipts received before may end a listing only where it repeats the
    cursor's own row (a server whose cursor is inclusive) or receipts of the cursor's
    second (one that pages on the time); anything else means the cursor was ignored."""
    cursor = cursor or {}
    for row in rows:
        row = row if isinstance(row, dict) else {}
        if row.get("transactionId") == cursor.get("transactionId") or (
                cursor.get("dateTime") is not None
                and row.get("dateTime") == cursor.get("dateTime")):
            continue
        raise ContractError(
            f"{where}: the cursor did not advance (afterTransactionID="
            f"{cursor.get('transactionId')} answered receipt {row.get('transactionId')}, "
            "received before it)", location_id=location_id)


class PosClient:
    """Client of one location's POS API (the key is bound to that location)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        location_id: int,
        source: SourceSettings | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        request_slots: threading.Semaphore | None = None,
        key_hint: str | None = None,
        http: httpx.Client | None = None,
        circuit: Circuit | None = None,
        budget: RequestBudget | None = None,
    ):
        self.source = source or SourceSettings()
        self.location_id = location_id
        self.stats = ClientStats()
        self._sleep = sleep
        self._slots = request_slots
        self._key_hint = key_hint
        self._owns_http = http is None
        self._http = http or make_http_client(base_url, self.source, transport)
        self._auth = {"x-api-key": api_key}
        self._redact = Redactor([api_key])
        self._circuit = circuit or Circuit()
        self._budget = budget
        self.base_url = redact_url(str(self._http.base_url).rstrip("/"))
        """The POS's address as messages show it (credentials in it replaced)."""

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> PosClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the one request method ---------------------------------------------------------

    def _wait(self, state) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableStatus) and exc.retry_after is not None:
            return exc.retry_after
        return wait_random_exponential(multiplier=self.source.backoff_initial_seconds,
                                       max=self.source.backoff_max_seconds)(state)

    def _count_retry(self, state) -> None:
        self.stats.retries += 1

    def _attempt(self, method: str, path: str, kwargs: dict, deadline: float) -> httpx.Response:
        with self._slots or nullcontext():
            if self._budget is not None:  # the host's, shared with other processes
                self._budget.take()
            self.stats.requests += 1
            headers = {**kwargs.get("headers", {}), **self._auth}
            with self._http.stream(method, path, **{**kwargs, "headers": headers}) as streamed:
                body = read_body(streamed, self.source.max_response_mb, deadline,
                                 f"location {self.location_id}: {method} {path}",
                                 self.location_id)
            # The body is decoded already: the answer handed on no longer carries the
            # server's content-encoding (httpx would decode it a second time).
            plain = [(k, v) for k, v in streamed.headers.multi_items()
                     if k.lower() not in ("content-encoding", "content-length")]
            response = httpx.Response(streamed.status_code, headers=plain, content=body,
                                      request=streamed.request)
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            if response.status_code == 429 and retry_after and self._budget is not None:
                self._budget.hold(retry_after)  # every process reading the host waits
            raise RetryableStatus(response.status_code, retry_after)
        return response

    def _request(self, method: str, path: str, *, expect: frozenset[int] = SPEC_OK,
                 **kwargs) -> httpx.Response:
        """The answer of one request whose status is one of ``expect``; anything else is
        one of the project's exceptions naming the location and the status."""
        self._circuit.check(self.base_url, self.location_id)
        try:
            return self._request_once(method, path, expect, **kwargs)
        except (Unreachable, AuthError) as exc:
            self._circuit.trip(exc, self.base_url)
            raise

    def _request_once(self, method: str, path: str, expect: frozenset[int],
                      **kwargs) -> httpx.Response:
        where = f"location {self.location_id}: {method} {path}"
        retrying = Retrying(
            stop=stop_after_attempt(self.source.max_attempts)
            | stop_before_delay(self.source.request_deadline_seconds),
            wait=self._wait,
            retry=retry_if_exception_type((RetryableStatus, httpx.TransportError)),
            sleep=self._sleep,
            before_sleep=self._count_retry,
            reraise=True,
        )
        try:
            deadline = time.monotonic() + self.source.request_deadline_seconds
            response = retrying(self._attempt, method, path, kwargs, deadline)
        except RetryableStatus as exc:
            raise TransientError(
                f"{where} answered HTTP {exc.status} after {self.stats.retries} retries",
                location_id=self.location_id, status=exc.status) from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise Unreachable(f"the POS at {self.base_url} is unreachable: "
                              f"{type(exc).__name__} ({where}, {self.stats.retries} retries)",
                              location_id=self.location_id) from None
        except httpx.TransportError as exc:
            raise TransientError(f"{where} failed: {type(exc).__name__} (retries exhausted)",
                                 location_id=self.location_id) from None
        status = response.status_code
        if status in (401, 403):
            reason = ("the API key is missing or invalid" if status == 401
                      else "the API key is not authorised for this location or action")
            hint = f" (key from ${self._key_hint})" if self._key_hint else ""
            raise AuthError(f"{where} answered HTTP {status}: {reason}{hint}",
                            location_id=self.location_id, status=status)
        if status >= 400:
            raise RequestError(f"{where} answered HTTP {status}: {self._excerpt(response)}",
                               location_id=self.location_id, status=status)
        if status not in expect:
            raise ContractError(f"{where} answered HTTP {status}{self._redirect(response)}, "
                                f"where the spec's answer is {_statuses(expect)}; the answer "
                                "was not read", location_id=self.location_id, status=status)
        return response

    @staticmethod
    def _redirect(response: httpx.Response) -> str:
        """Where a redirect points (its host only): it is never followed, so the key is
        never sent there."""
        location = response.headers.get("location")
        if not 300 <= response.status_code < 400 or not location:
            return ""
        try:
            host = response.request.url.join(location).host
        except (httpx.InvalidURL, ValueError):
            return " (a redirect to an address that is not a URL)"
        return f" (a redirect to {host}, not followed)"

    def _excerpt(self, response: httpx.Response) -> str:
        """The start of an error answer, the key redacted in any form it may be echoed."""
        return self._redact(response.text[:2000])[:300]

    def _decode(self, response: httpx.Response, what: str, decoder=DECODER) -> Any:
        try:
            value = decoder.decode(response.content)
            refuse_repeated_keys(response.content, value,
                                 f"location {self.location_id}: {what}", self.location_id)
            return value
        except msgspec.DecodeError as exc:
            raise ContractError(f"location {self.location_id}: {what}: malformed JSON ({exc})",
                                location_id=self.location_id) from None
        except RecursionError:
            raise ContractError(f"location {self.location_id}: {what}: JSON nested too deep "
                                "to be a response of the spec", location_id=self.location_id) \
                from None

    def _receipt_page(self, response: httpx.Response) -> tuple[ReceiptPage, Any]:
        return receipt_page(response.content,
                            lambda: self._decode(response, "revenue report", TEXT_DECODER))

    # --- revenue report (4.1) -------------------------------------------------------------

    def receipt_pages(self, after: datetime, before: datetime,
                      page_size: int | None = None) -> Iterator[list[dict]]:
        """The pages of ``receipt_answers``, each decoded to dicts and checked."""
        for page in self.receipt_answers(after, before, page_size):
            yield page.rows()

    def receipt_answers(self, after: datetime, before: datetime,
                        page_size: int | None = None) -> Iterator[ReceiptPage]:
        """Pages of receipts with after < dateTime < before, following the spec's cursor rule,
        with the end of the listing confirmed.

        The spec ends a listing at a page shorter than ``limit``, but the maximum of
        ``limit`` is not shown: a server that caps it lower sends short pages that are
        not the end. So a short page is not trusted: the listing ends only when a request
        after the last ``transactionId`` brings no receipt not received before (an empty
        page, or one that only repeats the cursor's row or receipts of its second). That
        costs one request per listing whose last page is short. Pages longer than
        ``limit`` are read as they come. A server that answers the cursor with receipts
        received before, or repeats a cursor, is a ``ContractError``, not a loop. Numbers
        with a fraction are kept as their exact JSON text (the flattening casts them to
        DECIMAL), which is much faster than making a ``Decimal`` of each.

        Paging decodes only each receipt's ``transactionId`` and ``dateTime``; the rest
        is decoded by the reader of the page (``ReceiptPage``). An answer that is not an
        array of objects is decoded whole, as before.
        """
        limit = page_size or self.source.page_size
        path = f"/api/v1/locations/{self.location_id}/reports/receipts"
        where = f"location {self.location_id}: revenue report"
        cursor: dict | None = None
        sent: set[str] = set()
        seen: set = set()
        ceiling = self.source.max_receipts_per_partition
        while True:
            body: dict[str, Any] = {"after": after.isoformat(), "before": before.isoformat(),
                                    "limit": limit}
            if cursor is not None:
                body["afterTransactionID"] = cursor["transactionId"]
            page, rows = self._receipt_page(self._request("POST", path, json=body))
            if not isinstance(rows, list):
                raise ContractError(f"{where}: expected a JSON array, got "
                                    f"{type(rows).__name__}", location_id=self.location_id)
            self.stats.pages += 1
            ids = [r.get("transactionId") if isinstance(r, dict) else None for r in rows]
            new = {i for i in ids if i not in seen}
            if rows and not new:  # nothing new: the end, unless the cursor was ignored
                _only_the_cursors_neighbours(rows, cursor, where, self.location_id)
            seen.update(new)
            if len(seen) > ceiling:
                raise ContractError(
                    f"{where}: more than {ceiling:,} receipts for one window and the pages "
                    f"keep bringing new ones (source.max_receipts_per_partition)",
                    location_id=self.location_id)
            if rows:
                yield page
            if not new:
                return
            last = rows[-1]
            if not isinstance(ids[-1], str) or not ids[-1]:
                raise ContractError(f"{where}: the last row of a page has no transactionId "
                                    "to page on", location_id=self.location_id)
            if ids[-1] in sent:
                raise ContractError(f"{where}: the cursor did not advance "
                                    f"(afterTransactionID={ids[-1]} came back again)",
                                    location_id=self.location_id)
            sent.add(ids[-1])
            cursor = last

    # --- external catalog (4.4) -----------------------------------------------------------

    def catalog_page(self, endpoint: str, skip: int, take: int) -> dict:
        """One page of ``/api/v1/external/<endpoint>`` for this location (the paged envelope)."""
        params = {"skip": skip, "take": take, "filter['locationId']": self.location_id}
        envelope = self._decode(self._request("GET", f"/api/v1/external/{endpoint}",
                                              params=params), endpoint)
        try:
            total = int(envelope["page"]["total"])
            data = envelope["data"]
        except (KeyError, TypeError, ValueError):
            raise ContractError(
                f"location {self.location_id}: {endpoint}: response is not the paged envelope "
                f"(page.total, data)", location_id=self.location_id) from None
        if not isinstance(data, list):
            raise ContractError(f"location {self.location_id}: {endpoint}: data is not a list",
                                location_id=self.location_id)
        self.stats.pages += 1
        return {"total": total, "data": data}

    def catalog_listing(self, endpoint: str, take: int = CATALOG_TAKE_MAX) -> list[dict]:
        """Every record of a catalog endpoint, as one consistent snapshot.

        Pages with skip/take until a page comes back empty: a server may cap ``take``
        below what was asked, and ``total`` is the server's word, so neither a short page
        nor reaching ``total`` ends the listing (one request more than trusting them).
        The records must then number exactly ``total``, none twice, and ``total`` must
        not change while paging; a torn listing starts over once, a second is a
        ``ContractError``. A ``total`` or a listing above ``source.max_catalog_records``
        fails at once, so memory stays bounded whatever the server says.
        """
        ceiling = self.source.max_catalog_records
        for _ in range(2):
            problem = ""
            rows: list[dict] = []
            ids: set = set()
            page = self.catalog_page(endpoint, 0, take)
            total = page["total"]
            while page["data"] and not problem:
                if max(total, len(rows) + len(page["data"])) > ceiling:
                    raise ContractError(
                        f"location {self.location_id}: {endpoint}: the listing has more than "
                        f"{ceiling:,} records (total says {total:,}; "
                        "source.max_catalog_records)", location_id=self.location_id)
                for row in page["data"]:
                    row_id = row.get("id") if isinstance(row, dict) else None
                    if row_id in ids:
                        problem = f"record id {row_id} came twice"
                        break
                    ids.add(row_id)
                    rows.append(row)
                else:
                    page = self.catalog_page(endpoint, len(rows), take)
                    if page["total"] != total:
                        problem = f"total changed from {total} to {page['total']} while paging"
            if not problem and len(rows) != total:
                problem = f"{len(rows)} records arrived but total said {total}"
            if not problem:
                return rows
        raise ContractError(f"location {self.location_id}: {endpoint}: torn listing, twice: "
                            f"{problem}", location_id=self.location_id)

    # --- menu (4.2), external order (4.3) -------------------------------------------------

    def menus(self) -> list[dict]:
        """The public menu tree of this location."""
        body = self._decode(self._request("GET", f"/api/v1/locations/{self.location_id}/menus"),
                            "menus")
        if not isinstance(body, list):
            raise ContractError(f"location {self.location_id}: menus: expected a JSON array",
                                location_id=self.location_id)
        return body

    def place_order(self, order: BaseModel) -> tuple[int, Any]:
        """POST an order (spec 2.4); returns the status and the decoded answer.

        Rejections the spec leaves without a status (no location, grandTotal off) come back
        as a ``RequestError`` with the server's message.
        """
        response = self._request("POST", "/api/v1/external/order", content=encode_body(order),
                                 headers={"content-type": "application/json"},
                                 expect=ORDER_OK)
        body = self._decode(response, "order") if response.content else None
        return response.status_code, body

    # --- voucher ledger (4.5) -------------------------------------------------------------

    def vouchers(self) -> list[dict]:
        """Every voucher visible to the key; accepts a bare array or ``{"data": [...]}``."""
        body = self._decode(self._request("GET", "/voucherservice/api/v1/vouchers"),
                            "vouchers")
        if isinstance(body, dict):
            body = body.get("data")
        if not isinstance(body, list):
            raise ContractError("voucher ledger: GET /vouchers is neither an array nor "
                                "{data: [...]}", location_id=self.location_id)
        return body
