"""What came of a partition or a snapshot that failed, as typed values.

A failure has a kind (``ErrorKind``) and a message for people (it names the location and
the partition, never a key); the kind decides, the message is only shown. The assets write
their failures into Dagster metadata as ``FailedPartition.to_json`` under ``FAILURES_KEY``
(``pipeline.orchestration.assets.metadata.failures_metadata``) and the CLI reads them back with
``read_failures``: one schema for both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from enum import StrEnum

FAILURES_KEY = "failed_list"
"""The metadata entry (JSON) of a check that lists what failed."""
REPORTED_KEY = "failures_reported"
"""Metadata of a step's ``dg.Failure`` whose failures a check of the same step listed (how
many): the CLI has said them already."""


class ErrorKind(StrEnum):
    NOT_TRIED = "not_tried"
    """Not sent: an earlier request found the POS unreachable or the key refused."""
    REFUSED_KEY = "refused_key"
    """401 or 403: the key is missing, invalid or not authorised."""
    UNREACHABLE = "unreachable"
    """The POS could not be connected to through the retries."""
    TRANSIENT = "transient"
    """429, 5xx or a transport failure that outlasted the retries."""
    REQUEST = "request"
    """Another 4xx: the request itself is wrong."""
    CONTRACT = "contract"
    """The answer breaks the spec (the message names the receipt and field)."""
    STORAGE = "storage"
    """The lake's storage could not be written or read."""
    CONFIG = "config"
    """The configuration does not allow it (a key variable that is not set, say)."""


class ConfigError(Exception):
    """The configuration cannot be used; the message lists every problem."""

    kind = ErrorKind.CONFIG


class UsageError(Exception):
    """The command's arguments do not fit (a date range, a model's name, a format and its
    file): a usage error, exit 2, like click's own."""


@dataclass(frozen=True)
class Failure:
    kind: ErrorKind
    message: str

    def __str__(self) -> str:
        return self.message

    @property
    def tried(self) -> bool:
        return self.kind != ErrorKind.NOT_TRIED

    @classmethod
    def of(cls, exc: Exception, redact: Callable[[str], str] = str) -> Failure:
        """The failure an exception of the pipeline stands for (its ``kind`` attribute,
        ``tried=False`` for a request not sent), its message redacted of keys."""
        kind = ErrorKind.NOT_TRIED if getattr(exc, "tried", True) is False \
            else getattr(exc, "kind", ErrorKind.TRANSIENT)
        return cls(ErrorKind(kind), redact(str(exc)))


@dataclass(frozen=True)
class FailedPartition:
    """A lake partition (or a snapshot) that was not loaded, and why."""

    location_id: int | None
    """None: the tenant's (a snapshot of a service of the tenant's)."""
    business_date: date | None
    """None: a snapshot (of today)."""
    failure: Failure

    def to_json(self) -> dict:
        return {"location": self.location_id,
                "business_date": self.business_date and self.business_date.isoformat(),
                "kind": self.failure.kind.value, "error": self.failure.message}

    @classmethod
    def from_json(cls, data: Mapping) -> FailedPartition:
        day = data.get("business_date")
        return cls(data["location"], date.fromisoformat(day) if day else None,
                   Failure(ErrorKind(data["kind"]), data["error"]))

    @property
    def message(self) -> str:
        return self.failure.message

    @property
    def where(self) -> str:
        return " ".join(str(part) for part in (self.location_id, self.business_date)
                        if part is not None) or "(tenant)"


def read_failures(metadata: Mapping[str, object]) -> list[FailedPartition]:
    """The failures a check's metadata lists (``failures_metadata``), values unwrapped."""
    return [FailedPartition.from_json(f) for f in metadata.get(FAILURES_KEY) or []]
