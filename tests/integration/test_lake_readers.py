"""The lake's readers as docs/lake.md shows them: each snippet marked ``<!-- reader: ... -->``
run as written, in a fresh interpreter, 20 times against a loaded lake. Every run exits 0
(a cron job would report anything else) and prints each location's business dates with
the receipts and their ``total_amount`` exactly as the warehouse's ``fct_receipts``. The
DuckDB reader runs in its own virtual environment (DuckDB 1.5 with the ``delta``
extension from PyPI), as its users install it."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.conftest import loaded_warehouse
from tests.venvs import ROOT, tool_env

RUNS = 20
READERS = {"python": None, "duckdb-delta": ["duckdb==1.5.5", "duckdb-extension-delta==1.5.5"]}
"""Each kind of documented reader and the packages of its own environment (None: the
project's, which has Polars and deltalake)."""


def documented_readers() -> list[tuple[str, str]]:
    """(kind, code) of every snippet of docs/lake.md marked as a reader."""
    text = (ROOT / "docs" / "lake.md").read_text()
    found = re.findall(r"<!-- reader: ([\w-]+) -->\n( *)```python\n(.*?)\n\2```", text, re.S)
    return [(kind, textwrap.dedent(code)) for kind, _, code in found]


@pytest.fixture(scope="module")
def loaded(sandbox_url, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("readers")
    loaded_warehouse(sandbox_url, folder / "data", date(2026, 11, 18), date(2026, 11, 20),
                     [1001, 1002])
    return folder


def expected(folder: Path) -> list[str]:
    with duckdb.connect(str(folder / "data" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("""
            select location_id, business_date, count(*), sum(total_amount)
            from fct_receipts group by all order by all""").fetchall()
    return [f"{loc} {day} {n} {Decimal(total):.4f}" for loc, day, n, total in rows]


def printed(output: str) -> list[str]:
    """The reader's lines, its total as a decimal with the lake's four places."""
    lines = []
    for line in output.strip().splitlines():
        loc, day, n, total = line.split()
        lines.append(f"{loc} {day[:10]} {n} {Decimal(total):.4f}")
    return lines


def test_the_documented_readers_exit_cleanly_and_read_the_lake_exactly(loaded):
    readers = documented_readers()
    assert {kind for kind, _ in readers} == set(READERS), "a reader kind without a runner"
    assert len(readers) >= 3
    want = expected(loaded)
    assert want
    for kind, code in readers:
        packages = READERS[kind]
        python = str(tool_env("lake-reader-" + kind, packages) / "bin" / "python") \
            if packages else sys.executable

        def run(_: int, python=python, code=code) -> subprocess.CompletedProcess:
            return subprocess.run([python, "-c", code], cwd=loaded, capture_output=True,
                                  text=True, timeout=120)

        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(run, range(RUNS)))
        failed = [d for d in done if d.returncode != 0]
        assert not failed, (f"{kind} reader: {len(failed)} of {RUNS} runs exited "
                            f"{sorted({d.returncode for d in failed})}: "
                            f"{failed[0].stderr[-500:]}\n{code}")
        assert all(printed(d.stdout) == want for d in done), (kind, done[0].stdout, want)
