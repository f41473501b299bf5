"""The ``pos-etl`` command: sandbox, load, verify, build, export, docs, report, order,
status, demo. Built on click: its usage errors name the option, and a mistyped command
or option gets a suggestion."""

from __future__ import annotations

import difflib
import signal
import sys
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path

import click
import duckdb

from pipeline.settings import ConfigError, load_settings
from pipeline.untrusted import for_terminal
from pos_sandbox.cli import sandbox_command

MAX_DAYS = 36_600
"""A century of business dates: the most ``--days`` can ask for."""


class IsoDate(click.ParamType):
    """A business date as ``YYYY-MM-DD``."""

    name = "YYYY-MM-DD"

    def convert(self, value, param, ctx) -> date:
        if isinstance(value, date):
            return value
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.fail(f"expected a date as YYYY-MM-DD (e.g. 2026-11-20), got {value!r}",
                      param, ctx)


class Commands(click.Group):
    """The subcommands, with a suggestion for a mistyped one (click suggests options
    itself)."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)


def config_option(func: Callable) -> Callable:
    return click.option("--config", type=click.Path(dir_okay=False),
                        help="TOML config (default: $POS_ETL_CONFIG, else sandbox)")(func)


def warn_error_option(func: Callable) -> Callable:
    return click.option("--warn-error", is_flag=True,
                        help="fail (exit 1) when a check of severity warn fails; by default "
                             "it is printed as a WARN line and the command exits 0")(func)


def location_option(func: Callable) -> Callable:
    return click.option("--location", multiple=True,
                        help="only this location, by id or short code (repeatable)")(func)


def range_options(func: Callable) -> Callable:
    """What ``load`` and ``verify`` share: the config, the dates, the locations, the build."""
    for option in reversed((
            config_option,
            click.option("--start", type=IsoDate(),
                         help="first business date (default: the nightly's: yesterday and "
                              "schedule.lookback_days before it)"),
            click.option("--end", type=IsoDate(),
                         help="last business date, included (default: yesterday)"),
            click.option("--days", type=click.IntRange(1, MAX_DAYS),
                         help="the N business dates up to yesterday (instead of "
                              "--start/--end)"),
            location_option,
            click.option("--no-models", is_flag=True, help="skip the warehouse build"),
            warn_error_option)):
        func = option(func)
    return func


@click.group(cls=Commands, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pos-etl", prog_name="pos-etl",
                      message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> int | None:
    """Load a POS system's revenue and master data into a DuckDB warehouse."""
    if ctx.invoked_subcommand is None:  # `pos-etl` alone: what it can do
        click.echo(ctx.get_help())
        return 0
    return None


cli.add_command(sandbox_command)


def date_range_of(settings, start: date | None, end: date | None,
                  days: int | None) -> tuple[date, date]:
    """The business dates a load or verify covers: ``--start``/``--end``, ``--days N`` up to
    yesterday, or, with neither, the nightly's range (yesterday and the lookback)."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    from pipeline.schedules import last_complete_business_date

    if days and (start or end):
        raise ConfigError("give --days or --start/--end, not both")
    now = datetime.now(ZoneInfo(settings.schedule.timezone))
    yesterday = last_complete_business_date(settings, now)
    if days:
        return yesterday - timedelta(days=days - 1), yesterday
    if start or end:
        end = end or (yesterday if start <= yesterday else start)
        return start or end, end
    return yesterday - timedelta(days=settings.schedule.lookback_days), yesterday


def _load(command: str, config: str | None, start: date | None, end: date | None,
          days: int | None, location: tuple[str, ...], no_models: bool, warn_error: bool,
          catalog: bool = True, vouchers: bool = True, missing_only: bool = False) -> int:
    from pipeline.loader import run_load
    from pipeline.progress import LoadProgress, print_summary

    settings = load_settings(config)
    first, last = date_range_of(settings, start, end, days)
    if not (start and end):
        print(f"business dates {first} .. {last}", file=sys.stderr, flush=True)
    with LoadProgress() as progress:
        report = run_load(settings, first, last, list(location) or None, catalog=catalog,
                          vouchers=vouchers, models=not no_models,
                          verify=command == "verify", missing_only=missing_only,
                          progress=progress)
    report.warn_error = warn_error
    print_summary(report)
    _alert(settings, report, command)
    return exit_code(report)


@cli.command(help="load a range of business dates, then build the models")
@range_options
@click.option("--no-catalog", is_flag=True, help="skip the catalog and menu snapshots")
@click.option("--no-vouchers", is_flag=True, help="skip the voucher ledger's snapshot")
@click.option("--missing-only", is_flag=True,
              help="fetch only the partitions not committed yet (resume a long load that "
                   "was killed; the others are kept as they are)")
def load(no_catalog: bool, no_vouchers: bool, missing_only: bool, **range_args) -> int:
    return _load("load", **range_args, catalog=not no_catalog, vouchers=not no_vouchers,
                 missing_only=missing_only)


@cli.command(short_help="read loaded days again and record source drift",
             help="read loaded days again; replace and record those the POS changed since "
                  "(source drift)")
@range_options
def verify(**range_args) -> int:
    return _load("verify", **range_args, catalog=False, vouchers=False)  # revenue only


def _alert(settings, report, command: str) -> None:
    """Tell the alert webhook (``[alerts]``) about a failed command, or one that warned
    (with ``alerts.on_warning``); what came of it is a line on stderr."""
    from pipeline.alerts import Alert, send

    if not report.ok:
        title = f"pos-etl {command} FAILED"
    elif report.warned_checks and settings.alerts.on_warning:
        title = f"pos-etl {command}: {report.result}"
    else:
        return
    said = send(settings, Alert(title, tuple(report.summary().splitlines())))
    if said:
        print(said, file=sys.stderr, flush=True)


def exit_code(report) -> int:
    """0 when everything was loaded and built (warnings included, unless
    ``--warn-error``), 130 when Ctrl-C or SIGTERM stopped the run, else 1."""
    return 130 if report.interrupted else 0 if report.ok else 1


@cli.command(help="submit an order (JSON, spec 2.4) to the POS")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@click.option("--location", help="whose API key to send, by id or short code (default: the "
                                 "order's locationId)")
def order(file: str, config: str | None, location: str | None) -> int:
    import json
    import uuid

    from pydantic import ValidationError

    from pipeline.pos_api.errors import PosApiError
    from pipeline.pos_api.models import OrderRequest
    from pipeline.source import PosSource

    settings = load_settings(config)
    try:
        request = OrderRequest.model_validate_json(Path(file).read_bytes())
    except OSError as exc:
        print(f"{file}: cannot read the order: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        print(f"{file}: not a valid order (spec 2.4), {exc.error_count()} problem(s):",
              file=sys.stderr)
        for err in exc.errors(include_url=False):
            where = ".".join(str(p) for p in err["loc"]) or "(the whole file)"
            print(f"  {where}: {err['msg']}", file=sys.stderr)
        return 2
    if settings.uses_sandbox:
        print("order: no POS is configured, so the order would go to an in-process sandbox "
              "that is gone a second later. Start a sandbox and send the order there:\n"
              "  pos-etl sandbox --write-config pos.toml     (in another terminal)\n"
              "  set -a; . pos.env; set +a                   (the keys it wrote)\n"
              f"  pos-etl order {file} --config pos.toml\n"
              "or point --config (or POS_ETL_CONFIG) at your POS's config file.",
              file=sys.stderr)
        return 2
    if not request.guid:  # the idempotency key that makes the client's retries safe (4.3)
        request = request.model_copy(update={"guid": str(uuid.uuid4())})
    print(f"order guid: {request.guid}")
    location_id = settings.location(location or request.location_id
                                    or request.location_short_code
                                    or settings.locations[0].id).id
    with PosSource(settings) as source, source.client(location_id) as client:
        try:
            status, answer = client.place_order(request)
        except PosApiError as exc:
            print(f"order rejected: {exc}", file=sys.stderr)
            return 1
    print(f"HTTP {status}")
    print(json.dumps(answer, indent=2, default=str))
    return 0


@cli.command(help="the whole product on the sandbox, end to end")
@click.option("--data-dir", default="data", show_default=True)
@click.option("--days", type=click.IntRange(1, MAX_DAYS), default=7, show_default=True)
def demo(data_dir: str, days: int) -> int:
    from pipeline.demo import run_demo

    return run_demo(data_dir, days)


@cli.command(short_help="build the warehouse from the lake and check it",
             help="build the warehouse from the lake (what changed since the last build) "
                  "and check it")
@config_option
@click.option("--full", is_flag=True,
              help="compute every partition again (the result is the same)")
@warn_error_option
def build(config: str | None, full: bool, warn_error: bool) -> int:
    from pipeline.loader import run_build

    settings = load_settings(config)
    report = run_build(settings, full=full)
    report.warn_error = warn_error
    print(for_terminal(report.summary()))
    _alert(settings, report, "build")
    return exit_code(report)


@cli.command(short_help="is everything fine? (exit 1 when not)",
             help="is everything fine? freshness per location, the last runs' failed and "
                  "warned checks, drift; exit 1 when something needs attention")
@config_option
@click.option("--json", "as_json", is_flag=True, help="the status as JSON")
@warn_error_option
def status(config: str | None, as_json: bool, warn_error: bool) -> int:
    from datetime import UTC, datetime

    from pipeline.instance import open_instance
    from pipeline.resources import make_lake
    from pipeline.status import print_json, read_status

    settings = load_settings(config)
    with open_instance(settings) as instance:
        found = read_status(settings, make_lake(settings), instance, datetime.now(UTC))
    print(print_json(found, warn_error) if as_json
          else for_terminal("\n".join(found.lines(warn_error))))
    return 1 if found.attention(warn_error) else 0


FORMATS = ("csv", "xlsx", "parquet", "datev")


@cli.command(short_help="write a model as CSV, Excel, Parquet or DATEV",
             help="write a report or mart as CSV, Excel, Parquet, or the daily closes as a "
                  "DATEV Buchungsstapel")
@click.argument("model")
@config_option
@click.option("--start", type=IsoDate(), help="first business date (default: all)")
@click.option("--end", type=IsoDate(), help="last business date, included (default: all)")
@location_option
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="default: from the --output suffix, else csv")
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="file to write (default: <model>.<format>); a symlink is written "
                   "through to its file")
@click.option("--raw-text", is_flag=True,
              help="CSV: keep text fields byte for byte; by default a field a spreadsheet "
                   "would run as a formula (=, +, -, @, tab, CR) is prefixed with ' (for "
                   "machine consumers only)")
def export(model: str, config: str | None, start: date | None, end: date | None,
           location: tuple[str, ...], fmt: str | None, output: str | None,
           raw_text: bool) -> int:
    from pipeline.export import ExportError, Selection, export, parse_locations

    settings = load_settings(config)
    if fmt is None:
        suffix = Path(output).suffix.lower().lstrip(".") if output else ""
        fmt = {"": "csv", "csv": "csv", "xlsx": "xlsx", "parquet": "parquet"}.get(suffix)
        if fmt is None:
            print(f"export: cannot tell the format from {output}: give --format "
                  f"{', '.join(FORMATS[:-1])} or {FORMATS[-1]}", file=sys.stderr)
            return 2
    if start and end and end < start:
        print(f"--end {end} is before --start {start}", file=sys.stderr)
        return 2
    target = Path(output or f"{model}.{'csv' if fmt == 'datev' else fmt}")
    if fmt == "datev" and not output:
        target = Path(f"EXTF_Buchungsstapel_{start or 'all'}_{end or 'all'}.csv")
    selection = Selection(model, start, end, parse_locations(settings, list(location)))
    try:
        done = export(settings, selection, fmt, target, raw_text=raw_text)
    except ExportError as exc:
        print(f"export: {for_terminal(str(exc))}", file=sys.stderr)
        return 1
    for warning in done.warnings:
        print(f"warning: {for_terminal(warning)}", file=sys.stderr)
    what = "bookings" if fmt == "datev" else "rows"
    print(f"wrote {done.rows:,} {what} of {model} to {target} ({fmt})")
    return 0


def _warehouse_found(command: str, path: Path) -> bool:
    """Is there a warehouse file to read? If not, say what to do."""
    if path.is_file():
        return True
    print(f"{command}: no warehouse at {path}: run `pos-etl load` (or `pos-etl build`) first"
          if not path.exists() else f"{command}: {path} is not a file", file=sys.stderr)
    return False


@cli.command(short_help="write the data dictionary (HTML or Markdown)",
             help="write the warehouse's data dictionary (every model and column) as HTML "
                  "or Markdown")
@config_option
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="file to write, .html or .md (default: <data_dir>/docs/index.html)")
def docs(config: str | None, output: str | None) -> int:
    from pipeline.docs import catalog, render_html, render_markdown

    settings = load_settings(config)
    path = settings.warehouse.warehouse_path
    if not _warehouse_found("docs", path):
        return 1
    target = Path(output or settings.warehouse.data_dir / "docs" / "index.html")
    with duckdb.connect(str(path), read_only=True) as con:
        entries = catalog(con, ("main", "staging"))
    title = "pos-etl warehouse: data dictionary"
    text = render_markdown(entries, title) if target.suffix.lower() == ".md" \
        else render_html(entries, title)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    columns = sum(len(e.columns) for e in entries)
    print(f"wrote the data dictionary of {len(entries)} models and {columns} columns to "
          f"{target}")
    return 0


@cli.command(short_help="write a static HTML report",
             help="write a static HTML report: turnover chart, daily closes, payment mix, "
                  "vouchers, checks")
@config_option
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="HTML file to write (default: <data_dir>/report/index.html)")
def report(config: str | None, output: str | None) -> int:
    from pipeline.report import location_names, write_report

    settings = load_settings(config)
    path = settings.warehouse.warehouse_path
    if not _warehouse_found("report", path):
        return 1
    target = Path(output or settings.warehouse.data_dir / "report" / "index.html")
    locations, days = write_report(path, target, location_names(settings))
    print(f"wrote the report of {locations} locations ({days} business days) to {target}; "
          f"open it in a browser: file://{target.resolve()}")
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM: stop as Ctrl-C does (every ``finally`` runs, scratch files go)."""


def _terminate(signum, frame) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``pos-etl``: returns the exit code; every error is one line on
    stderr, no traceback (2 for a configuration or usage error, 1 for a failure, 130 for
    Ctrl-C, 143 for SIGTERM)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        code = cli.main(args=argv, prog_name="pos-etl", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except click.ClickException as exc:  # a usage error: click names the option
        exc.show()
        return exc.exit_code
    except ConfigError as exc:
        print(f"configuration error: {for_terminal(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only or full disk, a path that is not a folder
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {for_terminal(where + (exc.strerror or str(exc)))}", file=sys.stderr)
        return 1
    except duckdb.Error as exc:  # a warehouse file that is not one, or is damaged
        print(f"error: {for_terminal(str(exc).splitlines()[0])}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, click.Abort) as exc:  # click raises Abort from the former
        if isinstance(exc, Terminated) or isinstance(exc.__cause__, Terminated):
            print("stopped (SIGTERM)", file=sys.stderr)
            return 143
        print("stopped (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
