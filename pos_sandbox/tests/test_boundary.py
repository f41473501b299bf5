"""The sandbox is its own product: of the pipeline it may import the spec's models only."""

import ast
from pathlib import Path

import pos_sandbox

ALLOWED = {"pipeline.pos_api.models"}


def test_sandbox_imports_nothing_of_the_pipeline_but_the_spec_models():
    package = Path(pos_sandbox.__file__).parent
    offending = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                # `from pipeline.pos_api import models` imports pipeline.pos_api.models
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            offending += [f"{path.name}: {n}" for n in names
                          if n.split(".")[0] == "pipeline" and not n.startswith(tuple(ALLOWED))]
    assert offending == []
