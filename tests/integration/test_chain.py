"""A chain: the config ``pos-etl sandbox --locations N --write-config`` writes loads every
location of the chain over real HTTP, turnover to the cent."""

from datetime import date, time

import duckdb
import pytest

from pipeline.cli import main
from pipeline.orchestration.configs import load_settings
from pos_sandbox import world
from pos_sandbox.app import SandboxConfig
from pos_sandbox.server import chain_config, running_sandbox
from tests.conftest import truth_turnover

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


CHAIN = 12
DAY = date(2026, 6, 1)


def test_a_chain_config_loads_every_location(tmp_path, monkeypatch, capsys):
    chain = world.chain(CHAIN)
    with running_sandbox(SandboxConfig(locations=CHAIN)) as url:
        toml, env = chain_config(url, chain, start_date=DAY)
        config = tmp_path / "chain.toml"
        config.write_text(toml)
        assert [loc.id for loc in load_settings(config).locations] == \
            [loc.id for loc in chain.locations]
        assert "sandbox-key" not in toml  # keys live in the environment file only
        for line in env.split():
            monkeypatch.setenv(*line.split("=", 1))
        code = main(["load", "--config", str(config), "--start", DAY.isoformat(),
                     "--end", DAY.isoformat(), "--no-catalog"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"revenue: {CHAIN} of {CHAIN} partitions loaded" in out
    assert "vouchers: not loaded" not in out and "vouchers" in out  # the ledger is served too
    with duckdb.connect(str(tmp_path / "data/warehouse.duckdb"), read_only=True) as con:
        turnover = dict(con.execute("select location_id, turnover_net from fct_turnover_daily "
                                    "where business_date = ?", [DAY]).fetchall())
    assert turnover == {loc.id: truth_turnover(loc.id, DAY, starts=time.fromisoformat(
        loc.business_day_starts)) for loc in chain.locations}
    assert {loc.business_day_starts for loc in chain.locations} == {"00:00", "03:00"}


def test_sandbox_command_writes_the_config_and_key_file(tmp_path, monkeypatch):
    served = {}
    monkeypatch.setattr("pos_sandbox.server.serve_forever",
                        lambda config, port, host: served.update(chain=config.chain))
    config = tmp_path / "chain.toml"
    assert main(["sandbox", "--locations", "40", "--port", "8799",
                 "--write-config", str(config)]) == 0
    assert len(served["chain"].locations) == 40
    settings = load_settings(config)
    assert settings.source.base_url == "http://127.0.0.1:8799"
    assert settings.source.voucher_url == "http://127.0.0.1:8799"
    assert len(settings.locations) == 40
    keys = dict(line.split("=", 1) for line in (tmp_path / "chain.env").read_text().split())
    assert keys == {loc.api_key_env: f"sandbox-key-{loc.id}" for loc in settings.locations}
