"""The packages of ``pipeline`` are layers: each imports only those below it (and itself),
so a reader knows a module's room from its path and a change knows what it may touch. Only
``orchestration`` imports Dagster (besides the code location, ``pipeline/definitions.py``).
Imports inside functions count too: a late import is still a dependency; so do relative
imports, and imports of the project's other packages (``pos_sandbox``), which stand as
high as the highest layer they import themselves."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "pipeline"
OTHER_PACKAGES = ("pos_sandbox",)
"""The project's packages beside ``pipeline`` that ``pipeline`` may import."""
LAYERS = ("sqlrunner", "core", "pos_api", "sources", "extract", "lake", "areas", "load",
          "warehouse", "accounting", "outputs", "orchestration", "cli")
"""From the bottom up: the SQL runner, which knows nothing of the rest (it is given its
sources and macros); settings, typed outcomes, money, untrusted text; the POS API; the
sources (each declared once); wire -> Arrow, what every area's extraction shares; the lake;
the areas, a folder each (tables, extraction, commit; extraction returns tables and never
touches the lake); the steps of a load; the warehouse; accounting; exports, report,
dictionary, alerts; everything Dagster; the command line. Data walks up: nothing reads what a layer
above it wrote."""
ENTRY_POINTS = {"definitions": "orchestration", "entry": "cli", "__init__": "core"}
"""The modules at the package's root and the layer whose rights they have: the Dagster code
location (``workspace.yaml``; nothing imports it) and the ``pos-etl`` executable."""
DAGSTER_MAY = {"orchestration", "definitions"}


def imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, with its line; relative imports resolved against the
    package ``path`` is in."""
    package = _package_of(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            if not module:
                continue
            found += [(node.lineno, module)] + [
                (node.lineno, f"{module}.{alias.name}") for alias in node.names
                if module == "pipeline" or node.level]
    return found


def _package_of(path: Path) -> list[str]:
    """The dotted package a module is in (``pipeline.extract`` for its modules)."""
    parts = path.with_suffix("").parts
    for top in ("pipeline", *OTHER_PACKAGES):
        if top in parts:
            return list(parts[parts.index(top):-1])
    return []


def reach(package: str) -> int:
    """The highest layer a package beside ``pipeline`` imports (-1: none); its tests do not
    count (nothing imports them)."""
    ranks = [-1]
    for path in sorted((ROOT.parent / package).rglob("*.py")):
        if "tests" in path.relative_to(ROOT.parent).parts:
            continue
        for _, name in imports(path):
            parts = name.split(".")
            if parts[0] == "pipeline" and len(parts) > 1:
                ranks.append(LAYERS.index(ENTRY_POINTS.get(parts[1], parts[1]))
                             if ENTRY_POINTS.get(parts[1], parts[1]) in LAYERS else -1)
    return max(ranks)


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


def violations(paths: list[Path]) -> list[str]:
    """Each import of a layer above the module's own (or of a package that reaches one)."""
    reaches = {package: reach(package) for package in OTHER_PACKAGES}
    wrong = []
    for path in paths:
        here = room(path)
        rank = LAYERS.index(ENTRY_POINTS.get(here, here))
        for line, name in imports(path):
            parts = name.split(".")
            if parts[0] in reaches and reaches[parts[0]] > rank:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports {name}, which "
                             f"imports pipeline.{LAYERS[reaches[parts[0]]]}")
            if parts[0] != "pipeline" or len(parts) < 2:
                continue
            target = ENTRY_POINTS.get(parts[1], parts[1])
            if target in LAYERS and LAYERS.index(target) > rank or parts[1] == "definitions":
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports {name}")
    return wrong


def test_each_layer_imports_only_the_layers_below_it():
    wrong = violations(modules())
    assert not wrong, "\n".join(wrong)


def test_only_orchestration_imports_dagster():
    wrong = [f"{path.relative_to(ROOT.parent)}:{line} imports {name}"
             for path in modules() if room(path) not in DAGSTER_MAY
             for line, name in imports(path) if name.split(".")[0] == "dagster"]
    assert not wrong, "\n".join(wrong)


def test_a_layer_violation_is_seen(tmp_path):
    """The checks above find an upward import: one made inside a function, a relative
    one, and one of a package beside ``pipeline`` that imports a higher layer."""
    module = tmp_path / "late.py"
    module.write_text("def f():\n    from pipeline.orchestration.loader import run_load\n")
    assert (2, "pipeline.orchestration.loader") in imports(module)
    core = ROOT / "core" / "_layer_probe.py"  # a module of core, for as long as the test runs
    core.write_text("from ..warehouse import build\nfrom pos_sandbox import world\n")
    try:
        assert (1, "pipeline.warehouse.build") in imports(core)
        found = violations([core])
        assert "pipeline/core/_layer_probe.py:1 imports pipeline.warehouse.build" in found
        assert "pipeline/core/_layer_probe.py:2 imports pos_sandbox, which imports " \
               "pipeline.pos_api" in found
    finally:
        core.unlink()
