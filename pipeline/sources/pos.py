"""The POS (spec sections 2 and 4.1-4.3): revenue report, catalog, menu tree, order
intake; one key per location, at ``[source] base_url`` (unset: the built-in sandbox)."""

from pipeline.sources.base import Source

SOURCE = Source(
    name="pos", title="the POS", rank=0,
    address=lambda settings: settings.source.base_url, setting="source.base_url")
