"""ISO 20022 CAMT.053 (bank-to-customer statement) -> ``Statement``s, by lxml.

Every version from ``camt.053.001.02`` (what German and Austrian banks delivered for
years) to ``.13`` is read: the elements read here keep their names and places across
them, and where one moved (an entry's status is a text in ``.02``, a code element later;
a party's name sits under ``Pty`` from ``.08``) both places are read. Only what the
reconciliation needs is read, each element as the schema types it (an amount a decimal
of at most 18 digits and 5 decimals with its currency, a date ``YYYY-MM-DD``); a missing
or malformed one refuses the file by its path. The parser resolves no entities and
fetches nothing (``resolve_entities=False``, ``no_network=True``).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal

from lxml import etree

from pipeline.areas.bank.statements import Entry, Statement, StatementError

NAMESPACE = re.compile(
    r"^\{urn:iso:std:iso:20022:tech:xsd:(camt\.053\.001\.(0[2-9]|1[0-3]))\}Document$")
AMOUNT = re.compile(r"^\d{1,18}(\.\d{1,5})?$")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True,
                          remove_pis=True)


def read_camt(data: bytes, where: str) -> list[Statement]:
    """Each ``Stmt`` of a CAMT.053 document."""
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise StatementError(f"{where}: not well-formed XML: {exc}") from None
    match = NAMESPACE.match(root.tag)
    if not match:
        raise StatementError(f"{where}: not a CAMT.053 document (its root is {root.tag}; "
                             "expected camt.053.001.02 to .13)")
    version = match.group(1)
    report = _one(root, "BkToCstmrStmt", where)
    statements = report.findall("{*}Stmt")
    if not statements:
        raise StatementError(f"{where}: BkToCstmrStmt holds no Stmt")
    return [_statement(stmt, version, f"{where}: Stmt {n + 1}")
            for n, stmt in enumerate(statements)]


def _statement(stmt, version: str, where: str) -> Statement:
    statement_id = _text(stmt, "Id", where)
    where = f"{where} ({statement_id})"
    iban = _text(stmt, "Acct/Id/IBAN", where, required=False)
    if iban is None:
        raise StatementError(f"{where}: Acct/Id: the account has no IBAN (only IBAN "
                             "accounts are mapped to locations)")
    balances = {}
    for bal in stmt.findall("{*}Bal"):
        code = _text(bal, "Tp/CdOrPrtry/Cd", where, required=False)
        if code in ("OPBD", "PRCD", "CLBD") and code not in balances:
            amount, currency = _amount(bal, f"{where}: Bal {code}")
            if _direction(bal, f"{where}: Bal {code}") == "DBIT":
                amount = -amount
            balances[code] = ((amount, currency), _date(bal, "Dt", f"{where}: Bal {code}"))
    opening = balances.get("OPBD") or balances.get("PRCD")
    if opening is None or "CLBD" not in balances:
        raise StatementError(f"{where}: Bal: a statement needs its opening (OPBD or PRCD) "
                             "and its closing booked balance (CLBD)")
    (open_amount, currency), opening_date = opening
    (close_amount, close_currency), closing_date = balances["CLBD"]
    if close_currency != currency:
        raise StatementError(f"{where}: Bal: opening in {currency}, closing in "
                             f"{close_currency}")
    sequence = _text(stmt, "ElctrncSeqNb", where, required=False)
    if sequence is not None and not sequence.isdigit():
        raise StatementError(f"{where}: ElctrncSeqNb: {sequence!r} is not a number")
    entries = [_entry(e, f"{where}: Ntry {n + 1}") for n, e in enumerate(stmt.findall("{*}Ntry"))]
    return Statement(
        statement_id=statement_id, iban=iban.replace(" ", "").upper(),
        currency=_text(stmt, "Acct/Ccy", where, required=False) or currency,
        opening_balance=open_amount, opening_date=opening_date,
        closing_balance=close_amount, closing_date=closing_date, format=version,
        sequence_number=int(sequence) if sequence is not None else None,
        created_at=_stamp(_text(stmt, "CreDtTm", where, required=False), where),
        entries=entries)


def _entry(ntry, where: str) -> Entry:
    (amount, currency) = _amount(ntry, where)
    status = _text(ntry, "Sts/Cd", where, required=False) or \
        _text(ntry, "Sts", where, required=False)
    credit = amount if _direction(ntry, where) == "CRDT" else -amount
    details = ntry.findall("{*}NtryDtls/{*}TxDtls")
    counter = "Dbtr" if credit > 0 else "Cdtr"
    name = iban = end_to_end = None
    remittance = []
    for tx in details:
        end_to_end = end_to_end or _text(tx, "Refs/EndToEndId", where, required=False)
        name = name or _text(tx, f"RltdPties/{counter}/Nm", where, required=False) or \
            _text(tx, f"RltdPties/{counter}/Pty/Nm", where, required=False)
        iban = iban or _text(tx, f"RltdPties/{counter}Acct/Id/IBAN", where, required=False)
        remittance += [u.text.strip() for u in tx.findall("{*}RmtInf/{*}Ustrd") if u.text]
    extra = _text(ntry, "AddtlNtryInf", where, required=False)
    if not remittance and extra:
        remittance = [extra]
    batch = _text(ntry, "NtryDtls/Btch/NbOfTxs", where, required=False)
    return Entry(
        booking_date=_date(ntry, "BookgDt", where), value_date=_date(ntry, "ValDt", where,
                                                                      required=False),
        amount=credit, currency=currency, booked=(status or "BOOK") == "BOOK",
        reversal=(_text(ntry, "RvslInd", where, required=False) or "false") == "true",
        bank_reference=_text(ntry, "AcctSvcrRef", where, required=False),
        end_to_end_id=None if end_to_end == "NOTPROVIDED" else end_to_end,
        counterparty_name=name, counterparty_iban=iban,
        remittance=" ".join(remittance) or None, transaction_code=_code(ntry, where),
        transactions=int(batch) if batch and batch.isdigit() else None)


def _code(ntry, where: str) -> str | None:
    """The bank transaction code: ``domain/family/subfamily`` (ISO), else the
    proprietary one (a German bank's GVC, say)."""
    parts = [_text(ntry, path, where, required=False) for path in
             ("BkTxCd/Domn/Cd", "BkTxCd/Domn/Fmly/Cd", "BkTxCd/Domn/Fmly/SubFmlyCd")]
    if all(parts):
        return "/".join(parts)
    return _text(ntry, "BkTxCd/Prtry/Cd", where, required=False)


def _path(path: str) -> str:
    return "/".join(f"{{*}}{step}" for step in path.split("/"))


def _one(element, path: str, where: str):
    found = element.find(_path(path))
    if found is None:
        raise StatementError(f"{where}: {path} is missing")
    return found


def _text(element, path: str, where: str, required: bool = True) -> str | None:
    found = element.find(_path(path))
    text = found.text.strip() if found is not None and found.text else None
    if text is None and required:
        raise StatementError(f"{where}: {path} is missing")
    return text


def _amount(element, where: str) -> tuple[Decimal, str]:
    amt = _one(element, "Amt", where)
    text, currency = (amt.text or "").strip(), amt.get("Ccy")
    if not AMOUNT.match(text):
        raise StatementError(f"{where}: Amt: {text!r} is not an amount (digits, a point, at "
                             "most 5 decimals)")
    if not currency or not re.fullmatch(r"[A-Z]{3}", currency):
        raise StatementError(f"{where}: Amt: its currency (Ccy) is {currency!r}")
    return Decimal(text), currency


def _direction(element, where: str) -> str:
    value = _text(element, "CdtDbtInd", where)
    if value not in ("CRDT", "DBIT"):
        raise StatementError(f"{where}: CdtDbtInd: {value!r} is neither CRDT nor DBIT")
    return value


def _date(element, path: str, where: str, required: bool = True) -> date | None:
    """``<path>/Dt`` or, where a bank gives the time too, ``<path>/DtTm``'s date."""
    day = _text(element, f"{path}/Dt", where, required=False)
    if day is None:
        stamp = _text(element, f"{path}/DtTm", where, required=False)
        if stamp is None:
            if required:
                raise StatementError(f"{where}: {path} has neither Dt nor DtTm")
            return None
        return _stamp(stamp, f"{where}: {path}/DtTm").date()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):  # (fromisoformat takes more forms)
            return date.fromisoformat(day)
    except ValueError:
        pass
    raise StatementError(f"{where}: {path}/Dt: {day!r} is not a date (YYYY-MM-DD)")


def _stamp(text: str | None, where: str) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise StatementError(f"{where}: {text!r} is not a date and time") from None
