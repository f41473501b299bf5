"""What a build reads is what its load committed, or the build does not use it.

Before a build computes anything from a lake partition it checks the partition's files
against the partition's commit record (``pipeline.lake.store``):

- every file against the SHA-256 its record lists, which covers every page and the footer
  (DuckDB's Parquet reader verifies nothing; hashing a file costs a twentieth of reading
  it with pyarrow's page verification). A file of a load recorded before digests existed
  is read through with page verification instead (where it was written with page CRCs);
- a revenue partition's receipts and turnover (the revenue rule's macros, over the files)
  against the figures its load computed from the POS's answer (``receipts``,
  ``turnover_net``).

A partition that fails is named (file, location, date) and left out: the build keeps the
figures it had for it. A partition's files are checked once per load (the warehouse
remembers the loads it verified); a full build checks every file again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal

import duckdb
import pyarrow as pa

from pipeline.lake.store import parse_partition
from pipeline.warehouse.lakefiles import LakeFiles
from pipeline.warehouse.lakeviews import FILES_SCHEMA, Committed, arrow_insert, file_list

VERIFIED_SCHEMA = pa.schema([("area", pa.string()), ("partition", pa.string()),
                             ("load_id", pa.string())])
"""The state table of the loads a warehouse verified."""
CHUNK = 1000
"""Revenue partitions whose turnover is computed at once (what bounds its memory)."""


@dataclass(frozen=True)
class Corrupt:
    """A lake partition whose files do not hold what its commit record says."""

    area: str
    partition: str
    """``location_id=1001/business_date=2026-09-30``."""
    problem: str
    """What differs, naming the file where one is at fault."""

    @property
    def keys(self) -> dict[str, str]:
        return parse_partition(self.partition)

    def __str__(self) -> str:
        where = ", ".join(f"{k} {v}" for k, v in self.keys.items())
        return f"lake {self.area} partition {where}: {self.problem}"


def _check_file(files: LakeFiles, path: str, recorded: dict | None) -> str | None:
    """What is wrong with a file, given what its commit record says of it (or None)."""
    try:
        if recorded is not None:
            if files.digest(path) != recorded["sha256"]:
                return f"{path} is not the file its load committed (its SHA-256 differs)"
            return None
        files.parquet(path).read()
    except (OSError, pa.ArrowException) as exc:
        return f"{path} cannot be read as written: {str(exc).splitlines()[0]}"
    return None


def verify_files(files: LakeFiles, area: str, committed: Committed,
                 partitions: Iterable[str]) -> list[Corrupt]:
    """Every file of ``partitions`` checked against its commit record (a thread per core,
    each with its share of the files: hashing and decoding release the GIL; a task per
    file would cost more than hashing it, and hold a future per file of a chain)."""
    jobs = []
    for part in sorted(partitions):
        recorded = committed.recorded_files(part)
        jobs += [(part, (committed.path(files.base, table, part), recorded.get(table)))
                 for table in committed.loads[part][2]]
    threads = os.cpu_count() or 1

    def check_share(share: list[tuple[str, dict | None]]) -> list[str | None]:
        return [_check_file(files, path, recorded) for path, recorded in share]

    with ThreadPoolExecutor(threads) as pool:
        shares = list(pool.map(check_share, [[job for _, job in jobs[i::threads]]
                                             for i in range(threads)]))
    found: dict[str, Corrupt] = {}
    for i, share in enumerate(shares):
        for (part, _), problem in zip(jobs[i::threads], share, strict=True):
            if problem is not None:
                found.setdefault(part, Corrupt(area, part, problem))
    return sorted(found.values(), key=lambda c: c.partition)


def verify_revenue(con: duckdb.DuckDBPyConnection, base: str, committed: Committed,
                   partitions: Iterable[str]) -> list[Corrupt]:
    """Each revenue partition's receipts and turnover, computed from its files with the
    revenue rule's macros (in the catalog in use), against its commit record."""
    recorded = {part: committed.metadata(part) for part in partitions}
    recorded = {part: meta for part, meta in recorded.items()
                if "receipts" in meta and "turnover_net" in meta}
    if not recorded:
        return []
    files = {table: committed.files(base, table, recorded)
             for table in ("receipts", "receipt_items")}
    rows = [(f, part, *committed.loads[part][:2]) for found in files.values()
            for f, part in found]
    arrow_insert(con, "_verified_files", rows, FILES_SCHEMA)
    try:
        figures = {part: (n, total) for part, n, total in con.execute(f"""
            with receipts as (
                select f.partition, r.transaction_id,
                       is_revenue_effective(r.payment_group_name, r.transaction_type)
                           as revenue
                from read_parquet({file_list([f for f, _ in files['receipts']])},
                                  filename = true) as r
                inner join _verified_files as f on r.filename = f.filename
            ), items as (
                select f.partition, i.transaction_id,
                       line_amount(i.net_amount, i.quantity) as amount
                from read_parquet({file_list([f for f, _ in files['receipt_items']])},
                                  filename = true) as i
                inner join _verified_files as f on i.filename = f.filename
            ), turnover as (
                select items.partition, sum(items.amount) as turnover_net
                from items inner join receipts using (partition, transaction_id)
                where receipts.revenue
                group by all
            )
            select partition, count(*), any_value(turnover.turnover_net)
            from receipts left join turnover using (partition)
            group by all""").fetchall()} if files["receipts"] else {}
    finally:
        con.execute("drop table _verified_files")
    found = []
    for part, meta in sorted(recorded.items()):
        receipts, turnover = figures.get(part, (0, None))
        turnover = Decimal(0) if turnover is None else turnover
        expected = (int(meta["receipts"]), Decimal(meta["turnover_net"]))
        if (receipts, turnover) != expected:
            paths = [path for path, p in files["receipts"] + files["receipt_items"] if p == part]
            found.append(Corrupt("revenue", part, (
                f"the files hold {receipts} receipts with turnover {turnover.normalize():f}, "
                f"the commit record {expected[0]} with {expected[1].normalize():f} "
                f"({', '.join(paths)})")))
    return found


def verify_lake(con: duckdb.DuckDBPyConnection, files: LakeFiles,
                committed: dict[str, Committed], table: str,
                everything: bool = False) -> list[Corrupt]:
    """Check every committed partition that ``table`` (the loads verified before, in the
    warehouse being built) does not list, or all with ``everything``; afterwards the table
    lists the committed loads that passed. Returns the partitions that failed."""
    con.execute(f"create table if not exists {table} "
                f"(area varchar, partition varchar, load_id varchar)")
    known = set() if everything else set(
        con.execute(f"select area, partition, load_id from {table}").fetchall())
    corrupt: list[Corrupt] = []
    for area, loads in committed.items():
        todo = sorted(p for p, load in loads.loads.items() if (area, p, load[0]) not in known)
        bad = verify_files(files, area, loads, todo)
        if area == "revenue":
            unreadable = {c.partition for c in bad}
            readable = [p for p in todo if p not in unreadable]
            for start in range(0, len(readable), CHUNK):
                bad += verify_revenue(con, files.base, loads,
                                      readable[start:start + CHUNK])
        corrupt += bad
    failed = {(c.area, c.partition) for c in corrupt}
    con.execute(f"delete from {table}")
    arrow_insert(con, table, [(area, p, load[0]) for area, loads in committed.items()
                              for p, load in loads.loads.items() if (area, p) not in failed],
                 VERIFIED_SCHEMA)
    return corrupt

