"""The bank area: every statement of the bank accounts mapped to locations, once, and its
entries (CAMT.053 or MT940 files: ``camt``, ``mt940``; read into one ``Statement`` shape:
``statements``; the lake's tables: ``tables``; a folder or S3 prefix read: ``extract``)."""

from pipeline.areas.bank.extract import extract_bank_statements
from pipeline.areas.bank.tables import BANK_TABLES
from pipeline.areas.base import Kind, LakeArea
from pipeline.sources.bank import SOURCE as BANK

AREA = LakeArea(
    "bank", Kind.SNAPSHOT, 7, BANK_TABLES, ("iban", "statement_id"),
    "Every bank statement of the configured accounts, once, and its entries.",
    source=BANK, extract=extract_bank_statements)
