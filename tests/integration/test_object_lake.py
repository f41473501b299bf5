"""The lake on object storage, against a real S3 server (moto's server mode) over HTTP:
a load lands there, a build reads it where it is (nothing of it on local disk), a write
killed before its commit leaves the committed partition in force, two writers land
together, a file changed in the store is left out by name, and a store that is down fails
by name."""

import http.client
import http.server
import io
import json
import multiprocessing
import tarfile
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import boto3
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from moto.server import ThreadedMotoServer

from pipeline.core.reporting import Reporter
from pipeline.core.settings import LakeSettings
from pipeline.lake import convert as convert_module
from pipeline.lake.housekeeping import tidy
from pipeline.lake.objectlake import ObjectLake, ObjectLakeError
from pipeline.lake.open import make_lake
from pipeline.orchestration.resources import build_resources
from pipeline.warehouse import Warehouse, build_warehouse
from pipeline.warehouse.lakefiles import lake_files
from pipeline.warehouse.lakeviews import committed_loads, file_list
from pipeline.warehouse.state import state_file
from tests.conftest import make_settings, run_load_in_memory, truth_turnover
from tests.integration.test_delta import turnover_by_day

DAYS = [date(2026, 11, 18), date(2026, 11, 19)]
BUCKET = "pos-lake"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A local S3 server for this module, with one bucket; its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    mp = with_bucket(url)
    yield url
    mp.undo()
    server.stop()


def with_bucket(url: str) -> pytest.MonkeyPatch:
    """The test credentials in the environment (undone by the patch returned) and the
    bucket made on the S3 server at ``url``."""
    mp = pytest.MonkeyPatch()
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_REGION": "us-east-1"}.items():
        mp.setenv(name, value)
    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    return mp


def keys(s3, prefix: str) -> list[str]:
    """The objects under ``prefix``, without the empty folder markers pyarrow leaves
    where it deleted a file."""
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", [])
                  if not o["Key"].endswith("/"))


def data_files(s3, prefix: str) -> list[str]:
    """The Parquet files under ``prefix``, not the Delta log."""
    return [k for k in keys(s3, prefix) if "/_delta_log/" not in k]


def options(s3) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": s3, "AWS_ALLOW_HTTP": "true"}


def delta_files(s3, table: str) -> list[str]:
    """The files the table's newest Delta version holds."""
    return DeltaTable(f"s3://{BUCKET}/{table}", storage_options=options(s3)).file_uris()


def flat(s3, area: str, table: str) -> pl.DataFrame:
    """A table of the store's lake as a Delta reader flattens it (docs/lake.md)."""
    rows = pl.read_delta(f"s3://{BUCKET}/{area}", storage_options=options(s3))
    keys = [k for k in ("location_id", "business_date") if k in rows.columns]
    return rows.select(*keys, table).explode(table).drop_nulls(table).unnest(table)


@contextmanager
def commits_killed(monkeypatch):
    """Every Delta commit fails: a write killed after its files, before its commit."""
    def killed(*args, **kwargs):
        raise OSError("connection reset")

    monkeypatch.setattr(DeltaTable, "create_write_transaction", killed)
    try:
        yield
    finally:
        monkeypatch.undo()


def s3_settings(sandbox_url, data_dir, s3, prefix):
    settings = make_settings(sandbox_url, data_dir)
    return settings.model_copy(update={"lake": LakeSettings(
        url=f"s3://{BUCKET}/{prefix}", endpoint_url=s3)})


def test_a_load_lands_in_the_store_and_the_warehouse_reads_it(sandbox_url, s3, tmp_path,
                                                             sandbox_keys):
    settings = s3_settings(sandbox_url, tmp_path / "data", s3, "chain")
    report = run_load_in_memory(settings, DAYS[0], DAYS[-1], catalog=False, progress=Reporter())
    assert report.ok, report.summary()
    revenue = data_files(s3, "chain/revenue/")
    assert len(revenue) == 2 and all(k.endswith(".parquet") for k in revenue)  # per date
    # Nothing of the lake on local disk: the build read the store.
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == sorted(
        p.name for p in (tmp_path / "data").iterdir() if "lake" not in p.name)
    assert not list((tmp_path / "data").rglob("*.parquet"))
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        turnover = dict(((r[0], r[1]), r[2]) for r in con.execute(
            "select location_id, business_date, turnover_net from fct_turnover_daily"
        ).fetchall())
    truth = {(loc, day): truth_turnover(loc, day) for loc in (1001, 1002, 1003) for day in DAYS}
    assert turnover == truth
    # What a Delta reader of the store (Polars, through delta-rs' own S3 client) reads.
    receipts, items = flat(s3, "chain/revenue", "receipts"), flat(s3, "chain/revenue",
                                                                  "receipt_items")
    lake = make_lake(settings)
    assert receipts.height == sum(int(r.metadata["receipts"])
                                  for r in lake.records("revenue").values())
    assert turnover_by_day(receipts, items) == truth

    # One location's day again: its date's file rewritten, each partition once.
    again = run_load_in_memory(settings, DAYS[0], DAYS[0], [1001], catalog=False, models=False,
                               progress=Reporter())
    assert again.ok
    assert len(data_files(s3, "chain/revenue/")) == 3  # the replaced one stays, for now
    assert len(delta_files(s3, "chain/revenue")) == 2
    assert turnover_by_day(flat(s3, "chain/revenue", "receipts"),
                           flat(s3, "chain/revenue", "receipt_items")) == truth


def _turnover(warehouse: Warehouse) -> dict:
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        return dict(((r[0], r[1]), r[2]) for r in con.execute(
            "select location_id, business_date, turnover_net from fct_turnover_daily"
        ).fetchall())


def test_a_build_reads_the_store_where_it_is(sandbox_url, s3, tmp_path, sandbox_keys,
                                             monkeypatch):
    settings = s3_settings(sandbox_url, tmp_path / "data", s3, "where")
    assert run_load_in_memory(settings, DAYS[0], DAYS[0], [1001, 1002], catalog=False,
                              progress=Reporter()).ok
    lake = make_lake(settings)
    warehouse = build_resources(settings)["warehouse"]
    truth = {(loc, DAYS[0]): truth_turnover(loc, DAYS[0]) for loc in (1001, 1002)}
    assert _turnover(warehouse) == truth
    partition = {"location_id": 1001, "business_date": DAYS[0].isoformat()}
    record = lake.committed("revenue", partition)

    # A write killed before its commit (half the receipts): its file is in the store,
    # and neither the build nor a Delta reader takes it.
    half = {t: lake.read("revenue", t, partition) for t in record.tables}
    half["receipts"] = half["receipts"].slice(0, half["receipts"].num_rows // 2)
    with commits_killed(monkeypatch), pytest.raises(ObjectLakeError):
        lake.write("revenue", half, partition)
    assert len(data_files(s3, "where/revenue/")) == 2  # read by nobody
    assert warehouse.build().corrupt == []
    assert _turnover(warehouse) == truth
    # What the build read of each file is kept under the file's s3:// path, the path the
    # next build pins it by: that build reads only the files added since.
    with duckdb.connect(str(state_file(warehouse.path)), read_only=True) as con:
        kept = {r[0] for r in con.execute("select distinct path from _state.lake_rows "
                                          "where area = 'revenue'").fetchall()}
    assert kept == {f"s3://{BUCKET}/{k.split(f'{BUCKET}/', 1)[1]}"
                    for k in delta_files(s3, "where/revenue")}

    # A file changed in the store after its commit: named by its s3:// path (a page's
    # CRC) and left out; the figures the warehouse had for it stay.
    (name,) = [k.split(f"{BUCKET}/", 1)[1] for k in delta_files(s3, "where/revenue")]
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    data = bytearray(client.get_object(Bucket=BUCKET, Key=name)["Body"].read())
    data[len(data) // 3] ^= 0x10
    client.put_object(Bucket=BUCKET, Key=name, Body=bytes(data))
    result = warehouse.build(full=True)
    assert {c.partition for c in result.corrupt} == {
        f"location_id={loc}/business_date={DAYS[0]}" for loc in (1001, 1002)}
    assert f"s3://{BUCKET}/{name} cannot be read as written" in result.corrupt[0].problem
    assert _turnover(warehouse) == truth


def test_a_write_killed_before_its_commit_changes_nothing(s3, tmp_path, monkeypatch):
    lake = ObjectLake(f"s3://{BUCKET}/atomic", s3)
    partition = {"location_id": 1, "business_date": "2026-11-18"}
    schema = pa.schema([("n", pa.int64())])
    lake.write("revenue", {"receipts": pa.table({"n": [1, 2]}, schema=schema)}, partition)
    first = lake.committed("revenue", partition)

    with commits_killed(monkeypatch), pytest.raises(
            ObjectLakeError, match=rf"lake s3://{BUCKET}/atomic: cannot write revenue "
                                   r"partition .*connection reset"):
        lake.write("revenue", {"receipts": pa.table({"n": [9]}, schema=schema)}, partition)
    assert lake.committed("revenue", partition) == first
    assert lake.read("revenue", "receipts", partition).column("n").to_pylist() == [1, 2]
    assert flat(s3, "atomic/revenue", "receipts")["n"].to_list() == [1, 2]  # Delta readers
    assert len(data_files(s3, "atomic/revenue/")) == 2  # the new file, read by nobody
    lake.write("revenue", {"receipts": pa.table({"n": [3]}, schema=schema)}, partition)
    assert lake.read("revenue", "receipts", partition).column("n").to_pylist() == [3]
    assert flat(s3, "atomic/revenue", "receipts")["n"].to_list() == [3]
    assert len(data_files(s3, "atomic/revenue/")) == 3  # until housekeeping's vacuum
    (tidied,) = tidy(lake, retention_hours=0)
    assert tidied.deleted == 2 and len(data_files(s3, "atomic/revenue/")) == 1


def test_a_store_that_is_down_fails_the_partitions_by_name(sandbox_url, tmp_path,
                                                          sandbox_keys, s3):
    settings = s3_settings(sandbox_url, tmp_path / "data", "http://127.0.0.1:9", "down")
    report = run_load_in_memory(settings, DAYS[0], DAYS[0], [1001], catalog=False, models=False,
                                progress=Reporter())
    assert not report.ok
    (failure,) = report.failed_partitions
    assert failure.location_id == 1001 and str(failure.business_date) == "2026-11-18"
    assert f"lake s3://{BUCKET}/down" in failure.message


def test_the_lake_url_is_checked_where_it_is_configured(tmp_path):
    from pipeline.core.outcomes import ConfigError
    from pipeline.orchestration.configs import load_settings

    config = tmp_path / "pos.toml"
    config.write_text('[lake]\nurl = "/tmp/lake"\n[[locations]]\nid = 1\nshort_code = "A"\n'
                      'api_key_env = "K"\n')
    with pytest.raises(ConfigError, match=r"lake\.url"):
        load_settings(config)


def test_the_local_and_the_s3_lake_are_one_interface():
    import inspect

    from pipeline.lake.objectlake import ObjectLake
    from pipeline.lake.store import Lake, LakeStore

    methods = [name for name, value in vars(LakeStore).items()
               if callable(value) and not name.startswith("_")]
    assert {"write", "write_batch", "records", "committed", "read", "partitions"} \
        <= set(methods)
    for lake in (Lake, ObjectLake):
        for name in methods:
            assert list(inspect.signature(getattr(lake, name)).parameters) == \
                list(inspect.signature(getattr(LakeStore, name)).parameters), (lake, name)


def _write_partitions(args: tuple[str, str, int]) -> None:
    url, endpoint, location_id = args
    lake = ObjectLake(url, endpoint)
    schema = pa.schema([("n", pa.int64())])
    for day in range(3):
        lake.write("revenue", {"receipts": pa.table({"n": [location_id * 10 + day]},
                                                    schema=schema)},
                   {"location_id": location_id, "business_date": f"2026-11-1{day}"})


def test_two_writers_of_different_partitions_at_once_both_land_once(s3):
    url = f"s3://{BUCKET}/together"
    _write_partitions((url, s3, 3))  # the table exists: both commit to one log
    # (An executor, not a Pool: see the Delta test of two loads at once.)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_write_partitions, [(url, s3, 1), (url, s3, 2)]))
    assert sorted(flat(s3, "together/revenue", "receipts")["n"].to_list()) == [
        10, 11, 12, 20, 21, 22, 30, 31, 32]
    # What a build reads of the store: every partition of both writers, once.
    files = lake_files(ObjectLake(url, s3))
    with duckdb.connect() as con:
        files.prepare(con)
        committed = committed_loads(con, files)["revenue"]
        assert len(committed.loads) == 9
        assert sorted(n for n, in con.execute(
            f"select unnest(receipts).n from read_parquet({file_list(committed.files())})"
        ).fetchall()) == [10, 11, 12, 20, 21, 22, 30, 31, 32]


class Faults:
    """WSGI layer in front of moto's S3: answers 500 (S3's InternalError) to the requests
    ``fail`` picks; counts them by method."""

    def __init__(self, app):
        self.app, self.fail, self.failed = app, None, []
        self.count, self.lock = 0, threading.Lock()

    def every(self, n: int) -> None:
        self.fail = lambda environ, count: count % n == 0

    def __call__(self, environ, start_response):
        with self.lock:
            self.count += 1
            fail = self.fail is not None and self.fail(environ, self.count)
        if not fail:
            return self.app(environ, start_response)
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        self.failed.append(environ["REQUEST_METHOD"])
        start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
        return [b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>InternalError</Code>"
                b"<Message>We encountered an internal error. Please try again.</Message>"
                b"</Error>"]


@contextmanager
def faulty_store():
    """moto's S3 server app behind ``Faults``, over HTTP on 127.0.0.1: its URL and the
    faults (none until set)."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    faults = Faults(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, faults, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    mp = with_bucket(url)
    try:
        yield url, faults
    finally:
        mp.undo()
        server.shutdown()


def test_a_store_failing_every_third_request_loses_nothing_and_fails_nothing(
        sandbox_url, tmp_path, sandbox_keys, capfd):
    """Transient store errors are retried, with backoff, on every operation of a write
    and of the Delta commit: a load of 3 partitions through a store that answers 500 to
    every third request commits all of them, exit 0."""
    with faulty_store() as (url, faults):
        settings = s3_settings(sandbox_url, tmp_path / "data", url, "flaky")
        faults.every(3)
        report = run_load_in_memory(settings, DAYS[0], DAYS[0], catalog=False, models=False,
                                    progress=Reporter())
        assert report.ok, report.summary()
        assert len(faults.failed) > 5 and {"PUT", "GET"} <= set(faults.failed)
        # no multipart upload (whose failures Arrow retries once and prints), no line of
        # Arrow's between the product's
        assert "s3fs.cc" not in capfd.readouterr().err
        faults.fail = None  # the store well again: what any Delta reader of it reads
        receipts = flat(url, "flaky/revenue", "receipts")
        items = flat(url, "flaky/revenue", "receipt_items")
        assert turnover_by_day(receipts, items) == {
            (loc, DAYS[0]): truth_turnover(loc, DAYS[0]) for loc in (1001, 1002, 1003)}


def test_a_commit_that_fails_for_good_names_the_lake_and_the_next_load_lands(
        sandbox_url, tmp_path, sandbox_keys):
    with faulty_store() as (url, faults):
        settings = s3_settings(sandbox_url, tmp_path / "data", url, "broken")
        settings = settings.model_copy(update={"lake": settings.lake.model_copy(
            update={"retry_attempts": 2, "retry_seconds": 5})})
        faults.fail = lambda environ, count: "/_delta_log" in environ.get("PATH_INFO", "")
        report = run_load_in_memory(settings, DAYS[0], DAYS[-1], [1001], catalog=False,
                                    models=False, progress=Reporter())
        summary = report.summary()
        assert not report.ok
        assert f"lake s3://{BUCKET}/broken: cannot write revenue partition " \
               "location_id=1001/business_date=2026-11-18 and 1 more: " in summary, summary
        assert "500 Internal Server Error" in summary and "\x1b" not in summary
        faults.fail = None
        again = run_load_in_memory(settings, DAYS[0], DAYS[-1], [1001], catalog=False, models=False,
                                   progress=Reporter())
        assert again.ok, again.summary()
        assert len(make_lake(settings).records("revenue")) == 2


class LosingProxy(http.server.BaseHTTPRequestHandler):
    """An HTTP proxy in front of the store that forwards every request and, for the
    first PUT to the path in ``server.lose``, drops the store's answer: the connection
    closes without a reply, as a proxy or a network that failed on the way back does."""

    protocol_version = "HTTP/1.1"

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers
            pass
        return b"".join(chunks)

    def _forward(self) -> None:
        body = self._body()
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("transfer-encoding", "content-length")}
        upstream = http.client.HTTPConnection(self.server.upstream, timeout=30)
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        if self.command == "PUT" and self.server.lose and \
                self.path.split("?")[0].endswith(self.server.lose):
            self.server.lose = None
            self.server.lost.append(self.path)
            self.close_connection = True
            return
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", answer.getheader("Content-Length", "0")
                         if self.command == "HEAD" else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    def log_message(self, *args) -> None:
        pass


@contextmanager
def replies_lost(s3):
    """``LosingProxy`` in front of the S3 server at ``s3``: its URL and its server, whose
    ``lose`` names the PUT whose answer it drops and ``lost`` what it dropped."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), LosingProxy)
    server.upstream, server.lose, server.lost = s3.removeprefix("http://"), None, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", server
    finally:
        server.shutdown()
        server.server_close()


def test_a_commit_whose_reply_was_lost_keeps_its_files_and_counts_as_landed(
        sandbox_url, s3, tmp_path, sandbox_keys):
    """The store takes a commit's PUT and its reply is lost on the way back: the retry
    finds the version there (412). The load reads the log, finds its own commit and
    reports it landed; no file the log names is deleted, and later loads of the same
    dates (and the build) read the lake."""
    with replies_lost(s3) as (url, proxy):
        settings = s3_settings(sandbox_url, tmp_path / "data", url, "lost")
        first = run_load_in_memory(settings, DAYS[0], DAYS[0], [1001], catalog=False,
                                   models=False, progress=Reporter())
        assert first.ok, first.summary()
        proxy.lose = "/lost/revenue/_delta_log/00000000000000000002.json"
        again = run_load_in_memory(settings, DAYS[0], DAYS[0], [1001], catalog=False,
                                   models=False, progress=Reporter())
        assert proxy.lost, "the commit's answer was never dropped"
        assert again.ok, again.summary()
        named = delta_files(url, "lost/revenue")
        present = {f"s3://{BUCKET}/{k}" for k in data_files(url, "lost/revenue")}
        assert named and set(named) <= present, set(named) - present
        third = run_load_in_memory(settings, DAYS[0], DAYS[0], [1001], catalog=False,
                                   progress=Reporter())
        assert third.ok, third.summary()
        receipts = flat(url, "lost/revenue", "receipts")
        items = flat(url, "lost/revenue", "receipt_items")
        assert turnover_by_day(receipts, items) == {(1001, DAYS[0]): truth_turnover(1001, DAYS[0])}


OLD_LAKE = Path(__file__).resolve().parents[1] / "fixtures" / "s3-lake-4.tar.gz"
"""An S3 lake made by main before the one lake (4675fda), against moto: locations 1001
(2026-11-18 twice, 2026-11-19) and 1002 (2026-11-18), 12 transactions a day; each object
under its key below the lake's prefix (folder markers too)."""


def test_an_earlier_lake_on_s3_converts_once_even_when_cut_midway(
        s3, tmp_path, capsys, monkeypatch):
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    old: dict[str, tuple] = {}
    files: dict[str, bytes] = {}
    with tarfile.open(OLD_LAKE) as archive:
        for member in archive.getmembers():
            body = archive.extractfile(member).read()
            files[member.name] = body
            client.put_object(Bucket=BUCKET, Key=f"older/{member.name}", Body=body)
            folder, _, name = member.name.rpartition("/")
            if folder.startswith("_loads/revenue/") and name.startswith("load-"):
                partition = folder.removeprefix("_loads/revenue/")
                row = pq.read_table(io.BytesIO(body)).to_pylist()[0]
                if partition not in old or old[partition][0] < row["load_id"]:
                    old[partition] = (row["load_id"], row["loaded_at"],
                                      int(json.loads(row["metadata"])["receipts"]))
    assert len(old) == 3
    settings = s3_settings("http://127.0.0.1:9", tmp_path / "data", s3, "older")

    # Cut after the first table folder has moved aside (on a store: object by object).
    moved = []

    def cut(place, name):
        if moved:
            raise KeyboardInterrupt
        moved.append(name)
        real_move(place, name)

    real_move = convert_module.Place.move
    monkeypatch.setattr(convert_module.Place, "move", cut)
    with pytest.raises(KeyboardInterrupt):
        make_lake(settings)
    monkeypatch.undo()
    assert keys(s3, "older/_converting/")  # halfway
    # Meanwhile a load of this release commits one of the days again: the conversion
    # keeps that newer load.
    again = "location_id=1002/business_date=2026-11-18"
    tables = {name: pq.read_table(io.BytesIO(files[f"{name}/{again}/part-{old[again][0]}"
                                                    f".parquet"]), partitioning=None)
              for name in ("receipts", "receipt_items", "item_side_dishes", "payments")}
    ObjectLake(f"s3://{BUCKET}/older", s3).write(
        "revenue", tables, {"location_id": 1002, "business_date": "2026-11-18"},
        {"receipts": old[again][2]})

    lake = make_lake(settings)  # goes on, to the same result as one conversion
    assert "converting it to one Delta table per area (once)" in capsys.readouterr().err
    assert not keys(s3, "older/_loads/") and not keys(s3, "older/_converting/")
    assert not keys(s3, "older/receipts/") and not keys(s3, "older/receipt_items/")
    records = lake.records("revenue")
    assert records[again].load_id > old[again][0]
    assert {p: (r.load_id, r.loaded_at, int(r.metadata["receipts"]))
            for p, r in records.items() if p != again} == {
        p: v for p, v in old.items() if p != again}
    warehouse = tmp_path / "warehouse.duckdb"
    build_warehouse(lake, warehouse)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*) from fct_receipts").fetchone()[0] == sum(
            n for _, _, n in old.values())
    assert make_lake(settings) == lake  # once: nothing more to do
    assert "converting" not in capsys.readouterr().err
