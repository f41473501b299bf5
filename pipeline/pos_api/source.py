"""An open POS: one client per location, one request budget, one circuit, for one run.

What a run's steps call. The ``pos`` resource (``pipeline.orchestration.resources``)
opens one for the real POS over HTTP (``HttpPos``) or for the in-process sandbox
(``SandboxPos``); both hand it the keys, so nothing here reads the environment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx

from pipeline.core.outcomes import ConfigError
from pipeline.core.settings import Settings
from pipeline.core.untrusted import Redactor
from pipeline.pos_api.budget import RequestBudget
from pipeline.pos_api.client import PosClient
from pipeline.pos_api.http import Circuit, make_http_client


@dataclass(frozen=True)
class Endpoint:
    """A service of the tenant's besides the POS (``pipeline.sources``: one not read per
    location), at ``url``, read with ``key`` (held in the variable ``key_env``)."""

    url: str
    key: str = field(repr=False)
    key_env: str


class PosSource:
    """Clients of the POS at ``base_url`` for the configured locations whose keys it holds,
    and of the tenant's other services (``tenant``: a source's name -> its endpoint), and
    where the run's file sources are (``places``).

    ``keys``: location id to API key; ``key_hints``: whether an error about a refused key
    names the location's key variable (not for the sandbox, whose keys are its own). Use
    it as a context manager: leaving it closes its connections.
    """

    def __init__(self, settings: Settings, base_url: str, keys: Mapping[int, str], *,
                 tenant: Mapping[str, Endpoint] | None = None,
                 places: Mapping[str, object] | None = None, key_hints: bool = True,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] | None = None,
                 budget: RequestBudget | None = None):
        self.settings = settings
        self.base_url = base_url
        self.tenant = dict(tenant or {})
        self.places = dict(places or {})
        """A file source's name -> where its files are (``pipeline.sources.base.Place``)."""
        self.transport = transport
        self.sleep = sleep
        self.request_slots = threading.BoundedSemaphore(settings.source.max_concurrent_requests)
        self.circuit = Circuit()
        """Shared by every client of this source: a dead host or a refused key is tried once."""
        self.budget = budget
        """The POS host's requests per second, shared with other processes (its clients'
        requests to ``base_url`` take from it; the tenant's other services do not)."""
        self._keys = dict(keys)
        self._key_hints = key_hints
        self._http: httpx.Client | None = None
        self._lock = threading.Lock()
        self._redactor: Redactor | None = None

    @property
    def redactor(self) -> Redactor:
        """The redactor of this source's keys (its ``pattern`` finds them in any form)."""
        if self._redactor is None:
            self._redactor = Redactor([*self._keys.values(),
                                       *(e.key for e in self.tenant.values())])
        return self._redactor

    def key_pattern(self, location_id: int | None) -> str | None:
        """The regex of the keys sent for ``location_id``'s data (its own; the tenant's
        services' for None), in every form ``Redactor`` knows: what a POS could echo into
        the answers of that key. One location's, not every location's: a regex of a
        chain's 200 keys takes seconds per partition."""
        with self._lock:
            patterns = self.__dict__.setdefault("_key_patterns", {})
            if location_id not in patterns:
                keys = [self._keys.get(location_id) or ""] if location_id is not None else \
                    [e.key for e in self.tenant.values()]
                patterns[location_id] = Redactor(keys or [""]).pattern
            return patterns[location_id]

    def redact(self, text: str) -> str:
        """``text`` (an error, which may quote a POS answer) without any key of this
        source, in any case, in part or encoded, nor URL credentials."""
        return self.redactor(text)

    def __enter__(self) -> PosSource:
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            if self._http is not None:
                self._http.close()
            self._http = None

    def client(self, location_id: int) -> PosClient:
        """A client bound to one location's key, with its own stats.

        The clients of every location share one ``httpx.Client`` (its connection pool and
        TLS context: some 0.9 MB each, 1.7 GB for a chain of 2,000 locations had each its
        own) for as long as the source is open; a key travels with each request alone and
        the shared client keeps no cookies (``make_http_client``).
        """
        loc = self.settings.location(location_id)
        with self._lock:
            if self._http is None:
                self._http = make_http_client(self.base_url, self.settings.source,
                                              self.transport)
            http = self._http
        return self._client(self.base_url, self._key(loc.id), loc.id, loc.api_key_env, http)

    def place(self, name: str):
        """Where the file source ``name``'s files are, or None where it is not read."""
        return self.places.get(name)

    def tenant_client(self, name: str) -> PosClient | None:
        """A client of the tenant's service ``name``, or None where it is not open (not
        configured, or left out of this run)."""
        endpoint = self.tenant.get(name)
        if endpoint is None:
            return None
        return self._client(endpoint.url, endpoint.key, self.settings.locations[0].id,
                            endpoint.key_env)

    def _key(self, location_id: int) -> str:
        try:
            return self._keys[location_id]
        except KeyError:
            raise ConfigError(f"location {location_id}: this run was not given its API key "
                              "(it loads other locations)") from None

    def _client(self, base_url: str, api_key: str, location_id: int, key_env: str,
                http: httpx.Client | None = None) -> PosClient:
        extra = {"sleep": self.sleep} if self.sleep else {}
        return PosClient(
            base_url=base_url, api_key=api_key, location_id=location_id,
            source=self.settings.source, transport=self.transport,
            request_slots=self.request_slots, http=http, circuit=self.circuit,
            key_hint=key_env if self._key_hints else None,
            budget=self.budget if base_url == self.base_url else None, **extra)
