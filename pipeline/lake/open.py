"""The configured lake: a local folder, or a bucket on object storage."""

from __future__ import annotations

import fcntl
import sys
from urllib.parse import urlsplit, urlunsplit

from pipeline.core.settings import Settings
from pipeline.lake.convert import convert, needs_conversion, place_of
from pipeline.lake.objectlake import ObjectLake
from pipeline.lake.source_mark import SANDBOX, SourceMark
from pipeline.lake.store import Lake, LakeStore


def make_lake(settings: Settings) -> LakeStore:
    """The local lake, or the lake on object storage where ``[lake] url`` is set (builds
    read it where it is), for the settings' source (a write checks the lake holds its
    data: ``pipeline.lake.source_mark``). A lake of the earlier layout is converted first, once
    (``pipeline.lake.convert``; locally one process at a time, the others wait)."""
    if settings.lake.url:
        store = ObjectLake(settings.lake.url, settings.lake.endpoint_url,
                           settings.lake.retry_attempts, settings.lake.retry_seconds,
                           source_of(settings))
        try:
            old = store.retried(lambda: needs_conversion(place_of(store)))
        except OSError:  # a store that is down: this run's every write fails by name
            old = False
        if old:
            _converting(store.url)
            convert(store, lambda line: print(line, file=sys.stderr))
        return store
    lake = Lake(settings.warehouse.lake_dir, source_of(settings))
    if needs_conversion(place_of(lake)):
        with open(lake.root / ".convert.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if needs_conversion(place_of(lake)):
                _converting(str(lake.root))
                convert(lake, lambda line: print(line, file=sys.stderr))
    return lake


def source_of(settings: Settings) -> SourceMark:
    """The source the settings load from, as a lake records it (a URL's credentials,
    ``user:secret@``, never: the mark is a file anyone with the lake reads)."""
    if settings.uses_sandbox:
        return SourceMark(SANDBOX)
    url = urlsplit(settings.source.base_url)
    host = url.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{url.port}" if url.port else ""
    return SourceMark(urlunsplit(url._replace(netloc=netloc)))


def _converting(where: str) -> None:
    print(f"lake: {where} is of the earlier layout: converting it to one Delta table per "
          f"area (once)", file=sys.stderr)
