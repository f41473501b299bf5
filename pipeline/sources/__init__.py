"""The sources a load reads, each declared by a module of this package (its ``SOURCE``,
``pipeline.sources.base.Source``) and found here: nothing else lists them."""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import TYPE_CHECKING

from pipeline.core.outcomes import ConfigError
from pipeline.core.registry import declared
from pipeline.sources.base import Source

if TYPE_CHECKING:
    from pipeline.core.settings import Settings

SOURCES: tuple[Source, ...] = declared(__name__, "SOURCE", Source, lambda s: s.rank)
SOURCE: dict[str, Source] = {s.name: s for s in SOURCES}
OPTIONAL: tuple[Source, ...] = tuple(s for s in SOURCES if s.optional)
"""What a load may leave out (``--no-<name>``)."""


def tenant_services(skip: Collection[str] = ()) -> list[Source]:
    """The sources served over HTTP with the tenant's key (not a location's), but ``skip``."""
    return [s for s in SOURCES if s.transport == "http" and not s.per_location
            and s.name not in skip]


def file_sources(settings: Settings, skip: Collection[str] = ()) -> list[Source]:
    """The file sources these settings have, but ``skip``."""
    return [s for s in SOURCES if s.transport == "files" and s.name not in skip
            and s.served(settings)]


def key_variables(settings: Settings, location_ids: list[int] | None = None,
                  skip: Collection[str] = ()) -> list[tuple[str, str]]:
    """``(whose, variable)`` of every key a run reading each source but ``skip`` for
    ``location_ids`` (default: every location) needs."""
    return [pair for source in SOURCES if source.name not in skip
            for pair in source.key_variables(settings, location_ids)]


def require_keys(settings: Settings, location_ids: list[int] | None = None,
                 skip: Collection[str] = ()) -> None:
    """Fail with one message naming every key variable such a run would read that is not
    set or not usable (the sandbox needs none)."""
    from pipeline.core.settings import malformed_key

    wanted = key_variables(settings, location_ids, skip)
    missing = [f"{who}: environment variable {env} (its API key) is not set"
               for who, env in wanted if not os.environ.get(env)]
    missing += [f"{who}: environment variable {env} (its API key) is malformed: "
                f"{malformed_key(os.environ[env])}" for who, env in wanted
                if os.environ.get(env) and malformed_key(os.environ[env])]
    if missing:
        raise ConfigError("\n".join(missing))
