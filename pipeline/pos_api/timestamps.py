"""Receipt timestamps: the spec declares ISO 8601 but serves ``dd.MM.yyyy HH:mm:ss``.

Both forms are accepted. The served form carries no offset: it is the wall-clock
time of the location. An ISO value with an offset is converted to that wall clock
by the caller, who knows the location's time zone.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

POS_FORMAT = "%d.%m.%Y %H:%M:%S"


def parse_pos_datetime(value: object) -> datetime:
    """Parse ``dd.MM.yyyy HH:mm:ss`` or ISO 8601; raise ``ValueError`` on anything else."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a timestamp string, got {type(value).__name__}")
    if len(value) == 19 and value[2] == "." and value[5] == "." and value[10] == " ":
        try:
            return datetime(
                int(value[6:10]),
                int(value[3:5]),
                int(value[0:2]),
                int(value[11:13]),
                int(value[14:16]),
                int(value[17:19]),
            )
        except ValueError as exc:
            raise ValueError(f"invalid timestamp {value!r}: {exc}") from None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"invalid timestamp {value!r}: expected dd.MM.yyyy HH:mm:ss or ISO 8601"
        ) from None


def format_pos_datetime(value: datetime) -> str:
    """The served form, ``dd.MM.yyyy HH:mm:ss``."""
    return value.strftime(POS_FORMAT)


def to_local_wall_clock(value: datetime, tz: ZoneInfo) -> datetime:
    """A naive wall-clock time at the location: aware values are converted, naive kept."""
    if value.tzinfo is None:
        return value
    return value.astimezone(tz).replace(tzinfo=None)
