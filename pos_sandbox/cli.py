"""``pos-etl sandbox``: the POS sandbox served in the foreground, with its server profile
(how a real vendor's server may answer where the spec leaves room) and its faults."""

from __future__ import annotations

from pathlib import Path

import click

from pos_sandbox import MAX_LOCATIONS


@click.command("sandbox", help="serve the POS sandbox in the foreground")
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--seed", type=int, default=20240601, show_default=True)
@click.option("--volume", type=click.IntRange(min=1), default=300, show_default=True,
              help="transactions per location and day")
@click.option("--no-quirks", is_flag=True,
              help="serve each line and payment once (no fan-out duplicates)")
@click.option("--rate-429", type=click.FloatRange(0, 1), default=0.0)
@click.option("--retry-after", type=click.Choice(["seconds", "http-date", "none"]),
              default="seconds", show_default=True, help="how a 429 says when to come back")
@click.option("--rate-5xx", type=click.FloatRange(0, 1), default=0.0)
@click.option("--burst-503-every", type=click.IntRange(min=0), default=0, metavar="N",
              help="every N requests a burst of three 503 answers")
@click.option("--latency-ms", type=click.FloatRange(min=0), default=0.0)
# The server profile: how a real vendor's server may answer where the spec leaves room.
@click.option("--limit-cap", type=click.IntRange(min=1), metavar="N",
              help="serve at most N receipts per revenue page, whatever limit asks")
@click.option("--ignore-limit", is_flag=True,
              help="serve the whole rest of the window in one page")
@click.option("--order-by-id", is_flag=True,
              help="order and page revenue rows by transactionId, not by time")
@click.option("--inclusive-bounds", is_flag=True, help="read after/before as inclusive")
@click.option("--repeat-cursor-row", is_flag=True,
              help="start each next page with the cursor's own row again")
@click.option("--content-encoding", type=click.Choice(["gzip", "deflate"]),
              help="compress every answer, as a proxy in front of the POS would")
@click.option("--same-second", is_flag=True, help="stamp receipts in pairs with the same second")
@click.option("--voided-per-day", type=click.IntRange(min=0), default=0, metavar="N",
              help="delete the first N settlements of every day at the source")
@click.option("--cent-short-per-day", type=click.IntRange(min=0), default=0, metavar="N",
              help="a till's bug: the first N settlements of every day book a payment one "
                   "cent short (the day does not close)")
@click.option("--extra-fields", is_flag=True,
              help="add fields the spec does not name to receipts and lines")
@click.option("--drop-optional", is_flag=True,
              help="leave optional fields out instead of sending null")
@click.option("--locations", type=click.IntRange(1, MAX_LOCATIONS), default=3,
              show_default=True, help="serve a chain of N locations, ids 1001 to 1000+N")
@click.option("--write-config", metavar="FILE", type=click.Path(dir_okay=False),
              help="write a pos-etl config for these locations to FILE and their keys to "
                   "FILE with the suffix .env, then serve")
def sandbox_command(port: int, host: str, seed: int, volume: int, no_quirks: bool,
                    rate_429: float, retry_after: str, rate_5xx: float, burst_503_every: int,
                    latency_ms: float, limit_cap: int | None, ignore_limit: bool,
                    order_by_id: bool, inclusive_bounds: bool, repeat_cursor_row: bool,
                    content_encoding: str | None, same_second: bool, voided_per_day: int,
                    cent_short_per_day: int, extra_fields: bool, drop_optional: bool,
                    locations: int, write_config: str | None) -> int:
    from pos_sandbox.app import Faults, SandboxConfig
    from pos_sandbox.profiles import ServerProfile
    from pos_sandbox.receipts import SandboxData
    from pos_sandbox.server import chain_config, serve_forever

    config = SandboxConfig(
        data=SandboxData(seed=seed, transactions_per_day=volume, quirks=not no_quirks,
                         same_second=same_second, voided_per_day=voided_per_day,
                         cent_short_per_day=cent_short_per_day, extra_fields=extra_fields,
                         drop_optional=drop_optional),
        faults=Faults(rate_429=rate_429, rate_5xx=rate_5xx, latency_ms=latency_ms,
                      retry_after_form=retry_after, burst_every=burst_503_every),
        server=ServerProfile(limit_cap=limit_cap, ignore_limit=ignore_limit,
                             order_by_id=order_by_id, inclusive_bounds=inclusive_bounds,
                             repeat_cursor_row=repeat_cursor_row,
                             content_encoding=content_encoding),
        locations=locations,
    )
    if write_config:
        toml, env = chain_config(f"http://{host}:{port}", config.chain)
        path = Path(write_config)
        path.write_text(toml, encoding="utf-8")
        path.with_suffix(".env").write_text(env, encoding="utf-8")
        print(f"wrote {path} and its keys to {path.with_suffix('.env')} "
              f"(set -a; . {path.with_suffix('.env')}; set +a)", flush=True)
    serve_forever(config, port, host)
    return 0
