"""The lake on object storage, against a real S3 server (moto's server mode) over HTTP:
a load lands there, a build mirrors only what changed, a write killed before its commit
leaves the committed partition in force, and a store that is down fails by name."""

from datetime import date

import boto3
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from moto.server import ThreadedMotoServer

from pipeline.loader import run_load
from pipeline.objectlake import ObjectLake, ObjectLakeError
from pipeline.reporting import Reporter
from pipeline.resources import make_lake
from pipeline.settings import LakeSettings
from tests.conftest import make_settings, truth_turnover

DAYS = [date(2026, 11, 18), date(2026, 11, 19)]
BUCKET = "pos-lake"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A local S3 server for this module, with one bucket; its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server._server.server_address
    url = f"http://{host}:{port}"
    mp = pytest.MonkeyPatch()
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_REGION": "us-east-1"}.items():
        mp.setenv(name, value)
    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    yield url
    mp.undo()
    server.stop()


def keys(s3, prefix: str) -> list[str]:
    """The objects under ``prefix``, without the empty folder markers pyarrow leaves
    where it deleted a file."""
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", [])
                  if not o["Key"].endswith("/"))


def s3_settings(sandbox_url, data_dir, s3, prefix):
    settings = make_settings(sandbox_url, data_dir)
    return settings.model_copy(update={"lake": LakeSettings(
        url=f"s3://{BUCKET}/{prefix}", endpoint_url=s3)})


def test_a_load_lands_in_the_store_and_the_warehouse_reads_it(sandbox_url, s3, tmp_path,
                                                             sandbox_keys):
    settings = s3_settings(sandbox_url, tmp_path / "data", s3, "chain")
    report = run_load(settings, DAYS[0], DAYS[-1], catalog=False, progress=Reporter())
    assert report.ok, report.summary()
    stored = keys(s3, "chain/")
    receipts = [k for k in stored if k.startswith("chain/receipts/")]
    assert len(receipts) == 6 and all(k.endswith(".parquet") for k in receipts)
    assert len([k for k in stored if k.startswith("chain/_loads/revenue/")]) == 6
    assert not (tmp_path / "data" / "lake").exists()  # nothing of the lake on local disk
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        turnover = dict(((r[0], r[1]), r[2]) for r in con.execute(
            "select location_id, business_date, turnover_net from fct_turnover_daily"
        ).fetchall())
    assert turnover == {(loc, day): truth_turnover(loc, day)
                        for loc in (1001, 1002, 1003) for day in DAYS}

    # Loaded again: one record and one file per table and partition stay in the store, and
    # the next build downloads only the partition that changed.
    lake = make_lake(settings)
    assert lake.sync() == 0
    again = run_load(settings, DAYS[0], DAYS[0], [1001], catalog=False, models=False,
                     progress=Reporter())
    assert again.ok
    assert keys(s3, "chain/") != stored
    assert len(keys(s3, "chain/receipts/")) == 6
    assert len(keys(s3, "chain/_loads/revenue/location_id=1001/business_date=2026-11-18/")) == 1
    assert lake.sync() == 1


def test_a_write_killed_before_its_commit_changes_nothing(s3, tmp_path, monkeypatch):
    lake = ObjectLake(f"s3://{BUCKET}/atomic", tmp_path / "mirror", s3)
    partition = {"location_id": 1, "business_date": "2026-11-18"}
    schema = pa.schema([("n", pa.int64())])
    lake.write("revenue", {"receipts": pa.table({"n": [1, 2]}, schema=schema)}, partition)
    first = lake.committed("revenue", partition)

    real = pq.write_table

    def killed_at_commit(table, where, **kwargs):
        if "/_loads/" in str(where):
            raise OSError("connection reset")
        return real(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", killed_at_commit)
    with pytest.raises(ObjectLakeError, match=rf"lake s3://{BUCKET}/atomic: cannot write "
                                              r"revenue partition .*connection reset"):
        lake.write("revenue", {"receipts": pa.table({"n": [9]}, schema=schema)}, partition)
    monkeypatch.setattr(pq, "write_table", real)
    assert lake.committed("revenue", partition) == first
    assert lake.read("revenue", "receipts", partition).column("n").to_pylist() == [1, 2]
    assert len(keys(s3, "atomic/receipts/")) == 2  # the new file, read by nobody
    lake.write("revenue", {"receipts": pa.table({"n": [3]}, schema=schema)}, partition)
    assert len(keys(s3, "atomic/receipts/")) == 1  # the next commit removes both old ones
    assert lake.read("revenue", "receipts", partition).column("n").to_pylist() == [3]
    assert lake.sync() == 1
    mirrored = tmp_path / "mirror" / "receipts" / "location_id=1" / "business_date=2026-11-18"
    assert [pq.read_table(f).column("n").to_pylist() for f in mirrored.glob("*.parquet")] \
        == [[3]]


def test_a_store_that_is_down_fails_the_partitions_by_name(sandbox_url, tmp_path,
                                                          sandbox_keys, s3):
    settings = s3_settings(sandbox_url, tmp_path / "data", "http://127.0.0.1:9", "down")
    report = run_load(settings, DAYS[0], DAYS[0], [1001], catalog=False, models=False,
                      progress=Reporter())
    assert not report.ok
    (failure,) = report.failed_partitions
    assert failure.location_id == 1001 and str(failure.business_date) == "2026-11-18"
    assert f"lake s3://{BUCKET}/down" in failure.message


def test_the_lake_url_is_checked_where_it_is_configured(tmp_path):
    from pipeline.resources import load_settings
    from pipeline.settings import ConfigError

    config = tmp_path / "pos.toml"
    config.write_text('[lake]\nurl = "/tmp/lake"\n[[locations]]\nid = 1\nshort_code = "A"\n'
                      'api_key_env = "K"\n')
    with pytest.raises(ConfigError, match=r"lake\.url"):
        load_settings(config)


def test_the_local_and_the_s3_lake_are_one_interface():
    import dataclasses
    import inspect

    from pipeline.lake import Lake, LakeStore
    from pipeline.objectlake import ObjectLake

    methods = [name for name, value in vars(LakeStore).items()
               if callable(value) and not name.startswith("_")]
    assert {"write", "committed", "sync", "read", "partitions"} <= set(methods)
    for lake in (Lake, ObjectLake):
        for name in methods:
            assert list(inspect.signature(getattr(lake, name)).parameters) == \
                list(inspect.signature(getattr(LakeStore, name)).parameters), (lake, name)
        assert "root" in {f.name for f in dataclasses.fields(lake)}
