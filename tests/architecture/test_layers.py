"""The packages of ``pipeline`` are layers: each imports only those below it (and itself),
so a reader knows a module's room from its path and a change knows what it may touch. Only
``orchestration`` imports Dagster (besides the code location, ``pipeline/definitions.py``).
Imports inside functions count too: a late import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "pipeline"
LAYERS = ("core", "pos_api", "lake", "extract", "load", "warehouse", "accounting", "outputs",
          "orchestration", "cli")
"""From the bottom up: settings, typed outcomes, money, untrusted text; the POS API; the
lake; wire -> Arrow; the steps of a load; the warehouse; accounting; exports, report,
dictionary, alerts; everything Dagster; the command line."""
ENTRY_POINTS = {"definitions": "orchestration", "entry": "cli", "__init__": "core"}
"""The modules at the package's root and the layer whose rights they have: the Dagster code
location (``workspace.yaml``; nothing imports it) and the ``pos-etl`` executable."""
DAGSTER_MAY = {"orchestration", "definitions"}


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.lineno, node.module)] + [
                (node.lineno, f"{node.module}.{alias.name}") for alias in node.names
                if node.module == "pipeline"]
    return found


def room(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return parts[0] if len(parts) > 1 else parts[0]


def modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_the_root_holds_only_the_layers_and_the_entry_points():
    at_root = {p.stem for p in ROOT.glob("*.py")}
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert at_root == set(ENTRY_POINTS)
    assert folders == set(LAYERS)


def test_each_layer_imports_only_the_layers_below_it():
    wrong = []
    for path in modules():
        here = room(path)
        rank = LAYERS.index(ENTRY_POINTS.get(here, here))
        for line, name in imports(path):
            parts = name.split(".")
            if parts[0] != "pipeline" or len(parts) < 2:
                continue
            target = ENTRY_POINTS.get(parts[1], parts[1])
            if target in LAYERS and LAYERS.index(target) > rank or parts[1] == "definitions":
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_only_orchestration_imports_dagster():
    wrong = [f"{path.relative_to(ROOT.parent)}:{line} imports {name}"
             for path in modules() if room(path) not in DAGSTER_MAY
             for line, name in imports(path) if name.split(".")[0] == "dagster"]
    assert not wrong, "\n".join(wrong)


def test_a_layer_violation_is_seen(tmp_path):
    """The checks above find an upward import, also one made inside a function."""
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from pipeline.orchestration.loader import run_load\n")
    assert (2, "pipeline.orchestration.loader") in imports(module)
