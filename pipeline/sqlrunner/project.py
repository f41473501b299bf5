"""A SQL project as a runner is given it, read once: its models (parsed, with what they
read), their data dictionary (descriptions, contracts, labels), their data checks and unit
tests, all from the same folder's files, each parsed once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.sqlrunner.checks import DataCheck, checks_of
from pipeline.sqlrunner.dictionary import Dictionary, load_dictionary
from pipeline.sqlrunner.models import STAGES, Model, Sources, discover_models
from pipeline.sqlrunner.unit import UnitTest, unit_tests_of


@dataclass(frozen=True)
class Project:
    root: Path
    sources: Sources
    models: dict[str, Model]
    dictionary: Dictionary
    checks: tuple[DataCheck, ...]
    """The data tests of the models' YAML files (``checks_of``)."""

    @property
    def unit_tests(self) -> list[UnitTest]:
        """The models' unit tests (``unit_tests:`` of the models' YAML files)."""
        return unit_tests_of(self.dictionary)

    @classmethod
    def read(cls, root: Path, sources: Sources, cache: Path | None = None) -> Project:
        """The project of the folder ``root`` (its ``staging``, ``marts``, ``reports``),
        whose models read ``sources``; ``cache``: where what parsing found is kept between
        processes (None: not kept)."""
        dictionary = load_dictionary(root, STAGES)
        return cls(root, sources, discover_models(root, sources, dictionary, cache),
                   dictionary, checks_of(dictionary))
