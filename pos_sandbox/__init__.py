"""The POS sandbox: a fake POS server that serves the integration spec with deterministic data.

A product of its own: it imports nothing of the pipeline but the spec's models
(``pipeline.pos_api.models``), so it can serve any client, not only this pipeline.
"""
