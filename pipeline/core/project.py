"""The SQL project shipped with every install (``dbt_like_sql``): where it is and its
start page. Below every layer that reads it (the revenue rule's macros, the warehouse,
the exports' labels); the runner of its models is ``pipeline.sqlrunner``."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

MODELS_DIR = Path(str(importlib.resources.files("dbt_like_sql")))
"""The models shipped with the package (``dbt_like_sql``)."""
START_PAGE = "start_here.md"
"""The dictionary's first page (dbt's ``__overview__``): which table and which figure to
use, the money types, example queries (a test runs them on DuckDB 1.1)."""


def start_page(models_dir: Path = MODELS_DIR) -> str:
    """The start page's Markdown."""
    return (models_dir / START_PAGE).read_text(encoding="utf-8")
