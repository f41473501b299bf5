"""Public menu tree -> daily snapshot tables per location, one table per level plus hours.

Nodes have no ids in the spec, so each carries a path key (``m0``, ``m0.c2``, ``m0.c2.e5``,
...) that is stable within a snapshot; ``menuEntryID`` and any ``id`` the server adds are
kept as columns too.
"""

from __future__ import annotations

from datetime import date

import pyarrow as pa

from pipeline.extract.schemas import MONEY
from pipeline.extract.snapshots import Snapshot, validate_records, write_snapshot
from pipeline.pos_api import models as m

S, I32, B = pa.string(), pa.int32(), pa.bool_()
_KEYS = [pa.field("location_id", I32, nullable=False),
         pa.field("snapshot_date", pa.date32(), nullable=False)]


def _schema(*fields: tuple) -> pa.Schema:
    return pa.schema(_KEYS + [pa.field(*f) for f in fields])


_NODE = (("position", I32, False), ("name", S), ("description", S))
MENU_TABLES: dict[str, pa.Schema] = {
    "menus": _schema(("menu_key", S, False), ("node_id", pa.int64()), *_NODE, ("badge", I32),
                     ("image_url", S), ("price_name", S)),
    "menu_categories": _schema(("menu_key", S, False), ("category_key", S, False),
                               ("node_id", pa.int64()), *_NODE, ("badge", I32),
                               ("image_url", S)),
    "menu_entries": _schema(("category_key", S, False), ("entry_key", S, False),
                            ("node_id", pa.int64()), ("menu_entry_id", pa.int64()), *_NODE,
                            ("badge", I32), ("image_url", S), ("subtitle", S), ("price", MONEY)),
    "menu_entry_features": _schema(
        ("entry_key", S, False), ("feature_key", S, False), ("node_id", pa.int64()), *_NODE,
        ("group_name", S), ("is_deselect_feature", B), ("max_values_allowed", I32),
        ("min_values_required", I32), ("values_for_free", I32)),
    "menu_entry_feature_values": _schema(
        ("feature_key", S, False), ("value_key", S, False), ("node_id", pa.int64()), *_NODE,
        ("image_url", S), ("min_amount", MONEY), ("max_amount", MONEY), ("free_amount", MONEY),
        ("price_adjustment", MONEY)),
    "menu_hours": _schema(
        ("owner_level", S, False), ("owner_key", S, False), ("kind", S, False), *_NODE[:1],
        ("days_mask", I32), ("weekdays", S), ("start_date", pa.date32()),
        ("end_date", pa.date32()), ("start_time", S), ("end_time", S), ("is_exclude", B)),
}
DAY_NAMES = {m.Weekday.MONDAY: "Mon", m.Weekday.TUESDAY: "Tue", m.Weekday.WEDNESDAY: "Wed",
             m.Weekday.THURSDAY: "Thu", m.Weekday.FRIDAY: "Fri", m.Weekday.SATURDAY: "Sat",
             m.Weekday.SUNDAY: "Sun"}


def _node_id(node) -> int | None:
    value = (node.model_extra or {}).get("id")
    return value if isinstance(value, int) else None


def _hours(out, level: str, key: str, node) -> None:
    for kind in ("orderable_hours", "pre_orderable_hours", "deliverable_hours"):
        for pos, h in enumerate(getattr(node, kind) or [], start=1):
            out["menu_hours"].append({
                "owner_level": level, "owner_key": key, "kind": kind.removesuffix("_hours"),
                "position": pos, "days_mask": h.days,
                "weekdays": ",".join(DAY_NAMES[d] for d in m.weekdays_in_mask(h.days or 0)),
                "start_date": h.start_date, "end_date": h.end_date,
                "start_time": h.start_time, "end_time": h.end_time, "is_exclude": h.exclude})


def flatten_menus(menus: list[m.Menu]) -> dict[str, list[dict]]:
    """Rows of every level of the tree (without the partition keys)."""
    out: dict[str, list[dict]] = {name: [] for name in MENU_TABLES}
    for mi, menu in enumerate(menus):
        mk = f"m{mi}"
        out["menus"].append({"menu_key": mk, "node_id": _node_id(menu), "position": mi + 1,
                             "name": menu.name, "description": menu.description,
                             "badge": menu.badge, "image_url": menu.image_url,
                             "price_name": menu.price_name})
        _hours(out, "menu", mk, menu)
        for ci, cat in enumerate(menu.categories or []):
            ck = f"{mk}.c{ci}"
            out["menu_categories"].append({
                "menu_key": mk, "category_key": ck, "node_id": _node_id(cat),
                "position": ci + 1, "name": cat.name, "description": cat.description,
                "badge": cat.badge, "image_url": cat.image_url})
            _hours(out, "category", ck, cat)
            for ei, entry in enumerate(cat.menu_entries or []):
                ek = f"{ck}.e{ei}"
                out["menu_entries"].append({
                    "category_key": ck, "entry_key": ek, "node_id": _node_id(entry),
                    "menu_entry_id": entry.menu_entry_id, "position": ei + 1,
                    "name": entry.name, "description": entry.description,
                    "badge": entry.badge, "image_url": entry.image_url,
                    "subtitle": entry.subtitle, "price": entry.price})
                for fi, feat in enumerate(entry.features or []):
                    fk = f"{ek}.f{fi}"
                    out["menu_entry_features"].append({
                        "entry_key": ek, "feature_key": fk, "node_id": _node_id(feat),
                        "position": fi + 1, "name": feat.name,
                        "description": feat.description, "group_name": feat.group_name,
                        "is_deselect_feature": feat.is_deselect_feature,
                        "max_values_allowed": feat.max_values_allowed,
                        "min_values_required": feat.min_values_required,
                        "values_for_free": feat.values_for_free})
                    for vi, value in enumerate(feat.values or []):
                        out["menu_entry_feature_values"].append({
                            "feature_key": fk, "value_key": f"{fk}.v{vi}",
                            "node_id": _node_id(value), "position": vi + 1,
                            "name": value.name, "description": value.description,
                            "image_url": value.image_url, "min_amount": value.min_amount,
                            "max_amount": value.max_amount, "free_amount": value.free_amount,
                            "price_adjustment": value.price_adjustment})
    return out


def load_menu_snapshot(source, lake, location_id: int, snapshot_date: date) -> Snapshot:
    """Take one location's menu tree and replace its snapshot in the lake atomically."""
    where = f"location {location_id}, snapshot {snapshot_date.isoformat()}: menus"
    with source.client(location_id) as client:
        menus = validate_records(client.menus(), m.Menu, where)
    return write_snapshot(lake, "menu", MENU_TABLES, flatten_menus(menus), snapshot_date, where,
                          location_id, client.stats)
