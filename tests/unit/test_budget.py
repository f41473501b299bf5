"""A POS host's request budget (``[source] requests_per_second``), shared by the processes
of a machine through one file: every request takes a permit, and a 429's ``Retry-After``
makes every process wait, not only the one that was told (#59)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx

from pipeline.core.settings import SourceSettings
from pipeline.pos_api.budget import RequestBudget, bucket_file
from pipeline.pos_api.client import PosClient


class Clock:
    """A clock that moves only when slept on: what a process waited for, exactly."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now, self.slept = now, []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


def test_a_429_told_to_one_process_holds_every_other_on_the_host(tmp_path):
    path = bucket_file(tmp_path, "pos.example.com")
    told, other = Clock(), Clock()
    # two processes' budgets on one file (the same host); each with its own clock
    here = RequestBudget.on_disk(50, path, sleep=told.sleep, clock=told.time)
    there = RequestBudget.on_disk(50, path, sleep=other.sleep, clock=other.time)
    calls = []

    def answer(request):
        calls.append(request.url.path)
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "7"})
        return httpx.Response(200, json=[])

    client = PosClient(base_url="https://pos.example.com", api_key="k", location_id=1001,
                       source=SourceSettings(base_url="https://pos.example.com"),
                       transport=httpx.MockTransport(answer), sleep=told.sleep, budget=here)
    client.menus()
    assert told.slept == [7] and len(calls) == 2  # it waited as it was told, then retried
    there.take()
    assert other.slept == [7]  # and the other process waited as long before its request
    there.take()
    assert other.slept == [7]  # once: the hold is over
    here.close()
    there.close()


def test_a_later_hold_is_kept_and_a_shorter_one_does_not_cut_it(tmp_path):
    clock = Clock()
    budget = RequestBudget.on_disk(10, bucket_file(tmp_path, "h"), sleep=clock.sleep,
                                   clock=clock.time)
    budget.hold(30)
    budget.hold(5)
    assert budget.held_until() == clock.now + 30
    budget.take()
    assert clock.slept == [30]
    budget.close()


def _take(args: tuple[str, int]) -> int:
    """In a process of its own: ``n`` permits of the budget at ``path`` (12 an hour);
    the permits the budget then counts."""
    path, n = args
    budget = RequestBudget.on_disk(12, Path(path), per=3600)
    for _ in range(n):
        budget.take()
    taken = budget.taken()
    budget.close()
    return taken


def test_processes_of_one_machine_share_the_permits(tmp_path):
    """Three processes taking 3 permits each: the one budget counts all 9 (each process's
    own would count its 3), so its limit bounds their sum."""
    path = bucket_file(tmp_path, "pos.example.com")
    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_take, [(str(path), 3)] * 3))
    budget = RequestBudget.on_disk(12, path, per=3600)
    assert budget.taken() == 9
    budget.close()
