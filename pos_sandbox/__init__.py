"""The POS sandbox: a fake POS server that serves the integration spec with deterministic data.

A product of its own: it imports nothing of the pipeline but the spec's models
(``pipeline.pos_api.models``), so it can serve any client, not only this pipeline.
"""

FIRST_ID = 1001
MAX_LOCATIONS = 9000
"""Location ids run from 1001 to 10000: product, spot and category ids derive from them
(``world``); here so that the ``sandbox`` command's options need not build the world."""
