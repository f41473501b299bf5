"""Public menu tree -> daily snapshot tables per location, one table per level plus hours.

Nodes have no ids in the spec, so each carries a path key (``m0``, ``m0.c2``, ``m0.c2.e5``,
...) that is stable within a snapshot; ``menuEntryID`` and any ``id`` the server adds are
kept as columns too.
"""

from __future__ import annotations

from datetime import date

import pyarrow as pa

from pipeline.extract.schemas import MONEY, lake_schema, wired
from pipeline.extract.snapshots import Snapshot, row_of, snapshot_of, validate_records
from pipeline.pos_api import models as m

S, I32, B = pa.string(), pa.int32(), pa.bool_()
_KEYS = [wired("location_id", I32, False), wired("snapshot_date", pa.date32(), False)]


def _table(sources: tuple[str, ...], *fields: tuple) -> pa.Schema:
    """A snapshot table of the spec's ``sources`` objects: (column, type, nullable, wire
    path in the object) per field (``lake_schema``)."""
    return lake_schema(sources, _KEYS + [wired(*f) for f in fields])


_MENU, _CATEGORY = "Menu", "Menu.categories"
_ENTRY = f"{_CATEGORY}.menuEntries"
_FEATURE = f"{_ENTRY}.features"
_NODE = (("node_id", pa.int64()), ("position", I32, False), ("name", S, True, "name"),
         ("description", S, True, "description"))
_PICTURED = (("badge", I32, True, "badge"), ("image_url", S, True, "imageUrl"))
HOURS = {"orderableHours": "orderable", "preOrderableHours": "pre_orderable",
         "deliverableHours": "deliverable"}
"""The three kinds of hours of a menu or category, and their ``kind`` in ``menu_hours``."""
MENU_TABLES: dict[str, pa.Schema] = {
    "menus": _table((_MENU,), ("menu_key", S, False), *_NODE, *_PICTURED,
                    ("price_name", S, True, "priceName")),
    "menu_categories": _table((_CATEGORY,), ("menu_key", S, False),
                              ("category_key", S, False), *_NODE, *_PICTURED),
    "menu_entries": _table(
        (_ENTRY,), ("category_key", S, False), ("entry_key", S, False), _NODE[0],
        ("menu_entry_id", pa.int64(), True, "menuEntryID"), *_NODE[1:], *_PICTURED,
        ("subtitle", S, True, "subtitle"), ("price", MONEY, True, "price")),
    "menu_entry_features": _table(
        (_FEATURE,), ("entry_key", S, False), ("feature_key", S, False), *_NODE,
        ("group_name", S, True, "groupName"),
        ("is_deselect_feature", B, True, "isDeselectFeature"),
        ("max_values_allowed", I32, True, "maxValuesAllowed"),
        ("min_values_required", I32, True, "minValuesRequired"),
        ("values_for_free", I32, True, "valuesForFree")),
    "menu_entry_feature_values": _table(
        (f"{_FEATURE}.values",), ("feature_key", S, False), ("value_key", S, False), *_NODE,
        _PICTURED[1], ("min_amount", MONEY, True, "minAmount"),
        ("max_amount", MONEY, True, "maxAmount"), ("free_amount", MONEY, True, "freeAmount"),
        ("price_adjustment", MONEY, True, "priceAdjustment")),
    "menu_hours": _table(
        tuple(f"{owner}.{kind}" for owner in (_MENU, _CATEGORY) for kind in HOURS),
        ("owner_level", S, False), ("owner_key", S, False), ("kind", S, False),
        ("position", I32, False), ("days_mask", I32, True, "days"), ("weekdays", S),
        ("start_date", pa.date32(), True, "startDate"),
        ("end_date", pa.date32(), True, "endDate"), ("start_time", S, True, "startTime"),
        ("end_time", S, True, "endTime"), ("is_exclude", B, True, "exclude")),
}
DAY_NAMES = {m.Weekday.MONDAY: "Mon", m.Weekday.TUESDAY: "Tue", m.Weekday.WEDNESDAY: "Wed",
             m.Weekday.THURSDAY: "Thu", m.Weekday.FRIDAY: "Fri", m.Weekday.SATURDAY: "Sat",
             m.Weekday.SUNDAY: "Sun"}


def _node_id(node: dict) -> int | None:
    """An ``id`` the server adds to a node (the spec shows none)."""
    value = node.get("id")
    return value if isinstance(value, int) else None


def _level(out: dict[str, list[dict]], table: str, nodes: list[dict] | None, parent: dict,
           key: str, prefix: str) -> list[tuple[str, dict]]:
    """The rows of one level of the tree under ``parent`` (its key columns), each node
    keyed ``prefix<n>``; returns each node's key and wire object."""
    keyed = []
    for n, node in enumerate(nodes or []):
        node_key = f"{prefix}{n}"
        out[table].append(row_of(MENU_TABLES[table], node, **parent, **{key: node_key},
                                 node_id=_node_id(node), position=n + 1))
        keyed.append((node_key, node))
    return keyed


def _hours(out: dict[str, list[dict]], level: str, key: str, node: dict) -> None:
    for field, kind in HOURS.items():
        for n, hours in enumerate(node.get(field) or [], start=1):
            days = m.weekdays_in_mask(hours.get("days") or 0)
            out["menu_hours"].append(row_of(
                MENU_TABLES["menu_hours"], hours, owner_level=level, owner_key=key,
                kind=kind, position=n, weekdays=",".join(DAY_NAMES[d] for d in days)))


def flatten_menus(menus: list[m.Menu]) -> dict[str, list[dict]]:
    """Rows of every level of the tree (without the partition keys)."""
    out: dict[str, list[dict]] = {name: [] for name in MENU_TABLES}
    tree = [menu.model_dump(by_alias=True) for menu in menus]
    for mk, menu in _level(out, "menus", tree, {}, "menu_key", "m"):
        _hours(out, "menu", mk, menu)
        for ck, cat in _level(out, "menu_categories", menu.get("categories"),
                              {"menu_key": mk}, "category_key", f"{mk}.c"):
            _hours(out, "category", ck, cat)
            for ek, entry in _level(out, "menu_entries", cat.get("menuEntries"),
                                    {"category_key": ck}, "entry_key", f"{ck}.e"):
                for fk, feat in _level(out, "menu_entry_features", entry.get("features"),
                                       {"entry_key": ek}, "feature_key", f"{ek}.f"):
                    _level(out, "menu_entry_feature_values", feat.get("values"),
                           {"feature_key": fk}, "value_key", f"{fk}.v")
    return out


def extract_menu_snapshot(source, location_id: int, snapshot_date: date) -> Snapshot:
    """One location's menu tree: its snapshot's tables."""
    where = f"location {location_id}, snapshot {snapshot_date.isoformat()}: menus"
    with source.client(location_id) as client:
        menus = validate_records(client.menus(), m.Menu, where)
    return snapshot_of(MENU_TABLES, flatten_menus(menus), snapshot_date, where, location_id,
                       client.stats)
