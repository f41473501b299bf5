"""The warehouse file opened the way analysts open it: copied alone to another folder (the
lake and everything else gone), read-only, by the DuckDB that BI tools bundle (1.1, the
oldest this project writes for, and 1.5.6, the newest 1.x), by DuckDB's command-line
client and through SQLAlchemy with duckdb-engine (how Superset and other BI servers
connect). Each client is installed by the test into a virtual environment of its own
(kept in ``.venv-compat/`` for the next run)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from tests.conftest import loaded_warehouse
from tests.venvs import tool_env

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).parents[1] / "bi_probe.py"
CLIENTS = {
    "duckdb-1.1": ["duckdb==1.1.3"],
    "duckdb-1.5": ["duckdb==1.5.6"],
    "duckdb-cli-1.5": ["duckdb-cli==1.5.6"],
    "sqlalchemy": ["duckdb==1.5.6", "duckdb-engine==0.17.0", "sqlalchemy==2.1.9"],
}


def client_env(name: str) -> Path:
    """The virtual environment of one client (made once, with only that client)."""
    return tool_env(name, CLIENTS[name])


@pytest.fixture(scope="module")
def copied(sandbox_url, tmp_path_factory) -> tuple[Path, dict]:
    """A warehouse built from the sandbox, copied alone to another folder (its data dir
    then deleted), and what this project's own DuckDB sees in the copy."""
    data_dir = tmp_path_factory.mktemp("built") / "data"
    settings = loaded_warehouse(sandbox_url, data_dir, date(2026, 10, 30), date(2026, 11, 2))
    copy = tmp_path_factory.mktemp("elsewhere") / "pos.duckdb"
    shutil.copyfile(settings.warehouse.warehouse_path, copy)
    shutil.rmtree(data_dir)
    seen = subprocess.run([sys.executable, str(PROBE), "duckdb", str(copy)], check=True,
                          capture_output=True, text=True).stdout
    return copy, json.loads(seen)


def test_the_copy_answers_every_model_with_its_comment(copied):
    from pipeline.warehouse import discover_models

    _, ours = copied
    models = {m.qualified for m in discover_models().values() if m.stored}
    assert set(ours["rows"]) == models
    assert all(ours["comments"][name] for name in models)
    assert ours["rows"]["main.fct_receipts"] > 1000 and ours["decimal"]


@pytest.mark.parametrize("client", ["duckdb-1.1", "duckdb-1.5", "sqlalchemy"])
def test_a_bi_client_sees_what_we_see(copied, client):
    copy, ours = copied
    python = client_env(client) / "bin" / "python"
    how = "sqlalchemy" if client == "sqlalchemy" else "duckdb"
    done = subprocess.run([str(python), str(PROBE), how, str(copy)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    assert theirs["rows"] == ours["rows"], theirs["client"]
    assert theirs["comments"] == ours["comments"], theirs["client"]
    assert theirs["turnover"] == ours["turnover"] and theirs["decimal"], theirs["client"]
    # the analyst's catalog holds the analyst's tables: no bookkeeping of the build
    if client == "sqlalchemy":  # what Superset lists: database.schema
        assert {s.split(".")[-1] for s in theirs["schemas"] if s.startswith("pos.")} == \
            {"main"}, theirs["schemas"]
    else:  # staging is computed by each build, not stored
        assert theirs["schemas"] == ["main"], theirs["schemas"]


def test_the_start_pages_queries_answer_on_duckdb_1_1(copied, tmp_path):
    """The data dictionary's first page (dbt_like_sql/start_here.md) shows example queries:
    each runs, with rows, on the oldest DuckDB this project writes for."""
    from pipeline.core.project import start_page

    queries = re.findall(r"```sql\n(.*?)```", start_page(), re.S)
    assert len(queries) >= 8
    listed = tmp_path / "queries.json"
    listed.write_text(json.dumps(queries), encoding="utf-8")
    copy, _ = copied
    python = client_env("duckdb-1.1") / "bin" / "python"
    done = subprocess.run([str(python), str(PROBE), "queries", str(copy), str(listed)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)["answers"]
    assert [(sql.splitlines()[0], a) for sql, a in zip(queries, answers, strict=True)
            if not isinstance(a, int) or a == 0] == []


def test_the_duckdb_command_line_client_sees_what_we_see(copied):
    copy, ours = copied
    cli = client_env("duckdb-cli-1.5") / "bin" / "duckdb"
    counts = " union all ".join(f"select '{name}' as name, count(*) as n from {name}"
                                for name in sorted(ours["rows"]))
    done = subprocess.run(
        [str(cli), "-readonly", "-json", str(copy), "-c",
         f"{counts}; select sum(turnover_net)::varchar as turnover from fct_turnover_daily"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    counted, turnover = [json.loads(block) for block in
                         done.stdout.replace("]\n[", "]\x00[").split("\x00")]
    assert {row["name"]: row["n"] for row in counted} == ours["rows"]
    assert turnover == [{"turnover": ours["turnover"]}]
