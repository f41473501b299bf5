"""The online menu of the sandbox (spec 2.3, 4.2): a tree per location, editable.

The spec names no ids for menus, categories, features and values, yet its mutation
paths need them. The sandbox's choice: every node carries an extra ``id`` (an integer,
unique in the sandbox) in GET responses, mutation bodies are the node's own fields
(children in a create body are created with it), PUT changes only the fields it sends,
and a new feature names its entry with ``menuEntryID``, a new value its feature with
``featureId``. Mutations need the location's ``x-api-key`` like the other areas.
"""

from __future__ import annotations

import itertools
from datetime import date
from decimal import Decimal
from threading import Lock
from typing import Any

from pipeline.pos_api import models as m
from pos_sandbox import world

WEEKDAYS = m.weekday_mask(m.Weekday.MONDAY, m.Weekday.TUESDAY, m.Weekday.WEDNESDAY,
                          m.Weekday.THURSDAY, m.Weekday.FRIDAY)
EVERY_DAY = m.weekday_mask(*m.Weekday)
CHILDREN = {"menu": "categories", "category": "menuEntries", "entry": "features",
            "feature": "values"}
MODELS = {"menu": m.Menu, "category": m.MenuCategory, "entry": m.MenuEntry,
          "feature": m.MenuEntryFeature, "value": m.MenuEntryFeatureValue}


class MenuError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _hours(days: int, start: str, end: str, **extra) -> dict:
    return m.Hours(days=days, start_time=start, end_time=end, **extra).model_dump(
        mode="python", by_alias=True, exclude_none=True)


class MenuStore:
    """Menu trees of every sandbox location; nodes are plain dicts in the wire shape."""

    def __init__(self, chain: world.Chain | None = None) -> None:
        self.chain = chain or world.chain()
        self._ids = itertools.count(1)
        self._entry_ids = itertools.count(1)
        self._lock = Lock()
        self.trees: dict[int, list[dict]] = {}
        self.nodes: dict[int, tuple[str, dict, list | None, int]] = {}
        for loc in self.chain.locations:
            tree = self.trees.setdefault(loc.id, [])
            for menu in _initial_menus(loc.id):
                tree.append(self._adopt("menu", menu, loc.id, tree))

    # --- bookkeeping ------------------------------------------------------------------------

    def _adopt(self, kind: str, node: dict, location_id: int, siblings: list) -> dict:
        """Give a node (and its children) ids and register them; returns the node."""
        node["id"] = next(self._ids)
        if kind == "entry" and node.get("menuEntryID") is None:
            node["menuEntryID"] = next(self._entry_ids)
        self.nodes[node["id"]] = (kind, node, siblings, location_id)
        child_kind = {"menu": "category", "category": "entry", "entry": "feature",
                      "feature": "value"}.get(kind)
        if child_kind:
            children = node.setdefault(CHILDREN[kind], [])
            for child in children:
                self._adopt(child_kind, child, location_id, children)
        return node

    def _validate(self, kind: str, body: Any) -> dict:
        if not isinstance(body, dict):
            raise MenuError(400, f"{kind} body must be a JSON object")
        try:
            model = MODELS[kind].model_validate(body)
        except Exception as exc:  # noqa: BLE001 - pydantic's message goes back as the 400
            raise MenuError(400, f"invalid {kind}: {exc}") from None
        data = model.model_dump(mode="python", by_alias=True, exclude_none=True)
        data.pop("id", None)
        return data

    def _node(self, node_id: int, kind: str, location_id: int) -> dict:
        found = self.nodes.get(node_id)
        if found is None or found[0] != kind:
            raise MenuError(404, f"no {kind} with id {node_id}")
        if found[3] != location_id:
            raise MenuError(403, f"the key is not authorised for this {kind}")
        return found[1]

    # --- API ------------------------------------------------------------------------------

    def menus(self, location_id: int) -> list[dict]:
        return self.trees.get(location_id, [])

    def menu_has_category(self, menu_id: int, category_id: int, location_id: int) -> bool:
        menu = self._node(menu_id, "menu", location_id)
        return any(c["id"] == category_id for c in menu.get("categories") or [])

    def create(self, kind: str, parent_id: int | None, location_id: int, body: Any) -> dict:
        data = self._validate(kind, body)
        with self._lock:
            if kind == "menu":
                siblings = self.trees.setdefault(location_id, [])
            else:
                parent_kind = {"category": "menu", "entry": "category", "feature": "entry",
                               "value": "feature"}[kind]
                if parent_id is None:
                    raise MenuError(400, f"a new {kind} must name its {parent_kind}")
                if kind == "feature":
                    parent = self._entry_by_menu_entry_id(parent_id, location_id)
                else:
                    parent = self._node(parent_id, parent_kind, location_id)
                siblings = parent.setdefault(CHILDREN[parent_kind], [])
            node = self._adopt(kind, data, location_id, siblings)
            siblings.append(node)
            return node

    def _entry_by_menu_entry_id(self, menu_entry_id: int, location_id: int) -> dict:
        for kind, node, _, loc in self.nodes.values():
            if kind == "entry" and node.get("menuEntryID") == menu_entry_id:
                if loc != location_id:
                    raise MenuError(403, "the key is not authorised for this entry")
                return node
        raise MenuError(404, f"no menu entry with menuEntryID {menu_entry_id}")

    def update(self, kind: str, node_id: int, location_id: int, body: Any) -> dict:
        if not isinstance(body, dict):
            raise MenuError(400, f"{kind} body must be a JSON object")
        with self._lock:
            node = self._node(node_id, kind, location_id)
            merged = {k: v for k, v in node.items() if k not in {"id", CHILDREN.get(kind)}}
            merged.update({k: v for k, v in body.items() if k not in {"id", CHILDREN.get(kind)}})
            data = self._validate(kind, merged)
            node.update(data)
            return node

    def delete(self, kind: str, node_id: int, location_id: int) -> None:
        with self._lock:
            node = self._node(node_id, kind, location_id)
            siblings = self.nodes[node_id][2]
            siblings.remove(node)
            stack = [node]
            while stack:
                current = stack.pop()
                self.nodes.pop(current["id"], None)
                for key in CHILDREN.values():
                    stack.extend(current.get(key) or [])


def _entry(product: world.CatalogProduct, badge: int | None = None) -> dict:
    p = product.product
    entry: dict[str, Any] = {"name": p.name, "price": p.pricing.default_price,
                             "description": p.description or None,
                             "subtitle": "hausgemacht" if p.id % 4 == 0 else None,
                             "imageUrl": p.media.image_url if p.media else None,
                             "features": []}
    if badge:
        entry["badge"] = badge
    if product.side_dishes:
        entry["features"].append({
            "name": "Extras", "description": "Beilagen nach Wahl", "groupName": "Beilagen",
            "isDeselectFeature": False,
            "maxValuesAllowed": len(product.side_dishes), "minValuesRequired": 0,
            "valuesForFree": 0,
            "values": [{"name": name, "description": f"{name} als Beilage",
                        "imageUrl": f"https://img.example.com/side-{n}.jpg",
                        "priceAdjustment": price, "minAmount": 0, "maxAmount": 2,
                        "freeAmount": 0} for n, (name, price) in enumerate(product.side_dishes)],
        })
    if product.category.external_id == "PG-HPT":
        entry["features"].append({
            "name": "Ohne Zwiebel", "groupName": "Wünsche", "isDeselectFeature": True,
            "maxValuesAllowed": 1, "minValuesRequired": 0, "valuesForFree": 1,
            "values": [{"name": "ohne Zwiebel", "priceAdjustment": Decimal(0)}],
        })
    return {k: v for k, v in entry.items() if v is not None}


def _initial_menus(location_id: int) -> list[dict]:
    """Lunch, evening and drinks menus (and breakfast at the hotel) from the catalog."""
    products, _ = world.catalog(location_id)
    by_category: dict[str, list[world.CatalogProduct]] = {}
    for cp in products:
        if cp.product.flags.is_visible and cp.gross > 0:
            by_category.setdefault(cp.category.external_id, []).append(cp)

    def category(ext_id: str, badge_every: int = 5, **extra) -> dict:
        items = by_category.get(ext_id, [])
        name = items[0].category.name if items else ext_id
        looks = {"badge": 2, "description": f"{name} des Hauses",
                 "imageUrl": f"https://img.example.com/{ext_id.lower()}.jpg"} \
            if badge_every == 3 else {}
        return {"name": name, **looks, "menuEntries": [
            _entry(cp, badge=(n % 9) + 1 if n % badge_every == 0 else None)
            for n, cp in enumerate(items)], **extra}

    christmas = _hours(EVERY_DAY, "00:00", "23:59", exclude=True,
                       start_date=date(2026, 12, 24), end_date=date(2026, 12, 26))
    menus = [
        {"name": "Mittagsmenü", "badge": 6, "priceName": "Mittag",
         "description": "Montag bis Freitag", "imageUrl": "https://img.example.com/mittag.jpg",
         "orderableHours": [_hours(WEEKDAYS, "11:00", "14:30"), christmas],
         "preOrderableHours": [_hours(WEEKDAYS, "09:00", "11:00")],
         "categories": [category("PG-SUP"), category("PG-HPT", 3)]},
        {"name": "Abendkarte", "priceName": "Standard",
         "orderableHours": [_hours(EVERY_DAY, "17:30", "22:00"), christmas],
         "deliverableHours": [_hours(EVERY_DAY, "18:00", "21:30")],
         "categories": [category("PG-VOR"), category("PG-HPT"), category(
             "PG-DES", deliverableHours=[_hours(EVERY_DAY, "18:00", "21:00")])]},
        {"name": "Getränke", "priceName": "Standard",
         "orderableHours": [_hours(EVERY_DAY, "10:00", "23:59")],
         "categories": [category(c) for c in ("PG-ANT", "PG-BIE", "PG-WEI", "PG-KAF")]},
    ]
    if "PG-FRU" in by_category:
        menus.append({"name": "Frühstück", "priceName": "Hotel",
                      "orderableHours": [_hours(EVERY_DAY, "06:30", "10:30")],
                      "categories": [category("PG-FRU")]})
    return menus
