"""Run the sandbox: in-process on a free loopback port, or in the foreground."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta

import uvicorn

from pos_sandbox import world
from pos_sandbox.app import SandboxConfig, create_app


def running_sandbox(config: SandboxConfig | None = None, port: int = 0):
    """Serve the sandbox on 127.0.0.1 in a background thread; yields its base URL."""
    return serving(create_app(config), port)


@contextmanager
def serving(app, port: int = 0) -> Iterator[str]:
    """Serve an ASGI app on 127.0.0.1 in a background thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off",
    ))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name="pos-sandbox")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the POS sandbox did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


BANNER_LOCATIONS = 10
"""A larger chain's banner lists this many locations and counts the rest."""


def banner(base_url: str, chain: world.Chain | None = None) -> str:
    """What the sandbox prints at start: its address, locations and keys."""
    chain = chain or world.chain()
    lines = [f"POS sandbox serving on {base_url}", "",
             f"{len(chain.locations)} locations and their API keys:"]
    for loc in chain.locations[:BANNER_LOCATIONS]:
        note = "  (older query configuration)" if loc.older_configuration else ""
        lines.append(f"  {loc.id}  {loc.short_code}  {loc.api_key}  {loc.name}{note}")
    if len(chain.locations) > BANNER_LOCATIONS:
        lines.append(f"  ... and {len(chain.locations) - BANNER_LOCATIONS} more, up to "
                     f"{chain.locations[-1].id} (key: sandbox-key-<id>)")
    return "\n".join(lines)


HISTORY_DAYS = 7
"""The business dates a sandbox config expects by default: the week before it was
written (``pos-etl load --days 7`` loads them all)."""


def chain_config(base_url: str, chain: world.Chain, data_dir: str = "data",
                 start_date: date | None = None, **schedule: int) -> tuple[str, str]:
    """A pos-etl config file for the locations of ``chain`` served at ``base_url``, and the
    environment file with their keys (``set -a; . FILE; set +a`` before a load).

    The sandbox serves any date; the config's history starts at ``start_date`` (default
    ``HISTORY_DAYS`` before today), so that ``pos-etl status`` and Dagster's partitions
    show as missing only what was meant to be loaded. ``schedule``: more keys of its
    ``[schedule]``."""
    start_date = start_date or date.today() - timedelta(days=HISTORY_DAYS)
    toml = [f'# pos-etl config of a sandbox chain of {len(chain.locations)} locations',
            "[source]", f'base_url = "{base_url}"',
            "# the voucher ledger is served at the same address (its key: the first "
            "location's)", f'voucher_url = "{base_url}"', "", "[warehouse]",
            f'data_dir = "{data_dir}"', "",
            "# the sandbox serves any date; the history this config expects starts here",
            "[schedule]", f'start_date = "{start_date}"',
            *(f"{key} = {value}" for key, value in schedule.items()), "",
            "# the hotels' tourist tax: collected for the municipality, not revenue, no VAT",
            "[[accounting.pass_through]]", f'name = "{world.TOURIST_TAX}"',
            f"products = {world.tourist_tax_products()}",
            f'account = "{world.TOURIST_TAX_ACCOUNT}"', "",
            "# the client's chart of accounts (EKR, Austria): the POS's accounts fit it; the",
            "# online payments' type has none, the staff meals' group is no revenue",
            "[accounting.accounts]",
            "payment_accounts = { " + ", ".join(
                f'{json.dumps(k)} = "{v}"' for k, v in world.CONFIG_PAYMENT_ACCOUNTS.items())
            + " }",
            "non_revenue_accounts = { " + ", ".join(
                f'{json.dumps(k)} = "{v}"' for k, v in world.CONFIG_GROUP_ACCOUNTS.items())
            + " }"]
    env = []
    for loc in chain.locations:
        toml += ["", "[[locations]]", f"id = {loc.id}", f'short_code = "{loc.short_code}"',
                 f"name = {json.dumps(loc.name)}",  # a TOML basic string, escaped
                 f'timezone = "{loc.timezone}"', f'api_key_env = "POS_KEY_{loc.id}"']
        if loc.business_day_starts != "00:00":
            toml.append(f'business_day_starts = "{loc.business_day_starts}"')
        env.append(f"POS_KEY_{loc.id}={loc.api_key}")
    return "\n".join(toml) + "\n", "\n".join(env) + "\n"


def serve_forever(config: SandboxConfig, port: int, host: str = "127.0.0.1") -> None:
    """Serve the sandbox in the foreground until interrupted."""
    print(banner(f"http://{host}:{port}", config.chain), flush=True)
    print(f"\nserver profile: {config.server.describe()}", flush=True)
    uvicorn.run(create_app(config), host=host, port=port, log_level="info")
