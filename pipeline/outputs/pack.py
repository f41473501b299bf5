"""An auditor's pack per closed period (``pos-etl close-period`` writes it,
``pos-etl verify-pack`` checks it): one folder with the period's booking files (DATEV and
BMD), its daily closes, cash book, VAT report, coverage, the bookings as booked (with the
corrections it carries), the corrections pending, and a manifest of every file's SHA-256.

The manifest is ``manifest.json`` (period, close, files with their size and SHA-256) and
``SHA256SUMS`` (the same digests as ``sha256sum -c`` reads them); the manifest's own
digest is recorded in the lake's ``exports`` area, so a pack whose files and manifest were
both changed is found too, against the lake.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from pipeline.accounting import ledger
from pipeline.accounting.formats import BOOKING_FORMATS
from pipeline.core.settings import Settings
from pipeline.lake.open import make_lake
from pipeline.lake.store import LakeStore
from pipeline.outputs.export import ExportError, Selection, export

MANIFEST, SUMS = "manifest.json", "SHA256SUMS"
PACK_FORMAT = "pack"
"""The ``format`` of a pack's manifest in the lake's ``exports`` area."""
REPORTS = (
    ("rpt_daily_close", True, "Tagesabschluesse"),
    ("rpt_cash_book", True, "Kassenbuch"),
    ("rpt_vat_by_rate", True, "USt_nach_Steuersatz"),
    ("rpt_coverage", True, "Vollstaendigkeit"),
    ("rpt_closed_bookings", True, "Buchungen_wie_gebucht"),
    ("rpt_period_corrections", False, "Korrekturen_offen"),
)
"""(model, filtered to the period's business dates, file name): the pack's tables, as
German-locale CSV (``;``, decimal comma), which the accountant's spreadsheet opens."""


@dataclass(frozen=True)
class Pack:
    folder: Path
    files: list[str]
    manifest_sha256: str
    not_written: list[str]
    """The other booking format's file where it could not be written, and why."""
    warnings: list[str]
    """What the exports of its files warned (dates missing, characters transliterated)."""


def pack_name(period: str) -> str:
    return f"pack_{period}"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_pack(settings: Settings, closed: ledger.ClosedPeriod, parent: Path) -> Pack:
    """The pack of the ``closed`` period in ``parent/pack_<period>`` (replaced whole: it is
    written beside it and moved into place), its manifest recorded in the lake."""
    target = parent / pack_name(closed.name)
    scratch = parent / f".{target.name}.{os.getpid()}.pack"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        period = closed.period
        not_written, warnings = [], []
        for fmt in BOOKING_FORMATS:  # the closed format byte for byte, the other as booked
            try:
                warnings += export(settings, Selection("rpt_daily_close", period.first,
                                                       period.last, None),
                                   fmt, scratch / fmt).warnings
            except ExportError as exc:
                if fmt == closed.format:
                    raise
                not_written.append({"format": fmt, "reason": str(exc)})
                continue  # the other format cannot be written (BMD's digits-only kost, say)
            for path in sorted((scratch / fmt).iterdir()):
                os.replace(path, scratch / path.name)
            (scratch / fmt).rmdir()
        for model, by_date, name in REPORTS:
            sel = Selection(model, period.first if by_date else None,
                            period.last if by_date else None, None)
            warnings += export(settings, sel, "csv", scratch / f"{name}.csv",
                               locale="de").warnings
        files = sorted(p.name for p in scratch.iterdir())
        entries = [{"name": n, "bytes": (scratch / n).stat().st_size,
                    "sha256": _digest((scratch / n).read_bytes())} for n in files]
        manifest = json.dumps({
            "period": closed.name, "first_date": str(period.first),
            "last_date": str(period.last), "closed_at": closed.closed_at.isoformat(),
            "format": closed.format, "booking_file": closed.file_name,
            "booking_file_sha256": closed.sha256, "incomplete": closed.incomplete,
            "suspense": closed.suspense, "written_at": datetime.now(UTC).isoformat(),
            "not_written": not_written, "files": entries},
            indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        (scratch / MANIFEST).write_bytes(manifest)
        sums = "".join(f"{e['sha256']}  {e['name']}\n" for e in
                       [*entries, {"name": MANIFEST, "sha256": _digest(manifest)}])
        (scratch / SUMS).write_text(sums, encoding="utf-8")
        ledger.record_export(make_lake(settings), PACK_FORMAT, [ledger.ExportedFile(
            period, MANIFEST, manifest, [], True)])
        if target.exists():
            shutil.rmtree(target)
        os.replace(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Pack(target, [*files, MANIFEST, SUMS], _digest(manifest),
                [f"{n['format']}: {n['reason']}" for n in not_written],
                list(dict.fromkeys(warnings)))


class _Files:
    """A pack's files by name, from its folder or from a zip of it."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = zipfile.ZipFile(path) if path.is_file() else None
        if self.zip is not None:
            names = [n for n in self.zip.namelist() if not n.endswith("/")]
            tops = {PurePosixPath(n).parts[0] for n in names}
            self.prefix = f"{tops.pop()}/" if len(tops) == 1 and \
                all(len(PurePosixPath(n).parts) == 2 for n in names) else ""
            self.names = sorted(n[len(self.prefix):] for n in names)
        else:
            self.names = sorted(p.name for p in path.iterdir() if p.is_file())

    def read(self, name: str) -> bytes | None:
        if name not in self.names:
            return None
        if self.zip is not None:
            return self.zip.read(self.prefix + name)
        return (self.path / name).read_bytes()


@dataclass(frozen=True)
class Verified:
    period: str | None
    files: int
    problems: list[str]
    against_lake: bool


def verify_pack(path: Path, lake: LakeStore | None = None) -> Verified:
    """Check the pack at ``path`` (its folder, or a zip of it): every file of its manifest
    there with its size and SHA-256, nothing else beside them, ``SHA256SUMS`` agreeing;
    with the ``lake``, the booking file the one the period was closed with and the
    manifest the one close-period recorded. Returns the problems, each naming its file."""
    if not path.exists():
        return Verified(None, 0, [f"{path}: no such folder or zip"], False)
    try:
        files = _Files(path)
    except zipfile.BadZipFile:
        return Verified(None, 0, [f"{path}: neither a pack's folder nor a zip of one"], False)
    raw = files.read(MANIFEST)
    if raw is None:
        return Verified(None, 0, [f"{MANIFEST}: missing (is {path} a pack?)"], False)
    try:
        manifest = json.loads(raw)
        listed = {e["name"]: e for e in manifest["files"]}
    except (ValueError, KeyError, TypeError) as exc:
        return Verified(None, 0, [f"{MANIFEST}: not a pack's manifest ({exc})"], False)
    problems = []
    for name, entry in listed.items():
        data = files.read(name)
        if data is None:
            problems.append(f"{name}: missing")
        elif len(data) != entry.get("bytes") or _digest(data) != entry.get("sha256"):
            problems.append(f"{name}: changed since the pack was written (sha256 "
                            f"{_digest(data)[:16]}..., the manifest's "
                            f"{str(entry.get('sha256'))[:16]}...)")
    for name in files.names:
        if name not in listed and name not in (MANIFEST, SUMS):
            problems.append(f"{name}: not in the manifest")
    sums = (files.read(SUMS) or b"").decode("utf-8", "replace").splitlines()
    expected = [f"{e['sha256']}  {n}" for n, e in sorted(listed.items())] + \
        [f"{_digest(raw)}  {MANIFEST}"]
    if sorted(sums) != sorted(expected):
        problems.append(f"{SUMS}: does not match the files of the manifest")
    period = manifest.get("period")
    if lake is not None:
        closed = ledger.closed_periods(lake).get(period)
        booking = manifest.get("booking_file")
        if closed is None:
            problems.append(f"{MANIFEST}: the lake has no closed period {period}")
        else:
            if _digest(files.read(booking) or b"") != closed.sha256:
                problems.append(f"{booking}: not the file period {period} was closed with "
                                f"(the lake's sha256 {closed.sha256[:16]}...)")
            recorded = ledger.exported_digests(lake, PACK_FORMAT, period)
            if _digest(raw) not in recorded:
                problems.append(f"{MANIFEST}: not a manifest close-period recorded for "
                                f"{period} in the lake")
    return Verified(period, len(listed), problems, lake is not None)
