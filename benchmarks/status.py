"""``pos-etl status`` on a year of 3 locations (``make bench``'s ``status``).

A 365-day backfill of 3 locations is loaded (models built) from the sandbox in a process
of its own, as ``memory`` does; then ``pos-etl status`` is run three times, each in a new
interpreter as cron or a monitor would run it, and its wall time measured (imports
included). Target: under 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 2.0


def bench_status(days: int, repeats: int) -> dict:
    from benchmarks.run import _load_peak_rss, sandbox_process

    with sandbox_process() as url, tempfile.TemporaryDirectory() as tmp:
        load = _load_peak_rss(url, days, Path(tmp))
        env = {k: v for k, v in os.environ.items()
               if k not in ("DAGSTER_HOME", "POS_ETL_CONFIG")}
        seconds, answer = [], None
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "pipeline.cli", "status", "--config",
                                  str(Path(tmp) / "pos.toml"), "--json"], capture_output=True,
                                 text=True, env=env, cwd=ROOT)
            seconds.append(round(time.perf_counter() - t0, 2))
            answer = json.loads(out.stdout)
    return {"locations": 3, "days": days, "load_seconds": load["seconds"],
            "status_seconds": seconds, "exit_code": out.returncode,
            "newest_loaded": sorted({loc["lake_newest"] for loc in answer["locations"]}),
            "target_seconds": TARGET_SECONDS, "met": max(seconds) < TARGET_SECONDS}
