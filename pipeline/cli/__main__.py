"""``python -m pipeline.cli``: the ``pos-etl`` command."""

import sys

from pipeline.cli import main

sys.exit(main())
