"""The Dagster instance that the CLI and ``make dev`` share.

``$DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home``. A home without a
``dagster.yaml`` gets the project's (``pipeline/dagster.yaml``: telemetry off, the
concurrency pools, run monitoring); once there it is yours, never rewritten. Storage is
what that file says: Dagster's own SQLite by default, PostgreSQL in production
(``docs/production.md``). One that pos-etl wrote and kept rewriting before (its first
line the marker ``# managed by pos-etl``, naming a storage class of ours that is gone) is
replaced by the project's once; the SQLite files it kept are Dagster's own and stay.
"""

from __future__ import annotations

import importlib.resources
import os
import sys
from pathlib import Path

import dagster as dg

from pipeline.settings import Settings

OLD_MARKER = "# managed by pos-etl"
"""The first line of a ``dagster.yaml`` that pos-etl wrote and kept rewriting before."""


def dagster_home(settings: Settings) -> Path:
    """Where the instance lives: ``$DAGSTER_HOME``, else ``<data_dir>/dagster_home``."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) if home else settings.warehouse.data_dir / "dagster_home"


def prepare_home(home: Path) -> Path:
    """Create the home, and give it the project's ``dagster.yaml`` if it has none (or an
    old one pos-etl managed); returns its absolute path."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    current = config.read_text(encoding="utf-8") if config.exists() else None
    if current is None or current.startswith(OLD_MARKER):
        temp = config.with_suffix(".yaml.tmp")
        temp.write_text(importlib.resources.files("pipeline").joinpath("dagster.yaml")
                        .read_text(encoding="utf-8"), encoding="utf-8")
        temp.replace(config)
    return home.resolve()


def open_instance(settings: Settings) -> dg.DagsterInstance:
    """The instance of ``dagster_home(settings)``, prepared (use it as a context manager)."""
    return dg.DagsterInstance.from_config(str(prepare_home(dagster_home(settings))))


if __name__ == "__main__":  # `make dev`: prepare the home the UI will use, print it
    from pipeline.resources import load_settings

    print(prepare_home(dagster_home(load_settings())))
    sys.exit(0)
