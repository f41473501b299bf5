"""What a source is: a service (or a store) a load reads, with its address and its keys.

A source is declared once, in a module of ``pipeline.sources`` (its ``SOURCE``): where
the settings say it is, which key each of its reads is sent with, whether a load may leave
it out. The areas it feeds name it (``pipeline.areas``: ``LakeArea.source``); everything
else (the keys a run needs, the resources that open it, the load's options and its
summary) derives from the declarations, so no other module names a particular source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the command line lists the sources without loading the settings' code)
    from pipeline.core.settings import Settings


@dataclass(frozen=True)
class Source:
    name: str
    """Its name in options and messages: ``--no-<name>``, ``<name>: not loaded``."""
    title: str
    """What a message calls it ("the POS")."""
    rank: int
    """Its place among the sources (the POS first)."""
    address: Callable[[Settings], str | None]
    """Where these settings say it is; None: not configured."""
    setting: str
    """The config key of its address, for messages (``source.base_url``)."""
    per_location: bool = True
    """Read with each location's key (``[[locations]] api_key_env``); else with one key of
    the tenant's."""
    tenant_key_variable: Callable[[Settings], str] | None = None
    """The variable holding the tenant's key (a source not read per location)."""
    optional: bool = False
    """A load may leave it out (``pos-etl load --no-<name>``), and one without it
    configured loads the rest and says so."""
    transport: str = "http"
    """``http``: a service answering requests with keys (the ``pos`` resource's clients);
    ``files``: files in a folder or under an S3 prefix, read without a key."""
    configured: Callable[[Settings], bool] | None = None
    """Whether these settings have it, where that is more than an address (default: an
    address, or the sandbox)."""
    place: Callable[[Settings], Place] | None = None
    """A file source's place in these settings (``transport="files"``)."""

    def served(self, settings: Settings) -> bool:
        """Whether these settings have it: configured, or served by the built-in sandbox
        (which serves every source where no POS is configured)."""
        if self.configured is not None:
            return self.configured(settings)
        return settings.uses_sandbox or self.address(settings) is not None

    def key_variables(self, settings: Settings, location_ids: list[int] | None = None
                      ) -> list[tuple[str, str]]:
        """``(whose, variable)`` of every key a run reading it for ``location_ids``
        (default: every location) is sent with; none for the sandbox (its keys are its own)
        or where it is not configured."""
        if settings.uses_sandbox or self.address(settings) is None or \
                self.transport != "http":
            return []
        if not self.per_location:
            return [(self.title, self.tenant_key_variable(settings))]
        return [(f"location {loc.id}", loc.api_key_env) for loc in settings.locations
                if location_ids is None or loc.id in location_ids]


@dataclass
class Place:
    """Where a file source's files are (a folder, or ``s3://bucket/prefix``) and which
    location each of its accounts belongs to."""

    uri: str
    accounts: Mapping[str, int]
    endpoint_url: str | None = None
    """An S3-compatible store's address (``[lake] endpoint_url``), for an ``s3://`` uri."""
    prepare: Callable[[], None] | None = None
    """Called before the files are first read (the sandbox writes its bank's then)."""
