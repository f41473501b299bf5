"""A pytest plugin: the sandbox over real HTTP for any test suite (``-p pos_sandbox.testing``)."""

from __future__ import annotations

import pytest

from pos_sandbox.server import running_sandbox


@pytest.fixture(scope="session")
def sandbox_url():
    """The default sandbox (quirks on, no faults) on a free loopback port."""
    with running_sandbox() as url:
        yield url
