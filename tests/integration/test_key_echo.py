"""A POS that echoes the location's key in its data never gets it into the event log, the
summary or a log line (issue 40, item 2): every POS string is redacted before it is
escaped or shortened."""

from pathlib import Path

from pipeline.cli import main
from pipeline.core.untrusted import KEY_RUN
from pos_sandbox import world
from pos_sandbox.app import create_app
from pos_sandbox.server import serving
from tests.conftest import write_config
from tests.hostile import REPORTS, _Alter

DAY = "2026-11-20"
KEY = world.api_key(1001)
KEEP = {"transactionId", "dateTime", "bookDate", "uniqueId", "externalId", "id"}
"""Fields the load needs to place and dedupe a row (a location id, a receipt id)."""


def echo(value, key: str, name: str = ""):
    """``value`` with every string field the key, case-swapped, and a field named by it."""
    if isinstance(value, dict):
        out = {k: echo(v, key, k) for k, v in value.items()}
        return {**out, key.swapcase(): "x"}
    if isinstance(value, list):
        return [echo(v, key) for v in value]
    if isinstance(value, str) and name not in KEEP:
        return key.swapcase()
    return value


def echoing_receipts(location, rows):
    day = [r for r in rows if r["dateTime"].startswith("20.11.2026")]
    for row in day[:3]:  # three receipts echo it in every string field, lines included
        row.update(echo({k: v for k, v in row.items() if k != "location"}, KEY))
    return rows


def echoing_catalog(location, envelope):
    envelope["data"] = [echo(row, KEY) for row in envelope["data"]]
    return envelope


def leaks(text: str) -> list[str]:
    """Runs of ``KEY_RUN`` characters of the key in ``text``, in any case, with the
    backslashes of Markdown escaping taken out."""
    plain = text.replace("\\", "").lower()
    key = KEY.lower()
    return sorted({key[i:i + KEY_RUN] for i in range(len(key) - KEY_RUN + 1)
                   if key[i:i + KEY_RUN] in plain})


def test_a_key_echoed_in_receipts_and_catalog_never_reaches_the_event_log(
        tmp_path, sandbox_keys, capsys):
    app = _Alter(_Alter(create_app(), echoing_receipts, REPORTS), echoing_catalog,
                 "/external/product")
    with serving(app) as url:
        config = write_config(tmp_path, url)
        main(["load", "--config", str(config), "--start", DAY, "--end", DAY])
    out = capsys.readouterr()
    assert "receipts.<API_KEY> (3 rows)" in out.out  # the echoed field seen, named redacted
    assert leaks(out.out + out.err) == []
    home = Path(tmp_path / "data" / "dagster_home")
    for path in home.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            assert leaks(text) == [], path
