"""What the snapshot extractions (catalog, menu, vouchers) share.

Their records are few, so each is validated with the spec's pydantic model (a bad one
names the record and field), flattened to rows and made into Arrow tables with a fixed
schema: a ``Snapshot``, which the load commits as one lake partition
(``pipeline.areas.revenue.commits``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pyarrow as pa
from pydantic import BaseModel, ValidationError

from pipeline.core.settings import Settings
from pipeline.extract.schemas import value_at, wire_path
from pipeline.pos_api.client import ClientStats
from pipeline.pos_api.errors import ContractError


def snapshot_date(settings: Settings) -> date:
    """The date a snapshot is filed under: today where the pipeline is scheduled."""
    return datetime.now(ZoneInfo(settings.schedule.timezone)).date()


@dataclass
class Snapshot:
    """The tables of one snapshot partition, and once committed the version that holds it."""

    snapshot_date: date
    tables: dict[str, pa.Table]
    location_id: int | None = None
    stats: ClientStats | None = None
    version: int | None = None
    """The lake table's version that committed it."""
    keys: dict[str, object] | None = None
    """Its partition's keys where they are not its location and date (a bank statement's
    account and id)."""

    @property
    def row_counts(self) -> dict[str, int]:
        return {name: t.num_rows for name, t in self.tables.items()}

    @property
    def partition(self) -> dict[str, object]:
        """Its partition's keys, as the lake names them."""
        if self.keys is not None:
            return dict(self.keys)
        keys: dict[str, object] = {} if self.location_id is None else {
            "location_id": self.location_id}
        return keys | {"snapshot_date": self.snapshot_date.isoformat()}


def validate_records(rows: list, model: type[BaseModel], where: str) -> list:
    """Each row as ``model``; the first invalid one is a ``ContractError`` naming its field."""
    records = []
    for index, row in enumerate(rows):
        try:
            records.append(model.model_validate(row))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            path = ".".join(str(p) for p in first["loc"])
            ident = row.get("id") if isinstance(row, dict) else None
            name = ident if ident is not None else f"#{index}"
            raise ContractError(f"{where}: record {name}: field {path}: {first['msg']}") \
                from None
    return records


def row_of(schema: pa.Schema, record, **made) -> dict:
    """A row of ``schema`` out of one wire object (alias names, as ``model_dump(by_alias=
    True)`` gives it): each column with a wire path takes the value there, the others are
    ``made`` by the caller (keys, positions); the partition keys are added when written."""
    row = dict(made)
    for column in schema:
        path = wire_path(column)
        if path is not None:
            row[column.name] = value_at(record, path)
    return row


def snapshot_of(schemas: Mapping[str, pa.Schema], rows: Mapping[str, list[dict]],
                snapshot_date: date, where: str, location_id: int | None = None,
                stats: ClientStats | None = None) -> Snapshot:
    """Tables from flattened rows, the partition keys added."""
    keys: dict = {"location_id": location_id} if location_id is not None else {}
    keys["snapshot_date"] = snapshot_date
    tables = {}
    for name, schema in schemas.items():
        try:
            tables[name] = pa.Table.from_pylist([{**keys, **r} for r in rows[name]],
                                                schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise ContractError(f"{where}: table {name}: {_too_large(rows[name]) or exc}",
                                location_id=location_id) from None
    return Snapshot(snapshot_date, tables, location_id, stats)


INT64 = range(-(2**63), 2**63)


def _too_large(rows: list[dict]) -> str | None:
    """The first integer no 64-bit column holds (a voucher balance beyond 2^63, say)."""
    for index, row in enumerate(rows):
        for column, value in row.items():
            if isinstance(value, int) and value not in INT64:
                ident = next((row[k] for k in ("voucher_id", "product_id", "spot_id",
                                               "category_id") if row.get(k) is not None),
                             f"#{index}")
                return f"record {ident}: field {column}: {value} does not fit a 64-bit integer"
    return None


@dataclass
class Files:
    """What a file source's extraction found: a snapshot per partition, and each refused
    file with why (the others load)."""

    snapshots: list[Snapshot] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
