"""Source drift -> the lake: older days read again, replaced where the POS changed them."""

from datetime import date, datetime
from zoneinfo import ZoneInfo

import dagster as dg

from pipeline.core.outcomes import FailedPartition
from pipeline.core.reporting import Reporter
from pipeline.core.settings import Settings
from pipeline.lake.store import LakeStore
from pipeline.load.drift import DRIFT_TABLES, check_days, rotation_days
from pipeline.orchestration.assets.report import markdown_table
from pipeline.orchestration.partitions import LoadConfig, selected_locations
from pipeline.orchestration.resources import PosResource

DRIFT_KEY = dg.AssetKey(["lake", "drift"])


class DriftConfig(LoadConfig):
    """Which days to read again: ``start``..``end`` (ISO dates), else tonight's rotation."""

    start: str | None = None
    end: str | None = None


def checked_days(settings: Settings, config: DriftConfig) -> list[date]:
    if config.start and config.end:
        first, last = date.fromisoformat(config.start), date.fromisoformat(config.end)
        return [date.fromordinal(n) for n in range(first.toordinal(), last.toordinal() + 1)]
    today = datetime.now(ZoneInfo(settings.schedule.timezone)).date()
    return rotation_days(settings, today)


def build_drift_asset(settings: Settings) -> dg.AssetsDefinition:
    """The drift check asset of these settings."""

    @dg.asset(key=DRIFT_KEY, pool="pos_api", group_name="lake", kinds={"parquet"},
              metadata={"tables": ", ".join(DRIFT_TABLES)})
    def drift(context: dg.AssetExecutionContext, config: DriftConfig,
              pos: PosResource, lake: dg.ResourceParam[LakeStore],
              reporter: dg.ResourceParam[Reporter]):
        """Older days read again from the POS; a changed day is replaced and recorded."""
        days = checked_days(settings, config)
        checks = check_days(pos.source, lake, selected_locations(settings, config), days)
        drifted = [c for c in checks if c.drifted]
        for c in drifted:
            line = (f"source drift: location {c.location_id} {c.business_date}: "
                    f"{c.before} -> {c.after} (replaced)")
            context.log.warning(line)
            reporter.say(f"warning: {line}")
        failed = [c for c in checks if c.failure]
        for c in failed:
            context.log.warning(f"drift check {c.location_id} {c.business_date}: {c.failure}")
            reporter.failed("drift check", FailedPartition(c.location_id, c.business_date,
                                                           c.failure))
        return dg.MaterializeResult(metadata={
            "days": dg.MetadataValue.text(f"{days[0]}..{days[-1]}" if days else "none"),
            "checked": sum(1 for c in checks if c.after is not None),
            "drifted": len(drifted),
            "failed": len(failed),
            "drift": dg.MetadataValue.md(markdown_table(
                ["location", "business date", "receipts before", "receipts after",
                 "turnover before", "turnover after"],
                [[c.location_id, c.business_date, *c.before, *c.after]
                 for c in drifted])),
        })

    return drift
