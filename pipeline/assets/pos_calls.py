"""How every POS-loading asset turns failures into Dagster outcomes, and reports tables."""

from collections.abc import Callable, Iterator
from typing import TypeVar

import dagster as dg

from pipeline.pos_api.errors import PosApiError, TransientError
from pipeline.settings import ConfigError

T = TypeVar("T")
TRANSIENT_RUN_RETRIES = 2


def call_pos(context: dg.AssetExecutionContext, load: Callable[..., T], *args) -> T:
    """Run a load; a transient failure asks Dagster for a retry, any other fails the run."""
    try:
        return load(*args)
    except TransientError as exc:
        context.log.warning(f"{exc}; the run is retried")
        raise dg.RetryRequested(max_retries=TRANSIENT_RUN_RETRIES, seconds_to_wait=60) from exc
    except (PosApiError, ConfigError) as exc:
        raise dg.Failure(description=str(exc)) from None


def snapshot_results(snap) -> Iterator[dg.MaterializeResult]:
    """One materialization per snapshot table, with its row count and file."""
    for name, table in snap.tables.items():
        yield dg.MaterializeResult(asset_key=["lake", name], metadata={
            "dagster/row_count": table.num_rows,
            "path": dg.MetadataValue.path(str(snap.paths[name])),
            "snapshot_date": snap.snapshot_date.isoformat(),
            "pages": snap.stats.pages if snap.stats else 0,
        })
