"""The commands that write something for people or other systems: export, docs, report,
and an order sent to the POS."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import click

from pipeline.accounting.formats import BOOKING_FORMATS
from pipeline.cli.base import IsoDate, cli, config_option, load_settings, location_option
from pipeline.core.outcomes import ConfigError, UsageError
from pipeline.core.untrusted import for_terminal
from pipeline.outputs import TABLE_FORMATS

BOOKINGS = tuple(BOOKING_FORMATS)
FORMATS = (*TABLE_FORMATS, *BOOKINGS)


@cli.command(short_help="write a model as CSV, Excel, Parquet, DATEV or BMD",
             help="write a report or mart as CSV, Excel, Parquet, or the daily closes as "
                  "bookings: DATEV Buchungsstapel or BMD NTCS import files, one per booking "
                  "period (month)")
@click.argument("model")
@config_option
@click.option("--start", type=IsoDate(), help="first business date (default: all)")
@click.option("--end", type=IsoDate(), help="last business date, included (default: all)")
@location_option
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="default: from the --output suffix, else csv")
@click.option("--output", "-o", type=click.Path(),
              help="file to write (default: <model>.<format>); a symlink is written "
                   "through to its file. DATEV and BMD: a folder (default: "
                   "<format>_<start>_<end>) or a .zip of one file per booking period, "
                   "or a file for a single period")
@click.option("--raw-text", is_flag=True,
              help="CSV: keep text fields byte for byte; by default a field a spreadsheet "
                   "would run as a formula (=, +, -, @, tab, CR) is prefixed with ' (for "
                   "machine consumers only)")
@click.option("--locale", type=click.Choice(("en", "de")),
              help="CSV and xlsx for German-speaking readers (de: ';', decimal comma, "
                   "German headers) or as named in the warehouse (en); default: [export] "
                   "locale, else en")
def export(model: str, config: str | None, start: date | None, end: date | None,
           location: tuple[str, ...], fmt: str | None, output: str | None,
           raw_text: bool, locale: str | None) -> int:
    from pipeline.outputs.export import ExportError, Selection, export, parse_locations

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
    written_as = Path(output).suffix.lower().lstrip(".") if output else ""
    if (fmt in BOOKING_FORMATS and written_as in ("xlsx", "parquet")) or (
            fmt not in BOOKING_FORMATS and written_as in FORMATS and written_as != fmt):
        print(f"export: --format {fmt} would write a {fmt.upper()} file named {output}; "
              f"give --output a name that fits the format (or drop --format)",
              file=sys.stderr)
        return 2
    if fmt in BOOKING_FORMATS:
        target = Path(output or f"{fmt}_{start or 'all'}_{end or 'all'}")
    else:
        target = Path(output or f"{model}.{fmt}")
    selection = Selection(model, start, end, parse_locations(settings, list(location)))
    try:
        done = export(settings, selection, fmt, target, raw_text=raw_text, locale=locale)
    except ExportError as exc:
        print(f"export: {for_terminal(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError | ConfigError) else 1
    for warning in done.warnings:
        print(f"warning: {for_terminal(warning)}", file=sys.stderr)
    what = "bookings" if fmt in BOOKING_FORMATS else "rows"
    files = "" if done.files == [target] else \
        f" ({len(done.files)} file(s): {', '.join(f.name for f in done.files)})"
    print(f"wrote {done.rows:,} {what} of {model} to {target} ({fmt}){files}")
    return 0


class PeriodArg(click.ParamType):
    """A booking period: ``YYYY-MM`` (the period of the month's first day) or a date in it."""

    name = "period"

    def convert(self, value, param, ctx):
        try:
            return date.fromisoformat(value if len(value) > 7 else f"{value}-01")
        except ValueError:
            self.fail(f"{value!r} is not a month (YYYY-MM) or a date (YYYY-MM-DD)", param, ctx)


@cli.command("close-period", short_help="close a booking period (GoBD): its file stays as is",
             help="close the booking period PERIOD (YYYY-MM): write its DATEV or BMD file and "
                  "record it and its bookings in the lake. A later change of its days never "
                  "alters it: the next open period carries correction bookings "
                  "(rpt_period_corrections), and an export of it gives this file again. "
                  "Periods are closed in order.")
@click.argument("period", type=PeriodArg())
@config_option
@click.option("--format", "fmt", type=click.Choice(BOOKINGS), default="datev",
              show_default=True)
@click.option("--output", "-o", type=click.Path(),
              help="folder (default: closed_<format>) or file to write the period's file to")
@click.option("--allow-incomplete", is_flag=True,
              help="close it although business dates of configured locations are missing "
                   "(the close's record and the file's description say so)")
@click.option("--allow-suspense", is_flag=True,
              help="close it although bookings go to the suspense account (a payment group "
                   "without an account, a day's difference); the close's record says which")
def close_period(period: date, config: str | None, fmt: str, output: str | None,
                 allow_incomplete: bool, allow_suspense: bool) -> int:
    from pipeline.accounting.bookfiles import close_period as close
    from pipeline.orchestration.loader import run_build
    from pipeline.outputs.export import ExportError, Selection, export
    from pipeline.outputs.pack import write_pack

    settings = load_settings(config)
    try:
        closed = close(settings, period, fmt, allow_incomplete=allow_incomplete,
                       allow_suspense=allow_suspense)
    except ExportError as exc:
        print(f"close-period: {for_terminal(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 1
    print(f"closed {closed.name}: {closed.bookings:,} bookings, {closed.file_name} "
          f"(sha256 {closed.sha256[:16]}...) recorded in the lake")
    if closed.incomplete:
        print(f"WARNING closed incomplete (--allow-incomplete): {for_terminal(closed.incomplete)}",
              file=sys.stderr)
    if closed.suspense:
        print(f"WARNING closed with suspense bookings (--allow-suspense): "
              f"{for_terminal(closed.suspense)}", file=sys.stderr)
    report = run_build(settings)  # the warehouse learns of the closed period
    if not report.ok:
        print(report.summary(), file=sys.stderr)
        return 1
    target = Path(output or f"closed_{fmt}")
    done = export(settings, Selection("rpt_daily_close", closed.period.first,
                                      closed.period.last, None), fmt, target)
    for warning in done.warnings:
        print(f"warning: {for_terminal(warning)}", file=sys.stderr)
    print(f"wrote {', '.join(str(f) for f in done.files)}")
    return said_pack(write_pack(settings, closed, target), said=done.warnings)


def said_pack(pack, said: list[str] = ()) -> int:
    """What the auditor's pack written says (``pos-etl close-period``, ``pos-etl pack``):
    its exports' warnings but those ``said`` already."""
    for warning in pack.warnings:
        if warning not in said:
            print(f"warning: {for_terminal(warning)}", file=sys.stderr)
    for reason in pack.not_written:
        print(f"warning: the pack has no file of {for_terminal(reason)}", file=sys.stderr)
    print(f"wrote the auditor's pack {pack.folder} ({len(pack.files)} files; manifest sha256 "
          f"{pack.manifest_sha256[:16]}... recorded in the lake; check it with `pos-etl "
          f"verify-pack {pack.folder}`)")
    return 0


def _warehouse_found(command: str, path: Path, settings) -> bool:
    """Is there a warehouse file to read? If not, say what to do."""
    if path.is_file():
        return True
    print(f"{command}: no warehouse at {path}: run `{settings.command('load')}` (or "
          f"`{settings.command('build')}`) first"
          if not path.exists() else f"{command}: {path} is not a file", file=sys.stderr)
    return False


@cli.command(short_help="write the data dictionary (HTML or Markdown)",
             help="write the warehouse's data dictionary (every model and column) as HTML "
                  "or Markdown")
@config_option
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="file to write, .html or .md (default: <data_dir>/docs/index.html)")
def docs(config: str | None, output: str | None) -> int:
    import duckdb

    from pipeline.core.project import start_page
    from pipeline.outputs.dictionary import catalog, render_html, render_markdown

    settings = load_settings(config)
    path = settings.warehouse.warehouse_path
    if not _warehouse_found("docs", path, settings):
        return 1
    target = Path(output or settings.warehouse.data_dir / "docs" / "index.html")
    from pipeline.outputs.dictionary import computed_entries
    from pipeline.sqlrunner.models import source_columns
    from pipeline.warehouse.project import shipped

    project = shipped()
    with duckdb.connect(str(path), read_only=True) as con:
        entries = catalog(con, ("main",)) + computed_entries(project)
    title = "pos-etl warehouse: data dictionary"
    render = render_markdown if target.suffix.lower() == ".md" else render_html
    text = render(entries, title, start_page(), source_columns(project.models))
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
    from pipeline.outputs.report import location_names, write_report

    settings = load_settings(config)
    path = settings.warehouse.warehouse_path
    if not _warehouse_found("report", path, settings):
        return 1
    target = Path(output or settings.warehouse.data_dir / "report" / "index.html")
    locations, days = write_report(path, target, location_names(settings),
                                   settings=settings)
    print(f"wrote the report of {locations} locations ({days} business days) to {target}; "
          f"open it in a browser: file://{target.resolve()}")
    return 0



@cli.command(help="submit an order (JSON, spec 2.4) to the POS")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@click.option("--location", help="whose API key to send, by id or short code (default: the "
                                 "order's locationId)")
def order(file: str, config: str | None, location: str | None) -> int:
    import json
    import uuid

    from pydantic import ValidationError

    from pipeline.orchestration.resources import opened, pos_resource
    from pipeline.pos_api.errors import PosApiError
    from pipeline.pos_api.models import OrderRequest
    from pipeline.sources import SOURCES, require_keys

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
    tenant = {s.name for s in SOURCES if not s.per_location}  # (an order is the POS's)
    require_keys(settings, [location_id], tenant)  # one message for a missing key
    with opened(pos_resource(settings, [location_id], tenant)) as source, \
            source.client(location_id) as client:
        try:
            status, answer = client.place_order(request)
        except PosApiError as exc:
            print(f"order rejected: {exc}", file=sys.stderr)
            return 1
    print(f"HTTP {status}")
    print(json.dumps(answer, indent=2, default=str))
    return 0
