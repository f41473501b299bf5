"""What the commands of ``pos-etl`` share: the group, its option types and options, the
exit code of a run and the alert about it."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from datetime import date

import click

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


config_option = click.option("--config", type=click.Path(dir_okay=False),
                             help="TOML config (default: $POS_ETL_CONFIG, else sandbox)")
warn_error_option = click.option(
    "--warn-error", is_flag=True, help="fail (exit 1) when a check of severity warn fails; "
                                       "by default it is printed as a WARN line and the "
                                       "command exits 0")
location_option = click.option("--location", multiple=True,
                               help="only this location, by id or short code (repeatable)")


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


def alert_about(settings, report, command: str) -> None:
    """Tell the alert webhook (``[alerts]``) about a failed command, or one that warned
    (with ``alerts.on_warning``); what came of it is a line on stderr."""
    from pipeline.outputs.alerts import Alert, send

    if not report.ok:
        title = f"pos-etl {command} FAILED"
    elif (report.warned_checks or report.warnings) and settings.alerts.on_warning:
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


def load_settings(config: str | None):
    """The settings a command runs with (``pipeline.orchestration.configs.load_settings``),
    imported when a command runs: reading the settings' models takes longer than answering
    ``--help``.
    Without a config, a line on stderr says the command uses the sandbox."""
    from pipeline.orchestration.configs import load_settings as load

    return load(config, say=lambda line: print(line, file=sys.stderr, flush=True))
