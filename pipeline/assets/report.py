"""How the assets show what they did: small Markdown tables for Dagster's metadata."""

from __future__ import annotations

from pipeline.untrusted import markdown


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table (the Dagster UI renders it). Every value is literal text: POS
    strings (transaction types, names, error answers) cannot make a link, an image or
    another cell."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
