"""The configured lake: a local folder, or a bucket on object storage."""

from __future__ import annotations

from pipeline.core.settings import Settings
from pipeline.lake.objectlake import ObjectLake
from pipeline.lake.store import Lake, LakeStore


def make_lake(settings: Settings) -> LakeStore:
    """The local lake, or the lake on object storage where ``[lake] url`` is set (builds
    read it where it is)."""
    if settings.lake.url:
        return ObjectLake(settings.lake.url, settings.lake.endpoint_url,
                          settings.lake.retry_attempts, settings.lake.retry_seconds)
    return Lake(settings.warehouse.lake_dir)
