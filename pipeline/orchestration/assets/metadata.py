"""How the assets show what they did: small Markdown tables for Dagster's metadata."""

from __future__ import annotations

import dagster as dg

from pipeline.core.outcomes import FAILURES_KEY, FailedPartition
from pipeline.core.untrusted import markdown


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table (the Dagster UI renders it). Every value is literal text: POS
    strings (transaction types, names, error answers) cannot make a link, an image or
    another cell."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def failures_metadata(failed: list[FailedPartition], listed: int = 100) -> dict:
    """The metadata of a check that lists ``failed``: JSON for programs, a table to read."""
    return {FAILURES_KEY: dg.MetadataValue.json([f.to_json() for f in failed]),
            "failed": dg.MetadataValue.md(markdown_table(
                ["partition", "kind", "error"],
                [[f.where, f.failure.kind.value, f.failure.message] for f in failed[:listed]]))}
