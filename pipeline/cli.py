"""The ``pos-etl`` command: sandbox, load, verify, build, export, docs, report, order, demo."""

from __future__ import annotations

import argparse
import importlib.metadata
import signal
import sys
import threading
from datetime import date
from pathlib import Path

import duckdb

from pipeline.settings import ConfigError, load_settings
from pipeline.untrusted import for_terminal
from pos_sandbox.cli import add_sandbox_command


class Parser(argparse.ArgumentParser):
    """argparse, with a suggestion for a mistyped command or option."""

    def error(self, message: str):
        import difflib
        import re

        hint = ""
        if (m := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)):
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
        elif (m := re.search(r"unrecognized arguments: (.*)", message)):
            options = {o for parser in self._all_parsers() for a in parser._actions
                       for o in a.option_strings if o.startswith("--")}
            for token in m.group(1).split():
                close = difflib.get_close_matches(token.split("=")[0], sorted(options), n=1)
                if token.startswith("-") and close:
                    hint = f"; did you mean {close[0]}?"
                    break
        super().error(message + hint)

    def _all_parsers(self):
        yield self
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for parser in action.choices.values():
                    yield from parser._all_parsers()


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date as YYYY-MM-DD (e.g. 2026-11-20), got {value!r}") from None


MAX_DAYS = 36_600
"""A century of business dates: the most ``--days`` can ask for."""


def _positive(value: str) -> int:
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"expected a number of days, 1 to {MAX_DAYS:,}, "
                                         f"got {value!r}")
    return int(value)


def date_range_of(settings, args: argparse.Namespace) -> tuple[date, date]:
    """The business dates a load or verify covers: ``--start``/``--end``, ``--days N`` up to
    yesterday, or, with neither, the nightly's range (yesterday and the lookback)."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    from pipeline.schedules import last_complete_business_date

    if args.days and (args.start or args.end):
        raise ConfigError("give --days or --start/--end, not both")
    now = datetime.now(ZoneInfo(settings.schedule.timezone))
    yesterday = last_complete_business_date(settings, now)
    if args.days:
        return yesterday - timedelta(days=args.days - 1), yesterday
    if args.start or args.end:
        end = args.end or (yesterday if args.start <= yesterday else args.start)
        return args.start or end, end
    return yesterday - timedelta(days=settings.schedule.lookback_days), yesterday


def cmd_load(args: argparse.Namespace) -> int:
    from pipeline.loader import run_load
    from pipeline.progress import LoadProgress, print_summary

    settings = load_settings(args.config)
    start, end = date_range_of(settings, args)
    if not (args.start and args.end):
        print(f"business dates {start} .. {end}", file=sys.stderr, flush=True)
    with LoadProgress() as progress:
        report = run_load(settings, start, end, args.location or None,
                          catalog=not args.no_catalog, vouchers=not args.no_vouchers,
                          models=not args.no_models, verify=args.command == "verify",
                          missing_only=args.missing_only, progress=progress)
    report.warn_error = args.warn_error
    print_summary(report)
    _alert(settings, report, args.command)
    return exit_code(report)


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


def cmd_order(args: argparse.Namespace) -> int:
    import json
    import uuid

    from pydantic import ValidationError

    from pipeline.pos_api.errors import PosApiError
    from pipeline.pos_api.models import OrderRequest
    from pipeline.source import PosSource

    settings = load_settings(args.config)
    try:
        order = OrderRequest.model_validate_json(Path(args.file).read_bytes())
    except OSError as exc:
        print(f"{args.file}: cannot read the order: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        print(f"{args.file}: not a valid order (spec 2.4), {exc.error_count()} problem(s):",
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
              f"  pos-etl order {args.file} --config pos.toml\n"
              "or point --config (or POS_ETL_CONFIG) at your POS's config file.",
              file=sys.stderr)
        return 2
    if not order.guid:  # the idempotency key that makes the client's retries safe (4.3)
        order = order.model_copy(update={"guid": str(uuid.uuid4())})
    print(f"order guid: {order.guid}")
    location_id = settings.location(args.location or order.location_id
                                    or order.location_short_code
                                    or settings.locations[0].id).id
    with PosSource(settings) as source, source.client(location_id) as client:
        try:
            status, answer = client.place_order(order)
        except PosApiError as exc:
            print(f"order rejected: {exc}", file=sys.stderr)
            return 1
    print(f"HTTP {status}")
    print(json.dumps(answer, indent=2, default=str))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from pipeline.demo import run_demo

    return run_demo(args.data_dir, args.days)


def cmd_build(args: argparse.Namespace) -> int:
    from pipeline.loader import run_build

    settings = load_settings(args.config)
    report = run_build(settings, full=args.full)
    report.warn_error = args.warn_error
    print(for_terminal(report.summary()))
    _alert(settings, report, "build")
    return exit_code(report)


def cmd_status(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from pipeline.instance import open_instance
    from pipeline.resources import make_lake
    from pipeline.status import print_json, read_status

    settings = load_settings(args.config)
    with open_instance(settings) as instance:
        status = read_status(settings, make_lake(settings), instance, datetime.now(UTC))
    print(print_json(status, args.warn_error) if args.json
          else for_terminal("\n".join(status.lines(args.warn_error))))
    return 1 if status.attention(args.warn_error) else 0


def cmd_export(args: argparse.Namespace) -> int:
    from pipeline.export import ExportError, Selection, export, parse_locations

    settings = load_settings(args.config)
    fmt = args.format
    if fmt is None:
        suffix = Path(args.output).suffix.lower().lstrip(".") if args.output else ""
        fmt = {"": "csv", "csv": "csv", "xlsx": "xlsx", "parquet": "parquet"}.get(suffix)
        if fmt is None:
            print(f"export: cannot tell the format from {args.output}: give --format "
                  "csv, xlsx, parquet or datev", file=sys.stderr)
            return 2
    if args.start and args.end and args.end < args.start:
        print(f"--end {args.end} is before --start {args.start}", file=sys.stderr)
        return 2
    output = Path(args.output or f"{args.model}.{'csv' if fmt == 'datev' else fmt}")
    if fmt == "datev" and not args.output:
        output = Path(f"EXTF_Buchungsstapel_{args.start or 'all'}_{args.end or 'all'}.csv")
    selection = Selection(args.model, args.start, args.end,
                          parse_locations(settings, args.location))
    try:
        done = export(settings, selection, fmt, output, raw_text=args.raw_text)
    except ExportError as exc:
        print(f"export: {for_terminal(str(exc))}", file=sys.stderr)
        return 1
    for warning in done.warnings:
        print(f"warning: {for_terminal(warning)}", file=sys.stderr)
    what = "bookings" if fmt == "datev" else "rows"
    print(f"wrote {done.rows:,} {what} of {args.model} to {output} ({fmt})")
    return 0


def _warehouse_found(command: str, path: Path) -> bool:
    """Is there a warehouse file to read? If not, say what to do."""
    if path.is_file():
        return True
    print(f"{command}: no warehouse at {path}: run `pos-etl load` (or `pos-etl build`) first"
          if not path.exists() else f"{command}: {path} is not a file", file=sys.stderr)
    return False


def cmd_docs(args: argparse.Namespace) -> int:
    from pipeline.docs import catalog, render_html, render_markdown

    settings = load_settings(args.config)
    path = settings.warehouse.warehouse_path
    if not _warehouse_found("docs", path):
        return 1
    output = Path(args.output or settings.warehouse.data_dir / "docs" / "index.html")
    with duckdb.connect(str(path), read_only=True) as con:
        entries = catalog(con, ("main", "staging"))
    title = "pos-etl warehouse: data dictionary"
    text = render_markdown(entries, title) if output.suffix.lower() == ".md" \
        else render_html(entries, title)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    columns = sum(len(e.columns) for e in entries)
    print(f"wrote the data dictionary of {len(entries)} models and {columns} columns to "
          f"{output}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pipeline.report import location_names, write_report

    settings = load_settings(args.config)
    path = settings.warehouse.warehouse_path
    if not _warehouse_found("report", path):
        return 1
    output = Path(args.output or settings.warehouse.data_dir / "report" / "index.html")
    locations, days = write_report(path, output, location_names(settings))
    print(f"wrote the report of {locations} locations ({days} business days) to {output}; "
          f"open it in a browser: file://{output.resolve()}")
    return 0


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config (default: $POS_ETL_CONFIG, else sandbox)")


def _warn_error_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warn-error", action="store_true",
                        help="fail (exit 1) when a check of severity warn fails; by default "
                             "it is printed as a WARN line and the command exits 0")


def _range_options(parser: argparse.ArgumentParser) -> None:
    """What ``load`` and ``verify`` share: the config, the dates, the locations, the build."""
    _config_option(parser)
    parser.add_argument("--start", type=_date,
                        help="first business date (default: the nightly's: yesterday and "
                             "schedule.lookback_days before it)")
    parser.add_argument("--end", type=_date,
                        help="last business date, included (default: yesterday)")
    parser.add_argument("--days", type=_positive,
                        help="the N business dates up to yesterday (instead of --start/--end)")
    parser.add_argument("--location", action="append",
                        help="only this location, by id or short code (repeatable)")
    parser.add_argument("--no-models", action="store_true", help="skip the warehouse build")
    _warn_error_option(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="pos-etl", description=__doc__)
    parser.add_argument("--version", action="version",
                        version=f"pos-etl {importlib.metadata.version('pos-etl')}")
    sub = parser.add_subparsers(dest="command")

    add_sandbox_command(sub)

    load = sub.add_parser("load", help="load a range of business dates, then build the models")
    _range_options(load)
    load.add_argument("--no-catalog", action="store_true",
                      help="skip the catalog and menu snapshots")
    load.add_argument("--no-vouchers", action="store_true",
                      help="skip the voucher ledger's snapshot")
    load.add_argument("--missing-only", action="store_true",
                      help="fetch only the partitions not committed yet (resume a long load "
                           "that was killed; the others are kept as they are)")
    load.set_defaults(func=cmd_load)

    verify = sub.add_parser("verify", help="read loaded days again; replace and record "
                                           "those the POS changed since (source drift)")
    _range_options(verify)
    verify.set_defaults(func=cmd_load, no_catalog=True, no_vouchers=True,  # revenue only
                        missing_only=False)

    build = sub.add_parser("build", help="build the warehouse from the lake (what changed "
                                         "since the last build) and check it")
    _config_option(build)
    build.add_argument("--full", action="store_true",
                       help="compute every partition again (the result is the same)")
    _warn_error_option(build)
    build.set_defaults(func=cmd_build)

    exp = sub.add_parser("export", help="write a report or mart as CSV, Excel, Parquet, or "
                                        "the daily closes as a DATEV Buchungsstapel")
    exp.add_argument("model", help="a model of the warehouse, e.g. rpt_daily_close")
    _config_option(exp)
    exp.add_argument("--start", type=_date, help="first business date (default: all)")
    exp.add_argument("--end", type=_date, help="last business date, included (default: all)")
    exp.add_argument("--location", action="append",
                     help="only this location, by id or short code (repeatable)")
    exp.add_argument("--format", choices=("csv", "xlsx", "parquet", "datev"),
                     help="default: from the --output suffix, else csv")
    exp.add_argument("--output", "-o", help="file to write (default: <model>.<format>); a "
                                            "symlink is written through to its file")
    exp.add_argument("--raw-text", action="store_true",
                     help="CSV: keep text fields byte for byte; by default a field a "
                          "spreadsheet would run as a formula (=, +, -, @, tab, CR) is "
                          "prefixed with ' (for machine consumers only)")
    exp.set_defaults(func=cmd_export)

    for name, func, what, output in (
            ("docs", cmd_docs, "write the warehouse's data dictionary (every model and "
                               "column) as HTML or Markdown",
             "file to write, .html or .md (default: <data_dir>/docs/index.html)"),
            ("report", cmd_report, "write a static HTML report: turnover chart, daily "
                                   "closes, payment mix, vouchers, checks",
             "HTML file to write (default: <data_dir>/report/index.html)")):
        page = sub.add_parser(name, help=what)
        _config_option(page)
        page.add_argument("--output", "-o", help=output)
        page.set_defaults(func=func)

    order = sub.add_parser("order", help="submit an order (JSON, spec 2.4) to the POS")
    order.add_argument("file", help="order request as JSON")
    _config_option(order)
    order.add_argument("--location",
                       help="whose API key to send, by id or short code (default: the "
                            "order's locationId)")
    order.set_defaults(func=cmd_order)

    status = sub.add_parser("status", help="is everything fine? freshness per location, the "
                                           "last runs' failed and warned checks, drift; exit "
                                           "1 when something needs attention")
    _config_option(status)
    status.add_argument("--json", action="store_true", help="the status as JSON")
    _warn_error_option(status)
    status.set_defaults(func=cmd_status)

    demo = sub.add_parser("demo", help="the whole product on the sandbox, end to end")
    demo.add_argument("--data-dir", default="data")
    demo.add_argument("--days", type=int, default=7)
    demo.set_defaults(func=cmd_demo)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM: stop as Ctrl-C does (every ``finally`` runs, scratch files go)."""


def _terminate(signum, frame) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``pos-etl``: every error is one line on stderr, no traceback
    (exit 2 for a configuration or usage error, 1 for a failure, 130 for Ctrl-C, 143
    for SIGTERM)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `pos-etl` alone: what it can do
        parser.print_help()
        return 0
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.func(args)
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
    except Terminated:
        print("stopped (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("stopped (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
