"""``make dev``: ``dagster dev`` on the workspace, without the notice that the command is
superseded by ``dg dev`` (a separate package this project does not need)."""

from __future__ import annotations

import sys
import warnings


def main() -> int:
    from dagster._cli import main as dagster_main
    from dagster_shared.utils.warnings import SupersessionWarning

    warnings.filterwarnings("ignore", category=SupersessionWarning)
    sys.argv = ["dagster", "dev", "-w", "workspace.yaml", *sys.argv[1:]]
    return dagster_main()


if __name__ == "__main__":
    sys.exit(main())
