"""The client against precise faults (httpx.MockTransport): retries, auth, paging guards."""

import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from pipeline.core.settings import SourceSettings
from pipeline.pos_api.client import PosClient
from pipeline.pos_api.errors import AuthError, ContractError, TransientError
from pipeline.pos_api.http import parse_retry_after

SECRET = "sk-live-9f8e7d6c5b4a"
AFTER = datetime(2026, 11, 20, tzinfo=UTC)
BEFORE = AFTER + timedelta(days=1)


def client(handler, sleeps=None, **source):
    settings = SourceSettings(base_url="https://pos.test", backoff_initial_seconds=0.5,
                              backoff_max_seconds=8, **source)
    return PosClient(base_url="https://pos.test", api_key=SECRET, location_id=1001,
                     source=settings, transport=httpx.MockTransport(handler),
                     sleep=(sleeps.append if sleeps is not None else lambda s: None),
                     key_hint="POS_KEY_VIE01")


def receipts(n, start=0):
    return [{"transactionId": f"t-{i}"} for i in range(start, start + n)]


def first_page(request, rows):
    """``rows`` for the first request, and the empty page that confirms the end after it."""
    import json
    return httpx.Response(200, json=[] if "afterTransactionID" in json.loads(request.content)
                          else rows)


def test_retry_after_seconds_and_http_date_are_honoured():
    calls, sleeps = [], []
    when = (datetime.now(UTC) + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")

    def handler(request):
        calls.append(request)
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "7"})
        if len(calls) == 2:
            return httpx.Response(429, headers={"Retry-After": when})
        return first_page(request, receipts(3))

    with client(handler, sleeps) as c:
        pages = list(c.receipt_pages(AFTER, BEFORE, page_size=10))
    assert pages == [receipts(3)]
    assert sleeps[0] == 7 and 25 < sleeps[1] <= 30
    assert c.stats.retries == 2 and c.stats.requests == 4  # 3, and the end confirmed


def test_5xx_and_transport_errors_back_off_with_full_jitter_then_succeed():
    calls, sleeps = [], []

    def handler(request):
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectError("connection refused")
        if len(calls) in (2, 3):
            return httpx.Response(503)
        return first_page(request, receipts(2))

    with client(handler, sleeps) as c:
        assert list(c.receipt_pages(AFTER, BEFORE, page_size=5)) == [receipts(2)]
    assert len(sleeps) == 3
    assert all(0 <= s <= 8 for s in sleeps)


def test_retry_budget_is_bounded():
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(502)

    with client(handler, max_attempts=4) as c, pytest.raises(TransientError) as err:
        list(c.receipt_pages(AFTER, BEFORE))
    assert len(calls) == 4
    assert "location 1001" in str(err.value) and "502" in str(err.value)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_not_retried_and_never_show_the_key(status):
    calls = []

    def handler(request):
        calls.append(request)
        assert request.headers["x-api-key"] == SECRET
        return httpx.Response(status, text=f"bad key {SECRET}")

    with client(handler) as c, pytest.raises(AuthError) as err:
        list(c.receipt_pages(AFTER, BEFORE))
    assert len(calls) == 1
    message = str(err.value)
    assert f"HTTP {status}" in message and "location 1001" in message
    assert "POS_KEY_VIE01" in message and SECRET not in message


def test_an_echoed_key_is_redacted_before_the_excerpt_is_shortened():
    from pipeline.pos_api.errors import RequestError

    def handler(request):  # the key straddles the excerpt's 300-character cut
        return httpx.Response(400, text="x" * 295 + f" key {SECRET} rejected")

    with client(handler) as c, pytest.raises(RequestError) as err:
        list(c.receipt_pages(AFTER, BEFORE))
    assert "HTTP 400" in str(err.value) and SECRET[:4] not in str(err.value)


def test_paging_sends_the_cursor_and_confirms_the_end_after_a_short_page():
    bodies = []

    def handler(request):
        import json
        body = json.loads(request.content)
        bodies.append(body)
        start = 0 if "afterTransactionID" not in body else int(
            body["afterTransactionID"][2:]) + 1
        return httpx.Response(200, json=receipts(min(3, 7 - start), start))

    with client(handler) as c:
        pages = list(c.receipt_pages(AFTER, BEFORE, page_size=3))
    assert [len(p) for p in pages] == [3, 3, 1]
    # the short page is not trusted: one more request after it confirms the end
    assert [b.get("afterTransactionID") for b in bodies] == [None, "t-2", "t-5", "t-6"]
    assert all(b["after"] == AFTER.isoformat() and b["limit"] == 3 for b in bodies)


def test_a_cursor_that_does_not_advance_is_an_error_not_a_loop():
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(200, json=receipts(3))  # the same page, whatever the cursor

    with client(handler) as c, pytest.raises(ContractError, match="did not advance"):
        list(c.receipt_pages(AFTER, BEFORE, page_size=3))
    assert len(calls) == 2


@pytest.mark.parametrize("content", [b"[{\"transactionId\": ", b"{\"not\": \"a list\"}",
                                     b"[" * 100_000 + b"]" * 100_000])
def test_malformed_pages_are_contract_errors(content):
    with client(lambda r: httpx.Response(200, content=content)) as c, \
            pytest.raises(ContractError, match="location 1001"):
        list(c.receipt_pages(AFTER, BEFORE))


def test_catalog_listing_restarts_once_on_a_changing_total_then_fails():
    calls = []

    def handler(request):
        calls.append(request)
        skip = int(request.url.params["skip"])
        total = 4 if len(calls) % 2 else 5  # the total changes on every second page
        return httpx.Response(200, json={"page": {"offset": skip, "limit": 2, "total": total},
                                         "data": [{"id": skip}, {"id": skip + 1}]})

    with client(handler) as c, pytest.raises(ContractError, match="total changed"):
        c.catalog_listing("product", take=2)
    assert len(calls) == 4
    assert calls[0].url.params["filter['locationId']"] == "1001"


def test_catalog_listing_recovers_when_the_restart_is_clean():
    calls = []

    def handler(request):
        calls.append(request)
        skip = int(request.url.params["skip"])
        data = [{"id": 0}, {"id": 1}] if len(calls) == 2 else \
            [{"id": i} for i in range(skip, min(skip + 2, 4))]
        return httpx.Response(200, json={"page": {"offset": skip, "limit": 2, "total": 4},
                                         "data": data})

    with client(handler) as c:
        rows = c.catalog_listing("spot", take=2)
    assert [r["id"] for r in rows] == [0, 1, 2, 3]


def test_parse_retry_after():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    assert parse_retry_after("5") == 5
    assert parse_retry_after("Sun, 22 Nov 2026 12:00:30 GMT", lambda: now) == 30
    assert parse_retry_after("Sun, 22 Nov 2026 11:00:00 GMT", lambda: now) == 0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_read_timeouts_are_retried_and_then_reported():
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) < 3:
            raise httpx.ReadTimeout("the server took too long", request=request)
        return first_page(request, receipts(1))

    with client(handler) as c:
        assert list(c.receipt_pages(AFTER, BEFORE)) == [receipts(1)]
    assert c.stats.retries == 2

    def always_slow(request):
        raise httpx.ReadTimeout("the server took too long", request=request)

    with client(always_slow, max_attempts=3) as c, pytest.raises(TransientError) as err:
        list(c.receipt_pages(AFTER, BEFORE))
    assert "ReadTimeout" in str(err.value) and "location 1001" in str(err.value)


def test_clients_sharing_one_connection_pool_send_their_own_keys():
    from pipeline.pos_api.http import make_http_client

    seen = []

    def handler(request):
        seen.append((request.url.path, request.headers["x-api-key"]))
        return httpx.Response(200, json=[])

    settings = SourceSettings(base_url="https://pos.test")
    with make_http_client("https://pos.test", settings, httpx.MockTransport(handler)) as http:
        for location_id, key in ((1001, "key-a"), (1002, "key-b")):
            PosClient(base_url="https://pos.test", api_key=key, location_id=location_id,
                      source=settings, http=http).menus()
    assert seen == [("/api/v1/locations/1001/menus", "key-a"),
                    ("/api/v1/locations/1002/menus", "key-b")]


def test_a_response_that_trickles_is_cut_at_the_request_deadline():
    class Trickle(httpx.SyncByteStream):
        def __iter__(self):
            yield b"["
            for _ in range(200):  # bounded: 20 s if nothing stopped it
                time.sleep(0.1)
                yield b" "

    def handler(request):
        return httpx.Response(200, stream=Trickle())

    # whole after 20 s, an empty report: only the deadline makes it fail (no duration
    # is measured)
    with client(handler, request_deadline_seconds=0.5) as c, \
            pytest.raises(TransientError) as err:
        list(c.receipt_pages(AFTER, BEFORE))
    assert "ReadTimeout" in str(err.value) and "location 1001" in str(err.value)


def test_a_server_that_never_stops_sending_full_pages_is_stopped_at_the_ceiling():
    pages = []

    def handler(request):
        pages.append(request)
        return httpx.Response(200, json=receipts(10, start=10 * len(pages)))

    with client(handler, max_receipts_per_partition=50) as c, \
            pytest.raises(ContractError) as err:
        list(c.receipt_pages(AFTER, BEFORE, page_size=10))
    assert len(pages) == 6
    assert "more than 50 receipts" in str(err.value) and "location 1001" in str(err.value)
    assert "max_receipts_per_partition" in str(err.value)


def test_the_locations_share_one_connection_pool_and_no_cookie_crosses_between_them(
        tmp_path):
    """One ``httpx.Client`` for every location of a source (its pool and TLS context; a
    chain of 2,000 had 1.7 GB of them), and a cookie a server set on one location's
    answer is never sent with a request of any location's: the key is the only
    credential."""
    from pipeline.pos_api.source import PosSource
    from tests.conftest import make_settings

    seen, pools = [], set()

    def answer(request):
        seen.append((request.headers.get("x-api-key"), request.headers.get("cookie")))
        return httpx.Response(200, json=[], headers={"set-cookie": "session=s1; Path=/"})

    settings = make_settings("https://pos.test", tmp_path)
    with PosSource(settings, "https://pos.test", {1001: "key-1", 1002: "key-2"},
                   transport=httpx.MockTransport(answer)) as source:
        for loc in (1001, 1002, 1001):
            client = source.client(loc)
            client.menus()
            pools.add(id(client._http))
    assert seen == [("key-1", None), ("key-2", None), ("key-1", None)]
    assert len(pools) == 1
