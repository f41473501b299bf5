"""A folder (or an S3 prefix) of bank statements -> one partition per statement.

Every file is read (CAMT.053 by its XML, MT940 by its ``:20:``), each statement held to its
own balances and mapped to its location by its account (``[[bank.accounts]]``). A file that
is no statement, contradicts itself or names an account not configured is refused by its
name; the other files load. A statement found twice (a file delivered again, or in both
formats) is one partition: read twice with the same entries it counts once, read twice
with different ones it is refused (which one is right cannot be known).
"""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import PurePosixPath

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline.areas.bank.camt import read_camt
from pipeline.areas.bank.mt940 import read_mt940
from pipeline.areas.bank.statements import Statement, StatementError, check
from pipeline.areas.bank.tables import BANK_TABLES
from pipeline.extract.snapshots import Files, Snapshot
from pipeline.lake.objectlake import s3_filesystem
from pipeline.sources.bank import SOURCE as BANK
from pipeline.sources.base import Place

CAMT_SUFFIXES = (".xml",)
MT940_SUFFIXES = (".sta", ".mt940", ".940", ".txt")
MAX_FILE_BYTES = 64 * 2**20
"""A larger file is refused (a statement of a month of a busy account is a few MB)."""


def statement_files(place: Place) -> list[tuple[str, bytes]]:
    """Every statement file below ``place`` (by suffix), sorted by name, with its bytes."""
    if place.prepare is not None:
        place.prepare()
    if place.uri.startswith("s3://"):
        fs, root = s3_filesystem(place.endpoint_url), place.uri.removeprefix("s3://")
    else:
        fs, root = pafs.LocalFileSystem(), place.uri
    found = [info for info in fs.get_file_info(pafs.FileSelector(root, recursive=True,
                                                                   allow_not_found=True))
             if info.type == pafs.FileType.File
             and info.path.lower().endswith(CAMT_SUFFIXES + MT940_SUFFIXES)]
    files = []
    for info in sorted(found, key=lambda i: i.path):
        name = str(PurePosixPath(info.path).relative_to(root))
        if info.size is not None and info.size > MAX_FILE_BYTES:
            files.append((name, b""))  # refused by its size below
            continue
        with fs.open_input_stream(info.path) as stream:
            files.append((name, stream.read()))
    return files


def read_statements(name: str, data: bytes) -> list[Statement]:
    """A file's statements, each checked against its balances."""
    if not data:
        raise StatementError(f"{name}: empty, or larger than {MAX_FILE_BYTES // 2**20} MB")
    reader = read_camt if name.lower().endswith(CAMT_SUFFIXES) else read_mt940
    return [check(s, f"{name}: statement {s.statement_id}") for s in reader(data, name)]


def extract_bank_statements(source, location_id: None, snapshot_date: date) -> Files | None:
    """Every statement of the bank statements' place, a partition each; None where the
    run does not read them."""
    place = source.place(BANK.name)
    if place is None:
        return None
    files = Files()
    seen: dict[tuple[str, str], tuple[str, Statement]] = {}
    found = statement_files(place)
    if not found:
        files.refused[place.uri] = (f"{place.uri}: no statement file in it (CAMT.053: "
                                    f"{', '.join(CAMT_SUFFIXES)}; MT940: "
                                    f"{', '.join(MT940_SUFFIXES)})")
    for name, data in found:
        try:
            statements = read_statements(name, data)
            for s in statements:
                if s.iban not in place.accounts:
                    raise StatementError(f"{name}: statement {s.statement_id}: account "
                                         f"{s.iban} is not in [[bank.accounts]]")
        except StatementError as exc:
            files.refused[name] = str(exc)
            continue
        digest = hashlib.sha256(data).hexdigest()
        for s in statements:
            key = (s.iban, s.statement_id)
            if key in seen:
                first_name, first = seen[key]
                if _rows(first) != _rows(s):
                    files.refused[name] = (
                        f"{name}: statement {s.statement_id} of {s.iban} was read from "
                        f"{first_name} with other balances or entries: neither is loaded")
                    files.snapshots = [x for x in files.snapshots
                                       if x.partition != _partition(s)]
                continue
            seen[key] = (name, s)
            files.snapshots.append(_snapshot(s, place.accounts[s.iban], name, digest,
                                             snapshot_date))
    return files


def _partition(s: Statement) -> dict[str, object]:
    return {"iban": s.iban, "statement_id": s.statement_id}


def _rows(s: Statement) -> tuple:
    """What makes two readings of a statement the same (not the format they came in)."""
    return (s.currency, s.opening_balance, s.opening_date, s.closing_balance,
            s.closing_date, [(e.booking_date, e.amount, e.booked) for e in s.entries])


def _snapshot(s: Statement, location_id: int, name: str, digest: str,
              snapshot_date: date) -> Snapshot:
    key = _partition(s)
    statement = {**key, "location_id": location_id, "format": s.format,
                 "sequence_number": s.sequence_number, "currency": s.currency,
                 "opening_balance": s.opening_balance, "opening_date": s.opening_date,
                 "closing_balance": s.closing_balance, "closing_date": s.closing_date,
                 "entry_count": len(s.entries), "file_name": name, "file_sha256": digest}
    entries = [{**key, "entry_number": n + 1, "booking_date": e.booking_date,
                "value_date": e.value_date, "amount": e.amount, "currency": e.currency,
                "is_booked": e.booked, "is_reversal": e.reversal,
                "bank_reference": e.bank_reference, "end_to_end_id": e.end_to_end_id,
                "counterparty_name": e.counterparty_name,
                "counterparty_iban": e.counterparty_iban, "remittance": e.remittance,
                "transaction_code": e.transaction_code, "batch_count": e.transactions}
               for n, e in enumerate(s.entries)]
    tables = {"bank_statements": pa.Table.from_pylist([statement],
                                                      BANK_TABLES["bank_statements"]),
              "bank_entries": pa.Table.from_pylist(entries, BANK_TABLES["bank_entries"])}
    return Snapshot(snapshot_date, tables, location_id=location_id, keys=key)
