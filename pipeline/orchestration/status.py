"""``pos-etl status``: is everything fine? One screen, and an exit code for a monitor.

Per location the newest business date in the lake, its lag and whether the lake and the
daily close are fresh (``pipeline.warehouse.freshness``); the holes in its history before that
date (``pipeline.warehouse.coverage``); the last load's and build's runs with
their failed and warned checks (from the Dagster instance); the source drift found in
the last days (from the warehouse). Needs attention, and exits 1: a stale location, a
failed last run, a failed check of severity error (and, with ``--warn-error``, a warning),
a hole in a location's history.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb

from pipeline.accounting import ledger
from pipeline.core.settings import Settings
from pipeline.lake.store import LakeStore
from pipeline.orchestration.assets.revenue import REVENUE_STEP
from pipeline.orchestration.runs import IN_PROGRESS, is_dead
from pipeline.orchestration.schedules import LOAD_JOB, NIGHT_TAG, SHARD_TAG, WAREHOUSE_JOB
from pipeline.orchestration.summaries import FailedCheck
from pipeline.warehouse.coverage import Gaps, history, lake_days
from pipeline.warehouse.freshness import LocationFreshness, freshness

DRIFT_DAYS = 7
"""Drift found in these last days is listed."""


@dataclass(frozen=True)
class RunState:
    job: str
    run_id: str
    status: str
    """Dagster's run status (``SUCCESS``, ``FAILURE``, ``STARTED``, ...)."""
    ended: datetime | None
    failed_checks: tuple[FailedCheck, ...] = ()
    dead: bool = False
    """``STARTED`` (or starting) but its process is gone: killed or crashed."""
    share: str = ""
    """A share of a sharded night: ``2/4 (locations 1002, 1006)``."""

    @property
    def name(self) -> str:
        return f"{self.job} share {self.share}" if self.share else self.job

    @property
    def failed(self) -> bool:
        return self.status in ("FAILURE", "CANCELED") or self.dead


@dataclass
class Status:
    locations: list[LocationFreshness]
    runs: list[RunState]
    drift: list[tuple[int, str, str]] = field(default_factory=list)
    """(location, business date, detected at) of the drift found lately."""
    unconfigured: list[int] = field(default_factory=list)
    """Locations the warehouse holds that the config no longer names (a note)."""
    corrections: list[tuple[str, int, int, str]] = field(default_factory=list)
    """(closed period, dates changed, correction bookings, the date they are booked on)
    pending in the first open period (``rpt_period_corrections``)."""
    history: list[Gaps] = field(default_factory=list)
    """Per location, its expected dates up to its newest loaded one and the holes among
    them (``pipeline.warehouse.coverage``; the dates after it are the freshness's)."""
    command: Callable[[str], str] = lambda args: f"pos-etl {args}"
    """A command to run with the same settings, as a hint (``Settings.command``)."""
    report_corrections: list[tuple[str, int]] = field(default_factory=list)
    """(closed period, correction rows for its days that the first open period's cash
    book and VAT report carry: ``pipeline.accounting.ledger.pending_report_corrections``)."""
    unmatched: list[tuple[int, str, int, int, Decimal]] = field(default_factory=list)
    """(location, reason, rows, the oldest's age in days, their difference in EUR) of what
    the bank reconciliation leaves open (``rpt_bank_reconciliation``, not yet due aside)."""

    def attention(self, warn_error: bool = False) -> list[str]:
        """What needs attention, one line each (empty: everything is fine)."""
        lines = [f"location {s.location_id} {s.short_code}: lake has "
                 f"{s.lake_newest or 'nothing'}, {s.due} was due" for s in self.locations
                 if not s.lake_fresh]
        lines += [f"location {s.location_id} {s.short_code}: rpt_daily_close has "
                  f"{s.close_newest or 'nothing'}, {s.due} was due" for s in self.locations
                  if s.lake_fresh and not s.close_fresh]
        lines += [f"{held.line()} (not in the lake; " + self.command(
                      f"load --start {held.missing[0]} --end {held.missing[-1]} "
                      "--missing-only") + ")"
                  for held in self.history if held.missing]
        for run in self.runs:
            if run.dead:
                lines.append(f"{run.name}: its last run {run.run_id} is still marked "
                             f"{run.status.lower()}, but its process is gone (killed or "
                             "crashed); the next pos-etl load or build marks it failed")
            elif run.failed:
                lines.append(f"{run.name}: its last run {run.run_id} {run.status.lower()}")
            lines += [f"{run.name}: check {c.name} failed" for c in run.failed_checks
                      if c.severity == "error" or warn_error]
        return lines

    def as_json(self, warn_error: bool = False) -> dict:
        return {"ok": not self.attention(warn_error), "attention": self.attention(warn_error),
                "locations": [s.as_json() for s in self.locations],
                "runs": [{"job": r.job, "share": r.share or None, "run_id": r.run_id,
                          "status": r.status,
                          "ended": r.ended.isoformat() if r.ended else None,
                          "process_gone": r.dead,
                          "failed_checks": [{"name": c.name, "severity": c.severity,
                                             "where": [w.as_json() for w in c.where]}
                                            for c in r.failed_checks]} for r in self.runs],
                "drift": [{"location_id": loc, "business_date": day, "detected_at": at}
                          for loc, day, at in self.drift],
                "unconfigured_locations": self.unconfigured,
                "history": [held.as_json() for held in self.history],
                "corrections_pending": [
                    {"closed_period": period, "dates": dates, "bookings": bookings,
                     "booking_date": booked} for period, dates, bookings, booked
                    in self.corrections],
                "report_corrections_pending": [{"closed_period": period, "rows": n}
                                               for period, n in self.report_corrections],
                "bank_unmatched": [{"location_id": loc, "reason": reason, "rows": n,
                                    "oldest_days": oldest, "difference_amount": str(amount)}
                                   for loc, reason, n, oldest, amount in self.unmatched]}

    def lines(self, warn_error: bool = False) -> list[str]:
        """The screen, as plain lines."""
        out = ["location  newest loaded  lag  lake   daily close"]
        for s in self.locations:
            lag = "-" if s.lag_days is None else f"{s.lag_days}d"
            out.append(f"{s.location_id:<9} {str(s.lake_newest or 'none'):<14} {lag:>4} "
                       f"{'fresh' if s.lake_fresh else 'STALE':<6} "
                       f"{'fresh' if s.close_fresh else 'STALE'} "
                       f"({s.close_newest or 'none'})")
        for held in self.history:
            if held.expected and not held.missing:
                out.append(f"location {held.location_id} {held.short_code}: every business "
                           f"date from {held.first} to {held.last} loaded ({held.expected})")
        for run in self.runs:
            ended = f", ended {run.ended:%Y-%m-%d %H:%M} UTC" if run.ended else ""
            out.append(f"{run.name}: {run.status.lower()}{ended} (run {run.run_id})")
            for check in run.failed_checks:
                out += check.lines()
        if self.drift:
            out.append(f"source drift found in the last {DRIFT_DAYS} days: " + ", ".join(
                f"{loc} {day}" for loc, day, _ in self.drift[:10])
                + (f" and {len(self.drift) - 10} more" if len(self.drift) > 10 else ""))
        for period, dates, bookings, booked in self.corrections:
            out.append(f"note: {bookings:,} correction bookings pending for {dates} "
                       f"date{'s' * (dates > 1)} of the closed period {period}, booked on "
                       f"{booked} (rpt_period_corrections; the next period's file carries "
                       f"them)")
        for period, n in self.report_corrections:
            out.append(f"note: {n:,} correction row{'s' * (n > 1)} for the closed period "
                       f"{period}'s days pending in the first open period's cash book and VAT "
                       "report (rpt_cash_book, rpt_vat_by_rate: corrects_date; its own "
                       "reports stay as closed; rpt_period_changes lists every change)")
        for loc, reason, n, oldest, amount in self.unmatched:
            out.append(f"bank: location {loc}: {n} {reason} (oldest {oldest} days, "
                       f"{amount:,} EUR; rpt_bank_reconciliation)")
        if self.unconfigured:
            out.append("note: in the warehouse, not configured: "
                       + ", ".join(map(str, self.unconfigured))
                       + " (their history stays; see docs/operations.md)")
        attention = self.attention(warn_error)
        out += [f"  ATTENTION {line}" for line in attention]
        out.append("status: OK" if not attention else (
            "status: 1 thing needs attention" if len(attention) == 1 else
            f"status: {len(attention)} things need attention"))
        return out


def _last_runs(instance: dg.DagsterInstance, job: str) -> list[RunState]:
    """The job's last run; of a sharded night's load, the last run of each of its shares
    (one that failed names its locations)."""
    records = instance.get_run_records(dg.RunsFilter(job_name=job), limit=1)
    if not records:
        return []
    night = records[0].dagster_run.tags.get(NIGHT_TAG)
    if not night:
        return [_state(instance, job, records[0])]
    shares: dict[str, dg.RunRecord] = {}
    for record in instance.get_run_records(dg.RunsFilter(job_name=job,
                                                         tags={NIGHT_TAG: night})):
        shares.setdefault(record.dagster_run.tags.get(SHARD_TAG, ""), record)  # newest
    return [_state(instance, job, record, f"{share} ({_locations(record.dagster_run)})")
            for share, record in sorted(shares.items(), key=lambda s: _share_order(s[0]))]


def _share_order(share: str) -> int:
    return int(share.split("/")[0]) if share[:1].isdigit() else 0


def _locations(run: dg.DagsterRun) -> str:
    ops = (run.run_config or {}).get("ops", {})
    ids = ops.get(REVENUE_STEP, {}).get("config", {}).get("locations") or []
    return "locations " + ", ".join(map(str, ids)) if ids else "every location"


def _state(instance: dg.DagsterInstance, job: str, record: dg.RunRecord,
           share: str = "") -> RunState:
    run = record.dagster_run
    return RunState(job, run.run_id, run.status.value,
                    record.end_time and datetime.fromtimestamp(record.end_time, UTC),
                    run_checks(instance, run.run_id),
                    dead=run.status in IN_PROGRESS and is_dead(run.tags), share=share)


def run_checks(instance: dg.DagsterInstance, run_id: str) -> tuple[FailedCheck, ...]:
    """The checks that failed in a run, as its events recorded them."""
    return tuple(FailedCheck.from_evaluation(evaluation) for evaluation in (
        event.event_log_entry.dagster_event.event_specific_data
        for event in instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records)
        if not evaluation.passed)


def _drift(warehouse_path: Path, now: datetime) -> list[tuple[int, str, str]]:
    if not warehouse_path.exists():
        return []
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        try:
            rows = con.execute(
                "select location_id, business_date, detected_at from rpt_source_drift "
                "where detected_at >= ? order by detected_at desc, location_id",
                [now - timedelta(days=DRIFT_DAYS)]).fetchall()
        except duckdb.CatalogException:
            return []
    return [(loc, day.isoformat(), str(at)) for loc, day, at in rows]


def _corrections(warehouse_path: Path) -> list[tuple[str, int, int, str]]:
    if not warehouse_path.exists():
        return []
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        try:
            rows = con.execute(
                "select closed_period, count(distinct (location_id, original_date)), "
                "count(*), min(booking_date) from rpt_period_corrections "
                "group by all order by 1").fetchall()
        except duckdb.CatalogException:
            return []
    return [(period, dates, bookings, str(booked)) for period, dates, bookings, booked
            in rows]


def _report_corrections(warehouse_path: Path) -> list[tuple[str, int]]:
    if not warehouse_path.exists():
        return []
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        return list(ledger.pending_report_corrections(con).items())


def bank_unmatched(warehouse_path: Path) -> list[tuple[int, str, int, int, Decimal]]:
    if not warehouse_path.exists():
        return []
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        try:
            return [tuple(row) for row in con.execute(
                "select location_id, reason, count(*), max(days_open), "
                "sum(difference_amount) from rpt_bank_reconciliation "
                "where is_open and reason <> 'not yet due' group by all order by 1, 2"
            ).fetchall()]
        except duckdb.CatalogException:
            return []


def _unconfigured(settings: Settings) -> list[int]:
    path = settings.warehouse.warehouse_path
    if not path.exists():
        return []
    configured = {loc.id for loc in settings.locations}
    with duckdb.connect(str(path), read_only=True) as con:
        try:
            held = [r[0] for r in con.execute(
                "select distinct location_id from rpt_daily_close order by 1").fetchall()]
        except duckdb.CatalogException:
            return []
    return [loc for loc in held if loc not in configured]


def read_status(settings: Settings, lake: LakeStore, instance: dg.DagsterInstance,
                now: datetime) -> Status:
    """The status at ``now`` (an aware datetime)."""
    runs = [run for job in (LOAD_JOB, WAREHOUSE_JOB) for run in _last_runs(instance, job)]
    loaded = lake_days(lake)
    return Status(freshness(settings, lake, now, loaded), runs,
                  _drift(settings.warehouse.warehouse_path, now), _unconfigured(settings),
                  _corrections(settings.warehouse.warehouse_path),
                  history(settings, loaded, now), settings.command,
                  _report_corrections(settings.warehouse.warehouse_path),
                  bank_unmatched(settings.warehouse.warehouse_path))


def print_json(status: Status, warn_error: bool) -> str:
    return json.dumps(status.as_json(warn_error), indent=2)
