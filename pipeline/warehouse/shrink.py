"""The lake never shrinks or goes back in silence: what a build refuses when the lake no
longer holds what the warehouse in place was built from (``pipeline.warehouse.build``)."""

from __future__ import annotations

from datetime import date

from pipeline.sqlrunner.models import ModelError


class LakeShrank(ModelError):
    """The lake no longer holds revenue partitions the warehouse in place was built from."""

    def __init__(self, lost: list[tuple[int, date]]):
        self.lost = lost
        shown = "; ".join(f"location {loc} {day}" for loc, day in lost[:LOST_SHOWN])
        more = f" and {len(lost) - LOST_SHOWN} more" if len(lost) > LOST_SHOWN else ""
        first_loc, first_day = lost[0]
        it = "them" if len(lost) > 1 else "it"
        super().__init__(
            f"the lake no longer holds {len(lost)} revenue partition"
            f"{'s' * (len(lost) > 1)} the warehouse was built from: {shown}{more} (a Delta "
            f"commit removed {it}, or the table lost versions); load {it} "
            f"again (pos-etl load --location {first_loc} --start {first_day} --end "
            f"{first_day}), or, to drop {it} on purpose, pos-etl build --forget-missing")


class LakeWentBack(ModelError):
    """A lake table is at an older version than the warehouse in place was built from."""

    def __init__(self, tables: list[tuple[str, int, int | None]]):
        self.tables = tables
        shown = "; ".join(f"lake {area} at version {'none' if now is None else now}, "
                          f"the warehouse was built from version {then}"
                          for area, then, now in tables)
        super().__init__(
            f"the lake went back: {shown} (restored from an older copy, or its log lost "
            f"commits); the warehouse in place is kept. Restore the lake, or load what it "
            f"lacks and build with --forget-missing to accept it as it is")


def went_back(meta: dict[str, str], now: dict[str, str]) -> list[tuple[str, int, int | None]]:
    """The lake tables whose version is older than the one recorded in ``meta`` (the
    state of the warehouse in place)."""
    found = []
    for key, then in sorted(meta.items()):
        if key.startswith("lake_version."):
            current = now.get(key)
            if current is None or int(current) < int(then):
                found.append((key.split(".", 1)[1], int(then),
                               None if current is None else int(current)))
    return found


LOST_SHOWN = 5
"""Lost partitions a ``LakeShrank`` names before it counts the rest."""
