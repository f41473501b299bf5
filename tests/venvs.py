"""Virtual environments the tests make for software that is not ours: each holds one
client or reader and only what it needs (kept in ``.venv-compat/`` for the next run)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tool_env(name: str, packages: list[str]) -> Path:
    """The virtual environment ``name`` with ``packages`` installed (made once; made
    again when the packages change). A lock per environment: two test workers that
    want the same one (``duckdb-1.1``: the standby's and the BI clients' modules) make
    it once, the second waiting for the first."""
    folder = ROOT / ".venv-compat" / name
    marker = folder / "installed.txt"
    wanted = "\n".join(packages)
    folder.parent.mkdir(exist_ok=True)
    with open(folder.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or marker.read_text() != wanted:
            shutil.rmtree(folder, ignore_errors=True)
            venv.create(folder, with_pip=True)
            subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q",
                            "--disable-pip-version-check", *packages],
                           check=True, timeout=600)
            marker.write_text(wanted)
    return folder
