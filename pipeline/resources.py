"""Dagster resources: the POS source as a ``ConfigurableResource``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pydantic import PrivateAttr

from pipeline.settings import Settings, load_settings
from pipeline.source import PosSource


class PosApiResource(dg.ConfigurableResource):
    """The configured POS (or the built-in sandbox), open for the length of a run.

    API keys are read from each location's environment variable when a run starts,
    never at import time, and never logged.
    """

    config_path: str | None = None
    """TOML config file; unset means ``$POS_ETL_CONFIG``, else the built-in sandbox."""

    _source: PosSource | None = PrivateAttr(default=None)

    def load(self) -> Settings:
        return load_settings(self.config_path)

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[PosApiResource]:
        with PosSource(self.load()) as source:
            self._source = source
            yield self
        self._source = None

    @property
    def source(self) -> PosSource:
        if self._source is None:
            raise RuntimeError("PosApiResource is used outside a run")
        return self._source
