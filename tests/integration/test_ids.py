"""One rule for every id (issue 40, items 7 and 8): ids are compared exactly as sent, code
point by code point (neither case nor Unicode normalisation folded); a key that appears
twice in one JSON object fails its partition by name, over real HTTP."""

import copy
import unicodedata
from datetime import date

import duckdb

from pipeline.core.reporting import Reporter
from pos_sandbox.app import create_app
from pos_sandbox.profiles import rewrite_response
from pos_sandbox.server import serving
from tests.conftest import make_settings, run_load_in_memory
from tests.hostile import DECODER, REPORTS, altered_sandbox
from tests.integration.test_hostile_sources import on_day, settled

DAY = date(2026, 11, 20)


def receipts_in_warehouse(settings) -> dict[str, int]:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return dict(con.execute("select transaction_id, count(*) from fct_receipts "
                                "group by all").fetchall())


def test_ids_differing_in_case_or_normalisation_are_different_receipts(
        tmp_path, sandbox_keys):
    added = {}

    def twins(location, rows):
        if added or not on_day(rows, DAY):  # the first page of the day only
            return rows
        original = settled(on_day(rows, DAY))
        upper = copy.deepcopy(original)
        upper["transactionId"] = original["transactionId"].upper()
        composed, decomposed = copy.deepcopy(original), copy.deepcopy(original)
        composed["transactionId"] = unicodedata.normalize("NFC", "Café-7")
        decomposed["transactionId"] = unicodedata.normalize("NFD", "Café-7")
        added.update(original=original["transactionId"], upper=upper["transactionId"])
        return [upper, composed, decomposed, *rows]  # not last: the cursor stays the POS's

    with altered_sandbox(twins) as url:
        settings = make_settings(url, tmp_path / "data")
        report = run_load_in_memory(settings, DAY, DAY, [1001], catalog=False,
                                    progress=Reporter())
    assert report.ok, report.summary()
    found = receipts_in_warehouse(settings)
    assert found[added["original"]] == 1 and found[added["upper"]] == 1
    assert found[unicodedata.normalize("NFC", "Café-7")] == 1
    assert found[unicodedata.normalize("NFD", "Café-7")] == 1


class _Doubling:
    """ASGI wrapper: a settled receipt of ``DAY`` gets ``"totalAmount"`` a second time, in
    the answer's bytes (a dict cannot hold it twice)."""

    def __init__(self, app, chosen: dict):
        self.app, self.chosen = app, chosen

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope.get("path", "").endswith(REPORTS):
            return await self.app(scope, receive, send)

        def change(status, headers, body):
            if status == 200:
                day = on_day(DECODER.decode(body), DAY)
                if day:
                    txn = settled(day)["transactionId"]
                    self.chosen["txn"] = txn
                    at = body.index(b'"transactionId":"' + txn.encode())
                    body = body[:at] + b'"totalAmount":99999.0,' + body[at:]
            return headers, body

        await rewrite_response(self.app, scope, receive, send, change)


def test_a_key_twice_in_one_object_fails_the_day_naming_receipt_and_field(
        tmp_path, sandbox_keys):
    chosen: dict = {}
    with serving(_Doubling(create_app(), chosen)) as url:
        settings = make_settings(url, tmp_path / "data")
        report = run_load_in_memory(settings, DAY, DAY, [1001], catalog=False,
                                    progress=Reporter())
    assert not report.ok
    (failure,) = report.failed_partitions
    assert f"receipt {chosen['txn']}" in failure.message, failure.message
    assert "field totalAmount appears twice in one object" in failure.message
