"""The commands of the books beyond writing them: the accounts in force."""

from __future__ import annotations

import sys

import click

from pipeline.cli.base import cli, config_option, load_settings
from pipeline.core.untrusted import for_terminal

CHARTS = ("ekr", "skr03", "skr04")


@cli.command(short_help="print the chart of accounts and the mapping in force",
             help="print the chart of accounts in force: each role's account, each tax "
                  "rate, payment group, pass-through item and payment type (as the "
                  "warehouse has them) with the account it books to and where that comes "
                  "from (config, chart, pos). Exit 2 when an export or close would refuse "
                  "one (an account outside the chart's ranges for its role, a payment type "
                  "without an account).")
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
        found = mapping(accounting, settings.locations[0].timezone,
                        seen_in(settings.warehouse.warehouse_path))
    except ChartError as exc:
        print(f"accounts: {for_terminal(str(exc))}", file=sys.stderr)
        return 2
    print(for_terminal(render(found)))
    if found.problems:
        print(f"accounts: {len(found.problems)} line(s) an export or close would refuse "
              "(marked <-)", file=sys.stderr)
        return 2
    return 0
