"""The Dagster instance that CLI loads and ``make dev`` share.

``$DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home``. Its ``dagster.yaml`` is the
project's (telemetry off, the concurrency pools) and is kept in step with it on every
start, unless you took it over: delete its first line (the ``MANAGED`` marker) and your
changes stay.
"""

from __future__ import annotations

import importlib.resources
import os
import sys
from pathlib import Path

import dagster as dg

from pipeline.settings import Settings, load_settings

PLANNED_AS_RANGE = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"
"""Dagster's switch to plan a run over a date range as one event instead of one per date.

A year's backfill otherwise writes 365 planned events (about 3.5 s on SQLite) before its
first step. Dagster's price: the dates of a run that fails before materializing them
show as missing, not failed (the run itself shows failed). ``pos-etl load`` and
``make dev`` set it, so CLI and UI runs are planned alike.
"""


def plan_runs_as_ranges() -> None:
    """Set ``PLANNED_AS_RANGE`` for this process, unless the user decided otherwise."""
    os.environ.setdefault(PLANNED_AS_RANGE, "true")


def dagster_home(settings: Settings) -> Path:
    """Where the instance lives: ``$DAGSTER_HOME``, else ``<data_dir>/dagster_home``."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) if home else settings.warehouse.data_dir / "dagster_home"


MANAGED = "# managed by pos-etl: rewritten when the project's settings change; " \
          "delete this line to keep your own"


def prepare_home(home: Path) -> Path:
    """Create the home and give it the project's ``dagster.yaml``: written when missing,
    brought up to date when it still carries the ``MANAGED`` marker."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = MANAGED + "\n" + importlib.resources.files("pipeline").joinpath(
        "dagster.yaml").read_text(encoding="utf-8")
    current = config.read_text(encoding="utf-8") if config.exists() else None
    if current is None or (current != wanted and current.startswith(MANAGED)):
        temp = config.with_suffix(".yaml.tmp")
        temp.write_text(wanted, encoding="utf-8")
        temp.replace(config)
    return home.resolve()


def open_instance(settings: Settings) -> dg.DagsterInstance:
    """The instance of ``dagster_home(settings)``, prepared (use it as a context manager)."""
    return dg.DagsterInstance.from_config(str(prepare_home(dagster_home(settings))))


if __name__ == "__main__":  # `make dev`: prepare the home the UI will use, print it
    print(prepare_home(dagster_home(load_settings())))
    sys.exit(0)
