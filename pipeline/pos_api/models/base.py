"""What every resource of the spec shares: camelCase wire names, extra fields kept, the
receipt timestamp's form, the catalog's paged envelope and the voucher operations' one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

from pipeline.pos_api.timestamps import format_pos_datetime, parse_pos_datetime

PosDateTime = Annotated[
    datetime,
    BeforeValidator(parse_pos_datetime),
    PlainSerializer(format_pos_datetime, return_type=str),
]
"""A receipt timestamp: served as ``dd.MM.yyyy HH:mm:ss`` (local time), ISO 8601 accepted."""


class PosModel(BaseModel):
    """Base of every spec resource: camelCase aliases, extra fields tolerated."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )


T = TypeVar("T")


class PageInfo(PosModel):
    offset: int
    limit: int
    total: int


class Paged(PosModel, Generic[T]):
    """The paged envelope of every catalog list response."""

    page: PageInfo
    data: list[T]


class DataEnvelope(PosModel, Generic[T]):
    """``{ data: ... }`` wrapper of voucher operation responses."""

    data: T
