"""A non-editable install (what a wheel or a Docker image holds) runs the whole demo."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_non_editable_install_carries_the_sql_models_and_runs_the_demo(tmp_path):
    source = tmp_path / "source"  # only what git tracks: no build output in the repo
    for name in subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.splitlines():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(source)], check=True)
    assert (site / "dbt_like_sql" / "marts" / "fct_turnover_daily.sql").exists()
    assert (site / "dbt_like_sql" / "marts" / "fct_receipts.yml").exists()  # its contract
    assert (site / "dbt_like_sql" / "columns.yml").exists()
    assert not (site / "pos_sandbox" / "tests").exists()

    env = {k: v for k, v in os.environ.items()
           if k not in ("DAGSTER_HOME", "POS_ETL_CONFIG", "POS_ETL_DATA_DIR")}
    env["PYTHONPATH"] = str(site)
    run = subprocess.run(
        [sys.executable, "-c",
         "import sys, pipeline, dbt_like_sql; "
         "assert pipeline.__file__.startswith(sys.argv[1]), pipeline.__file__; "
         "assert dbt_like_sql.__file__.startswith(sys.argv[1]), dbt_like_sql.__file__; "
         "from pipeline.cli import main; sys.exit(main(['demo', '--days', '1']))",
         str(site)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert re.search(r"\(\d+ models; \d+ partitions computed", run.stdout)
    assert "result: OK" in run.stdout
    warehouse = tmp_path / "data" / "sandbox" / "warehouse.duckdb"  # the sandbox's own folder
    assert warehouse.exists()
    import duckdb
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*) from duckdb_columns() where table_name = "
                           "'rpt_daily_close' and comment is null").fetchone() == (0,)
