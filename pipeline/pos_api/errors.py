"""The pipeline's own exceptions. Messages name the location (and partition), never a key."""

from __future__ import annotations

from pipeline.core.outcomes import ErrorKind


class PosApiError(Exception):
    """A request to the POS failed. ``tried=False``: it was not sent, since an earlier one
    found the POS unreachable or the key refused (the message is that one's reason)."""

    kind = ErrorKind.TRANSIENT

    def __init__(self, message: str, *, location_id: int | None = None,
                 status: int | None = None, tried: bool = True):
        super().__init__(message)
        self.location_id = location_id
        self.status = status
        self.tried = tried


class AuthError(PosApiError):
    """401 or 403: the key is missing, invalid or not authorised. Never retried."""

    kind = ErrorKind.REFUSED_KEY


class TransientError(PosApiError):
    """429, 5xx or a transport failure that outlasted the retry budget."""


class Unreachable(TransientError):
    """The POS (or ledger) could not be connected to through the retries: the host is down
    or the address is wrong. Later requests to the same address are not tried."""

    kind = ErrorKind.UNREACHABLE


class RequestError(PosApiError):
    """Any other 4xx: the request itself is wrong. Never retried."""

    kind = ErrorKind.REQUEST


class ContractError(PosApiError):
    """The response breaks the spec: malformed JSON, a missing field, an unparseable value."""

    kind = ErrorKind.CONTRACT


class RetryableStatus(Exception):
    """Internal: a status worth another try, with the server's Retry-After if it sent one."""

    def __init__(self, status: int, retry_after: float | None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after
