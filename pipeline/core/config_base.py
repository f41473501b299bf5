"""What every section of the config file is built on (``pipeline.core.settings``,
``pipeline.core.accounting_settings``)."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section: unknown keys are errors, values frozen, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def check_zone(value: str) -> str:
    """``value`` if it is an IANA time zone, else a ValueError naming it."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {value!r} (an IANA name, e.g. Europe/Vienna)") \
            from None
    return value
