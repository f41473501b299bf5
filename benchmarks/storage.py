"""What Dagster's storage costs a night (``make bench``'s ``storage``).

The same load of 2 business dates x the sandbox's 3 locations, with its warehouse build
(two runs, some 700 events), run alternately on Dagster's SQLite storage in a new
``DAGSTER_HOME`` (what ``pos-etl`` uses by default) and on an instance that keeps its
runs in memory (``DagsterInstance.ephemeral``: the lake and warehouse writes alone).
Measured side by side: wall seconds, bytes written to disk (``/proc/self/io``'s
``write_bytes`` less ``cancelled_write_bytes``), the runs' events, and the SQLite home's
size. The difference is what the event log's commits cost: each event is a transaction
of its own. No target: the figures say which storage a chain should use
(docs/production.md).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

DAYS = 2


def _written() -> int:
    io = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(io["write_bytes"]) - int(io["cancelled_write_bytes"])


def _night(folder: Path, on_disk: bool) -> dict:
    import dagster as dg

    from pipeline.core.reporting import Reporter
    from pipeline.orchestration.configs import sandbox_settings
    from pipeline.orchestration.instance import open_instance
    from pipeline.orchestration.loader import run_load

    end = date.today() - timedelta(days=2)
    settings = sandbox_settings(folder / "data", start_date=end - timedelta(days=DAYS))
    written, started = _written(), time.perf_counter()
    with (open_instance(settings) if on_disk else dg.DagsterInstance.ephemeral()) as instance:
        report = run_load(settings, end - timedelta(days=DAYS - 1), end, progress=Reporter(),
                          instance=instance)
        seconds, written = time.perf_counter() - started, _written() - written
        events = Counter()
        for run in instance.get_runs():
            for entry in instance.all_logs(run.run_id):
                events[entry.dagster_event.event_type_value if entry.dagster_event
                       else "LOG"] += 1
    home = folder / "data" / "dagster_home"
    return {"ok": report.ok, "seconds": seconds, "written": written,
            "events": sum(events.values()), "logs": events["LOG"],
            "home_bytes": sum(f.stat().st_size for f in home.rglob("*") if f.is_file())
            if on_disk else 0}


def bench_storage(repeats: int) -> dict:
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for _ in range(repeats):
        for on_disk in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                runs[on_disk].append(_night(Path(tmp), on_disk))
    sqlite, memory = runs[True], runs[False]
    extra = statistics.median(r["written"] for r in sqlite) \
        - statistics.median(r["written"] for r in memory)
    events = sqlite[-1]["events"]
    return {
        "night": f"{DAYS} business dates x 3 locations, loaded and built",
        "all_ok": all(r["ok"] for r in sqlite + memory),
        "events": events, "log_events": sqlite[-1]["logs"],
        "sqlite_seconds": [round(r["seconds"], 1) for r in sqlite],
        "memory_seconds": [round(r["seconds"], 1) for r in memory],
        "sqlite_mb_written": [round(r["written"] / 1e6, 1) for r in sqlite],
        "memory_mb_written": [round(r["written"] / 1e6, 1) for r in memory],
        "sqlite_home_mb": round(sqlite[-1]["home_bytes"] / 1e6, 1),
        "storage_kb_written_per_event": round(extra / events / 1e3, 1),
        "storage_write_amplification": round(extra / sqlite[-1]["home_bytes"], 1),
    }
