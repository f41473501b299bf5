"""The config's ``[bank]`` section: where the bank statements are, which account is which
location's, and what the reconciliation needs to know (the acquirers, the cash book's
transit accounts, how a cash deposit reads). The source it configures:
``pipeline.sources.bank``."""

from __future__ import annotations

import re
from decimal import Decimal

from pydantic import Field, field_validator, model_validator

from pipeline.core.config_base import StrictModel


class BankAccount(StrictModel):
    iban: str
    """The account's IBAN (spaces allowed; its check digits are checked)."""
    location: int | str
    """The location whose takings go to it: its id or short code."""
    account: str | None = None
    """Its account in the general ledger (digits); unset: the chart's bank account
    (``[accounting.accounts] bank_account``)."""

    @field_validator("account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        if value is not None and not value.isdigit():
            raise ValueError(f"{value!r} is not an account (digits)")
        return value

    @field_validator("iban")
    @classmethod
    def _iban(cls, value: str) -> str:
        import schwifty
        from schwifty.exceptions import SchwiftyException

        try:
            return schwifty.IBAN(value).compact
        except SchwiftyException as exc:
            raise ValueError(f"{value!r} is not an IBAN: {exc}") from None


class Acquirer(StrictModel):
    """Who pays out a card type's sales (``pipeline`` reconciles its payouts with the
    terminal's batches: docs/accounting.md#bank-reconciliation)."""

    name: str = Field(min_length=1)
    """How the bank names the payer: a part of the entry's counterparty name (any case)."""
    payment_types: list[str] = Field(min_length=1)
    """The payment types (``paymentType.name``) whose batches it pays."""
    pays_after_days: int = Field(1, ge=0, le=5)
    """Bank days (Monday to Friday) after the batch's business date it pays it."""
    fee_percent: Decimal = Field(ge=0, lt=100, decimal_places=4)
    """The contract's fee, percent of the batch; another fee is named ``fee``."""


class BankSettings(StrictModel):
    statements: str | None = None
    """Where the banks' statements are: a folder (relative: from the config file's folder)
    or ``s3://bucket/prefix`` (``[lake] endpoint_url`` and the AWS environment as for the
    lake). CAMT.053 (``.xml``) and MT940 (``.sta``, ``.mt940``, ``.940``, ``.txt``) files,
    below it at any depth. Unset with the sandbox: the sandbox's bank writes them."""
    accounts: list[BankAccount] = []
    """Each bank account and its location; none: no bank statements are loaded."""
    acquirers: list[Acquirer] = []
    """Who pays out which card type's sales, when, for what fee."""
    deposit_accounts: list[str] = []
    """The ``fibuAccountNr`` of the cash book's records that move cash to the bank
    (Geldtransit); none: the chart's cash transit account."""
    deposit_texts: list[str] = ["BAREINZAHLUNG", "EINZAHLUNG", "BARGELDEINZAHLUNG"]
    """A bank entry is a cash deposit where its purpose starts with one of these (any
    case), or where its bank transaction code is ISO's cash deposit (``CNTR/CDPT``)."""

    book: bool = True
    """Whether the booking files (DATEV, BMD) book the payouts, the card fees, the
    chargebacks and the cash deposits of these accounts, and the cash the till moved to
    the bank (docs/accounting.md#bank-bookings); false where the advisor books the bank
    from the statements (a bank import of the accounting software), so nothing is booked
    twice."""

    @field_validator("statements")
    @classmethod
    def _statements(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("is empty; name a folder or an s3://bucket/prefix")
        if value is not None and "://" in value and not re.fullmatch(r"s3://[^/]+(/.*)?",
                                                                      value):
            raise ValueError(f"{value!r}: a folder or s3://bucket/prefix")
        return value

    @model_validator(mode="after")
    def _unique(self) -> BankSettings:
        types = [t for a in self.acquirers for t in a.payment_types]
        twice = sorted({t for t in types if types.count(t) > 1})
        if twice:
            raise ValueError(f"acquirers: payment type {', '.join(twice)} is paid by two")
        ibans = [a.iban for a in self.accounts]
        twice = sorted({i for i in ibans if ibans.count(i) > 1})
        if twice:
            raise ValueError(f"accounts: {', '.join(twice)} listed twice")
        return self
