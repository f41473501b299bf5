"""A chain's night loaded by 1, 2 and 4 shards at once into one lake on S3 (#59).

The sandbox serves a chain of ``--locations`` locations in a process of its own, each
request answered after ``--latency-ms`` (a real POS's latency); moto's S3 server holds
the lake. For each shard count N the night (``--days`` business dates) is loaded by N
``pos-etl load`` processes at once, each its own Dagster run over a share of the
locations (as the sharded nightly splits them, ``shards_of``), all committing to the one
lake; then one ``pos-etl build``. Reported per N: the loads' wall time (and the speed-up
against one shard, the ratio measured side by side in one run), the build's, the revenue
pages received per second (each one request that succeeded) over the whole night, the
revenue requests the sandbox answered in the night's busiest 10 seconds (timed by its
access log) against ``--requests-per-second`` when given, and whether
every partition is in the lake once.

    .venv/bin/python -m benchmarks.shards --locations 200 --days 4 --latency-ms 150
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.run import sandbox_process  # noqa: E402
from pos_sandbox import world  # noqa: E402

NIGHT = date(2026, 11, 20)
BUCKET = "bench-lake"


WINDOW = 10
"""Seconds over which the busiest rate of a night is taken."""
REPORT = '"POST /api/v1/locations/'
"""The revenue report's requests in the sandbox's access log."""


def _pages(home: Path) -> int:
    """Revenue pages the night's runs received, from their events."""
    import dagster as dg

    from pipeline.orchestration.assets.revenue import REVENUE_KEY
    from pipeline.orchestration.load_report import recorded
    from pipeline.orchestration.summaries import RevenueDay

    pages = 0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs(dg.RunsFilter(job_name="load_job")):
            events = [e.dagster_event for e in instance.all_logs(run.run_id) if e.dagster_event]
            pages += sum(RevenueDay.from_metadata(mat.metadata).pages
                         for mat in recorded(events) if mat.asset_key == REVENUE_KEY)
    return pages


def _busiest(served: list[tuple[float, str]], since: float) -> tuple[int, float]:
    """The revenue requests the sandbox answered since ``since``, and the most it
    answered in any ``WINDOW`` seconds, per second."""
    stamps = sorted(t for t, line in served if t >= since and REPORT in line)
    busiest, first = 0, 0
    for n, stamp in enumerate(stamps):
        while stamps[first] <= stamp - WINDOW:
            first += 1
        busiest = max(busiest, n - first + 1)
    return len(stamps), busiest / WINDOW


def _peak_rss(loads: list[subprocess.Popen]) -> int:
    """The largest resident memory any of the load processes had, sampled twice a
    second until they have all ended (their output goes to a file each)."""
    import psutil

    peak = 0
    while any(load.poll() is None for load in loads):
        for load in loads:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, psutil.Process(load.pid).memory_info().rss)
        time.sleep(0.5)
    return peak


def night(url: str, s3: str, folder: Path, locations: int, days: int, shards: int,
          per_second: int | None, served: list[tuple[float, str]], build: bool = True
          ) -> dict:
    import polars as pl

    from pipeline.orchestration.configs import load_settings
    from pipeline.orchestration.instance import open_instance
    from pipeline.orchestration.schedules import shards_of
    from pos_sandbox.server import chain_config

    start = NIGHT - timedelta(days=days - 1)
    toml, env = chain_config(url, world.chain(locations), start_date=date(2026, 5, 1))
    prefix = f"s3://{BUCKET}/shards-{shards}"
    toml = toml.replace("[warehouse]", f'[lake]\nurl = "{prefix}"\nendpoint_url = "{s3}"\n\n'
                        "[warehouse]", 1)
    if per_second:
        toml = toml.replace("[source]\n", f"[source]\nrequests_per_second = {per_second}\n", 1)
    toml = toml.replace("[schedule]\n", f"[schedule]\nshards = {shards}\n", 1)
    config = folder / "chain.toml"
    config.write_text(toml)
    keys = dict(line.split("=", 1) for line in env.split())
    environ = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME",
                                                                "POS_ETL_CONFIG")} | keys
    os.environ.update(keys)
    settings = load_settings(config)
    with open_instance(settings):  # Dagster's tables made once, before the shards start
        pass
    shares = shards_of(settings)
    t0 = time.perf_counter()
    since = time.monotonic()
    loads = [subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "load", "--config", str(config),
         "--start", str(start), "--end", str(NIGHT), "--no-catalog", "--no-models",
         *[arg for loc in share for arg in ("--location", str(loc))]],
        cwd=ROOT, env=environ, stdout=subprocess.DEVNULL,
        stderr=(folder / f"load-{k}.log").open("w")) for k, share in enumerate(shares)]
    peak = _peak_rss(loads)
    failed = []
    for k, load in enumerate(loads):
        load.wait()
        if load.returncode:
            said = (folder / f"load-{k}.log").read_text().strip().splitlines()
            failed.append(said[-1:] or [str(load.returncode)])
    load_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    built = subprocess.run([sys.executable, "-m", "pipeline.cli", "build", "--config",
                            str(config)], cwd=ROOT, env=environ, capture_output=True,
                           text=True) if build else None
    build_seconds = time.perf_counter() - t1
    storage = {"AWS_ENDPOINT_URL": s3, "AWS_ALLOW_HTTP": "true"}
    held = pl.read_delta(f"{prefix}/revenue", storage_options=storage,
                         columns=["location_id", "business_date"]).rows()
    wanted = {(loc.id, start + timedelta(days=n)) for loc in settings.locations
              for n in range(days)}
    requests, busiest = _busiest(served, since)
    pages = _pages(settings.warehouse.data_dir / "dagster_home")
    return {"shards": len(shares), "load_seconds": round(load_seconds, 1),
            "peak_rss_mb_per_shard": round(peak / 2**20),
            "build_seconds": round(build_seconds, 1) if built else None,
            "build_ok": built.returncode == 0 if built else None,
            "pages": pages, "pages_per_second": round(pages / load_seconds, 1),
            "report_requests": requests,
            f"busiest_{WINDOW}s_requests_per_second": round(busiest, 1),
            "requests_per_second_budget": per_second,
            "every_partition_once": len(held) == len(set(held)) and set(held) == wanted,
            "partitions": len(held), "failed_loads": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locations", type=int, default=200)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--latency-ms", type=float, default=150)
    parser.add_argument("--volume", type=int, default=60,
                        help="transactions a location serves a day")
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests-per-second", type=int, default=None)
    parser.add_argument("--no-build", action="store_true",
                        help="leave out the build after each night (it is not compared)")
    args = parser.parse_args()

    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    s3 = f"http://{host}:{port}"
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_REGION": "us-east-1"})
    boto3.client("s3", endpoint_url=s3, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    results = []
    try:
        served: list[tuple[float, str]] = []
        with sandbox_process("--locations", str(args.locations), "--volume",
                             str(args.volume), "--latency-ms", str(args.latency_ms),
                             served=served) as url:
            for shards in args.shards:
                with tempfile.TemporaryDirectory() as tmp:
                    results.append(night(url, s3, Path(tmp), args.locations, args.days,
                                         shards, args.requests_per_second, served,
                                         build=not args.no_build))
                print(json.dumps(results[-1]), flush=True)
    finally:
        server.stop()
    one = results[0]["load_seconds"]
    summary = {"locations": args.locations, "days": args.days, "latency_ms": args.latency_ms,
               "volume": args.volume, "nights": results,
               "speedup": {r["shards"]: round(one / r["load_seconds"], 2) for r in results}}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
