"""What an answer's bytes are read as: JSON with exact numbers, a key twice in one object
refused, a revenue report page read as paging needs it and as the extraction reads it
(``ReceiptPage``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgspec

from pipeline.pos_api.errors import ContractError

DECODER = msgspec.json.Decoder(float_hook=Decimal)
"""Numbers with a fraction as exact ``Decimal``."""
TEXT_DECODER = msgspec.json.Decoder(float_hook=str)
"""Numbers with a fraction kept as their exact JSON text (the flattening casts them)."""
ENCODER = msgspec.json.Encoder(decimal_format="number")


class _Head(msgspec.Struct):
    """What paging needs of a receipt (its other fields are skipped, not decoded)."""

    transactionId: Any = None
    dateTime: Any = None


_HEADS = msgspec.json.Decoder(list[_Head])
RAW_RECEIPTS = msgspec.json.Decoder(list[msgspec.Raw])


@dataclass(frozen=True)
class ReceiptPage:
    """One answer of the revenue report: each receipt's JSON as it came (``receipts``,
    which the extraction reads column-wise) and, on demand, the receipts decoded to dicts
    and checked (``rows()``: numbers with a fraction as their exact text, a key twice in
    one object a ``ContractError``), which the receipt-by-receipt path reads."""

    receipts: list[msgspec.Raw] | None
    """None when the answer was decoded whole (it is no array of objects)."""
    decode: Callable[[], Any]

    def rows(self) -> Any:
        return self.decode()


def receipt_page(content: bytes, decode: Callable[[], Any]) -> tuple[ReceiptPage, Any]:
    """A revenue report answer (``content``), and what paging reads of it: each receipt's
    ``transactionId`` and ``dateTime``. ``decode`` decodes the whole answer and checks it;
    an answer that is not an array of objects is decoded whole at once (its paging reads
    the decoded value, and ``decode``'s errors are raised here)."""
    try:
        heads = [{"transactionId": h.transactionId, "dateTime": h.dateTime}
                 for h in _HEADS.decode(content)]
        return ReceiptPage(RAW_RECEIPTS.decode(content), decode), heads
    except (msgspec.DecodeError, RecursionError):
        value = decode()
        return ReceiptPage(None, lambda: value), value


def decode_json(content: bytes) -> Any:
    """Decode a JSON body; numbers with a fraction become exact ``Decimal``."""
    return DECODER.decode(content)


def refuse_repeated_keys(body: bytes, value: Any, where: str, location_id: int) -> None:
    """A key twice in one JSON object is a ``ContractError`` naming the object and key:
    a decoder keeps the last silently, and which one the POS meant cannot be known.

    Cheap for every answer: the colons of the body are counted and compared with those of
    the decoded value encoded again (compact). A dropped repeat takes at least its own
    colon with it; nothing else can lower the second count (whitespace and escapes only
    ever lower the body's), so no answer without repeated keys is refused. Only an answer
    with fewer colons after decoding is read again, slowly, to name the object.
    """
    if body.count(b":") <= ENCODER.encode(value).count(b":"):
        return
    found: list[tuple[dict, str]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj: dict = {}
        for key, item in items:
            if key in obj and not found:
                found.append((obj, key))
            obj[key] = item
        return obj

    with contextlib.suppress(ValueError):  # msgspec read it: the repeat is certain anyway
        json.loads(body, object_pairs_hook=pairs)
    what = "a key appears twice in one object"
    if found:
        obj, key = found[0]
        ident = obj.get("transactionId") or obj.get("id")
        who = f"receipt {ident}" if "transactionId" in obj else \
            f"record {ident}" if ident is not None else "an object"
        what = f"{who}: field {key} appears twice in one object"
    raise ContractError(f"{where}: {what}; which value the POS meant cannot be known",
                        location_id=location_id)
