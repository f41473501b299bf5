"""Alerts: an incoming webhook (Slack, Microsoft Teams, Mattermost) told what needs
attention.

``[alerts] webhook_url_env`` names the environment variable that holds the webhook's URL
(a secret: it is never printed, logged or stored). The body is ``{"text": ...}``, which
all three accept. A post gets ``alerts.timeout_seconds``; one that fails or hangs is
given up and reported as a line, never as a failure of the load.

Who sends: the CLI for its own runs (``pos-etl load``, ``verify``, ``build``), the sensor
``alert_on_runs`` for every other run (the nightly schedule's, a backfill's, the
freshness checks' run that found a location stale).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import httpx

from pipeline.core.settings import Settings

CLI_TRIGGER = ("pos_etl/trigger", "cli")
"""The tag of runs the CLI started: it alerts for them itself."""
MAX_LINES = 25
"""Lines of an alert at most (the rest is counted)."""


@dataclass(frozen=True)
class Alert:
    title: str
    lines: tuple[str, ...] = ()

    def text(self) -> str:
        shown = [line.strip() for line in self.lines[:MAX_LINES]]
        if len(self.lines) > MAX_LINES:
            shown.append(f"... and {len(self.lines) - MAX_LINES} more lines")
        return "\n".join([self.title, *shown])


def send(settings: Settings, alert: Alert) -> str:
    """Post ``alert`` to the webhook; returns what happened, as a line for the operator
    (``alert sent``, ``alert not sent: ...``; empty when no webhook is configured)."""
    env = settings.alerts.webhook_url_env
    if env is None:
        return ""
    url = os.environ.get(env, "")
    if not url:
        return f"alert not sent: environment variable {env} (the webhook's URL) is not set"
    outcome: list[str] = []
    timeout = settings.alerts.timeout_seconds

    def post() -> None:
        try:
            response = httpx.post(url, json={"text": alert.text()}, timeout=timeout)
            outcome.append("alert sent" if response.is_success else
                           f"alert not sent: the webhook answered HTTP {response.status_code}")
        except httpx.HTTPError as exc:  # its message names the URL: only the kind is said
            outcome.append(f"alert not sent: {type(exc).__name__} (the webhook in {env})")

    # A thread of its own bounds the whole post (httpx's timeout is per read, and a
    # receiver may trickle its answer): the load never waits longer than this.
    sender = threading.Thread(target=post, name="alert", daemon=True)
    sender.start()
    sender.join(timeout + 1)
    return outcome[0] if outcome else \
        f"alert not sent: the webhook in {env} did not answer within {timeout:g} s"
