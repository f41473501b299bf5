"""The sandbox's external catalog over real HTTP: envelope, paging, filters, statuses."""

import httpx
import pytest

from pos_sandbox import world

KEY = {"x-api-key": "sandbox-key-1001"}


def get(url, path, query="", headers=KEY):
    return httpx.get(f"{url}/api/v1/external/{path}?{query}", headers=headers, timeout=30)


def ids(response):
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()["data"]]


def test_envelope_and_default_take(sandbox_url):
    body = get(sandbox_url, "product", "filter['locationId']=1001").json()
    assert body["page"] == {"offset": 0, "limit": 50, "total": len(world.catalog(1001)[0])}
    assert len(body["data"]) == 50


def test_take_is_capped_at_500(sandbox_url):
    body = get(sandbox_url, "product", "filter['locationId']=1001&take=5000").json()
    assert body["page"]["limit"] == 500
    assert len(body["data"]) == body["page"]["total"]


def test_skip_take_pages_have_no_gaps_or_repeats(sandbox_url):
    total = get(sandbox_url, "product", "filter['locationId']=1001&take=1").json()["page"]["total"]
    seen = []
    for skip in range(0, total, 13):
        seen += ids(get(sandbox_url, "product", f"filter['locationId']=1001&skip={skip}&take=13"))
    assert seen == [p.product.id for p in world.catalog(1001)[0]]


@pytest.mark.parametrize("query", [
    "filter['locationId']=1001",
    "FILTER['LOCATIONID']=1001",
    "filter[%22locationId%22]=1001",
    "filter['locationShortCode']=VIE01",
    "filter['locationid']=1001&filter['noSuchFilter']=x",
])
def test_location_filter_spellings(sandbox_url, query):
    assert len(ids(get(sandbox_url, "spot", query + "&take=500"))) == len(world.spots(1001))


def test_plain_filter_parameters_are_ignored(sandbox_url):
    assert get(sandbox_url, "spot", "locationId=1001").status_code == 400
    all_spots = ids(get(sandbox_url, "spot", "filter['locationId']=1001&take=500"))
    same = ids(get(sandbox_url, "spot", "filter['locationId']=1001&take=500&type=Room"))
    assert same == all_spots


def test_list_filters_with_escaped_commas(sandbox_url):
    products = world.catalog(1001)[0]
    nrs = [p.product.product_nr for p in products[:3]]
    got = ids(get(sandbox_url, "product", f"filter['locationId']=1001&filter['productNrs']="
                  f"{','.join(nrs)}"))
    assert got == [p.product.id for p in products[:3]]
    name = "Kürbiskernöl 0,25"
    got = get(sandbox_url, "product", f"filter['locationId']=1001&filter['search']={name}")
    assert [r["name"] for r in got.json()["data"]] == [name]
    escaped = get(sandbox_url, "spot", "filter['locationId']=1001&filter['externalSpotIds']="
                  "S-1001001,S-1001002\\,x")
    assert ids(escaped) == [1001001]


def test_typed_filters(sandbox_url):
    rooms = get(sandbox_url, "spot", "filter['locationId']=1002&filter['type']=room",
                headers={"x-api-key": "sandbox-key-1002"}).json()["data"]
    assert rooms and {r["type"] for r in rooms} == {"Room"}
    hidden = get(sandbox_url, "product",
                 "filter['locationId']=1001&filter['isVisible']=false").json()["data"]
    assert hidden and not any(p["flags"]["isVisible"] for p in hidden)
    bar = world.location_by_id(1001).bar_cashbox_id
    beers = get(sandbox_url, "product-category",
                f"filter['locationId']=1001&filter['cashboxId']={bar}").json()["data"]
    assert {c["externalId"] for c in beers} == {"PG-BIE", "PG-SPI"}


def test_status_codes(sandbox_url):
    assert get(sandbox_url, "product", "filter['locationId']=1001", headers={}).status_code == 401
    assert get(sandbox_url, "product", "filter['locationId']=999").status_code == 400
    assert get(sandbox_url, "product", "filter['locationId']=1002").status_code == 403
    other_cashbox = world.location_by_id(1002).primary_cashbox_id
    assert get(sandbox_url, "product", f"filter['locationId']=1001&filter['cashboxId']="
               f"{other_cashbox}").status_code == 400


def test_join_rules_hold_in_the_data(sandbox_url):
    for loc in world.LOCATIONS:
        headers = {"x-api-key": loc.api_key}
        q = f"filter['locationId']={loc.id}&take=500"
        products = get(sandbox_url, "product", q, headers).json()["data"]
        categories = get(sandbox_url, "product-category", q, headers).json()["data"]
        spots = get(sandbox_url, "spot", q, headers).json()["data"]
        externals = {c["externalId"] for c in categories}
        assert {e for p in products for e in p["productGroupExternalIds"]} <= externals
        assert {s["location"]["locationShortCode"] for s in spots} == {loc.short_code}
        assert len({s["qrCode"] for s in spots}) == len(spots)
        cashboxes = {loc.primary_cashbox_id, loc.bar_cashbox_id}
        assert {p["cashbox"]["cashboxId"] for p in products} <= cashboxes


def test_every_named_spot_type_and_an_unnamed_one(sandbox_url):
    types = {s["type"] for loc in world.LOCATIONS for s in get(
        sandbox_url, "spot", f"filter['locationId']={loc.id}&take=500",
        {"x-api-key": loc.api_key}).json()["data"]}
    assert {"Spot", "Table", "Room", "Pickup", "Delivery"} <= types
    assert "DriveIn" in types
