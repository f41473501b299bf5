"""The sandbox's revenue report over real HTTP: auth, window, cursor, determinism, quirks."""

from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import httpx
import pytest

from pipeline.areas.revenue.extract import KNOWN_TRANSACTION_TYPES
from pipeline.pos_api.answers import decode_json
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import SandboxData, receipts_on
from pos_sandbox.server import running_sandbox

VIENNA = ZoneInfo("Europe/Vienna")
DAY = date(2026, 11, 20)
WINDOW = {"after": "2026-11-20T00:00:00+01:00", "before": "2026-11-21T00:00:00+01:00"}


def post(url, key, body, path="/api/v1/reports/receipts"):
    headers = {"x-api-key": key} if key else {}
    return httpx.post(url + path, json=body, headers=headers, timeout=30)


def test_missing_or_invalid_key_is_401(sandbox_url):
    assert post(sandbox_url, None, WINDOW).status_code == 401
    assert post(sandbox_url, "not-a-key", WINDOW).status_code == 401


def test_key_of_another_location_is_403_on_the_location_path(sandbox_url):
    r = post(sandbox_url, "sandbox-key-1001", WINDOW, "/api/v1/locations/1002/reports/receipts")
    assert r.status_code == 403
    ok = post(sandbox_url, "sandbox-key-1002", WINDOW, "/api/v1/locations/1002/reports/receipts")
    assert ok.status_code == 200


def test_key_only_variant_serves_the_keys_location(sandbox_url):
    rows = post(sandbox_url, "sandbox-key-1002", WINDOW).json()
    assert rows and {r["location"]["id"] for r in rows} == {"1002"}


def test_missing_window_is_400(sandbox_url):
    assert post(sandbox_url, "sandbox-key-1001", {"after": WINDOW["after"]}).status_code == 400


def test_window_bounds_are_exclusive(sandbox_url):
    truth = receipts_on(1001, DAY, SandboxData())
    first, last = truth[0].date_time, truth[-1].date_time
    body = {"after": first.isoformat(), "before": last.isoformat()}  # naive = local time
    ids = {r["transactionId"] for r in post(sandbox_url, "sandbox-key-1001", body).json()}
    expected = {r.transaction_id for r in truth if first < r.date_time < last}
    assert ids == expected
    assert truth[0].transaction_id not in ids and truth[-1].transaction_id not in ids


def test_cursor_paging_has_no_gaps_or_repeats(sandbox_url):
    everything = post(sandbox_url, "sandbox-key-1001", WINDOW).json()
    pages, cursor = [], None
    while True:
        body = {**WINDOW, "limit": 37}
        if cursor:
            body["afterTransactionID"] = cursor
        page = post(sandbox_url, "sandbox-key-1001", body).json()
        pages.append(page)
        if len(page) < 37:
            break
        cursor = page[-1]["transactionId"]
    paged = [r["transactionId"] for p in pages for r in p]
    assert paged == [r["transactionId"] for r in everything]
    midnight = datetime(2026, 11, 20)
    expected = [r for r in receipts_on(1001, DAY, SandboxData()) if r.date_time > midnight]
    assert len(paged) == len(set(paged)) == len(expected)  # `after` itself is excluded


def test_unknown_cursor_is_400(sandbox_url):
    body = {**WINDOW, "afterTransactionID": "00000000-0000-4000-8000-000000000000"}
    assert post(sandbox_url, "sandbox-key-1001", body).status_code == 400


def test_same_request_same_bytes_and_year_long_window_pages(sandbox_url):
    body = {"after": "2025-01-01T00:00:00+01:00", "before": "2026-01-01T00:00:00+01:00",
            "limit": 50}
    a = post(sandbox_url, "sandbox-key-1003", body)
    b = post(sandbox_url, "sandbox-key-1003", body)
    assert a.status_code == 200 and a.content == b.content and len(a.json()) == 50


def test_served_timestamps_use_the_pos_form(sandbox_url):
    row = post(sandbox_url, "sandbox-key-1001", {**WINDOW, "limit": 1}).json()[0]
    parsed = datetime.strptime(row["dateTime"], "%d.%m.%Y %H:%M:%S")
    assert parsed.date() == DAY
    rows = post(sandbox_url, "sandbox-key-1001", {**WINDOW, "limit": 50}).json()
    books = [i["bookDate"] for r in rows for i in r["items"]]
    assert books and all(datetime.strptime(b, "%d.%m.%Y %H:%M:%S") for b in books)


def test_every_transaction_type_of_the_spec_appears_within_three_days(sandbox_url):
    seen = set()
    for offset in range(3):
        day = DAY + timedelta(days=offset)
        seen |= {r.transaction_type for r in receipts_on(1001, day, SandboxData())}
    calendar = {"Monatsbeleg", "JahresBeleg"}  # filed on the last day of a month / year
    assert KNOWN_TRANSACTION_TYPES - calendar <= seen
    month_end = {r.transaction_type for r in receipts_on(1001, date(2027, 1, 1),
                                                         SandboxData())}
    assert calendar <= month_end


def _fan_out_stats(rows):
    repeated_lines = repeated_payments = repeated_sides = 0
    for r in rows:
        ids = [i["id"] for i in r["items"]]
        repeated_lines += len(ids) - len(set(ids))
        pids = [p["id"] for p in r["payments"]]
        repeated_payments += len(pids) - len(set(pids))
        for i in r["items"]:
            sids = [s["uniqueId"] for s in i["sideDishes"] or []]
            repeated_sides += len(sids) - len(set(sids))
    return repeated_lines, repeated_payments, repeated_sides


def test_quirks_repeat_lines_payments_and_side_dishes_and_can_be_switched_off(sandbox_url):
    body = {"after": "2026-11-14T00:00:00+01:00", "before": "2026-11-21T00:00:00+01:00"}
    with_quirks = post(sandbox_url, "sandbox-key-1001", body).json()
    assert all(n > 0 for n in _fan_out_stats(with_quirks))
    config = SandboxConfig(data=SandboxData(quirks=False))
    with running_sandbox(config) as url:
        clean = post(url, "sandbox-key-1001", body).json()
    assert _fan_out_stats(clean) == (0, 0, 0)
    assert [r["transactionId"] for r in clean] == [r["transactionId"] for r in with_quirks]


def test_older_query_configuration_location(sandbox_url):
    rows = post(sandbox_url, "sandbox-key-1003", WINDOW).json()
    items = [i for r in rows for i in r["items"]]
    assert items
    assert all(i["uniqueId"] is None and i["externalId"] is None for i in items)
    assert all(i["purchasePrice"] == 0 and i["sideDishes"] is None for i in items)
    newer = [i for r in post(sandbox_url, "sandbox-key-1001", WINDOW).json() for i in r["items"]]
    assert all(i["uniqueId"] for i in newer)
    assert any(i["sideDishes"] for i in newer)
    assert all(i["sideDishes"] is None or i["sideDishes"] for i in newer)  # never []


def test_decimals_are_json_numbers(sandbox_url):
    raw = post(sandbox_url, "sandbox-key-1001", {**WINDOW, "limit": 20}).content
    row = next(r for r in decode_json(raw) if r["items"])
    assert b'"totalAmount":"' not in raw and b'"grossAmount":"' not in raw
    assert isinstance(row["totalAmount"], Decimal | int)
    assert isinstance(row["items"][0]["grossAmount"], Decimal)


@pytest.mark.parametrize("rate", [{"rate_429": 1.0}, {"rate_5xx": 1.0}])
def test_fault_injection_answers_429_with_retry_after_and_5xx(rate):
    from pos_sandbox.app import Faults

    with running_sandbox(SandboxConfig(faults=Faults(**rate, retry_after_seconds=3))) as url:
        r = post(url, "sandbox-key-1001", WINDOW)
    if "rate_429" in rate:
        assert r.status_code == 429 and r.headers["retry-after"] == "3"
    else:
        assert r.status_code >= 500


def test_a_day_asked_for_by_many_requests_at_once_is_made_once(monkeypatch):
    """A load fetches neighbouring dates in parallel and each date reads two service days:
    the requests that ask for a day while another makes it wait for that one."""
    import threading

    from pos_sandbox import revenue

    made, release = [], threading.Event()
    waiting = threading.Semaphore(0)
    real = revenue.service_day

    def slow_service_day(location_id, day, data):
        made.append((location_id, day))
        assert release.wait(60), "never released"
        return real(location_id, day, data)

    class CountedEvent(threading.Event):
        def wait(self, timeout=None):
            waiting.release()
            return super().wait(timeout)

    monkeypatch.setattr(revenue, "service_day", slow_service_day)
    monkeypatch.setattr(revenue, "Event", CountedEvent)
    book = revenue.RevenueBook(SandboxData())
    got = []
    threads = [threading.Thread(target=lambda: got.append(book.service_day(1001, DAY)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for _ in range(7):  # the seven others wait for the first
        assert waiting.acquire(timeout=60), "a request did not wait for the one making it"
    release.set()
    for thread in threads:
        thread.join(60)
    assert made == [(1001, DAY)]
    assert len(got) == 8 and all(g is got[0] for g in got) and got[0]
