"""The bank statements: CAMT.053 and MT940 files in a folder or under an S3 prefix
(``[bank] statements``), each account mapped to its location (``[[bank.accounts]]``;
configured accounts are what turns the source on). No key: a folder is read as it is, S3
with the AWS environment's credentials, as the lake. Optional: ``pos-etl load --no-bank``
leaves them out; with the sandbox, the sandbox's bank writes the statements."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.sources.base import Place, Source

if TYPE_CHECKING:
    from pipeline.core.settings import Settings


def _place(settings: Settings) -> Place:
    return Place(settings.bank.statements or "", settings.bank_accounts,
                 settings.lake.endpoint_url)


SOURCE = Source(
    name="bank", title="the bank statements", rank=2,
    address=lambda settings: settings.bank.statements, setting="bank.accounts",
    per_location=False, optional=True, transport="files",
    configured=lambda settings: bool(settings.bank.accounts), place=_place)
