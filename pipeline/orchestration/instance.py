"""The Dagster instance that the CLI and ``make dev`` share.

``$DAGSTER_HOME`` if set, else ``<data_dir>/dagster_home``. A home without a
``dagster.yaml`` gets the project's (``pipeline/orchestration/dagster.yaml``: telemetry off, the
concurrency pools, run monitoring, no capture of raw output); once you change it, it is
yours, never rewritten (one that is an earlier version of the project's, unchanged, is
brought to the current one). Storage is
what that file says: Dagster's own SQLite by default, PostgreSQL in production
(``docs/production.md``). One that pos-etl wrote and kept rewriting before (its first
line the marker ``# managed by pos-etl``, naming a storage class of ours that is gone) is
replaced by the project's once; the SQLite files it kept are Dagster's own and stay.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import importlib.resources
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import sqlalchemy.exc

from pipeline.core.files import own
from pipeline.core.settings import Settings

OLD_MARKER = "# managed by pos-etl"
"""The first line of a ``dagster.yaml`` that pos-etl wrote and kept rewriting before."""

EARLIER_VERSIONS = frozenset({
    "6225ca2752cbda655b4d3f232495f6f48d7c38a5b4b7f6751dc5648b9ed2831a",
    "1129d1dc3c3d6ebba10554ce31f0c4e3f519dc1ac7159ec7e5dc585077674fca",
    "2092610e11e90af47622095ace5692fe41bd70e4c117c6a5f479034816570391",
    "2af5d5993e30885d1ab2199bd983552630943638420420a4b065a0b375f70480",
    "93cd0da682976b5f4c0647d81067df08c50e0dc8ec3337713645e68eb6293f09",
    "b530e2f1ae3542d6a094227903638a86084efe68f04852a4a938e00ee2f0ff7c",
    "bb05ddbe41e4e446d402dfec7f2eff39846ed838e8e834035a59f94b02bc70d7",
    "e8ea8eb009b98460bb19fe368fad8024bab45b08f6f5ae79b65d4343849e8ded",
    "d67eaecb8f038725868307f370362972e80addd91ab89b3cdd2662ffd581ccd4",
    "df63988ff019772779ad1d6d7b308e8aee81e899628e0863fb56ca103c378679",
})
"""The SHA-256 of every ``dagster.yaml`` the project shipped before (``git log`` of
``pipeline/orchestration/dagster.yaml``, earlier ``pipeline/dagster.yaml``): a home holding
one of them unchanged gets the current one."""


def dagster_home(settings: Settings) -> Path:
    """Where the instance lives: ``$DAGSTER_HOME``, else ``<data_dir>/dagster_home``."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) if home else settings.warehouse.data_dir / "dagster_home"


def prepare_home(home: Path) -> Path:
    """Create the home, and give it the project's ``dagster.yaml`` if it has none (or an
    old one pos-etl managed, or an earlier version of the project's, unchanged); returns
    its absolute path. Its files are made its own first: a home copied with hard links
    (``cp -al``) would write the original's run history (``pipeline.core.files``)."""
    home.mkdir(parents=True, exist_ok=True)
    own(home)
    config = home / "dagster.yaml"
    current = config.read_text(encoding="utf-8") if config.exists() else None
    if current is None or current.startswith(OLD_MARKER) or \
            hashlib.sha256(current.encode()).hexdigest() in EARLIER_VERSIONS:
        temp = config.with_suffix(".yaml.tmp")
        shipped = importlib.resources.files("pipeline.orchestration") / "dagster.yaml"
        temp.write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
        temp.replace(config)
    return home.resolve()


def open_instance(settings: Settings) -> dg.DagsterInstance:
    """The instance of ``dagster_home(settings)``, prepared (use it as a context manager).

    Opened under the home's lock (``STARTING``): Dagster's SQLite storage creates its
    tables when a home is first opened, and two commands doing that at once (loads of a
    chain's shards started together on a new data folder) fail the second ("table ...
    already exists"). Only the opening is locked, not the runs."""
    home = prepare_home(dagster_home(settings))
    with open(home / STARTING, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return dg.DagsterInstance.from_config(str(home))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


STARTING = ".opening.lock"
"""The file in the home that commands opening the instance lock in turn."""


FULL_BELOW = 1 << 20
"""Free bytes under which a failed write of Dagster's storage is taken for a full disk."""


@contextmanager
def storage_errors(settings: Settings) -> Iterator[None]:
    """Dagster's storage failing under a command (a full disk, a database that went away)
    raised as one ``OSError`` naming the home and what happened, instead of SQLAlchemy's
    traceback. The run it was writing stays ``started``; the next command whose storage
    works fails it (``pipeline.orchestration.runs``)."""
    try:
        yield
    except sqlalchemy.exc.DBAPIError as exc:
        raise storage_failure(dagster_home(settings), exc) from None


def storage_failure(home: Path, exc: sqlalchemy.exc.DBAPIError) -> OSError:
    reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
    try:
        free = shutil.disk_usage(home).free
    except OSError:
        free = None
    if free is not None and free < FULL_BELOW:
        return OSError(errno.ENOSPC, f"no space left on device ({free:,} bytes free; "
                                     f"Dagster's storage: {reason}); once there is room, "
                                     "the next pos-etl command marks the run it stopped "
                                     "failed", str(home))
    if not all(os.access(p, os.W_OK) for p in [home, *home.rglob("*.db")]):
        return OSError(errno.EROFS, f"Dagster's storage cannot be written ({reason}): the "
                                    "folder or its files are read-only; make them writable "
                                    "for this user, or set DAGSTER_HOME to a writable "
                                    "folder", str(home))
    return OSError(errno.EIO, f"Dagster's storage failed: {reason}; once it works again, "
                              "the next pos-etl command marks the run it stopped failed",
                   str(home))


if __name__ == "__main__":  # `make dev`: prepare the home the UI will use, print it
    from pipeline.orchestration.configs import load_settings

    print(prepare_home(dagster_home(load_settings())))
    sys.exit(0)
