"""`make lint` holds on every clean clone CI tests: the Python (ruff) and the SQL models
(sqlfluff with the DuckDB dialect, configured in .sqlfluff) follow the style."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_the_python_and_the_sql_models_are_lint_clean():
    for command in ([BIN / "ruff", "check", "pipeline", "pos_sandbox", "tests", "benchmarks"],
                    [BIN / "sqlfluff", "lint", "dbt_like_sql"]):
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_the_pipeline_imports_no_private_api_and_the_sandbox_only_where_it_is_chosen():
    """The sandbox is the ``pos`` resource's other implementation, chosen in one place
    (its settings beside it: ``configs``; started by the CLI's ``sandbox`` command); no
    private module of a dependency."""
    sandbox, private = [], []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        names = _imports(path)
        where = path.relative_to(ROOT).as_posix()
        sandbox += [where for n in names if n.split(".")[0] == "pos_sandbox"]
        private += [f"{where}: {n}" for n in names
                    if any(part.startswith("_") and not part.startswith("__")
                           for part in n.split(".")[1:]) and n.split(".")[0] != "pipeline"]
    assert sorted(set(sandbox)) == ["pipeline/cli/__init__.py", "pipeline/orchestration/configs.py",
                                    "pipeline/orchestration/resources.py"]
    assert private == []
