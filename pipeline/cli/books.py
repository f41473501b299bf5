"""The commands of the books beyond writing them: the accounts in force, an auditor's
pack checked."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from pipeline.cli.base import cli, config_option, load_settings
from pipeline.core.untrusted import for_terminal

CHARTS = ("ekr", "skr03", "skr04")


@cli.command(short_help="print the chart of accounts and the mapping in force",
             help="print the chart of accounts in force: each role's account, each tax "
                  "rate, payment group, pass-through item and payment type (as the "
                  "warehouse has them) and bank account with the account it books to "
                  "and where that comes from (config, chart, pos). Exit 2 when an export "
                  "or close would refuse one (an account outside the chart's ranges for "
                  "its role, a payment type without an account).")
@config_option
@click.option("--chart", type=click.Choice(CHARTS),
              help="show this chart instead of the config's (the config's accounts and "
                   "payment accounts kept): what a change of chart would need")
def accounts(config: str | None, chart: str | None) -> int:
    from pipeline.accounting.mapping import mapping, render, seen_in
    from pipeline.core.charts import ChartError

    settings = load_settings(config)
    accounting = settings.accounting
    if chart:
        accounting = accounting.model_copy(update={"accounts": accounting.accounts.model_copy(
            update={"chart": chart, "chart_file": None})})
    try:
        banks = [(a.iban, settings.location(a.location).id, a.account)
                 for a in settings.bank.accounts] if settings.bank.book else []
        found = mapping(accounting, settings.locations[0].timezone,
                        seen_in(settings.warehouse.warehouse_path), banks)
    except ChartError as exc:
        print(f"accounts: {for_terminal(str(exc))}", file=sys.stderr)
        return 2
    print(for_terminal(render(found)))
    if found.problems:
        print(f"accounts: {len(found.problems)} line(s) an export or close would refuse "
              "(marked <-)", file=sys.stderr)
        return 2
    return 0


@cli.command("verify-pack", short_help="check an auditor's pack of a closed period",
             help="check the auditor's pack PATH (the folder close-period wrote, or a zip "
                  "of it): every file of its manifest unchanged (size and SHA-256), no "
                  "file added, SHA256SUMS agreeing; with --config (or $POS_ETL_CONFIG), "
                  "also the booking file against the closed period in the lake and the "
                  "manifest against the one close-period recorded. Exit 1 naming each "
                  "file that changed.")
@click.argument("path", type=click.Path(path_type=Path))
@config_option
def verify_pack(path: Path, config: str | None) -> int:
    from pipeline.core.settings import CONFIG_ENV
    from pipeline.lake.open import make_lake
    from pipeline.outputs.pack import verify_pack as verify

    lake = None
    if config or os.environ.get(CONFIG_ENV):
        lake = make_lake(load_settings(config))
    found = verify(path, lake)
    for problem in found.problems:
        print(f"verify-pack: {for_terminal(problem)}", file=sys.stderr)
    if found.problems:
        print(f"verify-pack: {path}: {len(found.problems)} problem(s)", file=sys.stderr)
        return 1
    against = "and against the lake's closed period" if found.against_lake else \
        "(not against a lake: give --config to check it against the closed period)"
    print(f"pack {found.period}: {found.files} files as written {against}")
    return 0


@cli.command(short_help="from a booking line to its receipts, or from a receipt to its "
                        "bookings",
             help="trace NAME through the books (GoBD's audit trail): a booking's document "
                  "number as the DATEV or BMD file carries it (Z1001-20261015, or BMD's "
                  "belegnr 202610151001; /4 for its fourth line) lists the day's booking "
                  "lines with the receipts each sums (or the line's receipts and shares); a "
                  "receipt's transactionId lists the booking lines it is part of. The sums "
                  "tie to the cent (rpt_booking_receipts).")
@click.argument("name")
@config_option
def trace(name: str, config: str | None) -> int:
    from pipeline.accounting.trace import TraceError
    from pipeline.accounting.trace import trace as follow

    settings = load_settings(config)
    path = settings.warehouse.warehouse_path
    if not path.is_file():
        print(f"trace: no warehouse at {path}: run `{settings.command('load')}` first",
              file=sys.stderr)
        return 1
    try:
        lines = follow(path, name)
    except TraceError as exc:
        print(f"trace: {for_terminal(str(exc))}", file=sys.stderr)
        return 1
    print("\n".join(for_terminal(line) for line in lines))
    return 0 if not any("DOES NOT TIE" in line for line in lines) else 1


@cli.command(short_help="write the auditor's pack of a closed period again",
             help="write the auditor's pack of the closed period PERIOD (YYYY-MM) into "
                  "<folder>/pack_<period> (close-period writes it; this writes it again, "
                  "say after its folder was lost, from the lake's record and the reports "
                  "as closed), its manifest recorded in the lake")
@click.argument("period")
@config_option
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="the folder to write pack_<period> into (default: closed_<format>)")
def pack(period: str, config: str | None, output: Path | None) -> int:
    from pipeline.accounting.ledger import closed_periods
    from pipeline.cli.outputs import said_pack
    from pipeline.lake.open import make_lake
    from pipeline.outputs.export import ExportError
    from pipeline.outputs.pack import write_pack

    settings = load_settings(config)
    closed = closed_periods(make_lake(settings))
    if period not in closed:
        print(f"pack: {for_terminal(period)} is no closed period (closed: "
              f"{', '.join(closed) or 'none'})", file=sys.stderr)
        return 1
    try:
        written = write_pack(settings, closed[period],
                             output or Path(f"closed_{closed[period].format}"))
    except ExportError as exc:
        print(f"pack: {for_terminal(str(exc))}", file=sys.stderr)
        return 1
    return said_pack(written)
