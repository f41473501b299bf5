"""What parsing found, kept between processes, as dbt's partial parsing keeps its manifest.

Every ``pos-etl`` command, code server and build parses the 92 models with sqlglot: some
0.5 s of CPU each time, the largest part of building the Dagster definitions. Here what
a parse found is kept as one small JSON file per input, named by a hash of everything it
depends on: the input itself (a model's name and SQL text), sqlglot's version and the
source of the module that analyses it. A model whose text changed, a new sqlglot or a
changed analysis is therefore parsed again; nothing is ever served stale, and nothing
needs to be invalidated by hand.

The files are in the user's cache folder (``platformdirs``: ``~/.cache/pos-etl/parsed``
on Linux), or in ``$POS_ETL_CACHE_DIR/parsed``; ``POS_ETL_CACHE_DIR=`` (empty) turns the
cache off. A folder that cannot be written, or a file that does not read, only means
parsing again. Files are written whole (a temporary file renamed), so processes at once
never read half of one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import platformdirs
import sqlglot

CACHE_DIR_ENV = "POS_ETL_CACHE_DIR"
"""The folder the cache lives below (its ``parsed`` folder); empty: no cache."""


def cache_dir() -> Path | None:
    """Where the parses are kept, or None when the cache is off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured == "":
        return None
    return Path(configured or platformdirs.user_cache_dir("pos-etl")) / "parsed"


@functools.lru_cache(maxsize=16)
def _source_digest(module_file: str) -> str:
    return hashlib.sha256(Path(module_file).read_bytes()).hexdigest()


def remembered(parts: tuple[str, ...], compute: Callable[[], dict],
               valid: Callable[[object], bool], analyser: str) -> dict:
    """``compute()`` (a JSON object) for the input ``parts``, from the cache where an
    earlier process kept it; ``analyser``: the file of the code that computes it (its
    source is part of the key), ``valid``: whether a kept value has the right shape."""
    folder = cache_dir()
    if folder is None:
        return compute()
    key = hashlib.sha256("\0".join((sqlglot.__version__, _source_digest(analyser), *parts))
                         .encode()).hexdigest()
    path = folder / f"{key}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if valid(kept):
            return kept
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, suffix=".tmp",
                                         delete=False) as out:
            json.dump(value, out)
        os.replace(out.name, path)
    except OSError:
        pass  # (a read-only or full disk: parsed again next time)
    return value
