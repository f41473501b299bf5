"""The configured POS source: one client per location, one request budget, the sandbox if none.

Shared by the CLI and the Dagster resource so both run the same code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack

import httpx

from pipeline.pos_api.client import PosClient
from pipeline.settings import Settings


class PosSource:
    """Opens clients for the configured locations; starts the built-in sandbox when needed."""

    def __init__(self, settings: Settings, *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] | None = None):
        self.settings = settings
        self.transport = transport
        self.sleep = sleep
        self.base_url = settings.source.base_url
        self.request_slots = threading.BoundedSemaphore(settings.source.max_concurrent_requests)
        self._stack = ExitStack()

    def __enter__(self) -> PosSource:
        if self.base_url is None:
            from pipeline.sandbox.server import running_sandbox

            self.base_url = self._stack.enter_context(running_sandbox())
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()
        if self.settings.uses_sandbox:
            self.base_url = None

    def client(self, location_id: int) -> PosClient:
        """A client bound to one location's key (read from its environment variable now)."""
        if self.base_url is None:
            raise RuntimeError("PosSource is not open: use it as a context manager")
        loc = self.settings.location(location_id)
        extra = {"sleep": self.sleep} if self.sleep else {}
        return PosClient(
            base_url=self.base_url,
            api_key=self.settings.api_key(loc),
            location_id=loc.id,
            source=self.settings.source,
            transport=self.transport,
            request_slots=self.request_slots,
            key_hint=None if self.settings.uses_sandbox else loc.api_key_env,
            **extra,
        )
