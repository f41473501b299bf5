"""The commands that run the pipeline: load, verify, build, status, demo."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date

import click

from pipeline.cli.base import (
    MAX_DAYS,
    alert_about,
    cli,
    config_option,
    exit_code,
    load_settings,
    range_options,
    warn_error_option,
)
from pipeline.core.outcomes import UsageError
from pipeline.core.untrusted import for_terminal
from pipeline.sources import OPTIONAL
from pipeline.sources.base import Source


def date_range_of(settings, start: date | None, end: date | None,
                  days: int | None) -> tuple[date, date]:
    """The business dates a load or verify covers: ``--start``/``--end``, ``--days N`` up to
    yesterday, or, with neither, the nightly's range (yesterday and the lookback)."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    from pipeline.orchestration.schedules import last_complete_business_date

    if days and (start or end):
        raise UsageError("give --days or --start/--end, not both")
    now = datetime.now(ZoneInfo(settings.schedule.timezone))
    yesterday = last_complete_business_date(settings, now)
    if days:
        return yesterday - timedelta(days=days - 1), yesterday
    if start or end:
        end = end or (yesterday if start <= yesterday else start)
        return start or end, end
    return yesterday - timedelta(days=settings.schedule.lookback_days), yesterday


class Published:
    """What ``published_anyway`` found: the storage's error, when the warehouse was
    published all the same."""

    error: OSError | None = None


@contextmanager
def published_anyway(settings) -> Iterator[Published]:
    """A command whose Dagster storage failed (a full disk) after its build published the
    new warehouse: the error is a warning naming it and the warehouse published; ``build``
    then exits 0 (the warehouse is whole and current; the run stays marked started until
    the next command fails it), ``load`` 1 (its summary of the partitions went with the
    record). Else the error stands."""
    from pipeline.warehouse.state import build_id

    found = Published()
    before = build_id(settings.warehouse.warehouse_path)
    try:
        yield found
    except OSError as exc:
        after = build_id(settings.warehouse.warehouse_path)
        if after is None or after == before:
            raise
        found.error = exc
        where = f"{exc.filename}: " if exc.filename else ""
        print(for_terminal(
            f"warning: the new warehouse was built, checked and published (build {after}, "
            f"{settings.warehouse.warehouse_path}); then Dagster could not record the run: "
            f"{where}{exc.strerror or exc}. pos-etl status names the run until the next "
            "command marks it failed"), file=sys.stderr)


def _load(command: str, config: str | None, start: date | None, end: date | None,
          days: int | None, location: tuple[str, ...], no_models: bool, warn_error: bool,
          catalog: bool = True, skip: tuple[str, ...] = (), missing_only: bool = False,
          source_moved: bool = False) -> int:
    from pipeline.orchestration.loader import run_load
    from pipeline.orchestration.progress import LoadProgress, print_summary

    settings = load_settings(config)
    first, last = date_range_of(settings, start, end, days)
    count = len(location) or len(settings.locations)
    print(f"{command}: business dates {first} .. {last}, {count} location"
          f"{'s' * (count > 1)}", file=sys.stderr, flush=True)  # (before Dagster loads)
    with LoadProgress() as progress, published_anyway(settings) as published:
        report = run_load(settings, first, last, list(location) or None, catalog=catalog,
                          skip=skip, models=not no_models,
                          verify=command == "verify", missing_only=missing_only,
                          source_moved=source_moved, progress=progress)
    if published.error:  # (the load's own summary was lost with its record: not known)
        return 1
    report.warn_error = warn_error
    print_summary(report)
    alert_about(settings, report, command)
    return exit_code(report)


def _skip_flag(source: Source) -> str:
    return f"no_{source.name}"


def skip_options(command):
    """``--no-<name>`` for each source a load may leave out (``pipeline.sources``)."""
    for source in reversed(OPTIONAL):
        command = click.option(f"--no-{source.name}", _skip_flag(source), is_flag=True,
                               help=f"leave out {source.title}")(command)
    return command


@cli.command(help="load a range of business dates, then build the models")
@range_options
@click.option("--no-catalog", is_flag=True, help="skip the catalog and menu snapshots")
@skip_options
@click.option("--missing-only", is_flag=True,
              help="fetch only the partitions not committed yet, or committed "
                   "provisional (resume a long load that was killed; the others are kept "
                   "as they are)")
@click.option("--source-moved", is_flag=True,
              help="the lake's POS moved to this config's [source] base_url: record it as "
                   "the lake's source (else a lake loaded from another source is refused)")
def load(no_catalog: bool, missing_only: bool, source_moved: bool, **options) -> int:
    skip = tuple(s.name for s in OPTIONAL if options.pop(_skip_flag(s)))
    return _load("load", **options, catalog=not no_catalog, skip=skip,
                 missing_only=missing_only, source_moved=source_moved)


@cli.command(short_help="read loaded days again and record source drift",
             help="read loaded days again; replace and record those the POS changed since "
                  "(source drift)")
@range_options
def verify(**range_args) -> int:
    return _load("verify", **range_args, catalog=False)  # revenue only


@cli.command(short_help="build the warehouse from the lake and check it",
             help="build the warehouse from the lake (what changed since the last build) "
                  "and check it")
@config_option
@click.option("--full", is_flag=True,
              help="compute every partition again (the result is the same)")
@click.option("--forget-missing", is_flag=True,
              help="drop from the warehouse the revenue partitions the lake no longer holds, "
                   "and accept a lake at an older version than the warehouse was built "
                   "from (without it, either fails the build and the warehouse stays)")
@warn_error_option
def build(config: str | None, full: bool, forget_missing: bool, warn_error: bool) -> int:
    from pipeline.orchestration.loader import run_build
    from pipeline.orchestration.progress import LoadProgress

    settings = load_settings(config)
    print(f"build: the warehouse {settings.warehouse.warehouse_path} from the lake "
          f"{settings.lake.url or settings.warehouse.lake_dir}"
          f"{' (every partition again)' if full else ''}", file=sys.stderr, flush=True)
    with LoadProgress() as progress, published_anyway(settings) as published:
        report = run_build(settings, full=full, forget_missing=forget_missing,
                           progress=progress)
    if published.error:
        return 0
    report.warn_error = warn_error
    print(for_terminal(report.summary()))
    alert_about(settings, report, "build")
    return exit_code(report)


@cli.command(short_help="vacuum and checkpoint the lake's Delta tables",
             help="what the weekly schedule runs, now: publish each lake table's Delta log, "
                  "delete the files of replaced loads older than [lake] retention_hours, "
                  "checkpoint the log (a run of lake_housekeeping_job)")
@config_option
def housekeeping(config: str | None) -> int:
    from pipeline.orchestration.loader import run_housekeeping

    settings = load_settings(config)
    print(f"housekeeping: the lake {settings.lake.url or settings.warehouse.lake_dir}: "
          f"compact, delete what no version of the last {settings.lake.retention_hours} h "
          "holds, checkpoint", file=sys.stderr, flush=True)
    result = run_housekeeping(settings)
    outcome = "OK" if result.success else "FAILED"
    print(for_terminal(f"dagster run: {result.run_id}\nresult: {outcome}"))
    if not result.success:
        for event in result.all_events:
            if event.is_step_failure:
                error = event.step_failure_data.error
                print(for_terminal(f"  FAILED {event.step_key}: "
                                   f"{(error.message.strip().splitlines() or [''])[0]}"),
                      file=sys.stderr)
    return 0 if result.success else 1


@cli.command(short_help="is everything fine? (exit 1 when not)",
             help="is everything fine? freshness per location, the last runs' failed and "
                  "warned checks, drift; exit 1 when something needs attention")
@config_option
@click.option("--json", "as_json", is_flag=True, help="the status as JSON")
@warn_error_option
def status(config: str | None, as_json: bool, warn_error: bool) -> int:
    from datetime import UTC, datetime

    from pipeline.lake.open import make_lake
    from pipeline.orchestration.instance import open_instance, storage_errors
    from pipeline.orchestration.status import print_json, read_status

    settings = load_settings(config)
    with storage_errors(settings), open_instance(settings) as instance:
        found = read_status(settings, make_lake(settings), instance, datetime.now(UTC))
    print(print_json(found, warn_error) if as_json
          else for_terminal("\n".join(found.lines(warn_error))))
    return 1 if found.attention(warn_error) else 0


@cli.command(help="the whole product on the sandbox, end to end")
@click.option("--data-dir", help="where its lake and warehouse go (default: the sandbox's "
                                   "own folder, data/sandbox, or $POS_ETL_DATA_DIR)")
@click.option("--days", type=click.IntRange(1, MAX_DAYS), default=7, show_default=True)
def demo(data_dir: str | None, days: int) -> int:
    import os

    from pipeline.cli.demo import run_demo
    from pipeline.orchestration.configs import SANDBOX_DATA_DIR

    return run_demo(data_dir or os.environ.get("POS_ETL_DATA_DIR", SANDBOX_DATA_DIR), days)
