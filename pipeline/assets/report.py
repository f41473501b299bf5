"""How the assets show what they did: small Markdown tables for Dagster's metadata."""

from __future__ import annotations


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table (the Dagster UI renders it); '|' in values is escaped."""
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
