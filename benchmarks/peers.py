"""Throughput beside its peers, on the same response bytes, in one run (#43's baseline;
#57's target: this pipeline at least 1.25x DuckDB).

Three ways from the revenue report's pages (the throughput benchmark's: one location's
business dates, 500 receipts a page, as the sandbox sends them) to what a lake holds:

- **floor**: msgspec decodes every page (numbers as ``Decimal``), nothing written: what no
  loader can beat in Python;
- **duckdb**: DuckDB's ``read_json`` of the whole load in one statement, on one thread,
  into three deduplicated Parquet files (receipts, item lines, payments), amounts as
  DECIMAL(18,4): what a SQL engine does with the same bytes;
- **pipeline**: this pipeline's path (decode, flatten, dedupe, checks per partition;
  then the Delta commits, ``[lake] commit_partitions`` partitions each), as a load runs it.

Each is timed ``repeats`` times, the best kept (the machine's speed varies within an
hour; the three are interleaved so each sees the same machine). The ratios are the
figures: pipeline / duckdb and pipeline / floor, receipts per wall second.

Beside them, interleaved the same way, the pipeline's stages on the same bytes (where its
time goes) and Arrow's C++ JSON reader of the pages (each page's receipts cut out by
msgspec as raw bytes, read as newline-delimited JSON, types inferred): a columnar parse.
``bound`` is the faster of the two parses plus today's lake commit, and nothing for
flattening, selecting or checking: no extraction that commits the same files (zstd,
every page's checksum, fsynced, a Delta commit) can be faster.
"""

from __future__ import annotations

import tempfile
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import msgspec
import pyarrow as pa
import pyarrow.json as pa_json

from pipeline.areas.revenue.commits import lake_batch
from pipeline.areas.revenue.extract import (
    TABLES_TOGETHER,
    flatten_receipts,
    make_tables,
    tables_due,
)
from pipeline.core.settings import LakeSettings
from pipeline.core.untrusted import Redactor
from pipeline.lake.store import Lake
from pipeline.pos_api.answers import TEXT_DECODER, receipt_page
from pos_sandbox import world

MONEY = "DECIMAL(18,4)"
DUCKDB_SQL = """
copy (
    select distinct on (r.transactionId) r.transactionId as transaction_id,
           r.transactionType as transaction_type,
           cast(r.totalAmount as {money}) as total_amount,
           cast(r.tip as {money}) as tip, cast(r.discount as {money}) as discount,
           r.dateTime as date_time
    from raw as r
) to '{out}/receipts.parquet' (format parquet);
copy (
    select distinct on (transaction_id, item_key) * from (
        select r.transactionId as transaction_id,
               coalesce(cast(i.uniqueId as varchar), cast(i.id as varchar)) as item_key,
               i.name as name, cast(i.quantity as {money}) as quantity,
               cast(i.netAmount as {money}) as net_amount,
               cast(i.grossAmount as {money}) as gross_amount
        from raw as r, unnest(r.items) as t(i))
) to '{out}/receipt_items.parquet' (format parquet);
copy (
    select distinct on (transaction_id, payment_id) * from (
        select r.transactionId as transaction_id, cast(p.id as varchar) as payment_id,
               cast(p.amount as {money}) as amount
        from raw as r, unnest(r.payments) as t(p))
) to '{out}/payments.parquet' (format parquet);
"""


def _floor(partitions: dict[date, list[bytes]]) -> int:
    decoder = msgspec.json.Decoder(float_hook=Decimal)
    return sum(len(decoder.decode(page)) for pages in partitions.values() for page in pages)


def _duckdb(partitions: dict[date, list[bytes]], folder: Path) -> int:
    pages = []
    for n, page in enumerate(p for day in partitions.values() for p in day):
        pages.append(folder / f"page-{n}.json")
        pages[-1].write_bytes(page)
    out = folder / "out"
    out.mkdir()
    files = "[" + ", ".join(f"'{p}'" for p in pages) + "]"
    with duckdb.connect() as con:
        con.execute("set threads = 1")
        con.execute(f"create temp table raw as select * from read_json({files}, "
                    f"format = 'array', sample_size = -1)")
        con.execute(DUCKDB_SQL.format(money=MONEY, out=out))
        return con.execute(f"select count(*) from '{out}/receipts.parquet'").fetchone()[0]


def client_page(body: bytes):
    """A page as the client reads it (what paging needs; the receipts' bytes)."""
    return receipt_page(body, lambda: TEXT_DECODER.decode(body))[0]


class _Keys:
    """What the load's key check asks of its source: the pattern of location 1001's key."""

    def __init__(self) -> None:
        self.pattern = Redactor([world.api_key(1001)]).pattern

    def key_pattern(self, location_id: int | None) -> str:
        return self.pattern


def load_pages(lake: Lake, partitions: dict[date, list[bytes]]) -> int:
    """Location 1001's pages into ``lake`` as a load does: each partition read and selected
    (``flatten_receipts(defer=True)``), their tables made ``TABLES_TOGETHER`` at a time
    and checked for keys (``make_tables``), committed ``[lake] commit_partitions`` at a
    time (their turnovers in one query); the receipts."""
    tz = world.location_by_id(1001).tz
    receipts, batch = 0, []
    most, keys = LakeSettings().commit_partitions, _Keys()

    def make() -> None:
        assert not any(make_tables(keys, batch))

    def commit() -> None:
        make()
        lake.write_batch("revenue", lake_batch(batch))

    for day, pages in partitions.items():
        batch.append(flatten_receipts([client_page(p) for p in pages], location_id=1001,
                                      business_date=day, tz=tz, defer=True))
        if tables_due(batch):
            make()
        if len(batch) == most:
            commit()
            receipts += sum(part.row_counts["receipts"] for part in batch)
            batch = []
    if batch:
        commit()
        receipts += sum(part.row_counts["receipts"] for part in batch)
    return receipts


def _pipeline(partitions: dict[date, list[bytes]], folder: Path) -> int:
    return load_pages(Lake(folder), partitions)


def _stages(partitions: dict[date, list[bytes]], folder: Path) -> dict[str, float]:
    """The pipeline's path in its stages, each timed: the pages read as the client reads
    them (``decode``: what paging needs, each receipt's bytes), flattened
    (``flatten_receipts``: the receipts parsed column-wise, selected, deduplicated, the
    tables), committed (the turnovers, one query a commit, and the Delta commits of
    ``load_pages``). Beside
    them two whole parses of the same bytes: msgspec into dicts (``decode_dicts``, what
    the receipt-by-receipt path reads) and Arrow's reader, types inferred."""
    tz = world.location_by_id(1001).tz
    seconds = {"decode": 0.0, "flatten": 0.0}
    parts, keys = [], _Keys()
    for day, pages in partitions.items():  # a partition's objects at a time, as a load
        t0 = time.perf_counter()
        decoded = [client_page(p) for p in pages]
        t1 = time.perf_counter()
        parts.append(flatten_receipts(decoded, location_id=1001, business_date=day, tz=tz,
                                      defer=True))
        seconds["decode"] += t1 - t0
        seconds["flatten"] += time.perf_counter() - t1
        del decoded
    t0 = time.perf_counter()
    for start in range(0, len(parts), TABLES_TOGETHER):
        assert not any(make_tables(keys, parts[start:start + TABLES_TOGETHER]))
    seconds["flatten"] += time.perf_counter() - t0
    lake, most = Lake(folder), LakeSettings().commit_partitions
    t0 = time.perf_counter()
    batch = lake_batch(parts)
    for start in range(0, len(batch), most):
        lake.write_batch("revenue", batch[start:start + most])
    seconds["commit"] = time.perf_counter() - t0
    raw = msgspec.json.Decoder(list[msgspec.Raw])
    options = pa_json.ReadOptions(use_threads=False, block_size=1 << 26)
    t0 = time.perf_counter()
    for pages in partitions.values():
        for page in pages:
            pa_json.read_json(pa.BufferReader(b"\n".join(raw.decode(page))), options)
    seconds["arrow_json"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for pages in partitions.values():
        for page in pages:
            TEXT_DECODER.decode(page)
    seconds["decode_dicts"] = time.perf_counter() - t0
    return seconds


def bench_peers(partitions: dict[date, list[bytes]], receipts: int, repeats: int) -> dict:
    """The three, interleaved ``repeats`` times; receipts per wall second of each best."""
    best = {"floor": float("inf"), "duckdb": float("inf"), "pipeline": float("inf")}
    stages: dict[str, float] = {}
    counted = {}
    for _ in range(repeats):
        for name in [*best, "stages"]:
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                if name == "floor":
                    counted[name] = _floor(partitions)
                elif name == "duckdb":
                    counted[name] = _duckdb(partitions, Path(tmp))
                elif name == "pipeline":
                    counted[name] = _pipeline(partitions, Path(tmp))
                else:
                    for stage, seconds in _stages(partitions, Path(tmp)).items():
                        stages[stage] = min(stages.get(stage, float("inf")), seconds)
                    continue
                best[name] = min(best[name], time.perf_counter() - t0)
    rate = {name: round(receipts / seconds) for name, seconds in best.items()}
    bound = min(stages["decode_dicts"], stages["arrow_json"]) + stages["commit"]
    return {
        "receipts": receipts, "partitions": len(partitions),
        "receipts_counted": counted,
        "best_seconds": {name: round(s, 3) for name, s in best.items()},
        "receipts_per_wall_second": rate,
        "pipeline_to_duckdb": round(rate["pipeline"] / rate["duckdb"], 2),
        "pipeline_to_floor": round(rate["pipeline"] / rate["floor"], 2),
        "stage_seconds": {name: round(s, 3) for name, s in stages.items()},
        "bound_seconds": round(bound, 3),
        "bound_to_duckdb": round(best["duckdb"] / bound, 2),
        "bound_to_floor": round(best["floor"] / bound, 2),
        "target_of_57": {"pipeline_to_duckdb": 1.25},
        "met": rate["pipeline"] >= 1.25 * rate["duckdb"],
    }
