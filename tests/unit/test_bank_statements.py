"""Bank statements read from both formats, held to their balances, refused by name."""

import re
from dataclasses import asdict
from datetime import date
from decimal import Decimal

import pytest

from pipeline.areas.bank.camt import read_camt
from pipeline.areas.bank.extract import extract_bank_statements, read_statements
from pipeline.areas.bank.mt940 import read_mt940
from pipeline.areas.bank.statements import StatementError
from pipeline.sources.base import Place
from pos_sandbox import bank

FIRST, LAST = date(2026, 10, 1), date(2026, 10, 31)
FORMAT_ONLY = {"format", "created_at", "transaction_code", "transactions"}
"""What one format carries and the other cannot (MT940 has no creation time nor batch
count; its transaction code is a GVC, CAMT's an ISO domain code)."""


@pytest.fixture(scope="module")
def october() -> list[bank.Statement]:
    return bank.statements(1001, FIRST, LAST)


def comparable(statement) -> dict:
    row = {k: v for k, v in asdict(statement).items() if k not in FORMAT_ONLY}
    row["entries"] = [{k: v for k, v in e.items() if k not in FORMAT_ONLY}
                      for e in row["entries"]]
    return row


def test_both_formats_read_to_the_same_rows(october):
    for made in october:
        [camt] = read_statements("s.xml", bank.camt053(made))
        [mt940] = read_statements("s.sta", bank.mt940(made))
        assert comparable(camt) == comparable(mt940)
        assert camt.closing_balance == made.closing and len(camt.entries) == len(made.entries)
        assert camt.format == "camt.053.001.08" and mt940.format == "mt940"


def test_a_month_holds_every_fault_once_and_each_day_pays_out(october):
    entries = [e for s in october for e in s.entries]
    assert sorted(e.fault for e in entries if e.fault) == sorted(
        ["chargeback", "deposit short", "unrelated transfer"])
    missing = bank.fault_days(FIRST)["missing payout"]
    paid = {text.split("/")[0] for e in entries if e.remittance.startswith("CARDCOMPLETE")
            for text in e.remittance.split()[2:]}
    assert f"{missing:%Y%m%d}" not in paid  # the missing payout is missing
    assert f"{missing - date.resolution:%Y%m%d}" in paid  # the day before it is not
    weekend = [e for e in entries if e.booking_date.weekday() == 0
               and e.remittance.startswith("PAYLIFE")]
    assert weekend and all(e.batch_count == 3 for e in weekend)  # Fri, Sat, Sun together


def test_a_statement_whose_balances_do_not_add_up_is_refused_by_name(october):
    made = october[3]
    broken = bank.camt053(made).replace(f"<Amt Ccy=\"EUR\">{made.closing:.2f}</Amt>".encode(),
                                        b"<Amt Ccy=\"EUR\">1.00</Amt>")
    with pytest.raises(StatementError) as err:
        read_statements("bank/2026-10-06.xml", broken)
    assert str(err.value).startswith(f"bank/2026-10-06.xml: statement {made.statement_id}: "
                                     f"opening balance {made.opening}")
    assert "closing balance says 1.00" in str(err.value)


@pytest.mark.parametrize("change, says", [
    ((b"<Amt Ccy=\"EUR\">", b"<Amt Ccy=\"EUR\">1,"), "is not an amount"),
    ((b"<CdtDbtInd>CRDT</CdtDbtInd>", b"<CdtDbtInd>CREDIT</CdtDbtInd>"), "neither CRDT nor DBIT"),
    ((b"<Cd>CLBD</Cd>", b"<Cd>CLAV</Cd>"), "closing booked balance (CLBD)"),
    ((b"camt.053.001.08", b"camt.052.001.08"), "not a CAMT.053 document"),
    ((b"<BookgDt><Dt>2026", b"<BookgDt><Dt>26"), "is not a date"),
    ((b"</Document>", b""), "not well-formed XML"),
    ((b"<Acct><Id><IBAN>", b"<Acct><Id><Othr><Id>", b"</IBAN></Id><Ccy>",
      b"</Id></Othr></Id><Ccy>"), "Acct/Id: the account has no IBAN"),
])
def test_a_malformed_camt_file_is_refused_naming_what(october, change, says):
    data = bank.camt053(october[1])
    for old, new in zip(change[::2], change[1::2], strict=True):
        data = data.replace(old, new)
    with pytest.raises(StatementError, match=re.escape(says)) as err:
        read_statements("in/october.xml", data)
    assert str(err.value).startswith("in/october.xml")


def test_a_debit_balance_is_negative():
    [s] = read_camt(DEBIT_BALANCE, "d.xml")
    assert s.opening_balance == Decimal("-120.50") and s.closing_balance == Decimal("-20.50")
    assert [e.amount for e in s.entries] == [Decimal("100.00")]
    [t] = read_mt940(b":20:D1\n:25:AT022011100000001001\n:28C:00001\n:60F:D261001EUR120,50\n"
                     b":61:2610011001C100,00NTRFNONREF\n:86:Einzahlung\n:62F:D261001EUR20,50\n",
                     "d.sta")
    assert (t.opening_balance, t.closing_balance) == (s.opening_balance, s.closing_balance)


@pytest.mark.parametrize("change, says", [
    ((b'Ccy="EUR"', b'Ccy="CHF"'), "amounts in CHF: only accounts in EUR are read"),
    ((b"100.00", b"100.005"), "amount 100.005 is finer than a cent"),
])
def test_only_euro_accounts_to_the_cent_are_read(change, says):
    with pytest.raises(StatementError, match=re.escape(f"d.xml: statement D1: {says}")):
        read_statements("d.xml", DEBIT_BALANCE.replace(*change))


def test_statements_read_twice_count_once_and_conflicting_ones_not_at_all(tmp_path, october):
    folder = tmp_path / "statements"
    folder.mkdir()
    for made in october[:3]:
        (folder / f"{made.statement_id}.xml").write_bytes(bank.camt053(made))
    (folder / "again.sta").write_bytes(b"".join(bank.mt940(s) for s in october[:2]))
    changed = october[2]
    changed.entries[0].amount += Decimal("0.01")
    (folder / "restated.xml").write_bytes(bank.camt053(changed))
    (folder / "other.xml").write_bytes(bank.camt053(bank.statements(1002, FIRST, FIRST)[0]))
    (folder / "notes.txt").write_bytes(b"not a statement")

    class Run:
        def place(self, name):
            return Place(str(folder), {bank.account_iban(1001): 1001})

    files = extract_bank_statements(Run(), None, LAST)
    kept = sorted(s.partition["statement_id"] for s in files.snapshots)
    assert kept == sorted(s.statement_id for s in october[:2])  # once each, both formats
    assert set(files.refused) == {"restated.xml", "other.xml", "notes.txt"}
    assert "neither is loaded" in files.refused["restated.xml"]
    assert f"account {bank.account_iban(1002)} is not in [[bank.accounts]]" in \
        files.refused["other.xml"]
    assert files.refused["notes.txt"].startswith("notes.txt: not an MT940 statement")


DEBIT_BALANCE = b"""<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt>
<GrpHdr><MsgId>M</MsgId><CreDtTm>2026-10-01T06:00:00</CreDtTm></GrpHdr>
<Stmt><Id>D1</Id><CreDtTm>2026-10-01T06:00:00</CreDtTm>
<Acct><Id><IBAN>AT02 2011 1000 0000 1001</IBAN></Id></Acct>
<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">120.50</Amt>
<CdtDbtInd>DBIT</CdtDbtInd><Dt><Dt>2026-10-01</Dt></Dt></Bal>
<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">20.50</Amt>
<CdtDbtInd>DBIT</CdtDbtInd><Dt><Dt>2026-10-01</Dt></Dt></Bal>
<Ntry><Amt Ccy="EUR">100.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts>
<BookgDt><Dt>2026-10-01</Dt></BookgDt><AddtlNtryInf>Einzahlung</AddtlNtryInf></Ntry>
</Stmt></BkToCstmrStmt></Document>
"""
