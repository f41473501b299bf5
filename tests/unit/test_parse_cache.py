"""The models' parse cache (``pipeline.sqlrunner.parse_cache``, in the folder
``pipeline.warehouse.project.parse_cache_dir`` names): a process that finds a model's
parse kept by another does not parse it again; a changed text, a file that does not read
and a folder that cannot be written all mean parsing again, never a stale or failed
answer."""

from __future__ import annotations

import pytest

from pipeline.sqlrunner import models
from pipeline.sqlrunner.models import build_order
from pipeline.warehouse.compute import partitioned_checks
from pipeline.warehouse.config_sql import config_macros
from pipeline.warehouse.plan import chain_hashes
from pipeline.warehouse.project import CACHE_DIR_ENV, discover_models, shipped
from pipeline.warehouse.project import parse_cache_dir as cache_dir

SQL = "select r.*, l.name from lake.revenue_receipts r join dim_locations l using (location_id)"
FOUND = (frozenset({"dim_locations"}), frozenset({"revenue_receipts"}))


@pytest.fixture
def fresh_process(monkeypatch, tmp_path):
    """A cache in ``tmp_path``; ``forget()`` drops what this process parsed (as a new
    process starts), ``no_parsing()`` makes any parse fail the test."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))

    class Process:
        @staticmethod
        def forget() -> None:
            for cached in (models._analysed, models._named, models.canonical_sql):
                cached.cache_clear()

        @staticmethod
        def no_parsing() -> None:
            def parse(sql, name="(macros)", **_):
                raise AssertionError(f"{name} parsed again")

            monkeypatch.setattr(models, "_parse", parse)
            monkeypatch.setattr(models.sqlglot, "parse", parse)

    Process.forget()
    yield Process
    Process.forget()


def analysed(sql: str, name: str):
    """What parsing ``sql`` found, as discovering the models asks for it."""
    return models._analysed(sql, name, "lake", cache_dir())


def test_the_next_process_reads_the_parse_instead_of_parsing(fresh_process):
    first = analysed(SQL, "rpt_example")
    assert first[:2] == FOUND
    assert len(list(cache_dir().glob("*.json"))) == 1
    fresh_process.forget()
    fresh_process.no_parsing()
    assert analysed(SQL, "rpt_example") == first


def test_a_changed_text_is_parsed_again(fresh_process):
    analysed(SQL, "rpt_example")
    fresh_process.forget()
    changed = SQL.replace("dim_locations", "dim_spots")
    found = analysed(changed, "rpt_example")
    assert found[:2] == (frozenset({"dim_spots"}), frozenset({"revenue_receipts"}))
    fresh_process.forget()
    fresh_process.no_parsing()
    with pytest.raises(AssertionError, match="parsed again"):  # new text: never served old
        analysed(SQL.replace("r.*", "r.location_id"), "rpt_example")


def test_a_file_that_does_not_read_is_parsed_again_and_written_anew(fresh_process):
    first = analysed(SQL, "rpt_example")
    [kept] = cache_dir().glob("*.json")
    for broken in ('{"models": ["dim_locations"]', '{"models": 1, "sources": [], "canonical": ""}'):
        kept.write_text(broken)
        fresh_process.forget()
        assert analysed(SQL, "rpt_example") == first
    fresh_process.forget()
    fresh_process.no_parsing()
    assert analysed(SQL, "rpt_example") == first  # the file was written anew


def test_a_folder_that_cannot_be_written_or_no_cache_still_parses(fresh_process, monkeypatch,
                                                                  tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocked))
    assert analysed(SQL, "rpt_example")[:2] == FOUND
    monkeypatch.setenv(CACHE_DIR_ENV, "")
    assert cache_dir() is None
    fresh_process.forget()
    assert analysed(SQL, "rpt_example")[:2] == FOUND


def test_every_shipped_model_reads_the_same_from_the_cache(fresh_process):
    parsed = discover_models()
    fresh_process.forget()
    fresh_process.no_parsing()
    assert discover_models() == parsed


def test_a_build_reads_its_checks_and_macros_from_the_cache(fresh_process):
    """What a build parses besides the models: what each data check reads (which checks
    run per partition, which only a build can run) and the macros' text its versions hash
    (``plan.chain_hashes``)."""
    project = shipped()
    order = build_order(project.models)
    checked = partitioned_checks(project.models, project.checks)
    hashes = chain_hashes(project.models, order, config_macros())
    only = [c.name for c in project.checks
            if models.only_in_build(c.sql, c.name, project.models, cache_dir())]
    assert checked and only  # (the shipped checks have both kinds)
    fresh_process.forget()
    fresh_process.no_parsing()
    assert partitioned_checks(project.models, project.checks) == checked
    assert chain_hashes(project.models, order, config_macros()) == hashes
    assert only == [c.name for c in project.checks
                    if models.only_in_build(c.sql, c.name, project.models, cache_dir())]
