"""Data tests of the warehouse: each is a query that returns the rows breaking a rule.

They are written beside the models, in the ``data_tests`` of each model's entry of its
YAML file (beside its SQL), in dbt's shape: ``unique``, ``not_null``, ``relationships``,
``accepted_values`` (on a column, or on ``column_names``/``columns`` of the model),
``unique_combination_of_columns`` and ``expression_is_true`` (as in dbt_utils, with
``config: {where: ...}``), and ``sql`` (a named query returning the failing rows: dbt's
singular test, kept in the model's contract). Each has ``config: {severity: error|warn}``
(dbt's default: error). They run on the freshly built file before it is switched in, and
surface in Dagster as asset checks of the model they guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from pipeline.sqlrunner.dictionary import Dictionary
from pipeline.sqlrunner.models import only_in_build


@dataclass(frozen=True)
class DataCheck:
    """A rule: ``sql`` returns the rows that break it. A check that reads partitioned
    models only runs on the partitions a build computed, so it returns their keys."""

    name: str
    model: str
    description: str
    sql: str
    blocking: bool = False
    """Severity error: a failure means the models are wrong (not the source), so the build
    is not published, the previous warehouse stays, and nothing downstream sees the wrong
    figures. Severity warn: reported (a warning: the run succeeds, the command exits 0
    unless ``--warn-error``)."""

    @property
    def severity(self) -> str:
        return "error" if self.blocking else "warn"


SEVERITIES = ("error", "warn")


class DataTestError(ValueError):
    """A data test of a model's YAML is malformed; the message names model and test."""


def _unique(model: str, columns: list[str]) -> tuple[str, str, str]:
    cols = ", ".join(columns)
    return (f"unique_{'_'.join(columns)}", f"({cols}) is unique in {model}",
            f"select {cols}, count(*) as n from {model} group by {cols} having count(*) > 1")


def _not_null(model: str, columns: list[str]) -> tuple[str, str, str]:
    cond = " or ".join(f"{c} is null" for c in columns)
    return (f"not_null_{'_'.join(columns)}", f"{', '.join(columns)} are never null in {model}",
            f"select * from {model} where {cond}")


def _relationships(model: str, to: str, keys: list[tuple[str, str]]) -> tuple[str, str, str]:
    """``keys``: (column of ``model``, column of ``to``)."""
    join = " and ".join(f"c.{mine} = p.{theirs}" for mine, theirs in keys)
    return (f"relationship_to_{to}", f"every row of {model} has its {to} row",
            f"select c.* from {model} c left join {to} p on {join} "
            f"where p.{keys[-1][1]} is null and c.{keys[-1][0]} is not null")


def _accepted_values(model: str, column: str, values: list) -> tuple[str, str, str]:
    listed = ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)
    return (f"accepted_values_{column}", f"{column} of {model} is one of {listed}",
            f"select * from {model} where {column} not in ({listed})")


def _expression(model: str, expression: str, where: str | None) -> tuple[str, str, str]:
    scope = f" and ({where})" if where else ""
    return ("expression_is_true", f"{expression} holds on every row of {model}",
            f"select * from {model} where not ({expression}){scope}")


def _test(model: str, entry, column: str | None) -> DataCheck:
    """One ``data_tests`` entry (dbt's shape: ``unique``, or ``{kind: {arguments}}``)."""
    kind, args = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
    args = dict(args or {})
    args |= args.pop("arguments", None) or {}  # dbt 1.10's nesting of the arguments
    columns = [column] if column else None
    if kind == "unique_combination_of_columns":
        name, description, sql = _unique(model, list(args["combination_of_columns"]))
    elif kind == "unique":
        name, description, sql = _unique(model, columns or list(args["column_names"]))
    elif kind == "not_null":
        name, description, sql = _not_null(model, columns or list(args["column_names"]))
    elif kind == "relationships":
        to = str(args["to"]).removeprefix("ref('").removesuffix("')")
        keys = [(column, args["field"])] if column else [(c, c) for c in args["columns"]]
        name, description, sql = _relationships(model, to, keys)
    elif kind == "accepted_values":
        name, description, sql = _accepted_values(model, column or args["column_name"],
                                                  list(args["values"]))
    elif kind == "expression_is_true":
        config = args.get("config") or {}
        name, description, sql = _expression(model, args["expression"], config.get("where"))
    elif kind == "sql":
        name, description, sql = args["name"], "", args["query"]
    else:
        raise DataTestError(f"model {model}: unknown data test {kind!r} (known: unique, "
                            f"not_null, relationships, accepted_values, "
                            f"unique_combination_of_columns, expression_is_true, sql)")
    severity = str((args.get("config") or {}).get("severity", "error")).lower()
    if severity not in SEVERITIES:
        raise DataTestError(f"model {model}: test {args.get('name', name)}: severity must "
                            f"be error or warn, not {severity!r}")
    return DataCheck(str(args.get("name", name)), model,
                     " ".join(str(args.get("description", description)).split()),
                     str(sql).strip(), blocking=severity == "error")


def checks_of(dictionary: Dictionary) -> tuple[DataCheck, ...]:
    """The data tests of every model's YAML entry (its grain's uniqueness, then
    the model-level tests, then each column's), as checks. Severity ``error`` (dbt's
    default): the build is not published when one fails; ``warn``: reported."""
    checks = []
    for model, doc in dictionary.models.items():
        try:
            if doc.grain:  # the grain is the model's unique test
                checks.append(_test(model, {"unique_combination_of_columns": {
                    "combination_of_columns": list(doc.grain)}}, None))
            checks += [_test(model, entry, None) for entry in doc.tests]
            checks += [_test(model, entry, column)
                       for column, tests in doc.column_tests.items() for entry in tests]
        except (KeyError, TypeError, AttributeError, StopIteration) as exc:
            raise DataTestError(f"model {model}: a data test lacks {exc} or is not "
                                f"written as dbt writes it") from None
    names = [(c.model, c.name) for c in checks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataTestError(f"data tests named twice (give each a name): {twice}")
    return tuple(checks)




WHERE_LISTED = 50
"""Partitions a failed check names at most (its failing rows are all counted)."""


@dataclass(frozen=True)
class Where:
    """The partition of rows that break a check: the values of the project's partition
    keys (``Sources.keys``) in their rows; a key the rows lack is None (a check of a
    dimension has no date)."""

    values: tuple[tuple[str, object], ...]
    """(key, value) in the keys' order."""

    def get(self, key: str) -> object:
        return dict(self.values).get(key)

    def __str__(self) -> str:
        """``shop 7 order date 2026-03-28`` for the keys ``shop_id`` and ``order_date``: a
        key without its ``_id``, its words apart."""
        return " ".join(f"{key.removesuffix('_id').replace('_', ' ')} {value}"
                        for key, value in self.values if value is not None) \
            or "the whole model"

    def as_json(self) -> dict:
        return {key: value.isoformat() if isinstance(value, date) else value
                for key, value in self.values}

    @classmethod
    def from_json(cls, value: dict, keys: tuple[str, ...] = ()) -> Where:
        """From ``as_json``: a date's ISO text stays text (it reads the same); ``keys``
        first in their order (a store of JSON may sort an object's keys)."""
        rank = {key: n for n, key in enumerate(keys)}
        return cls(tuple(sorted(value.items(), key=lambda kv: rank.get(kv[0], len(rank)))))


@dataclass
class CheckOutcome:
    check: DataCheck
    failing_rows: int
    sample: list[tuple]
    where: tuple[Where, ...] = ()
    """The partitions of the failing rows (``WHERE_LISTED`` at most), when the check's
    rows carry a partition key."""
    columns: tuple[str, ...] = ()
    """The names of the sample's columns."""

    @property
    def passed(self) -> bool:
        return self.failing_rows == 0

    @property
    def severity(self) -> str:
        return self.check.severity


def run_check(con: duckdb.DuckDBPyConnection, check: DataCheck, keys: tuple[str, ...] = ()
              ) -> CheckOutcome:
    """One data check on an open warehouse: how many rows break it, a few of them, and
    the partitions they are in (the values of ``keys`` their rows carry)."""
    result = con.execute(f"select * from ({check.sql}) limit 5")
    columns = [d[0] for d in result.description]
    rows = result.fetchall()
    if not rows:
        return CheckOutcome(check, 0, rows, columns=tuple(columns))
    count = con.execute(f"select count(*) from ({check.sql})").fetchone()[0]
    where = ()
    if any(k in columns for k in keys):
        where = tuple(Where(tuple(zip(keys, row, strict=True))) for row in con.execute(
            f"select distinct {', '.join(k if k in columns else 'null' for k in keys)} "
            f"from ({check.sql}) order by all limit {WHERE_LISTED}").fetchall())
    return CheckOutcome(check, count, rows, where, tuple(columns))


def run_checks(con: duckdb.DuckDBPyConnection, checks: tuple[DataCheck, ...],
               models: dict, recorded: dict[str, int], keys: tuple[str, ...] = (),
               cache: Path | None = None) -> list[CheckOutcome]:
    """Run ``checks`` on an open warehouse, over all of it. A check that reads a model the
    file does not store (staging: computed by the build) only its build could run: its
    outcome is the failing rows the build recorded (``recorded``: ``model:check`` ->
    rows, from the state file), without sample rows. ``cache``: where what parsing found
    is kept between processes (``models.references``)."""
    con.execute("set search_path = 'main'")
    return [CheckOutcome(check, recorded.get(f"{check.model}:{check.name}", 0), [])
            if only_in_build(check.sql, check.name, models, cache)
            else run_check(con, check, keys)
            for check in checks]
