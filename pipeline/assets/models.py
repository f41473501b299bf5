"""The SQL models of ``dbt_like_sql/`` as Dagster assets, with their data checks.

One asset per model; its upstream assets are the lake tables and models its SQL reads.
They are built together into a new warehouse file that is switched in atomically, so an
analyst never sees some models new and others old.
"""


import dagster as dg

from pipeline.checks import CHECKS, run_checks
from pipeline.resources import PosApiResource
from pipeline.warehouse import build_warehouse, discover_models

MODELS = discover_models()


def _spec(name: str) -> dg.AssetSpec:
    model = MODELS[name]
    deps = [dg.AssetKey(["lake", t]) for t in sorted(model.lake_deps)]
    deps += [dg.AssetKey(["warehouse", d]) for d in sorted(model.model_deps)]
    return dg.AssetSpec(
        ["warehouse", name], deps=deps, group_name=f"warehouse_{model.stage}",
        description=model.grain or f"SQL model {name}", kinds={"duckdb", "sql"},
        metadata={"sql_file": str(model.path.name)},
        automation_condition=dg.AutomationCondition.eager(),
    )


CHECK_SPECS = [
    dg.AssetCheckSpec(c.name, asset=dg.AssetKey(["warehouse", c.model]), description=c.description)
    for c in CHECKS
]


@dg.multi_asset(
    specs=[_spec(name) for name in MODELS],
    check_specs=CHECK_SPECS,
    name="warehouse_models",
    pool="warehouse",
    description="Build every SQL model into a new DuckDB file and switch it in atomically.",
)
def warehouse_models(context: dg.AssetExecutionContext, pos: PosApiResource):
    """Build every SQL model into a new DuckDB file and switch it in atomically."""
    settings = pos.load()
    outcomes = []
    result = build_warehouse(settings.warehouse.lake_dir, settings.warehouse.warehouse_path,
                             MODELS, on_built=lambda con: outcomes.extend(run_checks(con)))
    for name in result.order:
        yield dg.MaterializeResult(asset_key=["warehouse", name], metadata={
            "dagster/row_count": result.row_counts[name],
            "warehouse": dg.MetadataValue.path(str(result.path)),
            "table": name,
        })
    for outcome in outcomes:
        yield dg.AssetCheckResult(
            check_name=outcome.check.name,
            asset_key=dg.AssetKey(["warehouse", outcome.check.model]),
            passed=outcome.passed,
            metadata={"failing_rows": outcome.failing_rows,
                      "sample": dg.MetadataValue.text(repr(outcome.sample[:3]))},
        )
