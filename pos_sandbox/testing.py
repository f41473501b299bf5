"""A pytest plugin: the sandbox over real HTTP for any test suite (``-p pos_sandbox.testing``)."""

from __future__ import annotations

import pytest

from pos_sandbox.app import SandboxConfig
from pos_sandbox.server import running_sandbox

DAYS_KEPT = 128
"""Service days the session's sandbox keeps encoded (some 120 MB at its volume): a suite
loads the same days of the same locations again and again, and a day the server no longer
keeps is generated again (the default server keeps 24)."""


@pytest.fixture(scope="session")
def sandbox_url():
    """The default sandbox (quirks on, no faults) on a free loopback port."""
    with running_sandbox(SandboxConfig(days_kept=DAYS_KEPT)) as url:
        yield url
