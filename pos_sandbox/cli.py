"""``pos-etl sandbox``: the POS sandbox served in the foreground, with its server profile
(how a real vendor's server may answer where the spec leaves room) and its faults."""

from __future__ import annotations

import argparse
from pathlib import Path


def _location_count(value: str) -> int:
    from pos_sandbox.world import MAX_LOCATIONS

    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_LOCATIONS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_LOCATIONS}, got {value!r}")
    return int(value)


def _count(value: str) -> int:
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number (1 or more), got {value!r}")
    return int(value)


def cmd_sandbox(args: argparse.Namespace) -> int:
    from pos_sandbox.app import Faults, SandboxConfig
    from pos_sandbox.profiles import ServerProfile
    from pos_sandbox.receipts import SandboxData
    from pos_sandbox.server import chain_config, serve_forever

    config = SandboxConfig(
        data=SandboxData(seed=args.seed, transactions_per_day=args.volume,
                         quirks=not args.no_quirks, same_second=args.same_second,
                         voided_per_day=args.voided_per_day,
                         cent_short_per_day=args.cent_short_per_day,
                         extra_fields=args.extra_fields,
                         drop_optional=args.drop_optional),
        faults=Faults(rate_429=args.rate_429, rate_5xx=args.rate_5xx,
                      latency_ms=args.latency_ms, retry_after_form=args.retry_after,
                      burst_every=args.burst_503_every),
        server=ServerProfile(limit_cap=args.limit_cap, ignore_limit=args.ignore_limit,
                             order_by_id=args.order_by_id,
                             inclusive_bounds=args.inclusive_bounds,
                             repeat_cursor_row=args.repeat_cursor_row,
                             content_encoding=args.content_encoding),
        locations=args.locations,
    )
    if args.write_config:
        toml, env = chain_config(f"http://{args.host}:{args.port}", config.chain)
        path = Path(args.write_config)
        path.write_text(toml, encoding="utf-8")
        path.with_suffix(".env").write_text(env, encoding="utf-8")
        print(f"wrote {path} and its keys to {path.with_suffix('.env')} "
              f"(set -a; . {path.with_suffix('.env')}; set +a)", flush=True)
    serve_forever(config, args.port, args.host)
    return 0


def add_sandbox_command(subcommands) -> None:
    """Declare ``sandbox`` among the subcommands of ``pos-etl``."""
    sandbox = subcommands.add_parser("sandbox", help="serve the POS sandbox in the foreground")
    sandbox.add_argument("--port", type=int, default=8765)
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--seed", type=int, default=20240601)
    sandbox.add_argument("--volume", type=int, default=300,
                         help="transactions per location and day")
    sandbox.add_argument("--no-quirks", action="store_true",
                         help="serve each line and payment once (no fan-out duplicates)")
    sandbox.add_argument("--rate-429", type=float, default=0.0)
    sandbox.add_argument("--retry-after", choices=["seconds", "http-date", "none"],
                         default="seconds", help="how a 429 says when to come back")
    sandbox.add_argument("--rate-5xx", type=float, default=0.0)
    sandbox.add_argument("--burst-503-every", type=int, default=0, metavar="N",
                         help="every N requests a burst of three 503 answers")
    sandbox.add_argument("--latency-ms", type=float, default=0.0)
    profile = sandbox.add_argument_group(
        "server profile", "how a real vendor's server may answer where the spec leaves room")
    profile.add_argument("--limit-cap", type=_count, metavar="N",
                         help="serve at most N receipts per revenue page, whatever limit asks")
    profile.add_argument("--ignore-limit", action="store_true",
                         help="serve the whole rest of the window in one page")
    profile.add_argument("--order-by-id", action="store_true",
                         help="order and page revenue rows by transactionId, not by time")
    profile.add_argument("--inclusive-bounds", action="store_true",
                         help="read after/before as inclusive")
    profile.add_argument("--repeat-cursor-row", action="store_true",
                         help="start each next page with the cursor's own row again")
    profile.add_argument("--content-encoding", choices=["gzip", "deflate"],
                         help="compress every answer, as a proxy in front of the POS would")
    profile.add_argument("--same-second", action="store_true",
                         help="stamp receipts in pairs with the same second")
    profile.add_argument("--voided-per-day", type=int, default=0, metavar="N",
                         help="delete the first N settlements of every day at the source")
    profile.add_argument("--cent-short-per-day", type=int, default=0, metavar="N",
                         help="a till's bug: the first N settlements of every day book a "
                              "payment one cent short (the day does not close)")
    profile.add_argument("--extra-fields", action="store_true",
                         help="add fields the spec does not name to receipts and lines")
    profile.add_argument("--drop-optional", action="store_true",
                         help="leave optional fields out instead of sending null")
    sandbox.add_argument("--locations", type=_location_count, default=3,
                         help="serve a chain of N locations, ids 1001 to 1000+N (default 3)")
    sandbox.add_argument("--write-config", metavar="FILE",
                         help="write a pos-etl config for these locations to FILE and "
                              "their keys to FILE with the suffix .env, then serve")
    sandbox.set_defaults(func=cmd_sandbox)
