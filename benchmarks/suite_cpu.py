"""Where the test suite's time goes: each test's wall time, the CPU of its worker process
(its threads too: the sandbox's server, the load's) and the CPU of the processes it
started and waited for (the CLI, Dagster's daemon and runs, other tools).

A pytest plugin and its summary (#57: what a suite within 8 minutes would have to give
up). Run the suite with it, then summarize::

    SUITE_CPU_DIR=/tmp/suite-cpu .venv/bin/python -m pytest -q -n 2 --dist loadfile \\
        -p benchmarks.suite_cpu
    .venv/bin/python benchmarks/suite_cpu.py /tmp/suite-cpu

Each worker writes ``<dir>/<worker>.json`` at its end: ``[nodeid, wall, self, children]``
per test, seconds, setup and teardown included (a module's fixtures count in the test
that made them). ``idle`` in the summary is wall time with neither: waiting for a
disk's fsync, a socket, a sleep, or for CPU another worker holds.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

_ROWS: list[tuple[str, float, float, float]] = []


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall, (own, children) = time.monotonic(), _cpu()
    yield
    own_after, children_after = _cpu()
    _ROWS.append((item.nodeid, time.monotonic() - wall, own_after - own,
                  children_after - children))


def pytest_sessionfinish(session) -> None:
    folder = Path(os.environ.get("SUITE_CPU_DIR", "suite-cpu"))
    folder.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (folder / f"{worker}.json").write_text(json.dumps(_ROWS))


def summary(folder: Path) -> str:
    rows = [row for path in sorted(folder.glob("*.json")) for row in json.loads(path.read_text())]
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    by_folder: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for nodeid, wall, own, children in rows:
        module = nodeid.split("::")[0]
        for key, table in ((module, by_module), (module.rsplit("/", 1)[0], by_folder)):
            entry = table[key]
            entry[0] += wall
            entry[1] += own
            entry[2] += children
            entry[3] += 1

    def lines(table: dict, limit: int | None = None) -> list[str]:
        ordered = sorted(table.items(), key=lambda kv: -kv[1][0])[:limit]
        return [f"{name[:58]:58} {w:7.0f} {o:7.0f} {c:7.0f} {w - o - c:7.0f} {n:5d}"
                for name, (w, o, c, n) in ordered]

    total = [sum(e[i] for e in by_folder.values()) for i in range(4)]
    head = f"{'':58} {'wall':>7} {'worker':>7} {'started':>7} {'idle':>7} {'tests':>5}"
    return "\n".join([
        f"{total[3]} tests: wall {total[0]:.0f} s summed, worker CPU {total[1]:.0f} s, "
        f"the processes they started {total[2]:.0f} s, idle {total[0] - total[1] - total[2]:.0f} s",
        "", head, *lines(by_folder), "", head, *lines(by_module, 30)])


if __name__ == "__main__":
    print(summary(Path(sys.argv[1] if len(sys.argv) > 1 else "suite-cpu")))
