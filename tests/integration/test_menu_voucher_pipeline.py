"""Menu and voucher snapshots in the lake and warehouse; an order flowing to the marts."""

import json
from datetime import date, datetime, timedelta
from decimal import Decimal

import duckdb
import httpx
import pytest

from pipeline.areas.menu.extract import extract_menu_snapshot
from pipeline.areas.vouchers.extract import extract_voucher_snapshot
from pipeline.cli import main
from pipeline.core.outcomes import ConfigError
from pipeline.core.reporting import Reporter
from pipeline.load.steps import commit_snapshot
from pipeline.orchestration.loader import run_load
from pipeline.orchestration.resources import opened, pos_resource
from pos_sandbox import world
from pos_sandbox.server import running_sandbox
from tests.conftest import make_settings

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


SNAP = date(2026, 11, 22)


def test_menu_snapshot_flattens_every_level(settings, lake, sandbox_url):
    with opened(pos_resource(settings)) as source:
        snap = commit_snapshot(lake, "menu", extract_menu_snapshot(source, 1002, SNAP))
    served = httpx.get(f"{sandbox_url}/api/v1/locations/1002/menus").json()
    counts = snap.row_counts
    assert counts["menus"] == len(served)
    assert counts["menu_entries"] == sum(len(c["menuEntries"]) for t in served
                                         for c in t["categories"])
    assert counts["menu_entry_feature_values"] == sum(
        len(f["values"]) for t in served for c in t["categories"] for e in c["menuEntries"]
        for f in e["features"])
    hours = snap.tables["menu_hours"].to_pylist()
    lunch = next(h for h in hours if h["owner_key"] == "m0" and h["kind"] == "orderable")
    assert lunch["days_mask"] == 62 and lunch["weekdays"] == "Mon,Tue,Wed,Thu,Fri"
    assert any(h["is_exclude"] for h in hours)


def test_vouchers_are_reported_not_failed_without_a_voucher_url(settings, lake):
    assert settings.source.voucher_url is None
    with opened(pos_resource(settings)) as source:
        assert extract_voucher_snapshot(source, None, SNAP) is None


def test_warehouse_voucher_marts_match_the_ledger(sandbox_url, tmp_path, sandbox_keys):
    settings = make_settings(sandbox_url, tmp_path / "data", voucher_url=sandbox_url)
    report = run_load(settings, date(2026, 11, 20), date(2026, 11, 20), [1001],
                      progress=Reporter())
    assert report.ok, report.summary()
    ledger = httpx.get(f"{sandbox_url}/voucherservice/api/v1/vouchers",
                       headers={"x-api-key": "sandbox-key-1001"}).json()["data"]
    expected: dict[int, int] = {}
    for v in ledger:
        expected[v["categoryId"]] = expected.get(v["categoryId"], 0) + v["gift"]["balance"]
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        got = dict(con.execute("select voucher_category_id, outstanding_balance_amount * 100 "
                               "from fct_voucher_liability_daily").fetchall())
        issued = con.execute("select sum(issued_amount) * 100, sum(redeemed_amount) * 100, "
                             "sum(topped_up_amount) * 100 from fct_voucher_movements_daily"
                             ).fetchone()
        entries = con.execute("select count(*) from dim_menu_entries").fetchone()[0]
    assert got == expected
    txns = [t for v in ledger for t in v["transactions"]]
    assert issued == tuple(sum(t["amount"] for t in txns if t["type"] == kind)
                           for kind in ("Issue", "Redemption", "TopUp"))
    assert entries > 100
    assert f"vouchers snapshot: {len(ledger)} vouchers" in report.summary()


def test_an_order_placed_with_the_cli_reaches_fct_receipt_items(tmp_path, monkeypatch,
                                                                 capsys):
    with running_sandbox() as url:  # its own sandbox: the order is booked into it
        monkeypatch.setenv("POS_KEY_VIE01", "sandbox-key-1001")
        config = tmp_path / "pos.toml"
        config.write_text(f'[source]\nbase_url = "{url}"\n[[locations]]\nid = 1001\n'
                          f'short_code = "VIE01"\napi_key_env = "POS_KEY_VIE01"\n')
        product = world.catalog(1001)[0][30].product
        order = {"guid": "cli-order-1", "locationId": 1001, "takeaway": True,
                 "userInfo": {"email": "gast@example.com"}, "isPaid": True,
                 "entries": [{"productNr": product.product_nr, "quantity": 3}],
                 "grandTotal": float(product.pricing.default_price * 3)}
        order_file = tmp_path / "order.json"
        order_file.write_text(json.dumps(order))
        assert main(["order", str(order_file), "--config", str(config)]) == 0
        assert "HTTP 201" in capsys.readouterr().out
        today = datetime.now(world.location_by_id(1001).tz).date()
        days = [today - timedelta(days=1), today]  # midnight-proof: the order is on one of them
        # The CLI loads a business date once it is over: today's (the order's) is loaded
        # here by the load's own step, then built, as the nightly will once it is over.
        from pipeline.lake.open import make_lake
        from pipeline.load.steps import load_revenue_days
        from pipeline.orchestration.configs import load_settings
        from tests.conftest import build_directly

        settings = load_settings(config)
        with opened(pos_resource(settings)) as source:
            assert all(day.complete for day in load_revenue_days(
                source, make_lake(settings), days, [1001]))
        build_directly(settings)
    with duckdb.connect(str(tmp_path / "data" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("select transaction_type, quantity, is_revenue_effective "
                           "from fct_receipt_items where external_id = 'cli-order-1:0' "
                           "order by transaction_type").fetchall()
    assert rows == [("Abrechnen", Decimal(3), True), ("BestellmanagerBestellung", Decimal(3),
                                                      False)]


def test_order_cli_rejects_an_invalid_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"entries": []}')
    assert main(["order", str(bad)]) == 2
    assert "userInfo" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["POS_VOUCHER_KEY"])
def test_voucher_key_variable_is_named_when_missing(sandbox_url, tmp_path, monkeypatch,
                                                   sandbox_keys, missing):
    monkeypatch.delenv(missing, raising=False)
    settings = make_settings(sandbox_url, tmp_path, voucher_url=sandbox_url,
                             voucher_api_key_env=missing)
    with pytest.raises(ConfigError, match=f"voucher ledger: environment variable {missing}"):
        run_load(settings, date(2026, 11, 20), date(2026, 11, 20), [1001], models=False,
                 progress=Reporter())  # before anything is loaded
    report = run_load(settings, date(2026, 11, 20), date(2026, 11, 20), [1001], models=False,
                      skip=("vouchers",), progress=Reporter())
    assert report.ok  # a load that leaves the ledger out does not need its key


def test_an_order_without_guid_gets_one_so_a_retried_post_books_it_once(tmp_path, monkeypatch,
                                                                         capsys):
    """A POST retried after a transport error must not book the order twice (spec 4.3)."""
    with running_sandbox() as url:
        monkeypatch.setenv("POS_KEY_VIE01", "sandbox-key-1001")
        config = tmp_path / "pos.toml"
        config.write_text(f'[source]\nbase_url = "{url}"\n[[locations]]\nid = 1001\n'
                          f'short_code = "VIE01"\napi_key_env = "POS_KEY_VIE01"\n')
        product = world.catalog(1001)[0][30].product
        order = {"locationId": 1001, "takeaway": True,
                 "userInfo": {"email": "gast@example.com"},
                 "entries": [{"productNr": product.product_nr, "quantity": 1}],
                 "grandTotal": float(product.pricing.default_price)}
        order_file = tmp_path / "order.json"
        order_file.write_text(json.dumps(order))
        assert main(["order", str(order_file), "--config", str(config)]) == 0
        out = capsys.readouterr().out
        guid = out.split("order guid: ")[1].split()[0]
        first = json.loads(out[out.index("{"):])
        assert first["guid"] == guid
        again = httpx.post(f"{url}/api/v1/external/order", json={**order, "guid": guid},
                           headers={"x-api-key": "sandbox-key-1001"}, timeout=30)
        assert again.status_code == 200 and again.json()["orderId"] == first["orderId"]
