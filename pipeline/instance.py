"""The Dagster instance that CLI loads and ``make dev`` share.

``$DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home``; a home without a
``dagster.yaml`` gets the project's (telemetry off, the concurrency pools).
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


def prepare_home(home: Path) -> Path:
    """Create the home and give it the project's ``dagster.yaml`` if it has none."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(importlib.resources.files("pipeline").joinpath("dagster.yaml")
                          .read_text(encoding="utf-8"), encoding="utf-8")
    return home.resolve()


def open_instance(settings: Settings) -> dg.DagsterInstance:
    """The instance of ``dagster_home(settings)``, prepared (use it as a context manager)."""
    return dg.DagsterInstance.from_config(str(prepare_home(dagster_home(settings))))


if __name__ == "__main__":  # `make dev`: prepare the home the UI will use, print it
    print(prepare_home(dagster_home(load_settings())))
    sys.exit(0)
