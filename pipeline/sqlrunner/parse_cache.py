"""What parsing found, kept between processes, as dbt's partial parsing keeps its manifest.

Every process that reads a project parses its models with sqlglot (some 0.5 s of CPU for
a hundred models). Here what a parse found is kept as one small JSON file per input,
named by a hash of everything it depends on: the input itself (a model's name and SQL
text), sqlglot's version and the source of the module that analyses it. A model whose
text changed, a new sqlglot or a changed analysis is therefore parsed again; nothing is
ever served stale, and nothing needs to be invalidated by hand.

The folder is the caller's (None: nothing kept). A folder that cannot be written, or a
file that does not read, only means parsing again. Files are written whole (a temporary
file renamed), so processes at once never read half of one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import sqlglot


@functools.lru_cache(maxsize=16)
def _source_digest(module_file: str) -> str:
    return hashlib.sha256(Path(module_file).read_bytes()).hexdigest()


def remembered(folder: Path | None, parts: tuple[str, ...], compute: Callable[[], dict],
               valid: Callable[[object], bool], analyser: str) -> dict:
    """``compute()`` (a JSON object) for the input ``parts``, from the folder ``folder``
    where an earlier process kept it (None: computed); ``analyser``: the file of the code
    that computes it (its source is part of the key), ``valid``: whether a kept value has
    the right shape."""
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
