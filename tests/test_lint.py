"""`make lint` holds on every clean clone CI tests: the Python (ruff) and the SQL models
(sqlfluff with the DuckDB dialect, configured in .sqlfluff) follow the style."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_the_python_and_the_sql_models_are_lint_clean():
    for command in ([BIN / "ruff", "check", "pipeline", "pos_sandbox", "tests", "benchmarks"],
                    [BIN / "sqlfluff", "lint", "dbt_like_sql"]):
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
