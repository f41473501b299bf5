"""The config file contract, the `pos-etl load` command and the demo, end to end."""

from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest

from pipeline.cli import main
from pipeline.cli.demo import run_demo
from pipeline.core.outcomes import ConfigError
from pipeline.lake.store import Lake
from pipeline.orchestration.configs import load_settings
from pipeline.sources import require_keys
from tests.conftest import write_config

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


GOOD = """
[source]
base_url = "{url}"

[warehouse]
data_dir = "out"

[[locations]]
id = 1001
short_code = "VIE01"
timezone = "Europe/Vienna"
api_key_env = "POS_KEY_VIE01"

[[locations]]
id = 1003
short_code = "GRZ01"
api_key_env = "POS_KEY_GRZ01"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pos.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_config_file_is_read_with_data_dir_relative_to_it(tmp_path):
    settings = load_settings(write(tmp_path, GOOD.format(url="https://pos.example.com/")))
    assert settings.source.base_url == "https://pos.example.com"
    assert settings.warehouse.data_dir == tmp_path / "out"
    assert [loc.id for loc in settings.locations] == [1001, 1003]
    assert settings.locations[1].timezone == "Europe/Vienna"


def test_every_problem_is_reported_at_once_with_its_key_path(tmp_path):
    bad = """
[source]
base_url = "ftp://pos"
page_size = 0

[warehouse]
memory_limit = "lots"
storage_version = "v1.0.0"

[[locations]]
id = 1001
short_code = "VIE01"
timezone = "Mars/Olympus"
api_key_env = "POS KEY"

[[locations]]
short_code = "X"
api_key_env = "K"
"""
    with pytest.raises(ConfigError) as err:
        load_settings(write(tmp_path, bad))
    message = str(err.value)
    for where in ("source.base_url", "source.page_size", "warehouse.memory_limit",
                  "warehouse.storage_version", "locations.0.timezone",
                  "locations.0.api_key_env", "locations.1.id"):
        assert where in message, where


def test_missing_key_variable_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("POS_KEY_VIE01", raising=False)
    monkeypatch.setenv("POS_KEY_GRZ01", "x")
    settings = load_settings(write(tmp_path, GOOD.format(url="https://pos.example.com")))
    with pytest.raises(ConfigError, match="POS_KEY_VIE01") as err:
        require_keys(settings)
    assert "location 1001" in str(err.value) and "GRZ01" not in str(err.value)


def test_no_config_means_the_sandbox(monkeypatch):
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    settings = load_settings()
    assert settings.uses_sandbox and [loc.id for loc in settings.locations] == [1001, 1002, 1003]


def test_load_command_exits_non_zero_naming_the_failed_partition(sandbox_url, tmp_path,
                                                                 monkeypatch, capsys):
    monkeypatch.setenv("POS_KEY_VIE01", "sandbox-key-1001")
    monkeypatch.setenv("POS_KEY_GRZ01", "sandbox-key-1002")  # wrong location's key
    config = write(tmp_path, GOOD.format(url=sandbox_url))
    code = main(["load", "--config", str(config), "--start", "2026-11-19", "--end",
                 "2026-11-20", "--no-models"])
    out = capsys.readouterr()
    assert code == 1
    assert "FAILED 1003 2026-11-19" in out.out and "FAILED 1003 2026-11-20" in out.out
    assert "HTTP 403" in out.out and "sandbox-key" not in out.out + out.err
    assert "revenue: 2 of 4 partitions loaded" in out.out
    committed = {(p["location_id"], p["business_date"])
                 for p in Lake(tmp_path / "out/lake").partitions("revenue")}
    assert committed == {("1001", "2026-11-19"), ("1001", "2026-11-20")}


def test_load_command_only_the_named_location(sandbox_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POS_KEY_VIE01", "sandbox-key-1001")
    config = write(tmp_path, GOOD.format(url=sandbox_url))
    code = main(["load", "--config", str(config), "--start", "2026-11-20", "--end",
                 "2026-11-20", "--location", "vie01"])  # a short code, in any case
    assert code == 0, capsys.readouterr()
    with duckdb.connect(str(tmp_path / "out/warehouse.duckdb"), read_only=True) as con:
        assert con.execute("select distinct location_id from fct_turnover_daily").fetchall() \
            == [(1001,)]


def test_an_unknown_location_names_the_configured_ones(sandbox_url, tmp_path, capsys):
    config = write(tmp_path, GOOD.format(url=sandbox_url))
    assert main(["load", "--config", str(config), "--start", "2026-11-20", "--end",
                 "2026-11-20", "--location", "VIE02"]) == 2
    err = capsys.readouterr().err
    assert "location VIE02 is not configured (configured: 1001 VIE01, 1003 GRZ01)" in err


def test_version_and_bare_command(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == "pos-etl 0.1.0"
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: pos-etl") and "load" in out and "build" in out


def test_help_and_usage_errors_answer_before_dagster_or_duckdb_is_imported():
    """`pos-etl --help`, a command's help and a usage error answer at once: nothing heavy
    is imported before the arguments are read (benchmarks/cli.py times it)."""
    import subprocess
    import sys

    probe = ("import sys\nfrom pipeline.cli import main\n"
             "codes = [main(['--help']), main(['load', '--help']), main(['load', '--bogus'])]\n"
             "print(codes, sorted(m for m in ('dagster', 'duckdb', 'sqlglot', 'pyarrow',"
             " 'pydantic') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[0, 0, 2] []", done.stdout + done.stderr


def test_config_errors_exit_2(tmp_path, capsys):
    assert main(["load", "--config", str(tmp_path / "nope.toml"), "--start", "2026-11-20",
                 "--end", "2026-11-20"]) == 2
    assert "config file not found" in capsys.readouterr().err


def test_demo_runs_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    code = run_demo(tmp_path / "data", days=2, today=date(2026, 11, 22))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "result: OK" in out and "days_not_closed" in out and "make dev" in out
    assert (tmp_path / "data" / "report" / "index.html").exists() and "Report:    file://" in out
    yesterday = (date(2026, 11, 22) - timedelta(days=1)).isoformat()
    with duckdb.connect(str(tmp_path / "data/warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("select location_id, count(*) from fct_turnover_daily group by 1 "
                           "order by 1").fetchall()
        assert con.execute("select count(*), count(*) filter (where is_closed) "
                           "from rpt_daily_close").fetchall() == [(6, 6)]
        assert rows == [(1001, 2), (1002, 2), (1003, 2)]
        assert con.execute("select max(business_date) from fct_turnover_daily").fetchone()[0] \
            .isoformat() == yesterday


def test_the_config_examples_of_the_readme_and_the_docs_are_valid(tmp_path):
    import re

    root = Path(__file__).resolve().parents[2]
    for page in (root / "README.md", root / "docs" / "configuration.md"):
        text = page.read_text(encoding="utf-8")
        example = re.search(r"```toml\n(.*?)```", text, flags=re.S).group(1)
        settings = load_settings(write(tmp_path, example))
        assert settings.source.base_url == "https://pos.example.com", page
        assert settings.locations[0].api_key_env == "POS_KEY_VIE01", page
        assert settings.schedule.lookback_days == 3, page


def test_a_data_dir_that_is_a_file_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "data").write_text("not a folder")
    config = tmp_path / "pos.toml"
    config.write_text('[warehouse]\ndata_dir = "data"\n[[locations]]\nid = 1001\n'
                      'short_code = "VIE01"\napi_key_env = "POS_TEST_KEY_1001"\n')
    assert main(["load", "--config", str(config), "--start", "2026-11-20", "--end",
                 "2026-11-20"]) == 2
    err = capsys.readouterr().err
    assert "warehouse.data_dir" in err and "is a file, not a folder" in err
    assert "Traceback" not in err


def test_a_disk_error_is_a_one_line_error(sandbox_url, tmp_path,
                                        sandbox_keys, capsys, monkeypatch):
    import pipeline.orchestration.loader
    from pipeline.orchestration.instance import dagster_home

    def full_disk(settings):  # the home cannot be made or written (prepare_home)
        raise OSError(28, "No space left on device", str(dagster_home(settings)))

    monkeypatch.setattr(pipeline.orchestration.loader, "open_instance", full_disk)
    config = write_config(tmp_path, sandbox_url)
    assert main(["load", "--config", str(config), "--start", "2026-11-20", "--end",
                 "2026-11-20"]) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith("dagster_home: No space left on device")
    said, _error = err.strip().splitlines()  # what it is about to do, then the one error
    assert said.startswith("load: business dates ")


def test_a_config_saved_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "pos.toml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.format(url="https://pos.example.com").encode())
    assert [loc.id for loc in load_settings(path).locations] == [1001, 1003]


@pytest.mark.parametrize(("change", "said"), [
    (('data_dir = "out"', 'data_dir = ""'), "warehouse.data_dir: Value error, is empty"),
    (('data_dir = "out"', 'data_dir = "out"\nmemory_limit = "0MB"'),
     "warehouse.memory_limit: Value error, 0MB is too little for a build: at least 64MB"),
    (("id = 1003", "id = 100000000000000000000000000"),
     "locations.1.id: Input should be less than or equal to 9223372036854775807"),
    (("[[locations]]\nid = 1001", '[schedule]\nstart_date = "0001-01-01"\n\n'
                                   "[[locations]]\nid = 1001"),
     "schedule.start_date: Input should be greater than or equal to 2000-01-01"),
], ids=["empty-data-dir", "zero-memory", "huge-id", "year-1"])
def test_a_value_that_would_fail_later_is_refused_where_it_is_configured(
        tmp_path, capsys, change, said):
    text = GOOD.format(url="https://pos.example.com").replace(*change)
    assert main(["load", "--config", str(write(tmp_path, text)), "--days", "1"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err


@pytest.mark.parametrize(("key", "said"), [
    ("k-7001-3f9c2a\n", "it ends with a newline or a space"),
    ("k-7001-3f9c2a ", "it ends with a newline or a space"),
    (" k-7001-3f9c2a", "it starts with a space"),
])
def test_a_key_with_whitespace_is_named_malformed_before_any_request(
        tmp_path, capsys, monkeypatch, key, said):
    monkeypatch.setenv("POS_KEY_VIE01", key)
    monkeypatch.setenv("POS_KEY_GRZ01", "k-7003-aaaa")
    config = write(tmp_path, GOOD.format(url="http://127.0.0.1:9"))
    assert main(["load", "--config", str(config), "--days", "1"]) == 2
    err = capsys.readouterr().err
    assert "location 1001: environment variable POS_KEY_VIE01 (its API key) is malformed: " \
           f"{said}" in err and "GRZ01" not in err
    assert "k-7001" not in err
