"""Files the pipeline changes in place are its own: none shares its data with a hard link.

A data folder copied with ``cp -al`` (quick clones, rsnapshot-style backups) shares every
file's data with the original: a write in place into one changes the other. So before a
file is changed in place (Dagster's SQLite storage), a link count above one means it is
copied into a file of its own first; the warehouse's standby is not changed in place at
all then (``pipeline.warehouse.standby``: the build copies the file readers open).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def shared(path: Path) -> bool:
    """Does another name (a hard link) share ``path``'s data?"""
    try:
        return path.stat().st_nlink > 1
    except FileNotFoundError:
        return False


def own(folder: Path) -> list[Path]:
    """Every file under ``folder`` that shares its data with a hard link, replaced by a
    copy of its own (written beside it, then renamed over it: whole or not at all); the
    files it replaced."""
    owned = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and shared(p)):
        staged = path.with_name(f".{path.name}.{os.getpid()}.own")
        shutil.copy2(path, staged)
        os.replace(staged, path)
        owned.append(path)
    return owned


def free_space(path: Path) -> str:
    """How much room the disk of ``path`` (its folder) has, for an error that may be a
    full disk: ``1.2 MB free on the disk of /data``."""
    folder = Path(path).parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return f"the disk of {folder} cannot be asked for its free space"
    return f"{free / 2**20:,.1f} MB free on the disk of {folder}"
