"""The config file (TOML) and its loading.

``--config FILE`` or ``POS_ETL_CONFIG`` names the file; with neither, the pipeline
runs against the built-in sandbox. Every problem of a file is reported at once with
its key path. API keys are never in the file: each location names the environment
variable that holds its key, read only when a run needs it.
"""

from __future__ import annotations

import difflib
import re
import shlex
import tomllib
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from pipeline.core.accounting_settings import AccountingSettings
from pipeline.core.bank_settings import BankSettings
from pipeline.core.charts import ChartError
from pipeline.core.config_base import StrictModel, check_zone
from pipeline.core.config_errors import format_errors
from pipeline.core.outcomes import ConfigError

CONFIG_ENV = "POS_ETL_CONFIG"


PATH_SPECIALS = "?*[]{}%"
"""Characters a data folder must not hold: DuckDB and object stores read them as glob
patterns or URL escapes, so files would be looked for elsewhere."""


class SourceSettings(StrictModel):
    base_url: str | None = None
    """``{base_url}`` of the POS; omitted means the built-in sandbox, started in-process."""
    voucher_url: str | None = None
    """``{voucher_url}`` of the voucher ledger; unset means vouchers are not loaded."""
    voucher_api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Variable holding the ledger's key; unset means the first location's key."""
    connect_timeout_seconds: float = Field(10.0, gt=0, le=3600)
    read_timeout_seconds: float = Field(60.0, gt=0, le=3600)
    request_deadline_seconds: float = Field(300.0, gt=0, le=86_400)
    """Overall time one logical request may take, retries and waits included."""
    max_attempts: int = Field(6, ge=1, le=20)
    backoff_initial_seconds: float = Field(0.5, ge=0, le=3600)
    backoff_max_seconds: float = Field(60.0, ge=0, le=3600)
    page_size: int = Field(500, ge=1, le=10_000)
    """``limit`` sent with each revenue report page."""
    max_receipts_per_partition: int = Field(200_000, ge=1, le=100_000_000)
    """Ceiling on the receipts of one location's window: a server that keeps sending full
    pages of new receipts is stopped with an error instead of being paged forever."""
    max_catalog_records: int = Field(100_000, ge=1, le=100_000_000)
    """Ceiling on one catalog listing (products, categories or spots of a location): a
    ``total`` above it, or pages that keep coming, fail the snapshot instead of filling
    memory."""
    max_response_mb: int = Field(64, ge=1, le=4096)
    """Largest answer read, in MB after decompression (counted while streaming, so a
    compressed bomb stops early): a larger one fails its partition or snapshot."""
    window_margin_minutes: int = Field(180, ge=0, le=24 * 60)
    """How much wider than the business day the revenue window is requested."""
    max_concurrent_requests: int = Field(4, ge=1, le=64)
    requests_per_second: int | None = Field(None, ge=1, le=10_000)
    """The POS host's budget of requests per second for every run and process of this
    machine that reads it at once (the shares of a sharded night, a CLI load beside
    them): one bucket in the Dagster home (``pipeline.pos_api.budget``). A 429 with
    ``Retry-After`` holds the whole budget that long, so every run waits. Unset: no
    budget, ``max_concurrent_requests`` per run alone."""
    budget_database_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The variable holding a PostgreSQL URL (``postgresql://user:password@host/db``, a
    secret: never in this file) where the budget is kept for processes on many machines
    (pods, containers); unset: a file in the Dagster home, for this machine's."""

    @field_validator("base_url", "voucher_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
            raise ValueError("must be an http:// or https:// address without spaces, query "
                             "or fragment")
        return value.rstrip("/") if value else value


DEFAULT_MEMORY_LIMIT = "256MB"
DEFAULT_STORAGE_VERSION = "v1.1.0"
"""The oldest DuckDB whose storage format the warehouse file is written in: every DuckDB
from 1.1 on opens it (what BI tools bundle lags the Python release)."""
MEMORY_LIMIT = r"(\d+(?:\.\d+)?)\s*([KMGT]i?B)"
"""A DuckDB memory limit: a size and its unit (``256MB``, ``1.5GiB``)."""
MIN_MEMORY_MB = 64
"""The least memory a build is given: less fails its first statements."""


class WarehouseSettings(StrictModel):
    data_dir: Path = Path("data")
    memory_limit: str = Field(DEFAULT_MEMORY_LIMIT, pattern=f"^{MEMORY_LIMIT}$")
    """DuckDB's memory for a build; beyond it a build spills to disk, so a backfill of
    any length runs in bounded memory. At least ``MIN_MEMORY_MB``."""
    storage_version: str = Field(
        DEFAULT_STORAGE_VERSION,
        pattern=r"^(v1\.([1-9]|[1-9][0-9])\.[0-9]+|v[2-9]\.[0-9]+\.[0-9]+|latest)$")
    """The DuckDB storage format of the warehouse file (``v1.1.0``: DuckDB 1.1 and later
    open it; ``latest``: only the DuckDB that built it and newer). A change makes the
    next build write a new file."""

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty; name a folder (\"data\", say; a relative one is "
                             "taken from the config file's folder)")
        return value

    @field_validator("memory_limit")
    @classmethod
    def _memory(cls, value: str) -> str:
        size, unit = re.fullmatch(MEMORY_LIMIT, value).groups()
        scale = {"K": 2**-10, "M": 1, "G": 2**10, "T": 2**20}[unit[0]]
        if float(size) * scale < MIN_MEMORY_MB:
            raise ValueError(f"{value} is too little for a build: at least "
                             f"{MIN_MEMORY_MB}MB")
        return value

    @property
    def lake_dir(self) -> Path:
        return self.data_dir / "lake"

    @property
    def warehouse_path(self) -> Path:
        return self.data_dir / "warehouse.duckdb"


class LakeSettings(StrictModel):
    url: str | None = Field(None, pattern=r"^s3://[^/]+(/.*)?$")
    """``s3://bucket/prefix``: the lake on object storage; unset: ``<data_dir>/lake``.
    Credentials and region come from the standard AWS environment variables."""
    endpoint_url: str | None = Field(None, pattern=r"^https?://")
    """An S3-compatible store's address (MinIO, say); unset: AWS S3."""
    retry_attempts: int = Field(8, ge=1, le=50)
    """Attempts of one store operation (an object written or read, a Delta commit's
    requests) on a transient error (5xx, a reset, a timeout), with exponential backoff
    and jitter."""
    retry_seconds: int = Field(120, ge=1, le=3600)
    """The time one store operation may take with its attempts."""
    retention_hours: int = Field(168, ge=24)
    """How long the files of replaced loads stay after their Delta table dropped them, for
    readers of older versions and builds under way (``pipeline.lake.housekeeping``): 7 days."""
    commit_partitions: int = Field(200, ge=1, le=10_000)
    """Revenue partitions (a location's business date each) a load commits at once at
    most: one Delta commit, a file per date. What bounds a load's memory (a busy
    location's day is about 0.5 MB in Arrow) and what a killed load loses at most."""
    commit_seconds: float = Field(10.0, gt=0, le=3600)
    """How long extracted partitions wait for their commit at most (a date is reported
    done once all its partitions are committed)."""


class LocationSettings(StrictModel):
    id: int = Field(gt=0, le=2**63 - 1)
    """The POS's location id; the lake and the warehouse hold it as a 64-bit integer."""
    short_code: str = Field(min_length=1)
    timezone: str = "Europe/Vienna"
    api_key_env: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    business_day_starts: str = Field("00:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    """Local wall-clock time (HH:MM) at which a business day starts: a receipt stamped
    before it belongs to the day before (a hotel's night audit at 02:30, say)."""
    name: str | None = None
    """What the report calls the location (default: its short code)."""
    cost_center: str | None = Field(None, pattern=r"^[A-Za-z0-9]{1,36}$")
    """The location's cost centre (Kostenstelle): ``KOST1`` of its DATEV bookings, ``kost``
    of its BMD bookings (which takes digits only); unset: none."""
    first_business_date: date | None = None
    """Its first business date (it opened then); unset: ``[schedule] start_date``. No
    date before it is expected (``pipeline.warehouse.coverage``)."""
    last_business_date: date | None = None
    """Its last business date (it closed after it); unset: it is open. No date after it
    is expected."""

    _timezone = field_validator("timezone")(check_zone)

    @model_validator(mode="after")
    def _opened_before_closed(self) -> LocationSettings:
        if self.first_business_date and self.last_business_date and \
                self.last_business_date < self.first_business_date:
            raise ValueError(f"last_business_date {self.last_business_date} is before "
                             f"first_business_date {self.first_business_date}")
        return self

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def day_starts(self) -> time:
        return time.fromisoformat(self.business_day_starts)

    def business_date_at(self, instant: datetime) -> date:
        """The business date under way at ``instant`` (an aware datetime)."""
        local = instant.astimezone(self.tz)
        if local.time().replace(tzinfo=None) >= self.day_starts:
            return local.date()
        return local.date() - timedelta(days=1)


EARLIEST_START = date(2000, 1, 1)
"""The earliest ``start_date``: no POS of this API holds older receipts."""


class ScheduleSettings(StrictModel):
    start_date: date = Field(date(2024, 1, 1), ge=EARLIEST_START)
    """First business date of the partitions (backfills reach back to it)."""
    lookback_days: int = Field(3, ge=0, le=60)
    """Days before yesterday that the nightly run pulls again, for late postings."""
    drift_check_days: int = Field(7, ge=0, le=366)
    """Older days the nightly run reads again in rotation to find source drift (0: off)."""
    cron: str = "30 3 * * *"
    """When the nightly runs: five cron fields (minute hour day month weekday)."""
    timezone: str = "Europe/Vienna"
    shards: int = Field(1, ge=1, le=256)
    """The nightly load as this many runs, each a share of the locations, queued by
    Dagster's run queue (at most ``concurrency.runs`` of ``dagster.yaml`` at once per POS
    host); the warehouse is built once, after the last (``build_after_night``). 1: one run."""

    _timezone = field_validator("timezone")(check_zone)

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        from croniter import croniter

        if len(value.split()) != 5 or not croniter.is_valid(value):
            raise ValueError(f"{value!r} is not a cron schedule of five fields "
                             "(minute hour day month weekday), e.g. '30 3 * * *'")
        return value


class FreshnessSettings(StrictModel):
    deadline: str = Field("06:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    """Local time (HH:MM, each location's own zone) by which yesterday's business date
    must be in the lake and in ``rpt_daily_close``; later, the freshness checks fail."""


class AlertSettings(StrictModel):
    webhook_url_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable that holds an incoming webhook's URL (Slack, Microsoft
    Teams, Mattermost); unset: no alerts. The URL is a secret and never shown."""
    on_warning: bool = False
    """Alert on a run whose checks warned, too (a failed run and a stale freshness check
    always alert)."""
    timeout_seconds: float = Field(5.0, gt=0, le=30)
    """How long a post may take before it is given up (it never fails the load)."""


class ExportSettings(StrictModel):
    locale: Literal["en", "de"] = "en"
    """How ``pos-etl export`` writes CSV and xlsx for people: ``de`` for German-speaking
    readers (``;``, decimal comma, German headers); ``--locale`` overrides it."""


class Settings(StrictModel):
    source: SourceSettings = SourceSettings()
    warehouse: WarehouseSettings = WarehouseSettings()
    lake: LakeSettings = LakeSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    accounting: AccountingSettings = AccountingSettings()
    freshness: FreshnessSettings = FreshnessSettings()
    alerts: AlertSettings = AlertSettings()
    export: ExportSettings = ExportSettings()
    bank: BankSettings = BankSettings()
    locations: list[LocationSettings] = Field(min_length=1)
    _config_file: str | None = PrivateAttr(None)
    """The file these settings were read from, as it was named (None: the sandbox's)."""

    def last_date_over(self, instant: datetime) -> date:
        """The newest business date that has ended at ``instant`` for every location:
        the day before the earliest business date still under way (each location's day
        starts at its own ``business_day_starts``, in its own time zone). A business date
        is loaded, exported and booked once it is over, never before."""
        return min(loc.business_date_at(instant) for loc in self.locations) \
            - timedelta(days=1)

    def command(self, args: str) -> str:
        """``pos-etl ARGS`` as a hint to run it again: with the ``--config`` these settings
        came from, if any."""
        config = f" --config {shlex.quote(self._config_file)}" if self._config_file else ""
        return f"pos-etl {args}{config}"

    @model_validator(mode="after")
    def _unique_locations(self) -> Settings:
        ids = [loc.id for loc in self.locations]
        if len(ids) != len(set(ids)):
            raise ValueError(f"location ids must be unique, got {ids}")
        return self

    @model_validator(mode="after")
    def _bank_accounts(self) -> Settings:
        """Each bank account's location configured; statements to read
        where a real POS is configured (the sandbox writes its own)."""
        if not self.bank.accounts:
            if self.bank.statements is not None:
                raise ValueError("bank.accounts: statements are configured but no account "
                                 "(an [[bank.accounts]] entry per IBAN and its location)")
            return self
        if self.bank.statements is None and not self.uses_sandbox:
            raise ValueError("bank.statements: accounts are configured but not where their "
                             "statements are (a folder or s3://bucket/prefix)")
        for account in self.bank.accounts:
            try:
                self.location(account.location)
            except ConfigError as exc:
                raise ValueError(f"bank.accounts: {account.iban}: {exc}") from None
        return self

    @property
    def bank_accounts(self) -> dict[str, int]:
        """Each configured bank account's IBAN (compact) -> its location's id."""
        return {a.iban: self.location(a.location).id for a in self.bank.accounts}

    @property
    def uses_sandbox(self) -> bool:
        return self.source.base_url is None

    @property
    def pos_host(self) -> str:
        """The POS's host (``sandbox`` for the built-in one): what a request budget and the
        run queue's limit per host go by."""
        base = self.source.base_url
        return (urlsplit(base).hostname or base) if base else "sandbox"

    def location(self, ref: int | str) -> LocationSettings:
        """The configured location with this id or short code (any case)."""
        wanted = str(ref).strip().upper()
        for loc in self.locations:
            if wanted in (str(loc.id), loc.short_code.upper()):
                return loc
        
        names = {n.upper(): n for x in self.locations for n in (x.short_code, str(x.id))}
        close = difflib.get_close_matches(wanted, list(names), n=1)
        hint = f"; did you mean {names[close[0]]}?" if close else ""
        raise ConfigError(f"location {ref} is not configured (configured: "
                          f"{', '.join(f'{x.id} {x.short_code}' for x in self.locations)}){hint}")


def malformed_key(key: str) -> str | None:
    """What makes a key unusable in an HTTP header (None: nothing), without the key."""
    if key != key.strip():
        return ("it ends with a newline or a space (echo adds one: use printf, or strip "
                "it)" if key == key.lstrip() else "it starts with a space")
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in key):
        return "it holds a control character"
    if not key.isascii():
        return "it holds a character outside ASCII"
    return None


def read_settings(path: str | Path) -> Settings:
    """Settings from the config file at ``path`` (``pipeline.orchestration.configs.load_settings``
    falls back to the sandbox's where none is given).

    A relative ``data_dir`` is taken relative to the config file's folder.
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # (a BOM: Windows' editors)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                          f"offset {exc.start}); save the file as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_errors(str(path), exc, Settings)) from None
    data_dir = settings.warehouse.data_dir
    if not data_dir.is_absolute():
        data_dir = path.parent / data_dir
        settings = settings.model_copy(update={
            "warehouse": settings.warehouse.model_copy(update={"data_dir": data_dir})})
    check_data_dir(f"{path}: warehouse.data_dir", data_dir)
    accounts = settings.accounting.accounts
    if accounts.chart_file is not None and not accounts.chart_file.is_absolute():
        accounts = accounts.model_copy(update={"chart_file": path.parent / accounts.chart_file})
        settings = settings.model_copy(update={"accounting": settings.accounting.model_copy(
            update={"accounts": accounts})})
    try:
        settings.accounting.chart  # noqa: B018  (read now: a bad chart is a config error)
    except ChartError as exc:
        raise ConfigError(f"{path}: accounting.accounts.chart_file: {exc}") from None
    statements = settings.bank.statements
    if statements is not None and "://" not in statements and \
            not Path(statements).is_absolute():
        settings = settings.model_copy(update={"bank": settings.bank.model_copy(
            update={"statements": str(path.parent / statements)})})
    settings._config_file = str(path)
    return settings


def check_data_dir(where: str, data_dir: Path) -> None:
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"{where}: {data_dir} is a file, not a folder")
    text = str(data_dir.resolve())
    if (found := sorted({c for c in text if c in PATH_SPECIALS})) or "://" in text:
        shown = " ".join(found) or "://"
        raise ConfigError(f"{where}: {text} holds {shown}, which DuckDB and object stores "
                          "read as patterns or URL escapes; choose a folder without "
                          f"{PATH_SPECIALS} (the config file's folder counts for a relative "
                          "data_dir)")
