"""The SQL models of ``dbt_like_sql/`` as Dagster assets, with their data checks.

One asset per model; its upstream assets are the lake areas and models its SQL reads.
They are built together into a new warehouse file that is switched in atomically, so an
analyst never sees some models new and others old. A check of severity error that fails
keeps the previous warehouse and fails the step; one of severity warn is a warning: the
check shows it, the run succeeds.
"""

import dagster as dg
import duckdb

from pipeline.core.files import free_space
from pipeline.core.reporting import ModelBuilt, Reporter
from pipeline.core.untrusted import one_line
from pipeline.lake.log_check import LakeUnreadable
from pipeline.orchestration.assets.metadata import markdown_table
from pipeline.orchestration.runs import stopped_by_name
from pipeline.orchestration.schedules import AFTER_LOAD
from pipeline.orchestration.summaries import WHERE_KEY, ModelMaterialized
from pipeline.sqlrunner.checks import CheckOutcome
from pipeline.sqlrunner.dictionary import Dictionary
from pipeline.sqlrunner.project import Project
from pipeline.warehouse import (
    LAKE_AREA_OF,
    Model,
    ModelError,
    Warehouse,
)
from pipeline.warehouse.lakeviews import MissingLakeFile
from pipeline.warehouse.project import shipped

SEVERITY = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}
WAREHOUSE_STEP = "warehouse_models"
"""The multi-asset's op, the one step of ``warehouse_job``: run config names it."""


def _spec(model: Model, dictionary: Dictionary) -> dg.AssetSpec:
    deps = [dg.AssetKey(["lake", area]) for area in sorted({LAKE_AREA_OF[t]
                                                            for t in model.source_deps})]
    deps += [dg.AssetKey(["warehouse", d]) for d in sorted(model.model_deps)]
    return dg.AssetSpec(
        ["warehouse", model.name], deps=deps, group_name=f"warehouse_{model.stage}",
        description=" ".join(filter(None, [
            dictionary.model(model.name), model.rows,
            f"Grain: {', '.join(model.grain)}." if model.grain else "",
            "" if model.stored else "Computed by each build for the models that read it; "
                                    "the warehouse file does not store it."]))
        or f"SQL model {model.name}", kinds={"duckdb", "sql"},
        metadata={"sql_file": f"{model.stage}/{model.path.name}",
                  "materialized": model.built_as,
                  **({"schema": model.schema} if model.stored else {})},
        owners=[model.owner] if model.owner else [],
        automation_condition=AFTER_LOAD,
    )


class BuildConfig(dg.Config):
    """Run configuration of the warehouse build."""

    full: bool = False
    """Compute every partition of the partitioned models again, not only what changed."""
    forget_missing: bool = False
    """Revenue partitions the lake no longer holds are dropped from the warehouse (on
    purpose); without it, such a loss fails the build and the warehouse stays."""


def _report_metadata(path) -> dict[str, dict]:
    """What the Dagster UI shows beside a model: the last daily closes as a table."""
    import duckdb

    from pipeline.outputs.report import markdown_close

    with duckdb.connect(str(path), read_only=True) as con:
        return {"rpt_daily_close": {"last_daily_closes": dg.MetadataValue.md(
            markdown_close(con))}}


FULL_DISK = "No space left on device"
"""How DuckDB says a write met a full disk (the system's words for ``ENOSPC``), in
whatever error it wraps it (a failed commit, a table it could not write)."""


def build_warehouse_asset(project: Project | None = None) -> dg.AssetsDefinition:
    """One multi-asset that builds every model of ``project`` (default: ``dbt_like_sql/``)
    and runs its checks."""
    project = project or shipped()
    models, dictionary = project.models, project.dictionary

    @dg.multi_asset(
        specs=[_spec(model, dictionary) for model in models.values()],
        check_specs=[dg.AssetCheckSpec(c.name, asset=dg.AssetKey(["warehouse", c.model]),
                                       description=c.description, blocking=c.blocking)
                     for c in project.checks],
        name=WAREHOUSE_STEP,
        # One model can be materialized alone: the build is one atomic file, so the whole
        # warehouse is built (what changed), and the selected models are reported.
        can_subset=True,
        pool="warehouse",
        description="Build the SQL models (partitioned ones where their partitions changed) "
                    "into a new DuckDB file and switch it in atomically.",
    )
    def warehouse_models(context: dg.AssetExecutionContext, config: BuildConfig,
                         warehouse: dg.ResourceParam[Warehouse],
                         reporter: dg.ResourceParam[Reporter]):
        """Build every SQL model into a new DuckDB file and switch it in atomically."""
        with stopped_by_name(context):
            def built(model: ModelBuilt) -> None:  # dbt's line per model, in the run's log too
                context.log.info(str(model))
                reporter.model(model)

            try:
                result = warehouse.build(project, full=config.full,
                                         forget_missing=config.forget_missing, progress=built)
            except (ModelError, LakeUnreadable, MissingLakeFile) as exc:  # the old one stays
                # a model whose write met a full disk (its commit, its WAL): the room left too
                room = f"; {free_space(warehouse.path)}" if FULL_DISK in str(exc) else ""
                raise dg.Failure(description=f"warehouse build failed (the previous warehouse is "
                                             f"kept): {exc}{room}") from None
            except duckdb.IOException as exc:  # (a full disk: DuckDB names no errno)
                raise dg.Failure(description=f"warehouse build failed (the previous warehouse is "
                                             f"kept): {one_line(str(exc))}; "
                                             f"{free_space(warehouse.path)}") from None
            selected = context.selected_asset_keys
            extra = _report_metadata(result.path) \
                if dg.AssetKey(["warehouse", "rpt_daily_close"]) in selected else {}
            for name in result.order:
                if dg.AssetKey(["warehouse", name]) not in selected:
                    continue
                built_as = ModelMaterialized(
                    str(result.path), models[name].qualified if models[name].stored else "",
                    models[name].built_as,
                    result.row_counts.get(name), result.rebuilt_partitions.get(models[name].area))
                yield dg.MaterializeResult(asset_key=["warehouse", name],
                                           metadata=built_as.to_metadata(**extra.get(name, {})))
            checked = context.selected_asset_check_keys
            for outcome in result.checks:
                key = dg.AssetCheckKey(dg.AssetKey(["warehouse", outcome.check.model]),
                                       outcome.check.name)
                if key not in checked:
                    continue
                if not outcome.passed:
                    reporter.say(f"{'warning' if outcome.severity == 'warn' else 'check failed'}: "
                                 f"{key.asset_key.to_user_string()} {outcome.check.name}")
                yield dg.AssetCheckResult(
                    check_name=outcome.check.name,
                    asset_key=dg.AssetKey(["warehouse", outcome.check.model]),
                    passed=outcome.passed,
                    severity=SEVERITY[outcome.severity],
                    metadata=check_metadata(outcome),
                )
            # A failed check of severity warn is a warning (the run succeeds); errors block
            # the publish already (``BlockedBuild``).
            failed = [f"warehouse/{o.check.model}: {o.check.name}" for o in result.failed_checks
                      if o.severity == "error"]
            problems = []
            if result.corrupt:
                problems.append(f"{len(result.corrupt)} lake partition(s) left out, their "
                                f"previous figures kept: " + "; ".join(map(str, result.corrupt)))
            if failed:
                problems.append("failed checks: " + "; ".join(failed))
            if problems:
                raise dg.Failure(description="the warehouse was rebuilt; " + "; ".join(problems))
            reporter.say("warehouse rebuilt")

    return warehouse_models


def check_metadata(outcome: CheckOutcome) -> dict[str, object]:
    """A check's result as the UI shows it: its failing rows, a few of them as a table
    with their column names, and their partitions (``WHERE_KEY``, read back by the CLI)."""
    return {"failing_rows": outcome.failing_rows,
            "sample": dg.MetadataValue.md(markdown_table(
                list(outcome.columns) or ["row"],
                [list(map(_cell, row)) for row in outcome.sample[:3]])),
            WHERE_KEY: dg.MetadataValue.json([w.as_json() for w in outcome.where])}


def _cell(value: object) -> object:
    """A sample's value as a person reads it: a date as ISO, a decimal as its digits."""
    return value.isoformat() if hasattr(value, "isoformat") else value
