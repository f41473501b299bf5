"""Only the status the spec documents is an answer (issue 40, item 1): a proxy's 202, a
redirect or a 204 never reads as an empty page, over real HTTP, on every endpoint."""

from datetime import date

import duckdb
import httpx
import pytest

from pipeline.cli import main
from pipeline.pos_api.client import PosClient
from pipeline.pos_api.errors import ContractError
from tests.conftest import write_config
from tests.hostile import VOUCHER_LIST, status_sandbox

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


DAY = date(2026, 11, 20)
KEY = "k-1001-secret-statuses"


def revenue(config) -> dict:
    with duckdb.connect(str(config.parent / "data" / "warehouse.duckdb"),
                        read_only=True) as con:
        return dict(con.execute("select business_date, turnover_net from fct_turnover_daily"
                                ).fetchall())


@pytest.mark.parametrize(("status", "body", "headers", "said"), [
    (202, b"[]", [], "HTTP 202"),
    (301, b"[]", [(b"location", b"http://elsewhere.example/api/v1/x")],
     "HTTP 301 (a redirect to elsewhere.example, not followed)"),
    (307, b"", [(b"location", b"/api/v1/other")], "HTTP 307"),
    (204, b"", [], "HTTP 204"),
], ids=["202", "301", "307-empty", "204-empty"])
def test_a_status_other_than_200_fails_the_day_and_keeps_the_loaded_one(
        sandbox_url, tmp_path, sandbox_keys, capsys, status, body, headers, said):
    config = write_config(tmp_path, sandbox_url)
    args = ["load", "--config", str(config), "--start", str(DAY), "--end", str(DAY),
            "--no-catalog"]
    assert main(args) == 0
    before = revenue(config)
    assert before[DAY] > 0
    with status_sandbox(status, body, headers=headers) as url:
        config = write_config(tmp_path, url)
        code = main(args)
    out = capsys.readouterr().out
    assert code == 1
    failed = next(line for line in out.splitlines() if "FAILED 1001 2026-11-20" in line)
    assert said in failed and "malformed JSON" not in failed
    assert revenue(config) == before


@pytest.mark.parametrize("endpoint", ["catalog", "menus", "vouchers", "order"])
@pytest.mark.parametrize("status", [202, 302])
def test_every_endpoint_takes_only_its_documented_status(sandbox_url, endpoint, status):
    suffix = {"catalog": "/external/product", "menus": "/menus", "vouchers": VOUCHER_LIST,
              "order": "/external/order"}[endpoint]
    body = b'{"page": {"offset": 0, "limit": 500, "total": 0}, "data": []}' \
        if endpoint == "catalog" else b"[]"
    headers = [(b"location", b"https://trap.example/x")] if status == 302 else []
    with status_sandbox(status, body, suffix=suffix, headers=headers) as url, \
            PosClient(base_url=url, api_key=KEY, location_id=1001) as client:
        call = {"catalog": lambda: client.catalog_listing("product"),
                "menus": client.menus, "vouchers": client.vouchers,
                "order": lambda: client.place_order(_order())}[endpoint]
        if endpoint == "order" and status == 202:
            assert call()[0] == 202  # an order's success status is not shown: any 2xx
            return
        with pytest.raises(ContractError) as caught:
            call()
    assert f"HTTP {status}" in str(caught.value)
    assert KEY not in str(caught.value)
    if status == 302:
        assert "trap.example, not followed" in str(caught.value)


def test_a_redirect_is_never_followed_so_the_key_never_travels():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(308, headers={"location": "https://trap.example/steal"},
                              json=[])

    client = PosClient(base_url="https://pos.example", api_key=KEY, location_id=1001,
                       transport=httpx.MockTransport(handler))
    with pytest.raises(ContractError, match="trap.example"):
        client.menus()
    assert [r.url.host for r in seen] == ["pos.example"]


def _order():
    from pipeline.pos_api.models import OrderRequest
    return OrderRequest.model_validate({
        "locationId": 1001, "takeaway": True, "grandTotal": "0",
        "userInfo": {"email": "a@b.example"}, "entries": []})
