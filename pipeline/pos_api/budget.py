"""A POS host's request budget, shared by every process of this machine that reads it.

``[source] requests_per_second`` is what the POS allows (its rate limit, less a margin).
The shares of a sharded night run as processes of their own, and a CLI load may run
beside them: each process's ``max_concurrent_requests`` bounds its own requests, not
their sum. So every request first takes a permit from one leaky bucket per POS host
(PyrateLimiter's ``SQLiteBucket``: a SQLite file in the Dagster home, its writes
serialised by a file lock), whoever asks. A 429 whose ``Retry-After`` says how long to
stay away holds the budget for that long (the time it ends, in a file beside the
bucket), so every process of this machine waits, not only the one that was told.

Processes on other machines (Kubernetes pods) do not share the file: there each run's
``requests_per_second`` is its own, so give each the host's budget divided by the runs
that may read the host at once (``dagster.yaml``'s limit per ``pos_etl/pos_host``).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from pyrate_limiter import Duration, Limiter, Rate, SQLiteBucket


def bucket_file(home: Path, host: str) -> Path:
    """The host's bucket in the Dagster home ``home``."""
    return home / f"pos_requests-{re.sub(r'[^A-Za-z0-9.-]', '_', host)}.sqlite"


class RequestBudget:
    """``per_second`` requests to one POS host, shared through the file ``path`` (and
    ``path`` with ``.held``: until when a 429 told every process to wait)."""

    def __init__(self, per_second: int, path: Path,
                 sleep=time.sleep, clock=time.time):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.per_second = per_second
        self._held = path.with_suffix(".held")
        self._sleep, self._clock = sleep, clock
        self._bucket = SQLiteBucket.init_from_file(
            [Rate(per_second, Duration.SECOND)], db_path=str(path), use_file_lock=True)
        self._limiter = Limiter(self._bucket)

    def take(self) -> None:
        """Wait until the budget is not held, then for a permit to send one request."""
        while (wait := self.held_until() - self._clock()) > 0:
            self._sleep(wait)
        self._limiter.try_acquire("pos", blocking=True)

    def hold(self, seconds: float) -> None:
        """Hold the budget for ``seconds`` from now (a 429's ``Retry-After``; a later
        end already held stays): every process of this machine waits."""
        until = max(self.held_until(), self._clock() + seconds)
        staged = self._held.with_name(f"{self._held.name}.{os.getpid()}.tmp")
        staged.write_text(f"{until:.3f}\n")
        os.replace(staged, self._held)

    def held_until(self) -> float:
        try:
            return float(self._held.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0.0

    def close(self) -> None:
        self._bucket.close()
