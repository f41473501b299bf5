"""Catalog snapshots in the lake: complete, joinable, idempotent, strict about bad records."""

from datetime import date

import httpx
import msgspec
import pytest

from pipeline.areas.catalog.extract import extract_catalog_snapshot
from pipeline.load.steps import commit_snapshot
from pipeline.orchestration.resources import opened, pos_resource
from pipeline.pos_api.errors import AuthError, ContractError
from pos_sandbox import world
from tests.conftest import source_with

SNAP = date(2026, 11, 22)


@pytest.mark.parametrize("location_id", [1001, 1002, 1003])
def test_snapshot_holds_the_whole_catalog(settings, lake, location_id):
    with opened(pos_resource(settings)) as source:
        snap = commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, location_id, SNAP))
    products, categories = world.catalog(location_id)
    counts = snap.row_counts
    assert counts["products"] == len(products)
    assert counts["product_categories"] == len(categories)
    assert counts["spots"] == len(world.spots(location_id))
    assert counts["product_category_memberships"] == sum(
        len(p.product.product_group_external_ids) for p in products)
    assert counts["product_localizations"] == sum(len(p.product.localizations) for p in products)
    prices = dict(zip(snap.tables["products"]["product_id"].to_pylist(),
                      snap.tables["products"]["pricing_default_price"].to_pylist(), strict=True))
    assert prices == {p.product.id: p.product.pricing.default_price for p in products}
    partition = {"location_id": location_id, "snapshot_date": "2026-11-22"}
    assert lake.read("catalog", "products", partition).num_rows == len(products)


def test_every_membership_matches_a_category(settings, lake):
    with opened(pos_resource(settings)) as source:
        snap = commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, 1002, SNAP))
    externals = set(snap.tables["product_categories"]["external_id"].to_pylist())
    members = snap.tables["product_category_memberships"]["category_external_id"].to_pylist()
    assert members and set(members) <= externals


def test_unknown_spot_types_are_kept(settings, lake):
    with opened(pos_resource(settings)) as source:
        snap = commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, 1001, SNAP))
    assert "DriveIn" in snap.tables["spots"]["type"].to_pylist()


def test_paging_across_many_small_pages(settings):
    with opened(pos_resource(settings)) as source, source.client(1001) as client:
        rows = client.catalog_listing("product", take=7)
        # every page of 7, and the empty page after them that confirms the end
        assert client.stats.pages == -(-len(world.catalog(1001)[0]) // 7) + 1
    assert [r["id"] for r in rows] == [p.product.id for p in world.catalog(1001)[0]]


def test_snapshot_is_idempotent(settings, lake):
    with opened(pos_resource(settings)) as source:
        partition = {"location_id": 1001, "snapshot_date": SNAP.isoformat()}
        first = commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, 1001, SNAP))
        tables = {n: lake.read("catalog", n, partition) for n in first.tables}
        second = commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, 1001, SNAP))
    assert second.version == first.version + 1
    assert all(lake.read("catalog", n, partition).equals(t) for n, t in tables.items())
    assert len(lake.partitions("catalog")) == 1


def test_wrong_key_fails_with_403_naming_the_location(settings, lake, monkeypatch):
    monkeypatch.setenv("POS_TEST_KEY_1001", "sandbox-key-1002")
    with opened(pos_resource(settings)) as source, pytest.raises(AuthError) as err:
        commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, 1001, SNAP))
    assert "HTTP 403" in str(err.value) and "location 1001" in str(err.value)
    assert "sandbox-key" not in str(err.value)


def test_invalid_record_names_location_endpoint_record_and_field(settings, lake):
    def handler(request):
        product = world.catalog(1001)[0][0].product.model_dump(mode="python", by_alias=True)
        del product["pricing"]
        first = request.url.params["skip"] == "0"
        body = {"page": {"offset": 0, "limit": 500, "total": 1}, "data": [product] * first}
        return httpx.Response(200, content=msgspec.json.encode(body))

    with source_with(settings, transport=httpx.MockTransport(handler)) as source, \
            pytest.raises(ContractError) as err:
        commit_snapshot(lake, "catalog", extract_catalog_snapshot(source, 1001, SNAP))
    message = str(err.value)
    assert "location 1001" in message and "product" in message and "pricing" in message
    assert "record 1001001" in message
