"""Benchmarks of the pipeline (``make bench``).

1. throughput: from response bytes to written (fsynced) Parquet, partition by
   partition, in one thread, on the sandbox's default data shape (quirks on). Reported
   per wall second and per CPU second of that one core; target: >= 25,000 receipts per
   wall second. A calibration loop's time is printed: this machine's speed varies.
2. memory: peak RSS of ``pos-etl load`` (models built) for backfills of 3 locations
   over 1, 30, 365 and 1,095 days against a sandbox in another process. Target: the
   1,095-day peak within 5 % of the 365-day one (bounded, not growing with the range).
3. cli_load: a 365-day x 3-location ``pos-etl load`` with the models built, today's code
   (a Dagster run recorded in the instance) against the baseline commit's (a loop of its
   own), interleaved on one sandbox. Target: within 10 % of the baseline.
4. dlt: the throughput benchmark's bytes loaded into DuckDB by dlt and by this pipeline.
5. incremental: one night on top of 7 and of 365 days of history. Target: at most 1.5x.
6. nightly: the schedule's night for a chain of 200 locations. Target: <= 120 s.
7. partitions: what 3 years of date partitions of a 200-location chain cost the Dagster
   UI (GraphQL answers of the webserver) and a backfill launch.
8. chain (``make bench-chain``, only with ``--only chain``): the first full build of a
   200-location chain's 365 days (``benchmarks/chain.py``). Target: <= 600 s, <= 1.5 GB.
9. status: ``pos-etl status`` on a year of 3 locations, a new interpreter each time
   (``benchmarks/status.py``). Target: < 2 s.
10. delta: files that follow loads: 20 locations x 10 dates, the last 3 loaded again,
    then housekeeping (``benchmarks/delta.py``). Targets: <= 30 files in the revenue
    table's newest version; bytes per receipt <= 0.65x the earlier lake's.
11. housekeeping (``make bench-housekeeping``, only with ``--only housekeeping``): three
    years of a 200-location chain's nights in the Delta tables and what the weekly
    housekeeping keeps (``benchmarks/housekeeping.py``): files and commits counted.
12. cli: ``pos-etl --help``, ``load --help`` and a usage error, each in a new interpreter,
    interleaved with ``python -c "import click"`` (``benchmarks/cli.py``). Target: each
    within 5x of it.
13. peers: the throughput benchmark's bytes three ways, interleaved: msgspec's decode
    (the floor), DuckDB's ``read_json`` into three deduplicated Parquet files on one
    thread, and this pipeline (``benchmarks/peers.py``). #57's target: pipeline >= 1.25x
    DuckDB (#43's were 1.5x DuckDB and 0.4x the floor).
14. nights (only with ``--only nights``; ``--chain`` locations): what a chain lives with:
    the full build of 3 years, then nights (a new day of every location and the 3 days
    before it loaded again) on top of 90 days and of 3 years of history, side by side
    (``benchmarks/chain.py``). Target: a steady night on top of 3 years within 1.3x of
    one on top of 90 days.
15. floor (only with ``--only floor``; ``--chain`` locations x ``--floor-days``): the full
    build beside reading the lake and writing the marts alone, and beside the same models
    run once as plain SQL (``models_plain``), on the same lake, scaled to the chain's year
    (``benchmarks/chain.py``): what #44's 200 s leaves for the build, and what the build's
    own work adds to its models.
16. storage: a small night (2 dates x 3 locations, loaded and built) on Dagster's SQLite
    storage and on an instance in memory, alternately: bytes written per event of the
    event log (``benchmarks/storage.py``). No target: it says which storage a chain needs.

Results are printed and written to ``benchmarks/results/latest.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.chain import bench_chain, bench_floor, bench_nights  # noqa: E402
from benchmarks.cli import bench_cli  # noqa: E402
from benchmarks.delta import bench_files  # noqa: E402
from benchmarks.housekeeping import bench_housekeeping  # noqa: E402
from benchmarks.peers import bench_peers, load_pages  # noqa: E402
from benchmarks.status import bench_status  # noqa: E402
from benchmarks.storage import bench_storage  # noqa: E402
from pipeline.lake.store import Lake  # noqa: E402
from pos_sandbox import world  # noqa: E402
from pos_sandbox.receipts import SandboxData  # noqa: E402
from pos_sandbox.revenue import RevenueBook  # noqa: E402

PAGE_SIZE = 500
THROUGHPUT_TARGET = 25_000
"""Receipts per wall second (#25's; it was 15,000 before the lake's Delta tables)."""
NIGHTLY_TARGET_SECONDS = 120
"""A 200-location chain's night (#25's; it was 300 s before)."""


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
    bytes_total = sum(len(p) for pages in partitions.values() for p in pages)
    timings, cpu_timings = [], []
    with tempfile.TemporaryDirectory(dir=ROOT / "benchmarks") as tmp:
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            load_pages(Lake(Path(tmp) / str(len(timings))), partitions)
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
        "target_receipts_per_second": THROUGHPUT_TARGET,
    }


def bench_dlt(days: int) -> dict:
    """The throughput benchmark's response bytes into a DuckDB warehouse, by dlt and by this
    pipeline, each timed from the bytes to queryable tables (the ``bench`` extra installs
    dlt). dlt: the pages decoded with Decimal numbers, one resource merged on
    ``transactionId`` (its nested items, payments and side dishes become child tables).
    This pipeline: decoded, flattened, deduplicated, written to the lake by commits, then
    the warehouse built and checked from it.
    """
    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")  # no network here
    try:
        import dlt
    except ImportError:
        return {"skipped": "dlt is not installed (pip install -e '.[bench]')"}
    from pipeline.warehouse import build_warehouse

    partitions, receipts = make_partitions(days)
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = dlt.pipeline(
            pipeline_name="pos_bench", pipelines_dir=str(Path(tmp) / "dlt_pipelines"),
            destination=dlt.destinations.duckdb(str(Path(tmp) / "dlt.duckdb")),
            dataset_name="pos")

        @dlt.resource(name="receipts", primary_key="transactionId", write_disposition="merge")
        def pages():
            for day_pages in partitions.values():
                for page in day_pages:
                    yield json.loads(page, parse_float=Decimal)

        t0 = time.perf_counter()
        pipeline.run(pages())
        dlt_seconds = time.perf_counter() - t0

        lake, target = Lake(Path(tmp) / "lake"), Path(tmp) / "warehouse.duckdb"
        t0 = time.perf_counter()
        load_pages(lake, partitions)
        lake_seconds = time.perf_counter() - t0
        build = build_warehouse(lake.root, target)
        ours_seconds = time.perf_counter() - t0
    return {"receipts": receipts, "partitions": len(partitions),
            "dlt_seconds": round(dlt_seconds, 2),
            "dlt_receipts_per_second": round(receipts / dlt_seconds),
            "pipeline_lake_seconds": round(lake_seconds, 2),
            "pipeline_seconds": round(ours_seconds, 2),
            "pipeline_receipts_per_second": round(receipts / ours_seconds),
            "pipeline_checks_passed": not build.failed_checks,
            "ratio": round(dlt_seconds / ours_seconds, 1)}


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
    """Peak RSS of one ``pos-etl load`` of ``days`` x 3 locations, models built."""
    config = data_dir / "pos.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    end = date(2026, 5, 31)
    start = end - timedelta(days=days - 1)
    config.write_text(f'[source]\nbase_url = "{base_url}"\n[warehouse]\ndata_dir = "data"\n'
                      f'[schedule]\nstart_date = "{start}"\n' + LOCATIONS_TOML)
    # VmHWM is this process's own peak: getrusage's ru_maxrss would keep the peak of the
    # benchmark process it was forked from (Linux carries it across exec).
    code = (
        "import re, sys; from pathlib import Path; from pipeline.cli import main; "
        f"rc = main(['load', '--config', {str(config)!r}, '--start', {start.isoformat()!r}, "
        f"'--end', {end.isoformat()!r}, '--no-catalog']); "
        "print('PEAK_KB', re.search(r'VmHWM:\\s+(\\d+)', "
        "Path('/proc/self/status').read_text()).group(1)); sys.exit(rc)"
    )
    t0 = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "POS_ETL_CONFIG")}
    env |= {f"BENCH_KEY_{loc}": f"sandbox-key-{loc}" for loc in (1001, 1002, 1003)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stdout + out.stderr)
    peak = int(out.stdout.split("PEAK_KB")[1].split()[0])
    return {"days": days, "peak_rss_mb": round(peak / 1024, 1),
            "seconds": round(time.perf_counter() - t0, 1)}


@contextmanager
def sandbox_process(*args: str, served: list[tuple[float, str]] | None = None
                    ) -> Iterator[str]:
    """The sandbox in a process of its own (as a real POS would be); yields its URL.
    ``served``: each request it answered (its access log line) with the moment the line
    arrived (``time.monotonic()``), appended while it runs."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "sandbox", "--port",
                               str(port), *args], cwd=ROOT,
                              stdout=subprocess.DEVNULL if served is None else subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    if served is not None:
        def read() -> None:
            for line in server.stdout:
                if '"' in line:  # uvicorn's access log: ... "POST /path HTTP/1.1" 200 OK
                    served.append((time.monotonic(), line))

        threading.Thread(target=read, daemon=True).start()
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
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:  # (a chain of thousands is slow to stop)
            server.kill()
            server.wait()


def bench_memory(days: list[int]) -> dict:
    """Peak RSS of backfills of 3 locations over ``days`` business dates each (models
    built, ``warehouse.memory_limit`` at its default), the sandbox in its own process.
    The load keeps a few partitions in memory and the build's DuckDB stays within its
    limit, so the peak rises with the first months' data until the build reaches the
    limit, then stays. Target: the two longest backfills' peaks within 5 %."""
    with sandbox_process() as url, tempfile.TemporaryDirectory() as tmp:
        results = [_load_peak_rss(url, n, Path(tmp) / str(n)) for n in sorted(days)]
    return {"locations": 3, "runs": results,
            "bounded": results[-1]["peak_rss_mb"] <= results[-2]["peak_rss_mb"] * 1.05}


BASELINE_COMMIT = "33b3caa"
"""The last commit whose ``pos-etl load`` ran its own loop outside Dagster."""
LOCATIONS_TOML = "".join(f"""
[[locations]]
id = {loc}
short_code = "{code}"
api_key_env = "BENCH_KEY_{loc}"
""" for loc, code in ((1001, "VIE01"), (1002, "SZG01"), (1003, "GRZ01")))


def _timed_load(code_dir: Path, base_url: str, data_dir: Path, start: date, end: date) -> float:
    """Seconds of one ``pos-etl load`` (models built) of the code in ``code_dir``."""
    data_dir.mkdir(parents=True)
    config = data_dir / "pos.toml"
    config.write_text(f'[source]\nbase_url = "{base_url}"\n[warehouse]\ndata_dir = "data"\n'
                      + LOCATIONS_TOML)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "POS_ETL_CONFIG")}
    env |= {f"BENCH_KEY_{loc}": f"sandbox-key-{loc}" for loc in (1001, 1002, 1003)}
    env["PYTHONPATH"] = str(code_dir)
    code = ("import sys; from pipeline.cli import main; sys.exit(main(['load', '--config', "
            f"{str(config)!r}, '--start', {start.isoformat()!r}, '--end', {end.isoformat()!r}]))")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=code_dir)
    if out.returncode != 0:
        raise RuntimeError(f"load in {code_dir} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return round(time.perf_counter() - t0, 1)


def bench_cli_load(days: int, repeats: int) -> dict:
    """``pos-etl load`` of ``days`` x 3 locations with the models, today's code against the
    baseline commit's, side by side on one sandbox, interleaved so both see the same machine.

    The baseline loaded outside Dagster; today's run is a Dagster run recorded in the
    instance. Target: the median of the pairs' ratios (today / baseline) at most 1.10.
    """
    end = date.today() - timedelta(days=days + 30)
    start = end - timedelta(days=days - 1)
    with tempfile.TemporaryDirectory() as tmp, sandbox_process() as url:
        baseline = Path(tmp) / "baseline"
        baseline.mkdir()
        archive = subprocess.run(["git", "archive", BASELINE_COMMIT], cwd=ROOT,
                                 capture_output=True, check=False)
        if archive.returncode != 0:
            return {"skipped": f"baseline commit {BASELINE_COMMIT} is not in this clone"}
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive.stdout, check=True)
        times: dict[str, list[float]] = {"baseline": [], "current": []}
        variants = [("baseline", baseline), ("current", ROOT)]
        for n in range(repeats):
            # Pairs back to back, in alternating order: this machine's speed drifts by
            # tens of percent over minutes, so only neighbours are compared.
            for name, code_dir in variants if n % 2 == 0 else variants[::-1]:
                times[name].append(_timed_load(code_dir, url, Path(tmp) / f"{name}{n}",
                                               start, end))
                print(f"cli_load {name}: {times[name][-1]} s", flush=True)
    pairs = [c / b for b, c in zip(times["baseline"], times["current"], strict=True)]
    ratio = statistics.median(pairs)
    return {"days": days, "locations": 3, "partitions": days * 3,
            "baseline_commit": BASELINE_COMMIT, "baseline_seconds": times["baseline"],
            "current_seconds": times["current"], "pair_ratios": [round(r, 3) for r in pairs],
            "ratio": round(ratio, 3), "target_ratio": 1.10, "met": ratio <= 1.10}


NIGHT = datetime(2026, 6, 2, 3, 30, tzinfo=ZoneInfo("Europe/Vienna"))
"""The scheduled time of the benchmarked night: it loads business date 2026-06-01."""


PHASES: dict[str, float] = {}
"""Seconds of the last ``_nightly_tick``'s parts: the sensor's two evaluations, the load
run, the build run."""


def _nightly_tick(config: Path, home: Path, night: datetime = NIGHT) -> tuple[float, list]:
    """Evaluate the nightly schedule at ``night``, run each run it requests, then the
    build the sensor ``build_after_load`` requests after them (its evaluation, not its
    30-second interval), in this process, on the instance at ``home``; returns the wall
    seconds and the runs' reports (each load's with its build's)."""
    import dagster as dg

    from pipeline.orchestration.assets.freshness import FRESHNESS_CHECK
    from pipeline.orchestration.code_location import build_defs
    from pipeline.orchestration.configs import load_settings
    from pipeline.orchestration.instance import prepare_home
    from pipeline.orchestration.load_report import LoadReport
    from pipeline.orchestration.schedules import LOAD_JOB, WAREHOUSE_JOB

    prepare_home(home)
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    t0 = time.perf_counter()
    defs = build_defs(load_settings(config))
    reports = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        # Resolved while the instance is open: Dagster's definitions load context keeps
        # a weak reference to the instance in use (a repeat's tick failed resolving it
        # after the previous tick's instance was closed).
        job = defs.resolve_job_def(LOAD_JOB)
        phase = time.perf_counter()
        sensor = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        PHASES["sensor"] = time.perf_counter() - phase
        context = dg.build_schedule_context(instance=instance, scheduled_execution_time=night)
        tick = defs.resolve_schedule_def("nightly_load").evaluate_tick(context)
        phase = time.perf_counter()
        for request in tick.run_requests or []:
            result = job.execute_in_process(
                instance=instance, tags=request.tags, raise_on_error=False,
                run_config={**(request.run_config or {}), **quiet})
            reports.append(LoadReport.from_run(result, 1, instance))
        PHASES["load"] = time.perf_counter() - phase
        phase = time.perf_counter()
        sensor = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                   cursor=sensor.cursor)
        PHASES["sensor"] += time.perf_counter() - phase
        build = defs.resolve_job_def(WAREHOUSE_JOB)
        models = [key for key in build.asset_layer.selected_asset_keys
                  if sensor.get_num_requested(key)]
        phase = time.perf_counter()
        if models and reports:
            # the models' checks, as warehouse_job has them: the freshness checks judge
            # the wall clock's today, not the benchmarked night, and have their own job
            graph = defs.resolve_asset_graph()
            checks = {key for model in models for key in graph.get(model).check_keys
                      if key.name != FRESHNESS_CHECK}
            result = build.get_subset(asset_selection=set(models),
                                      asset_check_selection=checks).execute_in_process(
                instance=instance, raise_on_error=False, run_config=quiet)
            reports[-1].build_run_id = result.run_id
            reports[-1].read(result, instance)
        PHASES["build"] = time.perf_counter() - phase
    return time.perf_counter() - t0, reports


def bench_nightly(locations: int, volume: int) -> dict:
    """The nightly schedule's tick for a chain, run as the schedule requests it.

    The sandbox serves ``locations`` locations with ``volume`` transactions a day in its
    own process; the config is the one ``pos-etl sandbox --write-config`` writes, with
    ``lookback_days = 0`` and no drift check, so the night loads one business date. The
    schedule is evaluated at 03:30 and each run it requests is executed on a fresh
    instance: revenue of every location, the catalog, menu and voucher snapshots; then
    the build the sensor ``build_after_load`` requests (the warehouse built and checked).
    Target: at most 120 s (``NIGHTLY_TARGET_SECONDS``), no failed partition.
    """
    from pos_sandbox.server import chain_config

    with tempfile.TemporaryDirectory() as tmp, \
            sandbox_process("--locations", str(locations), "--volume", str(volume)) as url:
        toml, env = chain_config(url, world.chain(locations), start_date=date(2026, 5, 1),
                                 lookback_days=0, drift_check_days=0)
        config = Path(tmp) / "chain.toml"
        config.write_text(toml)
        os.environ.update(line.split("=", 1) for line in env.split())
        wall, reports = _nightly_tick(config, Path(tmp) / "dagster_home")
    return {"locations": locations, "transactions_per_day": volume,
            "wall_seconds": round(wall, 1),
            "failed_partitions": sum(len(r.failed_partitions) for r in reports),
            "partitions": sum(r.partitions for r in reports),
            "receipts": sum(r.receipts for r in reports),
            "revenue_pages": sum(r.pages for r in reports),
            "runs": len(reports), "runs_ok": sum(r.ok for r in reports),
            "target_seconds": NIGHTLY_TARGET_SECONDS}


def bench_incremental(histories: tuple[int, int], repeats: int) -> dict:
    """One night on top of a short and of a long history, side by side.

    For each history: 3 locations backfilled with ``pos-etl load``'s job up to the day
    before the night (models built), then the nightly schedule's tick of ``NIGHT`` run
    as it requests it: yesterday and the 3 lookback days loaded, the snapshots, the
    warehouse built and checked. The drift check is off in both: it reads a fixed number
    of older days a night (the same for any history past two weeks), and a 7-day history
    has none to read. The ticks alternate between the histories (``repeats`` each).
    Target: the long history's median night at most 1.5 times the short one's.
    """
    from pipeline.core.reporting import Reporter
    from pipeline.orchestration.configs import load_settings
    from pipeline.orchestration.loader import run_load

    os.environ.update({f"BENCH_KEY_{loc}": f"sandbox-key-{loc}" for loc in (1001, 1002, 1003)})
    last = NIGHT.date() - timedelta(days=2)  # the night loads the day after it, too
    nights: dict[int, list[float]] = {days: [] for days in histories}
    computed: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp, sandbox_process() as url:
        configs = {}
        for days in histories:
            folder = Path(tmp) / f"history{days}"
            folder.mkdir()
            configs[days] = folder / "pos.toml"
            configs[days].write_text(
                f'[source]\nbase_url = "{url}"\n[warehouse]\ndata_dir = "data"\n'
                f'[schedule]\nstart_date = "{last - timedelta(days=days - 1)}"\n'
                "lookback_days = 3\ndrift_check_days = 0\n" + LOCATIONS_TOML)
            os.environ["DAGSTER_HOME"] = str(folder / "dagster_home")
            report = run_load(load_settings(configs[days]), last - timedelta(days=days - 1),
                              last, progress=Reporter())
            if not report.ok:
                raise RuntimeError(report.summary())
        for _ in range(repeats):
            for days in histories:
                os.environ["DAGSTER_HOME"] = str(configs[days].parent / "dagster_home")
                wall, reports = _nightly_tick(configs[days], configs[days].parent / "dagster_home")
                if not all(r.ok for r in reports):
                    raise RuntimeError("\n".join(r.summary() for r in reports))
                nights[days].append(round(wall, 2))
                computed[days] = reports[0].partitions_computed
                print(f"night on {days} days of history: {wall:.1f} s ("
                      + ", ".join(f"{k} {v:.2f} s" for k, v in PHASES.items()) + ")",
                      flush=True)
        os.environ.pop("DAGSTER_HOME")
    short, long = (statistics.median(nights[d]) for d in histories)
    return {"history_days": list(histories), "locations": 3,
            "night_seconds": {str(d): nights[d] for d in histories},
            "partitions_computed": {str(d): computed[d] for d in histories},
            "ratio": round(long / short, 3), "target_ratio": 1.5, "met": long / short <= 1.5}


PARTITION_STATUS = """
query ($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {
  partitionStats { numMaterialized numPartitions numFailed }
  assetPartitionStatuses { ... on TimePartitionStatuses { ranges { status startKey endKey } } }
} } }"""
PARTITION_EVENTS = """
query ($key: AssetKeyInput!, $partitions: [String!]) { assetOrError(assetKey: $key) {
  ... on Asset { assetMaterializations(partitions: $partitions) {
    partition metadataEntries { label } } } } }"""
LAUNCH_BACKFILL = """
mutation ($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""


def bench_partitions(locations: int, years: int) -> dict:
    """What a chain's partitions cost the Dagster UI: ``years`` of business-date
    partitions of ``lake/revenue``, each materialized with the metadata a load writes
    for ``locations`` locations (their per-location table), in a fresh instance; then the
    real webserver (``workspace.yaml``, the chain's config) is asked over GraphQL for
    what the asset's partition page shows, and a backfill of every partition is launched
    (the daemon is not running: this is the launch, as the UI's button does it).
    """
    import dagster as dg
    import httpx

    from pipeline.lake.store import Lake
    from pipeline.load.steps import DayOutcome, PartitionOutcome
    from pipeline.orchestration.assets.revenue import REVENUE_KEY, day_summary, locations_table
    from pipeline.orchestration.instance import prepare_home
    from pos_sandbox.server import chain_config

    today = date.today()
    first = today - timedelta(days=365 * years)
    dates = [first + timedelta(days=n) for n in range((today - first).days + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        toml, env = chain_config("http://127.0.0.1:9", world.chain(locations),
                                 start_date=first)
        config = Path(tmp) / "chain.toml"
        config.write_text(toml)
        home = prepare_home(Path(tmp) / "dagster_home")
        lake = Lake(Path(tmp) / "data" / "lake")
        ids = [loc.id for loc in world.chain(locations).locations]
        t0 = time.perf_counter()
        with dg.DagsterInstance.from_config(str(home)) as instance:
            for day in dates:
                outcome = DayOutcome(day, [PartitionOutcome(loc, day, receipts=400, pages=1,
                                                            turnover_net=Decimal("5123.45"))
                                           for loc in ids])
                instance.report_runless_asset_event(dg.AssetMaterialization(
                    REVENUE_KEY, partition=day.isoformat(),
                    metadata=day_summary(outcome).to_metadata(  # as the asset writes it
                        locations=locations_table(outcome),
                        lake=dg.MetadataValue.path(lake.describe("revenue")))))
        record_seconds = time.perf_counter() - t0
        port = _free_port()
        server_env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
        server_env |= dict(line.split("=", 1) for line in env.split())
        server_env |= {"DAGSTER_HOME": str(home), "POS_ETL_CONFIG": str(config)}
        server = subprocess.Popen(
            [sys.executable, "-m", "dagster_webserver", "-w", str(ROOT / "workspace.yaml"),
             "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=server_env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/graphql"
        key = {"path": REVENUE_KEY.path}
        timings: dict[str, list[float]] = {}
        try:
            deadline = time.time() + 120
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/server_info").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("the Dagster webserver did not start")
                time.sleep(0.5)

            def ask(name: str, query: str, variables: dict) -> dict:
                t = time.perf_counter()
                answer = httpx.post(url, json={"query": query, "variables": variables},
                                    timeout=600).json()
                timings.setdefault(name, []).append(round(time.perf_counter() - t, 2))
                if "errors" in answer:
                    raise RuntimeError(f"{name}: {answer['errors']}")
                return answer["data"]

            for _ in range(2):  # the first asks load the code location and warm caches
                status = ask("partition_status", PARTITION_STATUS, {"key": key})
                ask("partition_events", PARTITION_EVENTS,
                    {"key": key, "partitions": [dates[-2].isoformat()]})
            launched = ask("launch_backfill", LAUNCH_BACKFILL, {"params": {
                "assetSelection": [key], "allPartitions": True}})
        finally:
            server.terminate()
            server.wait(timeout=30)
    stats = status["assetNodeOrError"]["partitionStats"]
    return {"locations": locations, "years": years, "partitions": len(dates),
            "record_seconds": round(record_seconds, 1),
            "record_ms_per_materialization": round(1000 * record_seconds / len(dates), 1),
            "materialized": stats["numMaterialized"], "partitions_shown": stats["numPartitions"],
            "partition_status_seconds": timings["partition_status"],
            "partition_events_seconds": timings["partition_events"],
            "launch_backfill_seconds": timings["launch_backfill"],
            "backfill": launched["launchPartitionBackfill"]["__typename"]}


def _isolated(bench, args: tuple):
    """Run one benchmark in a fresh interpreter: those that run Dagster leave process-wide
    state behind (the instance of their temporary home), and each is measured alone."""
    # Not a multiprocessing.Pool: its workers are daemons, which may not start processes
    # of their own (the chain benchmark makes its lake with a process per core).
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(bench, *args).result()


def _peers(days: int, repeats: int) -> dict:
    return bench_peers(*make_partitions(days), repeats)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["throughput", "dlt", "memory", "cli_load",
                                           "incremental", "nightly", "partitions", "chain",
                                           "status", "delta", "housekeeping", "cli",
                                           "peers", "nights", "floor", "storage"])
    parser.add_argument("--chain", type=int, default=200,
                        help="locations of the nightly benchmark's chain")
    parser.add_argument("--days", type=int, default=30, help="days of receipts for throughput")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long-days", type=int, default=365,
                        help="history of the incremental benchmark's long night")
    parser.add_argument("--memory-days", type=int, nargs="+", default=[1, 30, 365, 1095],
                        help="backfills whose peak RSS is measured (3 locations each)")
    parser.add_argument("--load-days", type=int, default=365,
                        help="days x 3 locations of the CLI load benchmark")
    parser.add_argument("--load-repeats", type=int, default=2)
    parser.add_argument("--floor-days", type=int, default=180,
                        help="days x --chain locations of the floor benchmark's lake")
    args = parser.parse_args()
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    latest = out / "latest.json"
    # --only one benchmark: the others' figures of the last full run are kept
    results: dict = json.loads(latest.read_text()) if args.only and latest.exists() else {}
    results |= {"python": sys.version.split()[0], "cpu_count": os.cpu_count(),
                "calibration_loop_seconds": calibration()}
    runs = {
        "throughput": (bench_throughput, (args.days, args.repeats)),
        "dlt": (bench_dlt, (args.days,)),
        "memory": (bench_memory, (args.memory_days,)),
        "cli_load": (bench_cli_load, (args.load_days, args.load_repeats)),
        "incremental": (bench_incremental, ((7, args.long_days), 2)),
        "nightly": (bench_nightly, (args.chain, 300)),
        "partitions": (bench_partitions, (args.chain, 3)),
        "chain": (bench_chain, (args.chain, 365, 300)),
        "nights": (bench_nights, (args.chain, (90, 1095), 300)),
        "floor": (bench_floor, (args.chain, args.floor_days, 300, args.repeats)),
        "status": (bench_status, (365, 3)),
        "delta": (bench_files, ()),
        "housekeeping": (bench_housekeeping, (args.chain, 3)),
        "cli": (bench_cli, (7,)),
        "peers": (_peers, (args.days, args.repeats)),
        "storage": (bench_storage, (args.repeats,)),
    }
    for name, (bench, bench_args) in runs.items():
        if args.only != name and (args.only is not None
                                  or name in ("chain", "housekeeping", "nights", "floor")):
            continue
        results[name] = _isolated(bench, bench_args)
        print(f"{name}:", json.dumps(results[name]), flush=True)
        latest.write_text(json.dumps(results, indent=2))  # kept if one fails
    ok = (results.get("throughput", {}).get("receipts_per_wall_second",
                                                 THROUGHPUT_TARGET) >= THROUGHPUT_TARGET
          and results.get("memory", {}).get("bounded", True)
          and results.get("cli_load", {}).get("met", True)
          and results.get("incremental", {}).get("met", True)
          and results.get("nightly", {}).get("wall_seconds", 0) <= NIGHTLY_TARGET_SECONDS
          and not results.get("nightly", {}).get("failed_partitions")
          and results.get("chain", {}).get("met", True)
          and results.get("nights", {}).get("met", True)
          and results.get("status", {}).get("met", True)
          and results.get("cli", {}).get("met", True)
          and results.get("delta", {}).get("met", True)
          and results.get("peers", {}).get("met", True)
          and results.get("housekeeping", {}).get("met", True))
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
