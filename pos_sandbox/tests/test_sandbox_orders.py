"""External order intake (spec 2.4, 4.3): routing, idempotency, re-pricing, booking."""

from datetime import datetime, timedelta
from decimal import Decimal

import httpx
import pytest

from pos_sandbox import world
from pos_sandbox.server import running_sandbox

KEY = {"x-api-key": "sandbox-key-1001"}
PRODUCTS = world.catalog(1001)[0]
SCHNITZEL = next(p for p in PRODUCTS if p.product.name == "Wiener Schnitzel vom Kalb")
BEER = next(p for p in PRODUCTS if p.category.external_id == "PG-BIE")  # bar cashbox
CLIENT_PRICED = next(p for p in PRODUCTS if p.product.pricing.allow_client_price)


@pytest.fixture
def url():
    with running_sandbox() as base:
        yield base


def order(**fields):
    body = {"userInfo": {"email": "gast@example.com"}, "takeaway": False,
            "entries": [{"productNr": SCHNITZEL.product.product_nr, "quantity": 2}],
            "grandTotal": float(SCHNITZEL.gross * 2), "locationId": 1001}
    body.update(fields)
    return body


def post(url, body, key=KEY):
    return httpx.post(f"{url}/api/v1/external/order", json=body, headers=key)


def test_routing_priority_and_rejections(url):
    spot = world.spots(1002)[0]
    # locationId wins over a spot of another location
    r = post(url, order(spotId=spot.id))
    assert r.status_code == 201 and r.json()["locationId"] == 1001
    r = post(url, order(locationId=None, locationShortCode="vie01"))
    assert r.status_code == 201 and r.json()["locationId"] == 1001
    table = world.spots(1001)[4]
    r = post(url, order(locationId=None, spotId=table.id))
    assert r.status_code == 201 and r.json()["spotId"] == table.id
    r = post(url, order(locationId=None, qrCode=table.qr_code))
    assert r.status_code == 201 and r.json()["spotId"] == table.id
    assert post(url, order(locationId=None)).status_code == 400
    assert post(url, order(locationId=999)).status_code == 400
    assert post(url, order(locationId=1002)).status_code == 403
    assert post(url, order(), key={}).status_code == 401


def test_guid_makes_a_repeat_a_no_op(url):
    first = post(url, order(guid="g-42", isPaid=True))
    again = post(url, order(guid="g-42", isPaid=True))
    assert first.status_code == 201 and again.status_code == 200
    assert again.json() == first.json()
    assert len(first.json()["transactionIds"]) == 2


def test_repricing_case_insensitive_primary_cashbox_and_name_fallback(url):
    entry = {"productNr": "ART-x", "name": SCHNITZEL.product.name.upper(), "quantity": 1}
    r = post(url, order(entries=[entry], grandTotal=float(SCHNITZEL.gross)))
    assert r.status_code == 201
    bar = {"productNr": BEER.product.product_nr, "quantity": 1}
    r = post(url, order(entries=[bar], grandTotal=float(BEER.gross)))
    assert r.status_code == 400 and "primary cashbox" in r.json()["message"]


def test_price_override_only_where_the_product_allows_it(url):
    cheap = {"productNr": SCHNITZEL.product.product_nr, "quantity": 1, "price": 1.0}
    assert post(url, order(entries=[cheap], grandTotal=1.0)).status_code == 422
    assert post(url, order(entries=[cheap], grandTotal=float(SCHNITZEL.gross))).status_code == 201
    own = {"productNr": CLIENT_PRICED.product.product_nr, "quantity": 2, "price": 3.25}
    assert post(url, order(entries=[own], grandTotal=6.5)).status_code == 201


def test_grand_total_tolerance_and_addons_and_tip(url):
    side = next(p for p in PRODUCTS if p.product.name == "Erdäpfelsalat")
    entries = [{"productNr": SCHNITZEL.product.product_nr, "quantity": 2,
                "addons": [{"productNr": side.product.product_nr, "quantity": 1}]}]
    total = (SCHNITZEL.gross + side.gross) * 2 + Decimal("3.00")
    assert post(url, order(entries=entries, tip=3.0,
                           grandTotal=float(total + Decimal("0.01")))).status_code == 201
    r = post(url, order(entries=entries, tip=3.0, grandTotal=float(total + Decimal("0.02"))))
    assert r.status_code == 422 and str(total) in r.json()["message"]


def test_spot_resolution(url):
    tables = [s for s in world.spots(1001) if s.type == "Table"]
    r = post(url, order(spotNumber=tables[2].number))
    assert r.json()["spotId"] == tables[2].id
    r = post(url, order(spotName=tables[5].name))
    assert r.json()["spotId"] == tables[5].id
    hotel = {"x-api-key": "sandbox-key-1002"}
    hotel_product = world.catalog(1002)[0][0]
    base = order(locationId=1002, entries=[{"productNr": hotel_product.product.product_nr,
                                            "quantity": 1}],
                 grandTotal=float(hotel_product.gross))
    room = next(s for s in world.spots(1002) if s.alternative_name == "203")
    r = post(url, {**base, "roomNumber": 203}, key=hotel)
    assert r.json()["spotId"] == room.id and r.json()["reservationId"].endswith("203")
    given = world.spots(1002)[0]
    r = post(url, {**base, "roomNumber": 203, "spotId": given.id}, key=hotel)
    assert r.json()["spotId"] == given.id and r.json()["reservationId"]


def test_a_paid_order_appears_in_the_revenue_report(url):
    r = post(url, order(guid="flow-1", isPaid=True, tip=2.0,
                        grandTotal=float(SCHNITZEL.gross * 2 + 2)))
    ids = set(r.json()["transactionIds"])
    now = datetime.now(world.location_by_id(1001).tz).replace(tzinfo=None, microsecond=0)
    window = {"after": (now - timedelta(hours=1)).isoformat(),
              "before": (now + timedelta(hours=1)).isoformat()}
    rows = httpx.post(f"{url}/api/v1/reports/receipts", json=window, headers=KEY,
                      timeout=30).json()
    booked = {row["transactionId"]: row for row in rows if row["transactionId"] in ids}
    assert {b["transactionType"] for b in booked.values()} == {"BestellmanagerBestellung",
                                                               "Abrechnen"}
    settled = next(b for b in booked.values() if b["transactionType"] == "Abrechnen")
    assert settled["paymentGroup"]["name"] == "Umsatzwirksam"
    assert settled["payments"][0]["paymentType"]["name"] == "Online"
    assert Decimal(str(settled["totalAmount"])) == SCHNITZEL.gross * 2 + 2
    assert settled["items"][0]["externalId"] == "flow-1:0"
