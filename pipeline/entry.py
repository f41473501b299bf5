"""The ``pos-etl`` executable: ``pipeline.cli`` (Dagster, DuckDB, the lake: seconds to
import) imported inside the same guard as the command itself, so a Ctrl-C pressed while
it starts stops as it does later: one line, exit 130, no traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from pipeline.cli import main as run
    except KeyboardInterrupt:
        print("stopped (Ctrl-C)", file=sys.stderr)
        return 130
    return run()
