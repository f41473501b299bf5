"""The booking formats' registry: each entry's module brings a format of that name, and
the export and the CLI offer exactly the registered ones."""

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
