"""2.6 The voucher ledger and its operations; amounts are integer minor units."""

from __future__ import annotations

from datetime import datetime

from pipeline.pos_api.models.base import PosModel


class Gift(PosModel):
    amount: int
    balance: int | None = None
    max_amount: int | None = None


class Voucher(PosModel):
    """A gift voucher; amounts are integer minor units. Operation responses may omit fields."""

    id: str
    voucher_code: str | None = None
    gift: Gift | None = None
    code_id: str | None = None
    start_date: datetime | None = None
    expiration_date: datetime | None = None
    enabled: bool | None = None
    comment: str | None = None
    category_id: int | None = None
    category_name: str | None = None
    category_nr_of_times_redeemable_per_unit: int | None = None
    category_external_payment_provider_id: str | None = None
    created_at: datetime | None = None
    discriminator: str | None = None


class ValidityResponse(PosModel):
    voucher: Voucher | None = None
    errors: list = []
    is_valid: bool


class GiftRequest(PosModel):
    amount: int
    max_amount: int | None = None


class IssueRequest(PosModel):
    category_id: int
    voucher_code: str
    comment: str | None = None
    gift: GiftRequest
    client_type: str
    client_context: str | None = None
    start_date: datetime | None = None
    expiration_date: datetime | None = None


class RedemptionAmount(PosModel):
    amount: int
    items: list = []


class RedemptionRequest(PosModel):
    redemption: RedemptionAmount
    client_reference: str | None = None
    client_context: str | None = None
    comment: str | None = None
    client_type: str


class TopUpRequest(PosModel):
    amount: int
    client_reference: str | None = None
    client_type: str
    client_context: str | None = None
    comment: str | None = None


class RedemptionResult(PosModel):
    redemption: RedemptionAmount | None = None
    success: bool
    errors: list = []
    transaction_id: int | None = None
    voucher: Voucher | None = None


class TopUpResult(PosModel):
    new_amount: int | None = None
    success: bool
    errors: list = []
    transaction_id: int | None = None
    voucher: Voucher | None = None
