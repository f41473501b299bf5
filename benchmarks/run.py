"""Benchmarks of the revenue extraction (``make bench``).

1. throughput: from response bytes to written (fsynced) Parquet, partition by
   partition, in one thread, on the sandbox's default data shape (quirks on). Reported
   per wall second and per CPU second of that one core; the target (>= 15,000/s) is
   judged on CPU time, because the fsync waits overlap with other partitions' work in
   a real load. A calibration loop's time is printed: this machine's speed varies.
2. memory: peak RSS of ``pos-etl load`` for a 7-day and a 365-day backfill of one
   location against a sandbox in another process. Target: the 365-day peak is no
   higher than the 7-day one (memory bounded by a partition, not by the range).

Results are printed and written to ``benchmarks/results/latest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.extract.revenue import flatten_receipts  # noqa: E402
from pipeline.lake import write_partitions  # noqa: E402
from pipeline.pos_api.client import _TEXT_DECODER  # noqa: E402
from pos_sandbox import world  # noqa: E402
from pos_sandbox.receipts import SandboxData  # noqa: E402
from pos_sandbox.revenue import RevenueBook  # noqa: E402

PAGE_SIZE = 500


def make_partitions(days: int) -> tuple[dict[date, list[bytes]], int]:
    """Revenue report pages, as the server sends them, per business date of location 1001."""
    book = RevenueBook(SandboxData(), days_kept=2)
    start = date(2026, 6, 1)
    partitions, receipts = {}, 0
    for n in range(days):
        day = start + timedelta(days=n)
        bodies = [r.body for r in book.calendar_date(1001, day)]
        receipts += len(bodies)
        partitions[day] = [b"[" + b",".join(bodies[i:i + PAGE_SIZE]) + b"]"
                           for i in range(0, len(bodies), PAGE_SIZE)]
    return partitions, receipts


def bench_throughput(days: int, repeats: int) -> dict:
    """Per partition: decode the pages, flatten, dedupe, write Parquet; one thread."""
    partitions, receipts = make_partitions(days)
    tz = world.location_by_id(1001).tz
    bytes_total = sum(len(p) for pages in partitions.values() for p in pages)
    timings, cpu_timings = [], []
    with tempfile.TemporaryDirectory(dir=ROOT / "benchmarks") as tmp:
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            for day, pages in partitions.items():
                part = flatten_receipts((_TEXT_DECODER.decode(p) for p in pages),
                                        location_id=1001, business_date=day, tz=tz)
                write_partitions(Path(tmp), part.tables, {"location_id": 1001,
                                                          "business_date": day.isoformat()})
            timings.append(time.perf_counter() - t0)
            cpu_timings.append(time.process_time() - c0)
    best, best_cpu = min(timings), min(cpu_timings)
    return {
        "receipts": receipts,
        "partitions": len(partitions),
        "response_megabytes": round(bytes_total / 1e6, 1),
        "wall_seconds": [round(t, 3) for t in timings],
        "cpu_seconds": [round(t, 3) for t in cpu_timings],
        "receipts_per_wall_second": round(receipts / best),
        "receipts_per_cpu_second": round(receipts / best_cpu),
        "target_receipts_per_second": 15000,
    }


def calibration() -> float:
    """Seconds for a fixed pure-Python loop: how fast this machine is right now."""
    t0 = time.perf_counter()
    sum(i * i for i in range(3_000_000))
    return round(time.perf_counter() - t0, 3)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load_peak_rss(base_url: str, days: int, data_dir: Path) -> dict:
    config = data_dir / "pos.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"""
[source]
base_url = "{base_url}"
max_concurrent_requests = 2
[warehouse]
data_dir = "data"
[[locations]]
id = 1001
short_code = "VIE01"
api_key_env = "BENCH_KEY"
""")
    end = date(2026, 6, 1) + timedelta(days=days - 1)
    code = (
        "import resource, sys; from pipeline.cli import main; "
        f"rc = main(['load', '--config', {str(config)!r}, '--start', '2026-06-01', "
        f"'--end', {end.isoformat()!r}, '--no-models', '--no-catalog']); "
        "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(rc)"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "BENCH_KEY": "sandbox-key-1001"}, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stdout + out.stderr)
    peak = int(out.stdout.split("PEAK_KB")[1].split()[0])
    return {"days": days, "peak_rss_mb": round(peak / 1024, 1),
            "seconds": round(time.perf_counter() - t0, 1)}


def bench_memory(short: int, long: int) -> dict:
    """Peak RSS of a short and a long backfill, the sandbox in its own process."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "sandbox", "--port",
                               str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        with tempfile.TemporaryDirectory() as tmp:
            results = [_load_peak_rss(f"http://127.0.0.1:{port}", days, Path(tmp) / str(days))
                       for days in (short, long)]
    finally:
        server.terminate()
        server.wait(timeout=10)
    return {"runs": results,
            "bounded": results[1]["peak_rss_mb"] <= results[0]["peak_rss_mb"] * 1.05}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["throughput", "memory"])
    parser.add_argument("--days", type=int, default=30, help="days of receipts for throughput")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long-days", type=int, default=365)
    args = parser.parse_args()
    results: dict = {"python": sys.version.split()[0], "cpu_count": os.cpu_count(),
                     "calibration_loop_seconds": calibration()}
    if args.only in (None, "throughput"):
        results["throughput"] = bench_throughput(args.days, args.repeats)
        print("throughput:", json.dumps(results["throughput"]), flush=True)
    if args.only in (None, "memory"):
        results["memory"] = bench_memory(7, args.long_days)
        print("memory:", json.dumps(results["memory"]), flush=True)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2))
    ok = (results.get("throughput", {}).get("receipts_per_cpu_second", 15000) >= 15000
          and results.get("memory", {}).get("bounded", True))
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
