"""The sandbox's menu tree (spec 2.3, 4.2): public reads, authenticated mutations."""

import httpx
import pytest

from pipeline.pos_api import models as m
from pos_sandbox.server import running_sandbox

KEY = {"x-api-key": "sandbox-key-1001"}


@pytest.fixture
def url():
    with running_sandbox() as base:  # its own sandbox: these tests change menus
        yield base


def menus(url, location_id=1001):
    r = httpx.get(f"{url}/api/v1/locations/{location_id}/menus")
    assert r.status_code == 200
    return r.json()


def test_menu_reads_are_public_and_follow_the_spec(url):
    trees = [m.Menu.model_validate(t) for t in menus(url, 1002)]
    assert {t.name for t in trees} >= {"Mittagsmenü", "Abendkarte", "Getränke", "Frühstück"}
    lunch = next(t for t in trees if t.name == "Mittagsmenü")
    assert lunch.orderable_hours[0].days == 62  # Monday to Friday
    assert m.weekdays_in_mask(lunch.orderable_hours[0].days)[0] == m.Weekday.MONDAY
    assert any(h.exclude and h.start_date for h in lunch.orderable_hours)
    entries = [e for t in trees for c in t.categories for e in c.menu_entries]
    assert len({e.menu_entry_id for e in entries}) == len(entries)
    assert {e.badge for e in entries if e.badge} <= set(range(1, 10))
    features = [f for e in entries for f in e.features or []]
    assert any(f.is_deselect_feature for f in features)
    assert any(v.price_adjustment > 0 for f in features for v in f.values)
    assert httpx.get(f"{url}/api/v1/locations/4242/menus").status_code == 404


def test_mutations_need_the_locations_key(url):
    menu_id = menus(url)[0]["id"]
    path = f"{url}/api/v1/customer/menus/{menu_id}"
    assert httpx.put(path, json={"name": "x"}).status_code == 401
    assert httpx.put(path, json={"name": "x"}, headers={"x-api-key": "nope"}).status_code == 401
    other = {"x-api-key": "sandbox-key-1002"}
    assert httpx.put(path, json={"name": "x"}, headers=other).status_code == 403
    assert httpx.post(f"{url}/api/v1/customer/locations/1001/menu", json={"name": "x"},
                      headers=other).status_code == 403


def test_create_update_delete_at_every_level(url):
    c = httpx.Client(base_url=url, headers=KEY)
    r = c.post("/api/v1/customer/locations/1001/menu", json={
        "name": "Sommerkarte", "orderableHours": [{"days": 96, "startTime": "12:00",
                                                   "endTime": "20:00"}]})
    assert r.status_code == 201
    menu = r.json()
    category = c.post(f"/api/v1/customer/menus/{menu['id']}/category",
                      json={"name": "Eis"}).json()
    entry = c.post(f"/api/v1/customer/categories/{category['id']}/menuEntry",
                   json={"name": "Marillenbecher", "price": 7.9, "badge": 1}).json()
    assert isinstance(entry["menuEntryID"], int)
    feature = c.post("/api/v1/menuentryfeature", json={
        "menuEntryID": entry["menuEntryID"], "name": "Topping", "maxValuesAllowed": 2}).json()
    value = c.post("/api/v1/menuentryfeaturevalue", json={
        "featureId": feature["id"], "name": "Schlagobers", "priceAdjustment": 0.9}).json()
    assert value["priceAdjustment"] == 0.9

    assert c.put(f"/api/v1/customer/menus/{menu['id']}", json={"badge": 9}).json()["badge"] == 9
    assert c.put(f"/api/v1/customer/menus/{menu['id']}/category/{category['id']}",
                 json={"description": "hausgemacht"}).status_code == 200
    assert c.put(f"/api/v1/customer/menuEntries/{entry['id']}",
                 json={"price": 8.5}).json()["price"] == 8.5
    assert c.put(f"/api/v1/menuentryfeature/{feature['id']}",
                 json={"minValuesRequired": 1}).status_code == 200
    assert c.put(f"/api/v1/menuentryfeaturevalue/{value['id']}",
                 json={"maxAmount": 3}).status_code == 200

    tree = next(t for t in menus(url) if t["id"] == menu["id"])
    got = tree["categories"][0]["menuEntries"][0]
    assert tree["badge"] == 9 and got["price"] == 8.5
    assert got["features"][0]["values"][0]["maxAmount"] == 3
    assert tree["categories"][0]["description"] == "hausgemacht"

    assert c.delete(f"/api/v1/menuentryfeaturevalue/{value['id']}").status_code == 204
    assert c.delete(f"/api/v1/menuentryfeature/{feature['id']}").status_code == 204
    assert c.delete(f"/api/v1/customer/menuEntries/{entry['id']}").status_code == 204
    assert c.delete(f"/api/v1/customer/menus/{menu['id']}/category/{category['id']}"
                    ).status_code == 204
    assert c.delete(f"/api/v1/customer/menus/{menu['id']}").status_code == 204
    assert all(t["id"] != menu["id"] for t in menus(url))
    assert c.put(f"/api/v1/customer/menuEntries/{entry['id']}", json={}).status_code == 404


def test_invalid_bodies_and_wrong_parents(url):
    c = httpx.Client(base_url=url, headers=KEY)
    trees = menus(url)
    assert c.post("/api/v1/customer/locations/1001/menu",
                  json={"orderableHours": [{"startTime": "noon"}]}).status_code == 400
    assert c.post("/api/v1/menuentryfeature", json={"name": "x"}).status_code == 400
    assert c.post("/api/v1/menuentryfeature", json={"menuEntryID": 10 ** 9}).status_code == 404
    category = trees[1]["categories"][0]["id"]
    assert c.put(f"/api/v1/customer/menus/{trees[0]['id']}/category/{category}",
                 json={"name": "x"}).status_code == 404
