"""Dagster resources, split by what they touch: the POS, the lake, the warehouse (and the
reporter of a run started from the command line); and the one choice between the real POS
and the built-in sandbox.

All are made from the settings read once at wiring time (``definitions.py``). Only
``pos`` opens anything: the POS's connections (or the sandbox, where no ``base_url`` is
configured), once per run and only in runs whose steps call the POS, so a warehouse build
never starts a sandbox nor needs a key. The real POS's keys are ``EnvVar`` config: Dagster
reads them when such a run starts; the run's config shows the variables' names only.
"""

import os
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Self

import dagster as dg
from pydantic import Field, PrivateAttr

from pipeline.core.outcomes import ConfigError
from pipeline.core.reporting import Reporter
from pipeline.core.settings import Settings
from pipeline.lake.open import make_lake
from pipeline.orchestration.instance import dagster_home
from pipeline.pos_api.budget import RequestBudget, bucket_file
from pipeline.pos_api.source import Endpoint, PosSource
from pipeline.sources import SOURCE, file_sources, key_variables, tenant_services
from pipeline.warehouse import Warehouse, config_macros, config_tables


class PosResource(dg.ConfigurableResource):
    """The POS a run reads; its steps use ``source``, open while the run's steps that call
    the POS run. ``HttpPos`` is the real POS, ``SandboxPos`` the built-in sandbox."""

    settings: dg.ResourceDependency[Settings]
    _source: PosSource | None = PrivateAttr(None)

    @property
    def source(self) -> PosSource:
        if self._source is None:
            raise RuntimeError("the POS is open only in a run (or within opened())")
        return self._source

    @contextmanager
    def serving(self, source: PosSource) -> Iterator[Self]:
        """Yields this resource holding ``source``, then closes it."""
        with source:
            self._source = source
            try:
                yield self
            finally:
                self._source = None


class PosKey(dg.Config):
    """One location's API key: an ``EnvVar`` in the wiring, so its value is read where the
    run runs and never stored in the run's config."""

    location_id: int
    api_key: str = Field(repr=False)


class TenantKey(dg.Config):
    """A service of the tenant's besides the POS (``pipeline.sources``), at ``url``, its
    key an ``EnvVar`` (``key_env`` names it, for messages)."""

    source: str
    url: str
    key_env: str
    api_key: str = Field(repr=False)


class HttpPos(PosResource):
    """The real POS over HTTP at ``base_url``, and the tenant's services (``tenant``)
    that the run reads."""

    base_url: str
    api_keys: list[PosKey]
    tenant: list[TenantKey] = []
    files: list[str] = []
    """The file sources the run reads (``pipeline.sources``), where the settings say."""

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[Self]:
        keys = {k.location_id: k.api_key for k in self.api_keys}
        tenant = {t.source: Endpoint(t.url, t.api_key, t.key_env) for t in self.tenant}
        places = {name: SOURCE[name].place(self.settings) for name in self.files}
        with request_budget(self.settings) as budget, \
                self.serving(PosSource(self.settings, self.base_url, keys, tenant=tenant,
                                       places=places, budget=budget)) as pos:
            yield pos


class SandboxPos(PosResource):
    """The built-in sandbox (``pos_sandbox``), served in-process on a free port for each run
    that calls the POS, with its own keys; it serves every source (a file source's files
    written by the sandbox where the run reads them)."""

    skip: list[str] = []
    """The sources the run leaves out."""

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[Self]:
        with sandbox_source(self.settings, self.skip) as source, self.serving(source) as pos:
            yield pos


@contextmanager
def sandbox_source(settings: Settings, skip: Collection[str] = ()) -> Iterator[PosSource]:
    """A source on a sandbox served for as long as it is open, with each configured
    location's sandbox key (the tenant's services read with the first one's), and the
    file sources' files: where the settings say, else those the sandbox writes (into a
    folder of its own, when first read)."""
    from pos_sandbox import world
    from pos_sandbox.files import writer
    from pos_sandbox.server import running_sandbox

    keys = {loc.id: world.api_key(loc.id) for loc in settings.locations}
    first = settings.locations[0]
    with running_sandbox() as url, tempfile.TemporaryDirectory(prefix="pos-sandbox-") as tmp:
        tenant = {s.name: Endpoint(url, keys[first.id], first.api_key_env)
                  for s in tenant_services(skip)}
        places = {s.name: s.place(settings) if s.address(settings) else  # configured
                  replace(s.place(settings), uri=f"{tmp}/{s.name}",
                          prepare=writer(s.name, f"{tmp}/{s.name}", settings))
                  for s in file_sources(settings, skip)}
        with request_budget(settings) as budget, \
                PosSource(settings, url, keys, tenant=tenant, places=places,
                          key_hints=False, budget=budget) as source:
            yield source


@contextmanager
def request_budget(settings: Settings) -> Iterator[RequestBudget | None]:
    """The POS host's budget of ``[source] requests_per_second``: in the PostgreSQL
    database of ``budget_database_env`` (processes on many machines), else in the Dagster
    home (this machine's); None: no budget."""
    source = settings.source
    if not source.requests_per_second:
        yield None
        return
    if source.budget_database_env:
        url = os.environ.get(source.budget_database_env)
        if not url:
            raise ConfigError(f"[source] budget_database_env: ${source.budget_database_env} "
                              "is not set (it holds the PostgreSQL URL of the request "
                              "budget)")
        budget = RequestBudget.in_postgres(source.requests_per_second, url, settings.pos_host)
    else:
        budget = RequestBudget.on_disk(source.requests_per_second,
                                       bucket_file(dagster_home(settings), settings.pos_host))
    try:
        yield budget
    finally:
        budget.close()


def pos_resource(settings: Settings, location_ids: list[int] | None = None,
                 skip: Collection[str] = ()) -> PosResource:
    """The configured POS, or the built-in sandbox where ``[source] base_url`` is unset.

    For the real POS, the keys of ``location_ids`` (default: every location) and of each
    configured service of the tenant's but ``skip`` (``pipeline.sources``), each from its
    variable."""
    if settings.uses_sandbox:
        return SandboxPos(settings=settings, skip=list(skip))
    wanted = [loc for loc in settings.locations
              if location_ids is None or loc.id in location_ids]
    tenant = [TenantKey(source=s.name, url=s.address(settings), key_env=env,
                        api_key=dg.EnvVar(env))
              for s in tenant_services(skip) for _, env in s.key_variables(settings)]
    return HttpPos(
        settings=settings, base_url=settings.source.base_url,
        api_keys=[PosKey(location_id=loc.id, api_key=dg.EnvVar(loc.api_key_env))
                  for loc in wanted],
        tenant=tenant, files=[s.name for s in file_sources(settings, skip)])


@contextmanager
def opened(pos: PosResource) -> Iterator[PosSource]:
    """``pos`` open outside a run (``pos-etl order``, tests), as a run's steps get it."""
    with dg.build_resources({"pos": pos}) as resources:
        yield resources.pos.source




def known_keys(settings: Settings) -> list[str]:
    """The keys this process holds, read when called (a build, not the wiring): every
    configured key variable that is set (every source's), and the sandbox's own keys. Only
    for redaction: a build that finds none redacts nothing and needs none."""
    names = {env for _, env in key_variables(settings)} | {
        loc.api_key_env for loc in settings.locations}
    keys = [os.environ[name] for name in sorted(names) if os.environ.get(name)]
    if settings.uses_sandbox:
        from pos_sandbox import world
        keys += [world.api_key(loc.id) for loc in settings.locations]
    return keys


def build_resources(settings: Settings, reporter: Reporter | None = None,
                    pos: PosResource | None = None) -> dict[str, object]:
    """The resources of a code location: ``pos`` (by default the configured POS, every
    location's key), ``lake``, ``warehouse``, and the ``reporter`` its runs tell how they
    go (by default one that says nothing)."""
    lake = make_lake(settings)
    return {"pos": pos or pos_resource(settings), "lake": lake,
            "reporter": reporter or Reporter(),
            "warehouse": Warehouse(settings.warehouse.warehouse_path, lake,
                                   settings.warehouse.memory_limit,
                                   config_macros(settings.accounting,
                                                 settings.locations[0].timezone),
                                   settings.warehouse.storage_version,
                                   secrets=lambda: known_keys(settings),
                                   tables=config_tables(settings))}
