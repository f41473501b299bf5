"""A POS host's request budget, shared by every process that reads it, on one machine or
on many.

``[source] requests_per_second`` is what the POS allows (its rate limit, less a margin).
The shares of a sharded night run as processes of their own, and a CLI load may run
beside them: each process's ``max_concurrent_requests`` bounds its own requests, not
their sum. So every request first takes a permit from one leaky bucket per POS host
(PyrateLimiter's), whoever asks:

- by default a SQLite file in the Dagster home (``SQLiteBucket``, its writes serialised
  by a file lock): every process of this machine;
- with ``[source] budget_database_env`` (a variable holding a PostgreSQL URL, e.g. the
  database of Dagster's storage) a table there (``PostgresBucket``): every process on
  every machine (Kubernetes pods, Docker containers) that reads the host.

A 429 whose ``Retry-After`` says how long to stay away holds the budget for that long
(when the hold ends: a file beside the bucket, or a row of ``pos_etl_budget_held``), so
every process waits, not only the one that was told.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from pyrate_limiter import AbstractBucket, Duration, Limiter, Rate


def _name(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", host).lower()


def _rate(limit: int, per: float) -> Rate:
    return Rate(limit, int(per * Duration.SECOND))


def bucket_file(home: Path, host: str) -> Path:
    """The host's bucket in the Dagster home ``home``."""
    return home / f"pos_requests-{_name(host)}.sqlite"


class _FileHold:
    """When the hold ends, in a file (replaced whole)."""

    def __init__(self, path: Path):
        self.path = path

    def until(self) -> float:
        try:
            return float(self.path.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0.0

    def extend(self, until: float) -> None:
        if until <= self.until():  # a later end already held stays
            return
        staged = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        staged.write_text(f"{until:.3f}\n")
        os.replace(staged, self.path)

    def close(self) -> None:
        pass


class _TableHold:
    """When the hold ends, a row per host of ``pos_etl_budget_held`` (PostgreSQL)."""

    TABLE = "pos_etl_budget_held"

    def __init__(self, pool, host: str):
        self.pool, self.host = pool, host
        with pool.connection() as conn:  # (one transaction, committed as it closes)
            # (two processes creating the table at once: one waits for the other)
            conn.execute("select pg_advisory_xact_lock(%s)", (zlib.crc32(self.TABLE.encode()),))
            conn.execute(f"create table if not exists {self.TABLE} "
                         "(host text primary key, until double precision not null)")

    def until(self) -> float:
        with self.pool.connection() as conn:
            row = conn.execute(f"select until from {self.TABLE} where host = %s",
                               (self.host,)).fetchone()
        return float(row[0]) if row else 0.0

    def extend(self, until: float) -> None:
        with self.pool.connection() as conn:
            conn.execute(f"insert into {self.TABLE} as held (host, until) values (%s, %s) "
                         "on conflict (host) do update set until = greatest(held.until, "
                         "excluded.until)", (self.host, until))

    def close(self) -> None:
        pass


class RequestBudget:
    """``limit`` requests a second (or each ``per`` seconds) to one POS host, shared
    through ``bucket`` and ``hold`` (``on_disk``, ``in_postgres``)."""

    def __init__(self, limit: int, bucket: AbstractBucket, hold,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, closes_bucket: bool = True):
        self.limit = limit
        self._bucket, self._hold, self._closes_bucket = bucket, hold, closes_bucket
        self._limiter = Limiter(bucket)
        self._sleep, self._clock = sleep, clock

    @classmethod
    def on_disk(cls, limit: int, path: Path, per: float = 1.0, **kwargs) -> RequestBudget:
        """Shared by the processes of this machine: the bucket in the SQLite file
        ``path``, the hold beside it (``.held``)."""
        from pyrate_limiter import SQLiteBucket

        path.parent.mkdir(parents=True, exist_ok=True)
        bucket = SQLiteBucket.init_from_file([_rate(limit, per)], db_path=str(path),
                                             use_file_lock=True)
        return cls(limit, bucket, _FileHold(path.with_suffix(".held")), **kwargs)

    @classmethod
    def in_postgres(cls, limit: int, url: str, host: str, per: float = 1.0,
                    **kwargs) -> RequestBudget:
        """Shared by every process on every machine that reaches the PostgreSQL database
        at ``url``: the bucket a table of its own per host, the hold a row."""
        from psycopg_pool import ConnectionPool
        from pyrate_limiter import PostgresBucket

        pool = ConnectionPool(url, min_size=1, max_size=4, open=True)
        bucket = PostgresBucket(pool, f"pos_requests_{_name(host)}", [_rate(limit, per)])
        # (left to the process's end: PyrateLimiter closes its pool while its leaking
        # thread may be in a round that uses it, a daemon thread, a round each 10 s)
        return cls(limit, bucket, _TableHold(pool, host), closes_bucket=False, **kwargs)

    def take(self) -> None:
        """Wait until the budget is not held, then for a permit to send one request."""
        while (wait := self.held_until() - self._clock()) > 0:
            self._sleep(wait)
        self._limiter.try_acquire("pos", blocking=True)

    def taken(self) -> int:
        """The permits the budget still counts (taken within its window), whoever took
        them."""
        return self._bucket.count()

    def hold(self, seconds: float) -> None:
        """Hold the budget for ``seconds`` from now (a 429's ``Retry-After``; a later
        end already held stays): every process reading the host waits."""
        self._hold.extend(self._clock() + seconds)

    def held_until(self) -> float:
        return self._hold.until()

    def close(self) -> None:
        """Close the bucket (one in PostgreSQL is left to the process's end) and the
        hold."""
        if self._closes_bucket:
            self._limiter.close()
        self._hold.close()
