"""Run by the DATEV reader's own environment (``tests/integration/test_accounting.py``): each
Buchungsstapel named on the command line read by ``mloda-community-german-ledger``'s EXTF
reader, an implementation not written here. Prints, as JSON, the files' headers and the
signed total of each account (Soll positive), summed over every leg it read."""

import json
import sys
from collections import defaultdict
from decimal import Decimal

from mloda.community.feature_groups.experimental.german_ledger.datev import read_batch

totals: dict[str, Decimal] = defaultdict(Decimal)
headers = []
legs = 0
for path in sys.argv[1:]:
    header, columns = read_batch(path)
    headers.append({"berater": header.berater, "mandant": header.mandant,
                    "from": header.datum_von.isoformat(), "to": header.datum_bis.isoformat()})
    for account, amount in zip(columns["Konto"], columns["Betrag"], strict=True):
        totals[account] += amount
        legs += 1
print(json.dumps({"headers": headers, "legs": legs,
                  "totals": {k: str(v) for k, v in sorted(totals.items())}}))
