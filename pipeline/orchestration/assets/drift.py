"""Source drift -> the lake: older days read again, replaced where the POS changed them
(each replaced date an event of ``lake/revenue``, whose partitions the check rewrites)."""

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import dagster as dg

from pipeline.areas.drift.tables import DRIFT_TABLES
from pipeline.core.outcomes import FailedPartition
from pipeline.core.reporting import Reporter
from pipeline.core.settings import Settings
from pipeline.lake.store import LakeStore
from pipeline.load.drift import check_days, rotation_days
from pipeline.orchestration.assets.metadata import markdown_table
from pipeline.orchestration.assets.revenue import REVENUE_KEY
from pipeline.orchestration.partitions import LoadConfig, selected_locations
from pipeline.orchestration.resources import PosResource
from pipeline.orchestration.runs import stopped_by_name
from pipeline.orchestration.summaries import DriftFound, RevenueDay

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
        with stopped_by_name(context):
            days = checked_days(settings, config)
            checks = check_days(pos.source, lake, selected_locations(settings, config), days)
            drifted = [c for c in checks if c.drifted]
            lines = [f"source drift: location {c.location_id} {c.business_date}: "
                     f"{c.before} -> {c.after} (replaced)" for c in drifted]
            for line in lines:
                reporter.say(f"warning: {line}")
            failed = [c for c in checks if c.failure]
            for c in failed:
                lines.append(f"drift check {c.location_id} {c.business_date}: {c.failure}")
                reporter.failed("drift check", FailedPartition(c.location_id, c.business_date,
                                                               c.failure))
            if lines:  # one event in the run's log, however many days drifted or failed
                context.log.warning("; ".join(lines))
            for day in sorted({c.business_date for c in drifted}):
                replaced = [c for c in drifted if c.business_date == day]
                # the day's partitions the check rewrote, as events of the asset that holds them
                context.log_event(dg.AssetMaterialization(
                    asset_key=REVENUE_KEY, partition=day.isoformat(),
                    metadata=RevenueDay(
                        receipts=sum(c.after[0] for c in replaced),
                        turnover_net=sum((c.after[1] for c in replaced), Decimal(0)),
                        complete=True, replaced_by="drift check").to_metadata(
                        locations=dg.MetadataValue.md(markdown_table(
                            ["location", "receipts before", "receipts after", "turnover before",
                             "turnover after"],
                            [[c.location_id, c.before[0], c.after[0], c.before[1], c.after[1]]
                             for c in replaced])))))
            return dg.MaterializeResult(metadata=DriftFound(
                f"{days[0]}..{days[-1]}" if days else "none",
                sum(1 for c in checks if c.after is not None), len(drifted), len(failed),
            ).to_metadata(drift=dg.MetadataValue.md(markdown_table(
                ["location", "business date", "receipts before", "receipts after",
                 "turnover before", "turnover after"],
                [[c.location_id, c.business_date, *c.before, *c.after] for c in drifted]))))

    return drift
