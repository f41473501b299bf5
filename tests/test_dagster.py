"""Dagster: assets materialize with metadata, checks run, schedules request the right partitions."""

from datetime import date

import dagster as dg
import pytest

from pipeline.assets.catalog import catalog_lake
from pipeline.assets.models import warehouse_models
from pipeline.assets.revenue import revenue_lake
from pipeline.definitions import defs
from pipeline.partitions import SETTINGS, revenue_partition_key
from pipeline.resources import PosApiResource
from pipeline.schedules import nightly_catalog, nightly_revenue


@pytest.fixture
def config_file(sandbox_url, tmp_path, monkeypatch):
    monkeypatch.setenv("POS_KEY_VIE01", "sandbox-key-1001")
    monkeypatch.setenv("POS_KEY_GRZ01", "sandbox-key-1003")
    path = tmp_path / "pos.toml"
    path.write_text(f"""
[source]
base_url = "{sandbox_url}"

[warehouse]
data_dir = "data"

[[locations]]
id = 1001
short_code = "VIE01"
api_key_env = "POS_KEY_VIE01"

[[locations]]
id = 1003
short_code = "GRZ01"
api_key_env = "POS_KEY_GRZ01"
""")
    return path


def test_definitions_load_with_lineage_from_sql():
    graph = defs.resolve_asset_graph()
    turnover = dg.AssetKey(["warehouse", "fct_turnover_daily"])
    assert graph.get(turnover).parent_keys == {dg.AssetKey(["warehouse", "fct_receipts"])}
    staging = graph.get(dg.AssetKey(["warehouse", "stg_pos__receipts"]))
    assert staging.parent_keys == {dg.AssetKey(["lake", "receipts"])}
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())


def test_revenue_catalog_and_models_materialize_with_metadata(config_file):
    pos = PosApiResource(config_path=str(config_file))
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([revenue_lake], partition_key=revenue_partition_key(
        "2026-11-20", 1001), resources={"pos": pos}, instance=instance)
    assert result.success
    mats = {m.asset_key.path[-1]: m.metadata
            for m in result.asset_materializations_for_node("revenue_lake")}
    assert set(mats) == {"receipts", "receipt_items", "item_side_dishes", "payments"}
    assert mats["receipts"]["dagster/row_count"].value > 300
    assert mats["receipts"]["turnover_net"].value == "4047.595"
    assert str(config_file.parent / "data" / "lake") in mats["payments"]["path"].value
    assert dg.materialize([catalog_lake], partition_key="1001", resources={"pos": pos},
                          instance=instance).success
    built = dg.materialize([warehouse_models], resources={"pos": pos}, instance=instance)
    assert built.success
    checks = built.get_asset_check_evaluations()
    assert checks and all(c.passed for c in checks)
    events = "".join(str(e) for e in instance.all_logs(built.run_id))
    events += "".join(str(e) for e in instance.all_logs(result.run_id))
    assert "sandbox-key" not in events


def test_auth_failure_fails_the_run_without_retry_and_hides_the_key(config_file, monkeypatch):
    monkeypatch.setenv("POS_KEY_GRZ01", "sandbox-key-1001")  # a key of another location
    pos = PosApiResource(config_path=str(config_file))
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([revenue_lake], partition_key=revenue_partition_key(
        "2026-11-20", 1003), resources={"pos": pos}, instance=instance, raise_on_error=False)
    assert not result.success
    failure = result.failure_data_for_node("revenue_lake")
    assert "HTTP 403" in failure.error.message and "location 1003" in failure.error.message
    assert "sandbox-key" not in "".join(str(e) for e in instance.all_logs(result.run_id))


def test_nightly_schedules_request_yesterday_and_the_lookback():
    tick = dg.build_schedule_context(scheduled_execution_time=__import__("datetime").datetime(
        2026, 11, 22, 3, 30))
    requests = list(nightly_revenue(tick))
    days = {r.partition_key.keys_by_dimension["business_date"] for r in requests}
    lookback = SETTINGS.schedule.lookback_days
    assert days == {date(2026, 11, 21 - n).isoformat() for n in range(lookback + 1)}
    assert len(requests) == len(days) * len(SETTINGS.locations)
    assert len({r.run_key for r in requests}) == len(requests)
    catalog = list(nightly_catalog(tick))
    assert {r.partition_key for r in catalog} == {str(loc.id) for loc in SETTINGS.locations}
