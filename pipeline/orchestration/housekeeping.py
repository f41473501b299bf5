"""The lake's weekly housekeeping as a Dagster job and schedule (what it does:
``pipeline.lake.housekeeping``; no ``from __future__ import annotations``:
Dagster reads the op's annotations)."""

import dagster as dg

from pipeline.core.reporting import Reporter
from pipeline.lake.housekeeping import tidy
from pipeline.lake.store import LakeStore
from pipeline.orchestration.runs import stopped_by_name

HOUSEKEEPING_JOB = "lake_housekeeping_job"


def build_housekeeping(retention_hours: int, timezone: str
                       ) -> tuple[dg.JobDefinition, dg.ScheduleDefinition]:
    """The housekeeping job (with the configured retention) and its weekly schedule
    (Sundays at 05:00 in ``timezone``; stopped until an operator starts it, as the
    nightly load is)."""
    @dg.op(description="Compact, vacuum and checkpoint the lake's Delta tables "
                       "(pipeline.lake.housekeeping).")
    def tidy_lake(context: dg.OpExecutionContext, lake: dg.ResourceParam[LakeStore],
                  reporter: dg.ResourceParam[Reporter]):
        with stopped_by_name(context):
            tidied = tidy(lake, retention_hours)
        for t in tidied:
            line = t.line()
            context.log.info(line)
            reporter.say(line)
        yield dg.Output(None, metadata={
            "tables": len(tidied), "files": sum(t.files for t in tidied),
            "files_deleted": sum(t.deleted for t in tidied),
            "files_kept_for_readers": sum(t.waiting for t in tidied),
            "retention_hours": retention_hours})

    @dg.job(name=HOUSEKEEPING_JOB,
            description="Vacuum and checkpoint the lake's Delta tables: files of replaced "
                        f"loads older than {retention_hours} hours are deleted.")
    def lake_housekeeping_job():
        tidy_lake()

    schedule = dg.ScheduleDefinition(
        name="weekly_lake_housekeeping", job=lake_housekeeping_job,
        cron_schedule="0 5 * * 0", execution_timezone=timezone,
        default_status=dg.DefaultScheduleStatus.STOPPED)
    return lake_housekeeping_job, schedule
