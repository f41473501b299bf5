"""A selection of the warehouse (a model's rows for a date range and locations) as a query,
headed and written as a locale speaks; and the private scratch folders files are written
in. What the exports (``pipeline.outputs.export``) and the booking files
(``pipeline.accounting.bookfiles``) build on."""

from __future__ import annotations

import difflib
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import psutil

from pipeline.core.outcomes import UsageError
from pipeline.core.settings import Settings
from pipeline.core.untrusted import neutralise_formula_sql
from pipeline.warehouse.coverage import Gaps

LOCALES = ("en", "de")
WORDS = {"en": {"total": "Total", "missing": "missing dates", "short_code": "short_code",
                "name": "location_name",
                "gaps": ("location_id", "short_code", "missing_from", "missing_to",
                         "days_missing", "dates_expected")},
         "de": {"total": "Summe", "missing": "fehlende Tage", "short_code": "Kürzel",
                "name": "Standortname",
                "gaps": ("Standort", "Kürzel", "fehlt von", "fehlt bis", "Tage fehlend",
                         "Tage erwartet")}}
"""What an export writes in words of its own, per locale."""
class ExportError(Exception):
    """The export cannot be made as asked; the message says what to change."""


class UnknownModel(ExportError, UsageError):
    """The name given is no model of the warehouse (a usage error)."""


@dataclass(frozen=True)
class Selection:
    model: str
    start: date | None
    end: date | None
    location_ids: list[int] | None


@dataclass(frozen=True)
class Layout:
    """How a file for people speaks: its locale's headers and words, and each location's
    short code and name (xlsx)."""

    locale: str = "en"
    labels: dict[str, str] = field(default_factory=dict)
    locations: dict[int, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings, locale: str | None = None) -> Layout:
        from pipeline.warehouse.project import shipped

        locale = locale or settings.export.locale
        if locale not in LOCALES:
            raise ExportError(f"unknown locale {locale!r}; choose one of {', '.join(LOCALES)}")
        labels = shipped().dictionary.labels.get(locale, {}) \
            if locale != "en" else {}
        return cls(locale, labels, {loc.id: (loc.short_code, loc.name or loc.short_code)
                                    for loc in settings.locations})

    def header(self, column: str) -> str:
        return self.labels.get(column, column)

    def word(self, key: str):
        return WORDS[self.locale][key]


@dataclass
class Exported:
    """What an export wrote: rows (the bookings, for DATEV), and what the reader should
    know (characters transliterated, say)."""

    rows: int
    warnings: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    missing: list[Gaps] = field(default_factory=list)
    """Per location, the business dates of the range the warehouse lacks."""


def resolve_model(con: duckdb.DuckDBPyConnection, model: str) -> tuple[str, list[tuple[str, str]]]:
    """The model's qualified name (marts and reports, in ``main``) and its columns with
    their types. A staging model is computed by each build and not stored: the error
    names the marts that hold its rows."""
    name = model.removeprefix("main.")
    found = con.execute("select column_name, data_type from information_schema.columns "
                        "where table_schema = 'main' and table_name = ? "
                        "order by ordinal_position", [name]).fetchall()
    if found:
        return f'main."{name}"', found
    from pipeline.warehouse.project import shipped

    models = shipped().models
    staged = models.get(name.removeprefix("staging."))
    if staged is not None and not staged.stored:
        readers = sorted(m.name for m in models.values()
                         if staged.name in m.model_deps and m.stored)
        raise UnknownModel(f"{staged.name} is a staging model: each build computes it and "
                           f"the warehouse does not store it; its rows are in "
                           f"{', '.join(readers) or 'the marts'} (`pos-etl docs` maps its "
                           f"columns)")
    stored = [r[0] for r in con.execute(
        "select table_name from information_schema.tables "
        "where table_schema = 'main' order by 1").fetchall()]
    close = difflib.get_close_matches(name, stored, n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else \
        "; `pos-etl docs` lists the models"
    raise UnknownModel(f"the warehouse has no model {model!r}{hint}")


def selection_query(con: duckdb.DuckDBPyConnection, sel: Selection,
                    neutralise: bool = False, layout: Layout | None = None,
                    as_text: bool = False) -> str:
    """The select of the model's rows in the selection; with ``neutralise`` the text
    columns made inert for spreadsheets. The selection's values are typed (dates and
    integer ids) and written as literals, since COPY takes no parameters. With a
    ``layout``, columns are headed by its labels; with ``as_text`` too, numbers and
    booleans are written as its locale writes them (German: ``1234,56``, WAHR)."""
    table, typed = resolve_model(con, sel.model)
    columns = [name for name, _ in typed]
    where = []
    if sel.start or sel.end:
        date_column = next((c for c in ("business_date", "snapshot_date") if c in columns), None)
        if date_column is None:
            raise ExportError(f"{sel.model} has no business_date or snapshot_date column: "
                              "export it without --start/--end")
        if sel.start:
            where.append(f"{date_column} >= DATE '{sel.start.isoformat()}'")
        if sel.end:
            where.append(f"{date_column} <= DATE '{sel.end.isoformat()}'")
    if sel.location_ids:
        if "location_id" not in columns:
            raise ExportError(f"{sel.model} has no location_id column (it is tenant-wide): "
                              "export it without --location")
        where.append(f"location_id in ({', '.join(str(int(x)) for x in sel.location_ids)})")
    keys = [c for c in ("location_id", "business_date", "snapshot_date") if c in columns]
    select = ", ".join(
        f"{_value(name, kind, neutralise, layout if as_text else None)} as "
        f"{_quoted(layout.header(name) if layout else name)}"
        for name, kind in typed)
    sql = (f"select {select} from {table}"
           + (f" where {' and '.join(where)}" if where else "")
           + (f" order by {', '.join(keys)}" if keys else ""))
    return sql


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _value(name: str, kind: str, neutralise: bool, layout: Layout | None) -> str:
    """A column as a select writes it: text made inert for spreadsheets if asked; for a
    German CSV, decimals with a decimal comma and booleans as WAHR/FALSCH."""
    column = _quoted(name)
    if neutralise and kind in ("VARCHAR", "JSON"):
        return neutralise_formula_sql(column)
    if layout is not None and layout.locale == "de":
        if kind.startswith("DECIMAL") or kind in ("DOUBLE", "FLOAT", "REAL"):
            return f"replace(cast({column} as varchar), '.', ',')"
        if kind == "BOOLEAN":
            return f"case when {column} then 'WAHR' when not {column} then 'FALSCH' end"
    return column


SCRATCH = re.compile(r"^\..+\.(?P<pid>\d+)\.export$")
"""The private folder an export writes in, beside its target: ``.<name>.<pid>.export``."""


def real_target(output: Path) -> Path:
    """Where the file goes: through a symlink to the file it names; never a folder."""
    target = Path(os.path.realpath(output)) if output.is_symlink() else output
    if target.is_dir():
        raise ExportError(f"{output} is a folder: name the file to write, e.g. "
                          f"{output / 'export.csv'}")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def remove_leftovers(folder: Path, name: str) -> None:
    """Scratch folders of exports to ``name`` whose process is gone (killed mid-way)."""
    for entry in folder.glob(f".{glob_escape(name)}.*.export"):
        m = SCRATCH.match(entry.name)
        if m and not psutil.pid_exists(int(m["pid"])):
            shutil.rmtree(entry, ignore_errors=True)


def glob_escape(text: str) -> str:
    """``text`` matched literally by ``Path.glob`` (``[``, ``*`` and ``?`` escaped)."""
    return re.sub(r"([\[\]*?])", r"[\1]", text)


def check_warehouse(settings: Settings) -> None:
    path = settings.warehouse.warehouse_path
    if not path.is_file():
        raise ExportError(f"no warehouse at {path}: run `{settings.command('load')}` (or "
                          f"`{settings.command('build')}`) first" if not path.exists()
                          else f"{path} is not a file")
