"""A POS that echoes the location's key in its data never gets it into the event log, the
summary or a log line (issue 40, item 2): every POS string is redacted before it is
escaped or shortened."""

import base64
import json
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


def forms(key: str) -> dict[str, str]:
    """The key as servers echo it: raw, case-swapped, URL-encoded in either case, base64
    (standard, at an offset in a longer text), JSON-escaped."""
    return {"raw": key, "swapped": key.swapcase(),
            "url-upper": "".join(f"%{ord(c):02X}" for c in key),
            "url-lower": "".join(f"%{ord(c):02x}" for c in key),
            "base64": base64.b64encode(key.encode()).decode(),
            "base64-inside": base64.b64encode(f"key={key}".encode()).decode(),
            "json": "".join(f"\\u{ord(c):04x}" for c in key)}


def leaked_forms(text: str) -> list[str]:
    """The forms of the key (``forms``, each less its last character, which base64 shares
    with what follows) found in ``text``, Markdown's backslashes taken out too."""
    found = []
    for name, form in forms(KEY).items():
        if name.startswith("base64"):  # the part that is the key's alone
            form = base64.b64encode(KEY.encode()).decode()[:12] if name == "base64" else \
                base64.b64encode(f"key={KEY}".encode()).decode()[8:20]
        for where in (text, text.replace("\\\\", "\\"), text.replace("\\", "")):
            if form.lower() in where.lower():
                found.append(name)
                break
    return found


class EchoKeyIn400:
    """ASGI app: every request answers HTTP 400 with a body that quotes the caller's key
    in the form ``form`` names (``forms``)."""

    def __init__(self, form: str):
        self.form = form

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        key = headers.get(b"x-api-key", b"").decode() or headers.get(
            b"authorization", b"").decode().removeprefix("Bearer ")
        body = json.dumps({"error": f"bad key {forms(key)[self.form]}"}).encode()
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


def test_a_key_echoed_in_an_error_in_any_encoding_is_never_shown_or_stored(
        tmp_path, sandbox_keys, capsys):
    """A POS answering 400 with the caller's key URL-encoded, base64 or JSON-escaped:
    the error is shown and recorded with the key redacted, in every form."""
    for n, form in enumerate(forms(KEY)):
        folder = tmp_path / str(n)
        folder.mkdir()
        with serving(EchoKeyIn400(form)) as url:
            config = write_config(folder, url)
            assert main(["load", "--config", str(config), "--start", DAY, "--end", DAY,
                         "--no-catalog", "--no-vouchers"]) == 1
        out = capsys.readouterr()
        assert "answered HTTP 400" in out.out + out.err, (form, out)
        assert leaked_forms(out.out + out.err) == [], (form, out)
        for path in (folder / "data" / "dagster_home").rglob("*"):
            if path.is_file():
                text = path.read_bytes().decode("utf-8", "replace")
                assert leaked_forms(text) == [], (form, path)


def test_a_key_echoed_in_receipts_and_catalog_is_never_stored_nor_logged(
        tmp_path, sandbox_keys, capsys):
    """A POS that writes the key into receipt and catalog text fields: those partitions
    are refused by name (the field named), nothing of them reaches the lake, and the key
    is in no line and no event."""
    import duckdb

    app = _Alter(_Alter(create_app(), echoing_receipts, REPORTS), echoing_catalog,
                 "/external/product")
    with serving(app) as url:
        config = write_config(tmp_path, url)
        assert main(["load", "--config", str(config), "--start", DAY, "--end", DAY]) == 1
    out = capsys.readouterr()
    assert "location 1001 business date 2026-11-20: fields receipts." in out.out + out.err
    assert "carry an API key (the POS echoed it into its data): not stored" \
        in out.out + out.err
    assert "catalog snapshot of location 1001" in out.out + out.err
    assert leaks(out.out + out.err) == []
    home = Path(tmp_path / "data" / "dagster_home")
    for path in home.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            assert leaks(text) == [], path
    lake = tmp_path / "data" / "lake"
    stored = list(lake.rglob("*.parquet"))
    if stored:
        texts = duckdb.sql(f"select * from read_parquet({[str(p) for p in stored]!r}, "
                           "union_by_name = true)").fetchall()
        assert leaks(repr(texts)) == []
