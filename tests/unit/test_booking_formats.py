"""The booking formats' registry: each entry's module brings a format of that name, and
the export and the CLI offer exactly the registered ones; the booking periods of every
format follow one fiscal year."""

from datetime import date

from pipeline.accounting.formats import BOOKING_FORMATS, booking_format


def test_each_registered_format_is_its_modules_and_is_offered_everywhere():
    from pipeline.cli.outputs import BOOKINGS
    from pipeline.cli.outputs import FORMATS as CLI_FORMATS
    from pipeline.outputs.export import FORMATS

    for name in BOOKING_FORMATS:
        found = booking_format(name)
        assert found.name == name and "{}" in found.file_name and found.title
    assert set(BOOKINGS) == set(BOOKING_FORMATS)
    assert set(BOOKING_FORMATS) <= set(FORMATS) and set(FORMATS) == set(CLI_FORMATS)


def test_the_fiscal_year_is_the_accounting_sections_and_an_older_configs_datev_one_is_read():
    """Both formats' booking periods follow ``[accounting] fiscal_year_start``; a config
    that set it under ``[accounting.datev]`` (where it lived) keeps its year."""
    from pipeline.accounting.bookings import period_of
    from pipeline.core.accounting_settings import AccountingSettings, DatevSettings

    older = AccountingSettings(datev=DatevSettings(fiscal_year_start="04-01"))
    both = AccountingSettings(fiscal_year_start="07-01", datev=older.datev)
    assert AccountingSettings().year_start == "01-01"
    assert older.year_start == "04-01" and both.year_start == "07-01"
    assert period_of(date(2026, 3, 15), both.year_start).year_start == date(2025, 7, 1)
