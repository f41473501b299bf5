"""The sandbox's bank: the statements its own data implies, for each location's account.

Card sales are paid out by the acquirer of their card type, per batch (a service day's
terminal cut), less its fee, on the first bank day at least ``days`` after the batch: a
Friday's, Saturday's and Sunday's batches arrive together on Monday, in one entry. The
cash a day's count moved to the bank (``Geldtransit Bank`` in the cash book) is deposited
on Tuesdays and Fridays, all days since the last deposit in one. A month also has what a
real one has (``FAULTS``): a payout that never comes, a chargeback, a fee that goes up, a
deposit a note short, a transfer that has nothing to do with the till. Everything is
derived from the sandbox's receipts and the dates: the same month is the same statements.

``statements(location_id, first, last)`` gives one statement per bank day (Monday to
Friday) of ``first``..``last``; ``camt053`` and ``mt940`` write one as its format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from xml.sax.saxutils import escape

import mt940_writer
import schwifty

from pos_sandbox import world
from pos_sandbox.receipts import CARD_TYPES, CASH_ACCOUNTS, SandboxData, service_day

CENT = Decimal("0.01")
OPENING = Decimal("10000.00")
"""Every account's balance before its first statement of a month."""
BANK_CODE = "20111"


@dataclass(frozen=True)
class Acquirer:
    code: str
    reference: str
    """The first two characters of its payouts' bank reference."""
    name: str
    iban: str
    rate: Decimal
    days: int
    """Bank days after the batch's day it pays it."""


ACQUIRERS = {
    "Bankomat": Acquirer("PAYLIFE", "PL", "PayLife Bank GmbH", "AT483200000012345864",
                         Decimal("0.0060"), 1),
    "Kreditkarte": Acquirer("CARDCOMPLETE", "CC", "card complete Service Bank",
                            "AT611904300234573201", Decimal("0.0150"), 2),
}
assert set(ACQUIRERS) == set(CARD_TYPES)
RAISED_RATE = Decimal("0.0180")
"""The credit card acquirer's fee from the 16th of a month on (a fee change)."""
CHARGEBACK = Decimal("64.90")
NOTE = Decimal("50.00")
RENT = Decimal("2400.00")
LANDLORD = ("Immobilien Ring GmbH", "AT022011100000012345")

FAULTS = ("missing payout", "chargeback", "fee change", "deposit short", "unrelated transfer")
"""The deliberate faults of every month of every account (``fault_days`` says when)."""


def account_iban(location_id: int) -> str:
    """The location's account: an Austrian IBAN of the sandbox's bank."""
    return schwifty.IBAN.generate("AT", bank_code=BANK_CODE,
                                  account_code=f"{location_id:011d}").compact


def bank_day(day: date) -> bool:
    return day.weekday() < 5


def next_bank_day(day: date) -> date:
    while not bank_day(day):
        day += timedelta(days=1)
    return day


def pay_day(batch: date, days: int) -> date:
    """When an acquirer pays a batch: the first bank day ``days`` bank days after it (a
    weekend's batches with Friday's, on Monday)."""
    day = next_bank_day(batch + timedelta(days=1))
    for _ in range(days - 1):
        day = next_bank_day(day + timedelta(days=1))
    return day


def fault_days(month: date) -> dict[str, date]:
    """The service or bank day of each fault in ``month``'s first of the month."""
    first = month.replace(day=1)
    def nth(weekday: int, n: int) -> date:
        day = first + timedelta(days=(weekday - first.weekday()) % 7)
        return day + timedelta(weeks=n - 1)
    return {"missing payout": nth(2, 1),        # the first Wednesday's credit card batch
            "chargeback": nth(3, 2),            # the second Thursday
            "deposit short": nth(1, 3),         # the third Tuesday's deposit
            "unrelated transfer": next_bank_day(first)}


@dataclass
class BankEntry:
    booking_date: date
    amount: Decimal
    """Signed: in positive."""
    name: str
    iban: str | None
    remittance: str
    reference: str
    """The bank's reference (at most 16 characters: MT940's ``:61:`` holds no more)."""
    code: str
    """The bank transaction code (ISO domain/family/subfamily)."""
    batch_count: int | None = None
    fault: str | None = None


@dataclass
class Statement:
    statement_id: str
    iban: str
    sequence: int
    day: date
    opening: Decimal
    entries: list[BankEntry] = field(default_factory=list)

    @property
    def closing(self) -> Decimal:
        return self.opening + sum((e.amount for e in self.entries), Decimal(0))


@dataclass
class Day:
    """What a service day sends to the bank: its card sales per type, settled by the
    terminal's cut (a batch), and the cash its count moved out; each dated by the
    business date of its record (a cut after midnight belongs to the next day where
    the business day starts at midnight)."""
    cut_on: date
    cards: dict[str, Decimal]
    moved_on: date
    cash_out: Decimal


def business_date(location_id: int, when: datetime) -> date:
    """The business date of a local wall-clock time at the location."""
    hours, minutes = map(int, world.location(location_id).business_day_starts.split(":"))
    return (when - timedelta(hours=hours, minutes=minutes)).date()


def takings(location_id: int, day: date, data: SandboxData) -> Day:
    cards = {t: Decimal(0) for t in CARD_TYPES}
    cash_out = Decimal(0)
    cut_on = moved_on = day
    for r in service_day(location_id, day, data):
        if r.transaction_type in ("Abrechnen", "RechnungZurückholen"):
            for p in r.payments:
                if p.payment_type.name in cards:
                    cards[p.payment_type.name] += p.amount
        elif r.transaction_type == "Kassabuch":
            moved = sum((p.amount for p in r.payments
                         if p.fibu_account_nr == CASH_ACCOUNTS["transit"]), Decimal(0))
            if moved:
                cash_out -= moved
                moved_on = business_date(location_id, r.date_time)
        elif r.transaction_type == "TerminalKassenschnitt":
            cut_on = business_date(location_id, r.date_time)
    return Day(cut_on, cards, moved_on, cash_out)


def entries(location_id: int, first: date, last: date, data: SandboxData,
            faults: bool = True) -> list[BankEntry]:
    """Every entry the account books from ``first`` to ``last`` (with the month's
    ``FAULTS``, unless ``faults`` is false: a month in which all money arrives)."""
    loc = world.location(location_id)
    start = first - timedelta(days=10)  # batches and cash of days before, paid within
    days = [takings(location_id, start + timedelta(days=n), data)
            for n in range((last - start).days)]
    out: list[BankEntry] = []
    payouts: dict[tuple[date, str], list[tuple[date, Decimal, Decimal]]] = {}
    for took in days:
        batch = took.cut_on
        for card, gross in took.cards.items():
            acquirer = ACQUIRERS[card]
            if not gross or (faults and card == "Kreditkarte"
                             and batch == fault_days(batch)["missing payout"]):
                continue
            raised = faults and card == "Kreditkarte" and batch.day >= 16
            rate = RAISED_RATE if raised else acquirer.rate
            fee = (gross * rate).quantize(CENT, ROUND_HALF_UP)
            payouts.setdefault((pay_day(batch, acquirer.days), card), []).append(
                (batch, gross, fee))
    for (paid, card), batches in sorted(payouts.items()):
        acquirer = ACQUIRERS[card]
        net = sum((g - f for _, g, f in batches), Decimal(0))
        text = f"{acquirer.code} {loc.short_code} " + " ".join(
            f"{d:%Y%m%d}/{g}/{f}" for d, g, f in batches)
        out.append(BankEntry(paid, net, acquirer.name, acquirer.iban, text,
                             f"{acquirer.reference}{location_id}{paid:%y%m%d}", "PMNT/RCDT/ESCT",
                             len(batches)))
    moved = sorted((t.moved_on, t.cash_out) for t in days if t.cash_out)
    pending: list[tuple[date, Decimal]] = []
    day = start
    while day <= last:
        if day.weekday() in (1, 4):  # Tuesday, Friday: the cash moved out before the day
            pending += [m for m in moved if m[0] < day]
            moved = [m for m in moved if m[0] >= day]
            if pending:
                amount = sum((a for _, a in pending), Decimal(0))
                fault = None
                if faults and day == fault_days(day)["deposit short"]:
                    amount, fault = amount - NOTE, "deposit short"
                text = (f"BAREINZAHLUNG {loc.short_code} {pending[0][0]:%Y%m%d}-"
                        f"{pending[-1][0]:%Y%m%d}")
                out.append(BankEntry(day, amount, loc.name[:27], None, text,
                                     f"BE{location_id}{day:%y%m%d}", "PMNT/CNTR/CDPT",
                                     fault=fault))
                pending = []
        day += timedelta(days=1)
    months = {start.replace(day=1), last.replace(day=1), first.replace(day=1)}
    for month in sorted(months) if faults else ():
        faults = fault_days(month)
        out.append(BankEntry(faults["unrelated transfer"], -RENT, *LANDLORD,
                             f"MIETE {month:%m/%Y} {loc.short_code}",
                             f"RE{location_id}{month:%y%m}", "PMNT/ICDT/ESCT",
                             fault="unrelated transfer"))
        back, sold = faults["chargeback"], faults["chargeback"] - timedelta(days=9)
        out.append(BankEntry(back, -CHARGEBACK, ACQUIRERS["Kreditkarte"].name,
                             ACQUIRERS["Kreditkarte"].iban,
                             f"CHARGEBACK CARDCOMPLETE {loc.short_code} {sold:%Y%m%d}",
                             f"CB{location_id}{back:%y%m%d}", "PMNT/RDDT/UPDD",
                             fault="chargeback"))
    return sorted((e for e in out if first <= e.booking_date <= last),
                  key=lambda e: (e.booking_date, e.reference))


def statements(location_id: int, first: date, last: date,
               data: SandboxData | None = None, faults: bool = True) -> list[Statement]:
    """One statement per bank day of ``first``..``last`` (the first's opening balance
    ``OPENING``), each with that day's entries (``faults``: ``entries``)."""
    booked = entries(location_id, first, last, data or SandboxData(), faults)
    iban, out, balance = account_iban(location_id), [], OPENING
    day = first
    while day <= last:
        if bank_day(day):
            statement = Statement(f"{iban[-6:]}-{day:%Y%m%d}", iban, day.timetuple().tm_yday,
                                  day, balance, [e for e in booked if e.booking_date == day])
            out.append(statement)
            balance = statement.closing
        day += timedelta(days=1)
    return out


def _amount(value: Decimal) -> str:
    return f"{abs(value):.2f}"


def camt053(statement: Statement) -> bytes:
    """The statement as ``camt.053.001.08`` (one ``Stmt``)."""
    s = statement
    ns = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"
    created = datetime.combine(s.day, time(6, 0)).isoformat()
    def balance(code: str, amount: Decimal, day: date) -> str:
        return (f"<Bal><Tp><CdOrPrtry><Cd>{code}</Cd></CdOrPrtry></Tp>"
                f"<Amt Ccy=\"EUR\">{_amount(amount)}</Amt>"
                f"<CdtDbtInd>{'CRDT' if amount >= 0 else 'DBIT'}</CdtDbtInd>"
                f"<Dt><Dt>{day.isoformat()}</Dt></Dt></Bal>")
    rows = []
    for e in s.entries:
        domain, family, sub = e.code.split("/")
        party = "Dbtr" if e.amount > 0 else "Cdtr"
        account = f"<{party}Acct><Id><IBAN>{e.iban}</IBAN></Id></{party}Acct>" if e.iban else ""
        batch = f"<Btch><NbOfTxs>{e.batch_count}</NbOfTxs></Btch>" if e.batch_count else ""
        rows.append(
            f"<Ntry><NtryRef>{escape(e.reference)}</NtryRef>"
            f"<Amt Ccy=\"EUR\">{_amount(e.amount)}</Amt>"
            f"<CdtDbtInd>{'CRDT' if e.amount > 0 else 'DBIT'}</CdtDbtInd>"
            f"<Sts><Cd>BOOK</Cd></Sts><BookgDt><Dt>{e.booking_date}</Dt></BookgDt>"
            f"<ValDt><Dt>{e.booking_date}</Dt></ValDt>"
            f"<AcctSvcrRef>{escape(e.reference)}</AcctSvcrRef>"
            f"<BkTxCd><Domn><Cd>{domain}</Cd><Fmly><Cd>{family}</Cd>"
            f"<SubFmlyCd>{sub}</SubFmlyCd></Fmly></Domn></BkTxCd>"
            f"<NtryDtls>{batch}<TxDtls><Refs><EndToEndId>NOTPROVIDED</EndToEndId>"
            f"</Refs><RltdPties><{party}><Pty><Nm>{escape(e.name)}</Nm></Pty></{party}>"
            f"{account}</RltdPties><RmtInf><Ustrd>{escape(e.remittance)}</Ustrd></RmtInf>"
            f"</TxDtls></NtryDtls></Ntry>")
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Document xmlns=\"{ns}\">"
            f"<BkToCstmrStmt><GrpHdr><MsgId>{s.statement_id}</MsgId>"
            f"<CreDtTm>{created}</CreDtTm></GrpHdr>"
            f"<Stmt><Id>{s.statement_id}</Id><ElctrncSeqNb>{s.sequence}</ElctrncSeqNb>"
            f"<CreDtTm>{created}</CreDtTm><Acct><Id><IBAN>{s.iban}</IBAN></Id>"
            f"<Ccy>EUR</Ccy></Acct>"
            f"{balance('PRCD', s.opening, s.day - timedelta(days=1))}"
            f"{balance('CLBD', s.closing, s.day)}{''.join(rows)}"
            f"</Stmt></BkToCstmrStmt></Document>\n").encode()


def mt940(statement: Statement) -> bytes:
    """The statement as MT940 (by ``mt940-writer``), its ``:86:`` in the German
    structured form: ``?20``-``?25`` the purpose, ``?31`` the IBAN, ``?32`` the name."""
    s = statement
    def info(e: BankEntry) -> str:
        chunks = [e.remittance[i:i + 27] for i in range(0, len(e.remittance), 27)]
        purpose = "".join(f"?{20 + n}{c}" for n, c in enumerate(chunks))
        iban = f"?31{e.iban}" if e.iban else ""
        return f"166?00{'GUTSCHRIFT' if e.amount > 0 else 'LASTSCHRIFT'}{purpose}" \
               f"?32{e.name[:27]}{iban}"
    transactions = [mt940_writer.Transaction(
        e.booking_date, e.amount, mt940_writer.TransactionType.transfer,
        f"NONREF//{e.reference}", mt940_writer.TransactionAdditionalInfo(info(e)))
        for e in s.entries]
    text = str(mt940_writer.Statement(
        s.statement_id, mt940_writer.Account(s.iban, ""), f"{s.sequence:05d}",
        mt940_writer.Balance(s.opening, s.day - timedelta(days=1), "EUR"),
        mt940_writer.Balance(s.closing, s.day, "EUR"), transactions))
    return (text + "\n").encode("latin-1", "replace")


def write_statements(folder: Path, location_ids: list[int], first: date, last: date,
                     mt940_for: int = 1, faults: bool = True) -> list[Path]:
    """Each location's statements of ``first``..``last`` as CAMT.053 files (one per
    statement, ``<iban>/<statement id>.xml``), and the first ``mt940_for`` locations'
    also as one MT940 file each (``<iban>.sta``): a bank that delivers both."""
    written = []
    for n, location_id in enumerate(location_ids):
        made = statements(location_id, first, last, faults=faults)
        if not made:
            continue
        account = folder / made[0].iban
        account.mkdir(parents=True, exist_ok=True)
        for s in made:
            path = account / f"{s.statement_id}.xml"
            path.write_bytes(camt053(s))
            written.append(path)
        if n < mt940_for:
            path = folder / f"{made[0].iban}.sta"
            path.write_bytes(b"".join(mt940(s) for s in made))
            written.append(path)
    return written
