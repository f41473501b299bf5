"""The configured POS source: one client per location, one request budget, the sandbox if none.

Shared by the CLI and the Dagster resource so both run the same code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack

import httpx

from pipeline.pos_api.client import PosClient
from pipeline.pos_api.http import Circuit, make_http_client
from pipeline.settings import Settings
from pipeline.untrusted import Redactor


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
        self._http: dict[int, httpx.Client] = {}
        self.voucher_url: str | None = settings.source.voucher_url
        self._lock = threading.Lock()
        self.circuit = Circuit()
        """Shared by every client of this source: a dead host or a refused key is tried once."""
        self._keys: set[str] = set()
        self._redactor: Redactor | None = None

    def redact(self, text: str) -> str:
        """``text`` (an error, which may quote a POS answer) without any key this source
        has used, in any case or in part, nor URL credentials."""
        if self._redactor is None:  # made again once a new key was used
            self._redactor = Redactor(self._keys)
        return self._redactor(text)

    def __enter__(self) -> PosSource:
        if self.base_url is None:
            from pos_sandbox.server import running_sandbox

            self.base_url = self._stack.enter_context(running_sandbox())
            self.voucher_url = self.base_url  # the sandbox serves the ledger too
        return self

    def __exit__(self, *exc) -> None:
        for http in self._http.values():
            http.close()
        self._http.clear()
        self._stack.close()
        if self.settings.uses_sandbox:
            self.base_url, self.voucher_url = None, self.settings.source.voucher_url

    def client(self, location_id: int) -> PosClient:
        """A client bound to one location's key, with its own stats.

        Clients of one location share one ``httpx.Client`` (connection pool, TLS context)
        for as long as the source is open; the key is read from its variable when that
        client is first made.
        """
        if self.base_url is None:
            raise RuntimeError("PosSource is not open: use it as a context manager")
        loc = self.settings.location(location_id)
        api_key = self.settings.api_key(loc)
        with self._lock:
            http = self._http.get(loc.id)
            if http is None:
                http = make_http_client(self.base_url, self.settings.source, self.transport)
                self._http[loc.id] = http
        return self._client(self.base_url, api_key, loc.id, loc.api_key_env, http)

    def voucher_client(self) -> PosClient | None:
        """A client of the voucher ledger, or None where no ``voucher_url`` is configured."""
        if self.voucher_url is None:
            return None
        api_key, loc = self.settings.voucher_key()
        return self._client(self.voucher_url, api_key, loc.id,
                            self.settings.source.voucher_api_key_env or loc.api_key_env)

    def _client(self, base_url: str, api_key: str, location_id: int, key_env: str,
                http: httpx.Client | None = None) -> PosClient:
        if api_key not in self._keys:
            self._keys.add(api_key)
            self._redactor = None
        extra = {"sleep": self.sleep} if self.sleep else {}
        return PosClient(
            base_url=base_url, api_key=api_key, location_id=location_id,
            source=self.settings.source, transport=self.transport,
            request_slots=self.request_slots, http=http, circuit=self.circuit,
            key_hint=None if self.settings.uses_sandbox else key_env, **extra)
