"""The SQL project shipped with every install (``dbt_like_sql``): where it is, its stages
and the names of its files. Below every layer that reads it (the revenue rule's macros,
the warehouse's models and dictionary, the exports' labels)."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

MODELS_DIR = Path(str(importlib.resources.files("dbt_like_sql")))
"""The models shipped with the package (``dbt_like_sql``)."""
STAGES = ("staging", "marts", "reports")
SHARED_COLUMNS = "columns.yml"
"""What a column means in every model that has it; each model's own YAML file is beside
its SQL (``marts/fct_receipts.yml``)."""
START_PAGE = "start_here.md"
"""The dictionary's first page (dbt's ``__overview__``): which table and which figure to
use, the money types, example queries (a test runs them on DuckDB 1.1)."""


def start_page(models_dir: Path = MODELS_DIR) -> str:
    """The start page's Markdown."""
    return (models_dir / START_PAGE).read_text(encoding="utf-8")
