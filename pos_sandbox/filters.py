"""The catalog's query conventions (spec 4.4): skip/take and bracketed filters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

TAKE_DEFAULT = 50
TAKE_MAX = 500
_FILTER_KEY = re.compile(r"""^filter\[(['"])(.+)\1\]$""", re.IGNORECASE)
_UNESCAPED_COMMA = re.compile(r"(?<!\\),")


class BadRequest(ValueError):
    """A query the server answers with 400."""


@dataclass
class CatalogQuery:
    skip: int
    take: int
    filters: dict[str, str]  # lower-cased filter name -> raw value

    def text(self, name: str) -> str | None:
        value = self.filters.get(name.lower())
        return value if value not in (None, "") else None

    def integer(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise BadRequest(f"filter '{name}' must be an integer, got {value!r}") from None

    def boolean(self, name: str) -> bool | None:
        value = self.text(name)
        if value is None:
            return None
        if value.lower() in {"true", "1"}:
            return True
        if value.lower() in {"false", "0"}:
            return False
        raise BadRequest(f"filter '{name}' must be true or false, got {value!r}")

    def strings(self, name: str) -> list[str] | None:
        value = self.text(name)
        if value is None:
            return None
        return [part.replace("\\,", ",") for part in _UNESCAPED_COMMA.split(value)]

    def integers(self, name: str) -> list[int] | None:
        values = self.strings(name)
        if values is None:
            return None
        try:
            return [int(v) for v in values if v.strip()]
        except ValueError:
            raise BadRequest(f"filter '{name}' must be a list of integers") from None


def _plain_int(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"'{name}' must be an integer, got {raw!r}") from None
    if value < 0:
        raise BadRequest(f"'{name}' must not be negative")
    return value


def parse_catalog_query(raw_query: str) -> CatalogQuery:
    """Read skip, take (capped at 500) and the bracketed filters of a query string.

    A plain ``?name=value`` filter is ignored, as on the real server; bracket keys are
    case-insensitive and may be quoted with ' or with " (%22).
    """
    pairs = parse_qsl(raw_query, keep_blank_values=True)
    plain = {k: v for k, v in pairs if not k.lower().startswith("filter[")}
    filters: dict[str, str] = {}
    for key, value in pairs:
        match = _FILTER_KEY.match(key)
        if match:
            filters[match.group(2).lower()] = value
    skip = _plain_int(plain, "skip", 0)
    take = min(_plain_int(plain, "take", TAKE_DEFAULT), TAKE_MAX)
    return CatalogQuery(skip=skip, take=take, filters=filters)
