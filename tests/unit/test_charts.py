"""Charts of accounts as data: the shipped charts hold together, a client's own chart is
read from its file beside the config, and a chart that cannot be used is a config error
naming the file and the field."""

from __future__ import annotations

import tomllib

import pytest

from pipeline.core.charts import ROLES, SHIPPED, AccountRange, shipped_charts
from pipeline.core.outcomes import ConfigError
from pipeline.core.settings import read_settings

CONFIG = """
[warehouse]
data_dir = "data"
[accounting.accounts]
chart_file = "kontenrahmen.toml"
payment_accounts = { Bankomat = "1460", "id:6" = "1461" }
[[locations]]
id = 1001
short_code = "VIE01"
api_key_env = "POS_KEY_1001"
"""


def test_every_shipped_chart_declares_every_role_and_its_defaults_fit():
    assert shipped_charts() == ["ekr", "skr03", "skr04"]
    for chart in shipped_charts():
        table = tomllib.loads((SHIPPED / f"{chart}.toml").read_text(encoding="utf-8"))
        assert set(table["roles"]) == set(ROLES), chart
        for role, spec in table["roles"].items():
            ranges = [r.split("-") for r in spec["ranges"]]
            accounts = [spec["account"]] if "account" in spec else \
                list(spec.get("accounts", {}).values())
            for account in accounts:
                assert any(a <= account <= b and len(a) == len(account) for a, b in ranges), \
                    (chart, role, account)


def test_a_range_holds_ledger_accounts_by_their_first_digits_and_personal_accounts_apart():
    four, five = AccountRange("1600", "1699"), AccountRange("10000", "69999")
    assert four.holds("1600", 4) and four.holds("16000", 5) and not four.holds("16000", 4)
    assert five.holds("10000", 4) and five.holds("100000", 5) and not five.holds("1000", 4)
    assert not four.holds("1700", 4)


def test_a_clients_own_chart_is_read_from_beside_the_config(tmp_path):
    own = (SHIPPED / "skr04.toml").read_text(encoding="utf-8").replace(
        'id = "skr04"', 'id = "hotel-gmbh"').replace('name = "SKR 04"', 'name = "Hotel GmbH"')
    (tmp_path / "kontenrahmen.toml").write_text(own, encoding="utf-8")
    (tmp_path / "pos.toml").write_text(CONFIG, encoding="utf-8")
    accounts = read_settings(tmp_path / "pos.toml").accounting.chart_of_accounts
    assert accounts.chart == "hotel-gmbh" and accounts.datev_chart == "04"
    assert accounts.cash_account == "1600" and accounts.voucher_account == "3500"
    assert accounts.non_revenue_accounts == {"Gutscheinverkauf": "3500"}
    assert accounts.payment_accounts == {"Bankomat": "1460", "id:6": "1461"}


def test_a_clients_chart_reaches_the_warehouse_as_rows_and_its_name_as_one_comment_line(
        tmp_path):
    """The chart in force is rows the booking rules read (``chart_accounts()``, ...); its
    name, from the client's file, lands in a comment of the macros' SQL: a line break in
    it ends nothing."""
    import duckdb

    from pipeline.warehouse.config_sql import config_macros

    own = (SHIPPED / "skr04.toml").read_text(encoding="utf-8").replace(
        'name = "SKR 04"', 'name = "Hotel GmbH\\ncreate macro planted() as 1;\\n--"')
    (tmp_path / "kontenrahmen.toml").write_text(own, encoding="utf-8")
    (tmp_path / "pos.toml").write_text(CONFIG, encoding="utf-8")
    accounting = read_settings(tmp_path / "pos.toml").accounting
    with duckdb.connect() as con:
        for sql in config_macros(accounting):
            con.execute(sql)
        assert not con.execute("select * from duckdb_functions() "
                               "where function_name = 'planted'").fetchall()
        assert con.execute("select booking_account('cash'), payment_account(6, 'x', null), "
                           "payment_account(1, 'Bankomat', null)").fetchone() == (
            "1600", "1461", "1460")


@pytest.mark.parametrize(("change", "error"), [
    (('ranges = ["1600-1699"]', 'ranges = ["16xx"]'),
     "roles.cash.ranges: '16xx' is not a range of accounts"),
    (('account = "1600"', 'account = "1800"'),
     "roles.cash: account 1800 lies outside the role's ranges (1600-1699)"),
    (("[roles.card_fees]", "[roles.card_fee]"), "roles.card_fee is not a role"),
])
def test_a_chart_that_cannot_be_used_is_a_config_error_naming_file_and_field(
        tmp_path, change, error):
    own = (SHIPPED / "skr04.toml").read_text(encoding="utf-8").replace(*change)
    (tmp_path / "kontenrahmen.toml").write_text(own, encoding="utf-8")
    (tmp_path / "pos.toml").write_text(CONFIG, encoding="utf-8")
    with pytest.raises(ConfigError) as found:
        read_settings(tmp_path / "pos.toml")
    assert str(found.value).startswith(f"{tmp_path / 'pos.toml'}: accounting.accounts."
                                       f"chart_file: {tmp_path / 'kontenrahmen.toml'}: ")
    assert error in str(found.value) and "\n" not in str(found.value)


def test_a_payment_type_key_is_a_name_or_an_id(tmp_path):
    (tmp_path / "pos.toml").write_text(CONFIG.replace('"id:6"', '"id:six"').replace(
        'chart_file = "kontenrahmen.toml"\n', ""), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"payment type 'id:six': name it by "
                                          r"paymentType.name or as \"id:<paymentType.id>\""):
        read_settings(tmp_path / "pos.toml")
