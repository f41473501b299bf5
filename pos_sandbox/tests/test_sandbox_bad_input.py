"""The sandbox holds to its own rules under bad input: a clear 4xx or an empty answer,
never a 500."""

import httpx
import pytest

from pos_sandbox import world

KEY = {"x-api-key": "sandbox-key-1001"}
PRODUCT_NR = world.catalog(1001)[0][0].product.product_nr
REPORT = "/api/v1/locations/1001/reports/receipts"
NESTED = '{"after": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.mark.parametrize(("after", "before"), [
    ("0001-01-01T00:00:00", "0001-01-02T00:00:00"),
    ("0001-01-01T00:00:00+05:00", "0001-01-02T00:00:00Z"),
    ("9999-12-30T00:00:00", "9999-12-31T23:59:59"),
])
def test_windows_at_the_ends_of_the_calendar_are_empty(sandbox_url, after, before):
    answer = httpx.post(sandbox_url + REPORT, headers=KEY,
                        json={"after": after, "before": before})
    assert (answer.status_code, answer.json()) == (200, [])


@pytest.mark.parametrize("path", [REPORT, "/api/v1/external/order"])
def test_deeply_nested_bodies_are_a_400(sandbox_url, path):
    answer = httpx.post(sandbox_url + path, headers=KEY, content=NESTED)
    assert answer.status_code == 400


def order(**changes) -> dict:
    return {"locationId": 1001, "userInfo": {"email": "guest@example.com"}, "takeaway": True,
            "entries": [{"productNr": PRODUCT_NR, "quantity": 1}], "grandTotal": 1} | changes


@pytest.mark.parametrize(("body", "says"), [
    (order(entries=[]), "entries: an order needs at least one entry"),
    (order(entries=[{"productNr": PRODUCT_NR, "quantity": -2}]), "entries[0].quantity: -2"),
    (order(entries=[{"productNr": PRODUCT_NR, "quantity": 0}]), "entries[0].quantity: 0"),
    (order(entries=[{"productNr": PRODUCT_NR, "quantity": 1e300}]), "entries[0].quantity"),
    (order(entries=[{"productNr": PRODUCT_NR, "quantity": 1,
                     "addons": [{"productNr": PRODUCT_NR, "quantity": -1}]}]),
     "entries[0].addons[0].quantity: -1"),
])
def test_orders_without_entries_or_with_impossible_quantities_are_refused(
        sandbox_url, body, says):
    answer = httpx.post(sandbox_url + "/api/v1/external/order", headers=KEY, json=body)
    assert answer.status_code == 400
    assert says in answer.json()["message"]
