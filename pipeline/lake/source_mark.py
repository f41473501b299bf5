"""Which source a lake holds: recorded with the lake by its first load, checked by every
write after it.

A lake holds one source's data: the built-in sandbox's, or one POS's at its base URL. A
load from another source would replace partitions of the same location ids with another
system's receipts (the sandbox's ids are the README's example ids), so a write into a
lake marked for another source is refused by name before anything is written. The mark
is ``_source.json`` at the lake's root (beside the areas' tables): the source and the
locations loaded from it. A POS is told by its host (its
scheme, port and path may change); one that moved to another host is recorded anew by
``pos-etl load --source-moved``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pipeline.core.outcomes import ConfigError

MARK = "_source.json"
SANDBOX = "the built-in sandbox"


class ForeignLake(ConfigError):
    """The lake holds another source's data: nothing was written."""


@dataclass(frozen=True)
class SourceMark:
    """A lake's source (``SANDBOX`` or a POS's base URL) and the locations loaded from it."""

    source: str
    locations: tuple[int, ...] = ()

    def to_json(self) -> str:
        return json.dumps({"source": self.source, "locations": sorted(self.locations)},
                          indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> SourceMark:
        try:
            data = json.loads(text)
            return cls(str(data["source"]), tuple(int(n) for n in data.get("locations", [])))
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f"{where}: not a source mark of pos-etl (expected JSON with "
                              f"\"source\"); move it aside if it is not ours") from None

    def with_locations(self, ids: Iterable[int]) -> SourceMark:
        return SourceMark(self.source, tuple(sorted(set(self.locations) | set(ids))))


def _system(source: str) -> str:
    """What makes two sources one: the sandbox, or a POS's host (its scheme, port and
    path may change: a proxy, TLS, a new API prefix)."""
    return source if source == SANDBOX else (urlsplit(source).hostname or source).lower()


def check_mark(found: SourceMark | None, wanted: SourceMark, where: str,
               moved: bool = False) -> SourceMark | None:
    """The mark to record before a write of ``wanted``'s data into the lake at ``where``
    (None: the lake's mark stands as it is); ``ForeignLake`` if the lake holds another
    source's data, unless ``moved`` (the same POS at a new address)."""
    if found is None:
        return wanted
    if _system(found.source) != _system(wanted.source) and not moved:
        held = ", ".join(map(str, found.locations)) or "none yet"
        hint = ("give the command the --config of that lake's POS, or another [warehouse] "
                "data_dir (or [lake] url) for this one" if wanted.source == SANDBOX else
                "use another [warehouse] data_dir (or [lake] url) for this source; if it is "
                "the same POS at a new address, run pos-etl load --source-moved once")
        raise ForeignLake(f"lake {where} holds the data of {found.source} (locations "
                          f"{held}), not of {wanted.source}: nothing was written; {hint}")
    merged = SourceMark(wanted.source, found.locations).with_locations(wanted.locations)
    return None if merged == found else merged
