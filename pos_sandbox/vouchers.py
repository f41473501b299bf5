"""The voucher ledger of the sandbox (spec 2.6, 3, 4.5). Amounts are integer cents.

Choices where the spec says "not shown": the ledger takes the same ``x-api-key`` as the
other areas and is tenant-wide (any valid key sees every voucher); ``GET /vouchers``
answers ``{"data": [voucher, ...]}`` where each voucher also lists its
``transactions`` (issue, redemption, top-up); an ``errors`` element is
``{"code", "message"}``; the assigned clientType is ``SANDBOX``, any other is a 403; a
duplicate voucherCode is a 409; a redemption above the balance is the business failure
``InsufficientBalance`` and a top-up past ``gift.maxAmount`` is ``MaxAmountExceeded``.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from threading import Lock
from typing import Any

from pydantic import ValidationError

from pipeline.pos_api import models as m

CLIENT_TYPE = "SANDBOX"
CATEGORIES = {
    1: ("Restaurant-Gutschein", None, None),
    2: ("Hotel-Gutschein", None, "psp-hotel-shop"),
    3: ("Aktion Einmal-Gutschein", 1, None),  # redeemable once per voucher
}


class VoucherError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class _Voucher:
    id: str
    code: str
    category_id: int
    amount: int
    balance: int
    max_amount: int | None
    created_at: datetime
    start_date: datetime | None = None
    expiration_date: datetime | None = None
    enabled: bool = True
    comment: str | None = None
    code_id: str | None = None
    transactions: list[dict] = field(default_factory=list)

    def dto(self, with_transactions: bool = False) -> dict:
        name, cap, psp = CATEGORIES[self.category_id]
        body = m.Voucher(
            id=self.id, voucher_code=self.code,
            gift=m.Gift(amount=self.amount, balance=self.balance, max_amount=self.max_amount),
            code_id=self.code_id, start_date=self.start_date,
            expiration_date=self.expiration_date, enabled=self.enabled, comment=self.comment,
            category_id=self.category_id, category_name=name,
            category_nr_of_times_redeemable_per_unit=cap,
            category_external_payment_provider_id=psp, created_at=self.created_at,
            discriminator="GiftVoucherDto",
        ).model_dump(mode="json", by_alias=True)
        if with_transactions:
            body["transactions"] = list(self.transactions)
        return body


def _error(code: str, message: str) -> dict:
    return {"code": code, "message": message}


class VoucherLedger:
    """Gift vouchers with authoritative balances; every mutation under one lock."""

    def __init__(self, now: Callable[[], datetime] | None = None, seed: int = 20240601):
        self.now = now or (lambda: datetime.now(UTC))
        self._lock = Lock()
        self._vouchers: dict[str, _Voucher] = {}
        self._by_code: dict[str, str] = {}
        self._next_transaction = 100_000
        self._seed(seed)

    def _record(self, v: _Voucher, kind: str, amount: int, when: datetime,
                reference: str | None = None) -> int:
        self._next_transaction += 1
        v.transactions.append({"transactionId": self._next_transaction, "type": kind,
                               "amount": amount, "createdAt": when.isoformat(),
                               "clientReference": reference})
        return self._next_transaction

    def _seed(self, seed: int) -> None:
        # Dates relative to the ledger's clock, so every check code stays reachable in any
        # year: some vouchers expired, one not started yet, the rest valid for years.
        rng = random.Random(seed)
        today = self.now().replace(hour=10, minute=0, second=0, microsecond=0)
        start = today - timedelta(days=80)
        for n in range(40):
            category = 1 + n % 3
            amount = rng.choice((2500, 5000, 10000, 15000))
            created = start + timedelta(days=rng.randint(0, 75), minutes=rng.randint(0, 600))
            v = _Voucher(
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                code=f"GV-{2026}-{n + 1:04d}", category_id=category, amount=amount,
                balance=amount, max_amount=amount * 2 if category == 2 else None,
                created_at=created,
                expiration_date=created + timedelta(days=3 * 365) if n % 13 else
                today - timedelta(days=3),
                start_date=today + timedelta(days=40) if n == 7 else None,
                enabled=n % 17 != 5,
                code_id=f"C{n + 1:05d}" if n % 4 == 0 else None,
                comment="Firmenkunde" if n % 9 == 0 else None,
            )
            self._vouchers[v.id] = v
            self._by_code[v.code] = v.id
            self._record(v, "Issue", amount, created)
            when = created
            for _ in range(rng.randint(0, 3)):
                when += timedelta(days=rng.randint(1, 10), hours=rng.randint(0, 5))
                if when > today:
                    break
                if v.balance and rng.random() < 0.8:
                    debit = min(v.balance, rng.choice((990, 1850, 2500, 4200)))
                    v.balance -= debit
                    self._record(v, "Redemption", debit, when, f"seed-{n}")
                elif v.max_amount and v.balance + 1000 <= v.max_amount:
                    v.balance += 1000
                    self._record(v, "TopUp", 1000, when, f"seed-{n}")

    # --- reads ----------------------------------------------------------------------------

    def list(self) -> dict:
        with self._lock:
            return {"data": [v.dto(with_transactions=True) for v in self._vouchers.values()]}

    def problems(self, v: _Voucher | None) -> list[dict]:
        """The section 3 conditions under which the voucher cannot be redeemed now."""
        if v is None:
            return [_error("NotFound", "no voucher with this code")]
        now, errors = self.now(), []
        if not v.enabled:
            errors.append(_error("Disabled", "the voucher is disabled"))
        if v.start_date and now < v.start_date:
            errors.append(_error("NotYetStarted", f"valid from {v.start_date.isoformat()}"))
        if v.expiration_date and now > v.expiration_date:
            errors.append(_error("Expired", f"expired {v.expiration_date.isoformat()}"))
        if v.balance == 0:
            errors.append(_error("NoBalance", "the balance is 0"))
        cap = CATEGORIES[v.category_id][1]
        used = sum(1 for t in v.transactions if t["type"] == "Redemption")
        if cap is not None and used >= cap:
            errors.append(_error("CategoryCapReached", f"redeemable {cap} time(s) per voucher"))
        return errors

    def validity(self, code: str | None) -> dict:
        if not code:
            raise VoucherError(400, "voucherCode is required")
        with self._lock:
            v = self._vouchers.get(self._by_code.get(code, ""))
            errors = self.problems(v)
            return {"voucher": v.dto() if v else None, "errors": errors, "isValid": not errors}

    # --- mutations ------------------------------------------------------------------------

    @staticmethod
    def _parse(model, body: Any):
        try:
            request = model.model_validate(body)
        except ValidationError as exc:
            raise VoucherError(400, f"malformed body: {exc.errors(include_url=False)}") \
                from None
        if request.client_type != CLIENT_TYPE:
            raise VoucherError(403, f"clientType {request.client_type!r} is not the one "
                                    "assigned to this integration")
        if request.client_context is not None:
            try:
                json.loads(request.client_context)
            except ValueError:
                raise VoucherError(400, "clientContext must be serialized JSON") from None
        return request

    def issue(self, body: Any) -> dict:
        request = self._parse(m.IssueRequest, body)
        if request.category_id not in CATEGORIES:
            raise VoucherError(400, f"unknown categoryId {request.category_id}")
        if request.gift.amount <= 0:
            raise VoucherError(400, "gift.amount must be positive")
        if request.gift.max_amount is not None and request.gift.max_amount < request.gift.amount:
            raise VoucherError(400, "gift.maxAmount is below gift.amount")
        with self._lock:
            if request.voucher_code in self._by_code:
                raise VoucherError(409, f"voucherCode {request.voucher_code!r} exists")
            now = self.now()
            v = _Voucher(id=str(uuid.uuid4()), code=request.voucher_code,
                         category_id=request.category_id, amount=request.gift.amount,
                         balance=request.gift.amount, max_amount=request.gift.max_amount,
                         created_at=now, start_date=request.start_date,
                         expiration_date=request.expiration_date, comment=request.comment)
            self._vouchers[v.id] = v
            self._by_code[v.code] = v.id
            self._record(v, "Issue", v.amount, now)
            return v.dto()

    def _voucher(self, voucher_id: str) -> _Voucher:
        v = self._vouchers.get(voucher_id)
        if v is None:
            raise VoucherError(404, f"no voucher with id {voucher_id}")
        return v

    def redeem(self, voucher_id: str, body: Any) -> dict:
        request = self._parse(m.RedemptionRequest, body)
        amount = request.redemption.amount
        if amount <= 0:
            raise VoucherError(400, "redemption.amount must be positive")
        with self._lock:
            v = self._voucher(voucher_id)
            errors = self.problems(v)
            if not errors and amount > v.balance:
                errors = [_error("InsufficientBalance",
                                 f"balance {v.balance} is below {amount}")]
            if errors:
                return {"redemption": {"amount": 0, "items": []}, "success": False,
                        "errors": errors, "transactionId": None, "voucher": v.dto()}
            v.balance -= amount
            txn = self._record(v, "Redemption", amount, self.now(), request.client_reference)
            return {"redemption": {"amount": amount, "items": []}, "success": True,
                    "errors": [], "transactionId": txn, "voucher": v.dto()}

    def top_up(self, voucher_id: str, body: Any) -> dict:
        request = self._parse(m.TopUpRequest, body)
        if request.amount <= 0:
            raise VoucherError(400, "amount must be positive")
        with self._lock:
            v = self._voucher(voucher_id)
            errors = [e for e in self.problems(v) if e["code"] in {"Disabled", "Expired"}]
            if not errors and v.max_amount is not None and \
                    v.balance + request.amount > v.max_amount:
                errors = [_error("MaxAmountExceeded",
                                 f"balance would exceed gift.maxAmount {v.max_amount}")]
            if errors:
                return {"newAmount": v.balance, "success": False, "errors": errors,
                        "transactionId": None, "voucher": v.dto()}
            v.balance += request.amount
            txn = self._record(v, "TopUp", request.amount, self.now(), request.client_reference)
            return {"newAmount": v.balance, "success": True, "errors": [],
                    "transactionId": txn, "voucher": v.dto()}
