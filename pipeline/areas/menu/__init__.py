"""The menu area: the public menu tree of every location, today (spec 4.2)."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.menu.extract import MENU_TABLES, extract_menu_snapshot
from pipeline.sources.pos import SOURCE as POS

AREA = LakeArea(
    "menu", Kind.SNAPSHOT, 2, MENU_TABLES, ("location_id", "snapshot_date"),
    "The public menu tree of every location, today.",
    source=POS, extract=extract_menu_snapshot, master_data=True, from_the_wire=True)
