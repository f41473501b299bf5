"""The bank area's lake tables: each statement once (its account, balances, the file it
came from) and its entries, partitioned by account and statement."""

from __future__ import annotations

import pyarrow as pa

BANK_MONEY = pa.decimal128(18, 2)
"""An amount of a euro account, to the cent (a statement in another currency, or with an
amount beyond the cent, is refused: ``pipeline.areas.bank.statements.check``)."""
S, I32, I64 = pa.string(), pa.int32(), pa.int64()
_KEY = [pa.field("iban", S, False), pa.field("statement_id", S, False)]

BANK_TABLES: dict[str, pa.Schema] = {
    "bank_statements": pa.schema(_KEY + [
        pa.field("location_id", I32, False),
        pa.field("format", S, False),
        pa.field("sequence_number", I64),
        pa.field("currency", S, False),
        pa.field("opening_balance", BANK_MONEY, False),
        pa.field("opening_date", pa.date32(), False),
        pa.field("closing_balance", BANK_MONEY, False),
        pa.field("closing_date", pa.date32(), False),
        pa.field("entry_count", I64, False),
        pa.field("file_name", S, False),
        pa.field("file_sha256", S, False),
    ]),
    "bank_entries": pa.schema(_KEY + [
        pa.field("entry_number", I32, False),
        pa.field("booking_date", pa.date32(), False),
        pa.field("value_date", pa.date32()),
        pa.field("amount", BANK_MONEY, False),
        pa.field("currency", S, False),
        pa.field("is_booked", pa.bool_(), False),
        pa.field("is_reversal", pa.bool_(), False),
        pa.field("bank_reference", S),
        pa.field("end_to_end_id", S),
        pa.field("counterparty_name", S),
        pa.field("counterparty_iban", S),
        pa.field("remittance", S),
        pa.field("transaction_code", S),
        pa.field("batch_count", I64),
    ]),
}
