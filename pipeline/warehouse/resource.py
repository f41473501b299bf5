"""The warehouse as the pipeline's steps use it (the Dagster resource ``warehouse``): the
file, the lake it is built from and the build's settings; a stopped query read as a
stop, and keys redacted from what checks show."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline.core.reporting import ModelBuilt
from pipeline.core.settings import DEFAULT_MEMORY_LIMIT, DEFAULT_STORAGE_VERSION
from pipeline.core.stops import stopped_query
from pipeline.core.untrusted import Redactor
from pipeline.lake.store import LakeStore
from pipeline.sqlrunner.checks import CheckOutcome
from pipeline.sqlrunner.project import Project
from pipeline.warehouse.build import BlockedBuild, BuildResult, build_warehouse
from pipeline.warehouse.lakefiles import lake_files


@dataclass(frozen=True)
class Warehouse:
    """The DuckDB file and the lake it is built from. The Dagster resource ``warehouse``."""

    path: Path
    lake: LakeStore
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    macros: tuple[str, ...] | None = None
    """The macros of the config file (``config_macros``; None: a default config's)."""
    storage_version: str = DEFAULT_STORAGE_VERSION
    secrets: Callable[[], Iterable[str]] = tuple
    """The keys a check's sample rows could echo (POS strings): read when a build runs,
    and redacted from the samples before anything shows or stores them."""
    tables: tuple[str, ...] | None = None
    """The table macros of the config file (``config_tables``): the configured locations
    (None: a default config's)."""

    def build(self, project: Project | None = None, full: bool = False,
              forget_missing: bool = False,
              progress: Callable[[ModelBuilt], None] | None = None) -> BuildResult:
        """Build the models (what changed, or everything with ``full``), run the data
        checks on the new file, then switch it in. The lake is only read (on object storage
        where it is: ``lakefiles``); the build writes nothing but the warehouse.
        A query stopped by Ctrl-C or SIGTERM raises ``KeyboardInterrupt`` (the previous
        warehouse stays)."""
        redact = Redactor(self.secrets())
        try:
            result = build_warehouse(lake_files(self.lake), self.path, project, full=full,
                                     memory_limit=self.memory_limit, macros=self.macros,
                                     storage_version=self.storage_version,
                                     forget_missing=forget_missing, tables=self.tables,
                                     progress=progress)
        except BlockedBuild as exc:
            raise BlockedBuild([redacted_outcome(o, redact) for o in exc.failed]) from None
        except RuntimeError as exc:
            if stopped_query(exc):
                raise KeyboardInterrupt("a warehouse query was stopped") from None
            raise
        result.checks = [redacted_outcome(o, redact) for o in result.checks]
        return result


def redacted_outcome(outcome: CheckOutcome, redact: Callable[[str], str]) -> CheckOutcome:
    """``outcome`` with every text of its sample rows (POS strings) redacted of keys."""
    def clean(value):
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, list | tuple):
            return type(value)(clean(v) for v in value)
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    return replace(outcome, sample=[clean(row) for row in outcome.sample])
