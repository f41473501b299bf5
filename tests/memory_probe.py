"""Run in a fresh interpreter: one hostile POS case through ``run_load``, then print the
failure and the process's peak RSS (``python -m tests.memory_probe CASE DATA_DIR``)."""

import json
import os
import resource
import sys
from datetime import date
from pathlib import Path

from pipeline.core.reporting import Reporter
from pipeline.orchestration.loader import run_load
from pos_sandbox import world
from tests import hostile
from tests.conftest import make_settings

CASES = {"gzip_bomb": hostile.bomb_pos, "huge_page": hostile.flooding_pos,
         "endless_catalog": hostile.endless_catalog}


def main(case: str, data_dir: str) -> None:
    for loc in world.LOCATIONS:
        os.environ[f"POS_TEST_KEY_{loc.id}"] = loc.api_key
    day = date(2026, 11, 20)
    with CASES[case]() as url:
        report = run_load(make_settings(url, Path(data_dir), max_attempts=1), day, day,
                          [1001], catalog=case == "endless_catalog",
                          models=False, progress=Reporter())
    print(json.dumps({"ok": report.ok,
                      "failed": [f.to_json() for f in report.failed_partitions],
                      "snapshots": {k: f.message for k, f in report.snapshot_failures.items()},
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main(*sys.argv[1:])
