"""``python -m pipeline.cli``: the ``pos-etl`` command."""

import sys

from pipeline.entry import main

sys.exit(main())
