"""How fast ``pos-etl`` answers before it does anything (``make bench``'s ``cli``).

Each command is run in a new interpreter, as a person at a terminal runs it, interleaved
with the peer it is measured against, on the same machine in the same minute:
``python -c "import click"`` (what any click program costs to start). Measured: ``pos-etl
--help``, ``pos-etl load --help`` and a usage error (``pos-etl load --bogus``, exit 2).
Target: each median within 5x the peer's median (the house issue's "a CLI that answers at
once": Dagster and DuckDB are imported only when a command runs).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 5.0
PEER = [sys.executable, "-c", "import click"]
COMMANDS = {
    "help": (["--help"], 0),
    "load_help": (["load", "--help"], 0),
    "usage_error": (["load", "--bogus"], 2),
}


def _seconds(argv: list[str], expected: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, cwd=ROOT)
    took = time.perf_counter() - started
    assert done.returncode == expected, (argv, done.returncode, done.stderr[-500:])
    return took


def bench_cli(repeats: int = 7) -> dict:
    entry = [sys.executable, "-m", "pipeline.cli"]
    peer: list[float] = []
    timed: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(repeats):  # interleaved: the machine's drift hits both alike
        for name, (args, code) in COMMANDS.items():
            peer.append(_seconds(PEER, 0))
            timed[name].append(_seconds(entry + args, code))
    base = statistics.median(peer)
    ratios = {name: round(statistics.median(t) / base, 2) for name, t in timed.items()}
    return {"peer_import_click_seconds": round(base, 3),
            "median_seconds": {n: round(statistics.median(t), 3) for n, t in timed.items()},
            "ratio_to_peer": ratios, "target_ratio": TARGET_RATIO,
            "met": all(r <= TARGET_RATIO for r in ratios.values())}


if __name__ == "__main__":
    import json

    print(json.dumps(bench_cli()))
