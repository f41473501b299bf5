"""Usage and configuration mistakes are one line and exit 2, with a suggestion where one
fits (issue 40, items 5 and 10)."""

from datetime import date, timedelta

import pytest

from pipeline.cli import main
from tests.conftest import write_config

pytestmark = pytest.mark.usefixtures("dagster_in_memory")



def test_a_config_file_that_is_not_utf8_is_one_line_and_exit_2(tmp_path, capsys):
    config = tmp_path / "pos.toml"
    config.write_bytes(b'# K\xf6ln, saved as Latin-1\n[source]\nbase_url = "http://x"\n')
    assert main(["status", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "not UTF-8 text (byte 0xf6 at offset 3)" in err


def test_a_mistyped_config_key_gets_a_did_you_mean(tmp_path, capsys):
    config = write_config(tmp_path, "http://127.0.0.1:9")
    config.write_text(config.read_text().replace("api_key_env", "api_key_evn"))
    assert main(["status", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "locations.0.api_key_evn: Extra inputs are not permitted (did you mean " \
           "'api_key_env'?)" in err


def test_an_end_in_the_future_is_a_usage_error(tmp_path, capsys):
    config = write_config(tmp_path, "http://127.0.0.1:9")
    later = date.today() + timedelta(days=3)
    assert main(["load", "--config", str(config), "--start", str(date.today()),
                 "--end", str(later)]) == 2
    err = capsys.readouterr().err
    assert f"--end {later} is in the future" in err and "configuration error" not in err


@pytest.fixture(scope="module")
def built(tmp_path_factory, sandbox_url):
    """A warehouse of one day of location 1001, and its config."""
    from pipeline.core.reporting import Reporter
    from pipeline.orchestration.configs import load_settings
    from pipeline.orchestration.loader import run_load
    from pos_sandbox import world

    folder = tmp_path_factory.mktemp("usage")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POS_TEST_KEY_1001", world.api_key(1001))
        config = write_config(folder, sandbox_url)
        report = run_load(load_settings(config), date(2026, 11, 20), date(2026, 11, 20),
                          None, catalog=False, progress=Reporter())
    assert report.ok, report.summary()
    return config


def test_a_mistyped_model_is_a_usage_error_with_a_did_you_mean(built, capsys):
    assert main(["export", "rpt_daly_close", "--config", str(built)]) == 2
    err = capsys.readouterr().err
    assert "no model 'rpt_daly_close'; did you mean 'rpt_daily_close'" in err
    assert err.count("\n") == 1  # not the list of every model


@pytest.mark.parametrize(("fmt", "name"), [("datev", "x.xlsx"), ("bmd", "x.parquet"),
                                           ("csv", "x.xlsx"), ("xlsx", "x.csv")])
def test_a_format_written_into_a_file_named_for_another_is_refused(
        built, tmp_path, capsys, fmt, name):
    target = tmp_path / name
    assert main(["export", "rpt_daily_close", "--config", str(built), "--format", fmt,
                 "-o", str(target)]) == 2
    assert "give --output a name that fits the format" in capsys.readouterr().err
    assert not target.exists()
