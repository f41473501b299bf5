"""The configured lake: a local folder, or a bucket on object storage."""

from __future__ import annotations

import fcntl
import sys

from pipeline.core.settings import Settings
from pipeline.lake.convert import convert, needs_conversion
from pipeline.lake.objectlake import ObjectLake
from pipeline.lake.store import Lake, LakeStore


def make_lake(settings: Settings) -> LakeStore:
    """The local lake, or the lake on object storage where ``[lake] url`` is set (builds
    read it where it is). A local lake of the earlier layout is converted first, once
    (``pipeline.lake.convert``; one process at a time, the others wait)."""
    if settings.lake.url:
        return ObjectLake(settings.lake.url, settings.lake.endpoint_url,
                          settings.lake.retry_attempts, settings.lake.retry_seconds)
    lake = Lake(settings.warehouse.lake_dir)
    if needs_conversion(lake.root):
        with open(lake.root / ".convert.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if needs_conversion(lake.root):
                print(f"lake: {lake.root} is of the earlier layout: converting it to one "
                      f"Delta table per area (once)", file=sys.stderr)
                convert(lake, lambda line: print(line, file=sys.stderr))
    return lake
