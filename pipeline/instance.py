"""The Dagster instance that CLI loads and ``make dev`` share.

``$DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home``. Its ``dagster.yaml`` is the
project's (telemetry off, the concurrency pools) and is kept in step with it on every
start, unless you took it over: delete its first line (the ``MANAGED`` marker) and your
changes stay.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import sys
from pathlib import Path

import dagster as dg
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable

from pipeline.settings import Settings, load_settings

PLANNED_AS_RANGE = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"
"""Dagster's switch to plan a run over a date range as one event instead of one per date.

A year's backfill otherwise writes 365 planned events (about 3.5 s on SQLite) before its
first step. Dagster's price: the dates of a run that fails before materializing them
show as missing, not failed (the run itself shows failed). ``pos-etl load`` and
``make dev`` set it, so CLI and UI runs are planned alike.
"""


EVENT_BATCH_SIZE = "DAGSTER_EVENT_BATCH_SIZE"
"""Dagster's switch to hand the storage an output's partition events as one batch (the
materializations of a run over 365 dates), which ``BatchedSqliteEventLogStorage`` writes
in one transaction per database instead of two each."""


def plan_runs_as_ranges() -> None:
    """Set ``PLANNED_AS_RANGE`` and ``EVENT_BATCH_SIZE`` for this process, unless the user
    decided otherwise."""
    os.environ.setdefault(PLANNED_AS_RANGE, "true")
    os.environ.setdefault(EVENT_BATCH_SIZE, "1000")


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log (one database per run plus the cross-run index), which
    writes a batch of asset events in one transaction per database.

    Dagster hands its storage batches of a run's planned events and of an output's
    partition materializations (the dates of a range); its own SQLite storage writes them
    one event at a time, two databases opened, written and committed per event: about
    4.5 ms each here, against 0.6 ms in a batch. The rows are written by Dagster's own
    statements; a batch of other events, or of several runs, is written event by event.
    """

    @classmethod
    def from_config_value(cls, inst_data, config_value):  # Dagster's names its own class
        return cls(inst_data=inst_data, **config_value)

    def store_event_batch(self, events) -> None:
        if len({event.run_id for event in events}) != 1 or not all(
                _asset_event(event) or _check_event(event) for event in events):
            for event in events:
                self.store_event(event)
            return
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(),
                         [self._event_to_row(event) for event in events])
        checks = []
        with self.index_transaction() as conn:  # as store_event does, event by event
            for event in events:
                event_id = conn.execute(self.prepare_insert_event(event)).inserted_primary_key[0]
                if _asset_event(event):
                    self._store_asset_event_tags(conn, [event], [event_id])
                    self._store_asset_event(conn, event, event_id)
                else:
                    checks.append((event, event_id))
        for event, event_id in checks:  # each in a transaction of its own, as store_event
            self.store_asset_check_event(event, event_id)


def _asset_event(event) -> bool:
    return (event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS
            and event.dagster_event.asset_key is not None)


def _check_event(event) -> bool:
    return event.is_dagster_event and event.dagster_event_type in ASSET_CHECK_EVENTS


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
        "dagster.yaml").read_text(encoding="utf-8").replace(
        '"{event_logs}"', json.dumps(str(home.resolve() / "history" / "runs")))
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
