"""The alert webhook's Dagster sensors: a failed run, a successful run's failed checks
(what an alert is and how it is sent: ``pipeline.outputs.alerts``)."""

from __future__ import annotations

import dagster as dg

from pipeline.core.settings import Settings
from pipeline.orchestration.status import run_checks
from pipeline.outputs.alerts import CLI_TRIGGER, Alert, send


def build_alert_sensors(settings: Settings, jobs: list) -> list[dg.SensorDefinition]:
    """``alert_on_runs``: a run-status sensor that alerts on a failed run and, after a
    successful one, on its failed checks (warnings only with ``alerts.on_warning``); runs
    the CLI started are left to the CLI."""
    @dg.run_status_sensor(run_status=dg.DagsterRunStatus.FAILURE, name="alert_on_failed_runs",
                          monitored_jobs=jobs, default_status=dg.DefaultSensorStatus.RUNNING,
                          description="Post a failed run to the alert webhook.")
    def alert_on_failed_runs(context: dg.RunStatusSensorContext):
        run = context.dagster_run
        if run.tags.get(CLI_TRIGGER[0]) == CLI_TRIGGER[1]:
            return dg.SkipReason("a CLI run: the CLI alerts")
        said = send(settings, Alert(f"pos-etl: run {run.run_id} of {run.job_name} failed", (
            context.dagster_event.message or "",
            *(f"{c.name} failed" for c in run_checks(context.instance, run.run_id)))))
        return dg.SkipReason(said or "no webhook configured")

    @dg.run_status_sensor(run_status=dg.DagsterRunStatus.SUCCESS, name="alert_on_checks",
                          monitored_jobs=jobs, default_status=dg.DefaultSensorStatus.RUNNING,
                          description="Post a successful run's failed checks (a stale "
                                      "location; warnings with alerts.on_warning).")
    def alert_on_checks(context: dg.RunStatusSensorContext):
        run = context.dagster_run
        if run.tags.get(CLI_TRIGGER[0]) == CLI_TRIGGER[1]:
            return dg.SkipReason("a CLI run: the CLI alerts")
        failed = [c for c in run_checks(context.instance, run.run_id)
                  if c.severity == "error" or settings.alerts.on_warning]
        if not failed:
            return dg.SkipReason("nothing to tell")
        lines = [line for c in failed for line in c.lines()]
        said = send(settings, Alert(f"pos-etl: {run.job_name} run {run.run_id}: "
                                    f"{len(failed)} check(s) failed", tuple(lines)))
        return dg.SkipReason(said or "no webhook configured")

    return [alert_on_failed_runs, alert_on_checks]
