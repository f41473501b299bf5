"""A runner of SQL models on DuckDB, in dbt's shape, that knows nothing of the project it
runs: what the models read that no model makes is given to it (``Sources``), and so are
the macros a configuration makes. It could run another project's models.

- ``models``: a project's models found, parsed (sqlglot) and put in build order; the
  sources they read; a model created as a table or view (``materialize``);
- ``parse_cache``: what parsing found, kept between processes;
- ``dictionary``: each model's YAML beside its SQL (descriptions, config, tests),
  ``COMMENT ON``;
- ``checks``: the data tests as queries returning the failing rows;
- ``unit``: the models' unit tests, in DuckDB alone;
- ``project``: all of it read once from one folder.
"""

from pipeline.sqlrunner.checks import CheckOutcome, DataCheck, run_check, run_checks
from pipeline.sqlrunner.models import STAGES, Model, ModelError, Sources, build_order
from pipeline.sqlrunner.project import Project

__all__ = ["STAGES", "CheckOutcome", "DataCheck", "Model", "ModelError", "Project", "Sources",
           "build_order", "run_check", "run_checks"]
