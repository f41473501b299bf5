"""Outputs for people and other systems: exports, the report, the data dictionary, alerts."""

TABLE_FORMATS = ("csv", "xlsx", "parquet")
"""The formats ``pos-etl export`` writes a model's rows in (the booking formats are
``pipeline.accounting.formats``'); here, so the CLI names them without importing DuckDB."""
