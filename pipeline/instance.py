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
