"""The pipeline's own exceptions. Messages name the location (and partition), never a key."""

from __future__ import annotations

NOT_TRIED = "not tried: "
"""How the message of a request that was not sent begins (the POS is known to be down, or
the key refused): the summary counts these apart and says their reason once."""


class PosApiError(Exception):
    """A request to the POS failed."""

    def __init__(self, message: str, *, location_id: int | None = None,
                 status: int | None = None):
        super().__init__(message)
        self.location_id = location_id
        self.status = status


class AuthError(PosApiError):
    """401 or 403: the key is missing, invalid or not authorised. Never retried."""


class TransientError(PosApiError):
    """429, 5xx or a transport failure that outlasted the retry budget."""


class Unreachable(TransientError):
    """The POS (or ledger) could not be connected to through the retries: the host is down
    or the address is wrong. Later requests to the same address are not tried."""


class RequestError(PosApiError):
    """Any other 4xx: the request itself is wrong. Never retried."""


class ContractError(PosApiError):
    """The response breaks the spec: malformed JSON, a missing field, an unparseable value."""


class RetryableStatus(Exception):
    """Internal: a status worth another try, with the server's Retry-After if it sent one."""

    def __init__(self, status: int, retry_after: float | None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after
