"""The voucher ledger (spec 2.6, 3, 4.5): validity codes, issue, redeem, top up, concurrency."""

import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from pipeline.pos_api import models as m
from pos_sandbox.server import running_sandbox

KEY = {"x-api-key": "sandbox-key-1003"}
API = "/voucherservice/api/v1/vouchers"


@pytest.fixture
def c():
    with running_sandbox() as base, httpx.Client(base_url=base, headers=KEY) as client:
        yield client


def issue(c, code, amount=5000, **extra):
    body = {"categoryId": 1, "voucherCode": code, "gift": {"amount": amount},
            "clientType": "SANDBOX", **extra}
    return c.post(f"{API}/gifts", json=body)


def validity(c, code):
    body = c.get(f"{API}/validity", params={"voucherCode": code}).json()
    return body["isValid"], {e["code"] for e in body["errors"]}, body["voucher"]


def test_list_and_every_validity_code(c):
    listed = c.get(API).json()["data"]
    assert len(listed) >= 40
    vouchers = [m.Voucher.model_validate(v) for v in listed]
    assert all(v.discriminator == "GiftVoucherDto" and isinstance(v.gift.balance, int)
               for v in vouchers)
    assert validity(c, "NO-SUCH-CODE")[:2] == (False, {"NotFound"})
    codes = set()
    for v in vouchers:
        codes |= validity(c, v.voucher_code)[1]
    assert {"Expired", "NotYetStarted", "Disabled", "NoBalance"} <= codes
    once = issue(c, "ONCE-1", categoryId=3).json()["data"]
    redeem = {"redemption": {"amount": 100}, "clientType": "SANDBOX"}
    assert c.post(f"{API}/{once['id']}/redemption", json=redeem).json()["data"]["success"]
    assert validity(c, "ONCE-1")[1] == {"CategoryCapReached"}


def test_issue_redeem_top_up_with_the_ceiling(c):
    r = issue(c, "XMAS-2026", amount=5000, gift={"amount": 5000, "maxAmount": 8000},
              comment="Weihnachtsfeier")
    assert r.status_code == 201
    voucher = r.json()["data"]
    assert r.headers["location"].endswith(f"/vouchers/{voucher['id']}")
    assert voucher["gift"] == {"amount": 5000, "balance": 5000, "maxAmount": 8000}
    assert issue(c, "XMAS-2026").status_code == 409

    redeem = {"redemption": {"amount": 1250}, "clientType": "SANDBOX", "clientReference": "T7"}
    data = c.post(f"{API}/{voucher['id']}/redemption", json=redeem).json()["data"]
    assert data["success"] and isinstance(data["transactionId"], int)
    assert data["redemption"]["amount"] == 1250 and data["voucher"]["gift"]["balance"] == 3750

    too_much = {"redemption": {"amount": 999999}, "clientType": "SANDBOX"}
    r = c.post(f"{API}/{voucher['id']}/redemption", json=too_much)
    assert r.status_code == 200 and r.json()["data"]["success"] is False
    assert r.json()["data"]["errors"][0]["code"] == "InsufficientBalance"

    top = c.post(f"{API}/{voucher['id']}/booking",
                 json={"amount": 4000, "clientType": "SANDBOX"}).json()["data"]
    assert top["newAmount"] == 7750 and top["success"]
    over = c.post(f"{API}/{voucher['id']}/booking",
                  json={"amount": 300, "clientType": "SANDBOX"}).json()["data"]
    assert over["success"] is False and over["errors"][0]["code"] == "MaxAmountExceeded"
    assert validity(c, "XMAS-2026")[2]["gift"]["balance"] == 7750


def test_validation_failures_are_4xx(c):
    voucher = issue(c, "V-4XX").json()["data"]
    ok = {"redemption": {"amount": 1}, "clientType": "SANDBOX"}
    assert c.post(f"{API}/not-a-voucher/redemption", json=ok).status_code == 404
    assert c.post(f"{API}/{voucher['id']}/redemption", json={"redemption": {}}).status_code == 400
    assert c.post(f"{API}/{voucher['id']}/redemption",
                  json={**ok, "clientType": "SELF-CHOSEN"}).status_code == 403
    assert c.post(f"{API}/{voucher['id']}/redemption",
                  json={**ok, "clientContext": "{not json"}).status_code == 400
    assert c.get(f"{API}/validity").status_code == 400
    assert httpx.get(f"{c.base_url}{API}").status_code == 401
    expiring = issue(c, "V-FUTURE", startDate=(datetime.now(UTC) + timedelta(days=3))
                     .isoformat()).json()["data"]
    r = c.post(f"{API}/{expiring['id']}/redemption", json=ok).json()["data"]
    assert r["success"] is False and r["errors"][0]["code"] == "NotYetStarted"


def test_concurrent_redemptions_never_lose_an_update_or_go_negative(c):
    voucher = issue(c, "RACE-1", amount=10000).json()["data"]
    results = []

    def hammer():
        with httpx.Client(base_url=c.base_url, headers=KEY) as own:
            for _ in range(15):
                r = own.post(f"{API}/{voucher['id']}/redemption",
                             json={"redemption": {"amount": 300}, "clientType": "SANDBOX"})
                results.append(r.json()["data"])

    threads = [threading.Thread(target=hammer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [r for r in results if r["success"]]
    balance = validity(c, "RACE-1")[2]["gift"]["balance"]
    assert len(won) == 10000 // 300 and balance == 10000 - 300 * len(won) == 100
    assert len({r["transactionId"] for r in won}) == len(won)
    assert all(r["voucher"]["gift"]["balance"] >= 0 for r in results)
