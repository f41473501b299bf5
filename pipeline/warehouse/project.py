"""The SQL project a build is given, read once: its models (parsed, with what they read),
their data dictionary (descriptions, contracts, labels), their data checks and unit tests,
all from the same folder's files, each parsed once. Nothing is read at import; the shipped
project (``dbt_like_sql``) on first use.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.project import MODELS_DIR, STAGES
from pipeline.warehouse.checks import DataCheck, checks_of
from pipeline.warehouse.dictionary import Dictionary, load_dictionary
from pipeline.warehouse.models import Model, discover_models
from pipeline.warehouse.unit import UnitTest, unit_tests_of


@dataclass(frozen=True)
class Project:
    root: Path
    models: dict[str, Model]
    dictionary: Dictionary
    checks: tuple[DataCheck, ...]
    """The data tests of the models' YAML files (``checks_of``)."""

    @property
    def unit_tests(self) -> list[UnitTest]:
        """The models' unit tests (``unit_tests:`` of the models' YAML files)."""
        return unit_tests_of(self.dictionary)

    @classmethod
    def read(cls, root: Path = MODELS_DIR) -> Project:
        """The project of the folder ``root`` (its ``staging``, ``marts``, ``reports``)."""
        dictionary = load_dictionary(root, STAGES)
        return cls(root, discover_models(root, dictionary), dictionary, checks_of(dictionary))


@functools.cache
def shipped() -> Project:
    """The project installed with the package, read once per process."""
    return Project.read(MODELS_DIR)
