"""The steps of a load: a location's outage neither stops the others nor is final at once."""

from datetime import date

import httpx

from pipeline.load.steps import load_revenue_days
from tests.conftest import make_settings, source_with

DAYS = [date(2026, 11, 19), date(2026, 11, 20)]


def forwarder(sandbox_url: str):
    """``forward(request)``: the sandbox's answer to a request made to a mock transport."""
    real = httpx.HTTPTransport()

    def forward(request: httpx.Request) -> httpx.Response:
        forwarded = httpx.Request(request.method, sandbox_url + request.url.raw_path.decode(),
                                  headers=request.headers, content=request.content)
        response = real.handle_request(forwarded)
        response.read()
        return httpx.Response(response.status_code, headers=response.headers,
                              content=response.content)

    return forward


def flaky_for(sandbox_url: str, location_id: int, failures: int):
    """A transport that answers 503 to the first ``failures`` requests of one location."""
    forward = forwarder(sandbox_url)
    seen = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        if f"/locations/{location_id}/" in request.url.path and seen["n"] < failures:
            seen["n"] += 1
            return httpx.Response(503)
        return forward(request)

    return httpx.MockTransport(handler)


def test_a_partition_that_outlasts_the_retries_is_tried_again_after_the_others(
        sandbox_url, tmp_path, sandbox_keys, lake):
    settings = make_settings(sandbox_url, tmp_path / "data", max_attempts=1)
    transport = flaky_for(sandbox_url, 1003, failures=1)
    with source_with(settings, transport=transport, sleep=lambda s: None) as source:
        days = list(load_revenue_days(source, lake, DAYS, [1001, 1002, 1003]))
    assert [d.business_date for d in sorted(days, key=lambda d: d.business_date)] == DAYS
    assert all(d.complete for d in days)
    assert all(p.receipts > 300 for d in days for p in d.partitions)


def test_a_location_that_stays_down_fails_alone(sandbox_url, tmp_path, sandbox_keys, lake):
    settings = make_settings(sandbox_url, tmp_path / "data", max_attempts=1)
    transport = flaky_for(sandbox_url, 1003, failures=100)
    with source_with(settings, transport=transport, sleep=lambda s: None) as source:
        days = list(load_revenue_days(source, lake, DAYS, [1001, 1002, 1003]))
    for day in days:
        assert [p.location_id for p in day.failed] == [1003]
        said = day.failed[0].failure.message
        assert "HTTP 503" in said and "location 1003" in said
        assert {p.location_id for p in day.partitions if not p.failure} == {1001, 1002}
    assert lake.has("revenue", {"location_id": 1001, "business_date": "2026-11-20"})
    assert not lake.has("revenue", {"location_id": 1003, "business_date": "2026-11-20"})


def test_no_more_requests_than_the_budget_are_in_flight_while_partitions_are_written(
        sandbox_url, tmp_path, sandbox_keys, lake, monkeypatch):
    import threading

    import pipeline.load.steps

    settings = make_settings(sandbox_url, tmp_path / "data", max_concurrent_requests=2)
    forward = forwarder(sandbox_url)
    lock, now, most = threading.Lock(), [0], [0]
    crowd = threading.Condition(lock)

    def handler(request: httpx.Request) -> httpx.Response:
        with crowd:
            now[0] += 1
            most[0] = max(most[0], now[0])
            crowd.notify_all()
            # the first request waits (bounded) until a second is in flight beside it: a
            # loader that sends one at a time leaves it waiting out its bound
            crowd.wait_for(lambda: most[0] >= 2, timeout=120)
        try:
            return forward(request)
        finally:
            with lock:
                now[0] -= 1

    writing, most_writing = [0], [0]
    write = pipeline.load.steps.extract_revenue_partition

    def slow_write(*args, **kwargs):  # a partition being flattened holds no request
        part = write(*args, **kwargs)
        with crowd:
            writing[0] += 1
            most_writing[0] = max(most_writing[0], writing[0])
            crowd.notify_all()
            # held until more partitions than request slots are in progress at once (an
            # event, not a sleep); a loader that never has them in progress leaves it
            # waiting out its bound, and the assertion below fails
            crowd.wait_for(lambda: most_writing[0] > 2, timeout=120)
            writing[0] -= 1
        return part

    monkeypatch.setattr(pipeline.load.steps, "extract_revenue_partition", slow_write)
    with source_with(settings, transport=httpx.MockTransport(handler)) as source:
        days = list(load_revenue_days(source, lake, DAYS, [1001, 1002, 1003]))
    assert all(d.complete for d in days)
    assert most[0] == 2  # the budget, used in full
    assert most_writing[0] > 2  # while more partitions than that were in progress


def test_a_disk_that_fills_during_the_delta_commit_is_named_as_full(
        sandbox_url, tmp_path, sandbox_keys, lake, monkeypatch):
    """delta-rs says a full disk in three coloured lines without an errno: the load's
    error is the one line a person reads for a full disk, naming the first partition."""
    import errno

    import pytest
    from deltalake import DeltaTable

    def full(*args, **kwargs):
        raise OSError("Generic LocalFileSystem error\n          \x1b[31m\u21b3\x1b[0m Unable "
                      "to copy data to file\n           \x1b[31m\u21b3\x1b[0m No space left "
                      "on device (os error 28)\n")

    settings = make_settings(sandbox_url, tmp_path / "data")
    monkeypatch.setattr(DeltaTable, "create_write_transaction", full)
    with source_with(settings) as source, pytest.raises(OSError) as raised:
        list(load_revenue_days(source, lake, DAYS, [1001, 1002]))
    assert raised.value.errno == errno.ENOSPC
    message = str(raised.value)
    assert f"no space left on device writing location 1001's revenue of {DAYS[0]} (and 3 " \
           "more partitions) to the lake" in message
    assert "\n" not in message and "\x1b" not in message


def test_partitions_that_finish_together_are_committed_commit_partitions_at_a_time(
        sandbox_url, tmp_path, sandbox_keys, lake, monkeypatch):
    """``[lake] commit_partitions`` bounds a commit however many partitions finish at once,
    and the days a commit completes are reported before the next commit: a load killed
    at any moment has committed and not reported one commit's partitions at most (a
    date reported done is what Dagster counts as loaded)."""
    from concurrent.futures import ALL_COMPLETED
    from concurrent.futures import wait as wait_for

    import pipeline.load.steps
    from pipeline.core.settings import LakeSettings

    days = [date(2026, 11, d) for d in range(14, 21)]
    settings = make_settings(sandbox_url, tmp_path / "data", max_concurrent_requests=4)
    settings = settings.model_copy(update={"lake": LakeSettings(commit_partitions=2)})
    # every partition in flight finishes in the same round
    monkeypatch.setattr(pipeline.load.steps, "wait", lambda fs, return_when, timeout:
                        wait_for(fs, return_when=ALL_COMPLETED))
    happened = []
    commit = pipeline.load.steps._commit

    def counted(source, lake, batch):
        happened.append(("commit", sorted(part.business_date for part in batch)))
        return commit(source, lake, batch)

    monkeypatch.setattr(pipeline.load.steps, "_commit", counted)
    with source_with(settings) as source:
        for day in load_revenue_days(source, lake, days, [1001]):
            assert day.complete
            happened.append(("reported", day.business_date))
    commits = [dates for what, dates in happened if what == "commit"]
    assert max(map(len, commits)) == 2 and sorted(sum(commits, [])) == days
    unreported: set[date] = set()
    for what, dates in happened:
        if what == "commit":
            assert not unreported  # the commit before was reported in full
            unreported = set(dates)
        else:
            unreported.discard(dates)
    assert not unreported
