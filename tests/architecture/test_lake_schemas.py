"""The lake's revenue tables against the spec's receipt: every wire field has its column."""

import types
import typing

from pydantic import BaseModel

from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.extract.schemas import wire_path
from pipeline.pos_api import models

# Lists of the receipt that are tables of their own, and the table each one's rows go to.
CHILD_TABLES = {"items": "receipt_items", "items.sideDishes": "item_side_dishes",
                "payments": "payments"}


def _model_of(annotation) -> type[BaseModel] | None:
    """The pydantic model inside ``X``, ``X | None`` or ``list[X] | None``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (
            typing.Union, list):
        for arg in typing.get_args(annotation):
            if (found := _model_of(arg)) is not None:
                return found
    return None


def _leaf_paths(model: type[BaseModel], out: dict[str, set[str]], group: str = "",
                prefix: str = "") -> dict[str, set[str]]:
    """Wire paths of every leaf field, grouped by the list they sit in ("" = the receipt)."""
    for name, info in model.model_fields.items():
        path = prefix + (info.alias or name)
        nested = _model_of(info.annotation)
        is_list = typing.get_origin(info.annotation) is list or any(
            typing.get_origin(a) is list for a in typing.get_args(info.annotation))
        if nested is None:
            out.setdefault(group, set()).add(path)
        elif is_list:  # rows of a child table: paths start again at the element
            _leaf_paths(nested, out, f"{group}.{path}".lstrip("."), "")
        else:
            _leaf_paths(nested, out, group, path + ".")
    return out


def test_every_field_of_the_spec_receipt_has_a_lake_column():
    by_table = {CHILD_TABLES.get(group, "receipts"): paths
                for group, paths in _leaf_paths(models.Receipt, {}).items()}
    assert set(by_table) == set(REVENUE_TABLES)
    for table, schema in REVENUE_TABLES.items():
        stored = {wire_path(f) for f in schema} - {None}
        assert by_table[table] - stored == set(), f"{table}: wire fields without a column"
        assert stored - by_table[table] == set(), f"{table}: columns of no wire field"


def test_staging_models_carry_every_lake_column():
    """A staging model names every column of the lake table it reads: none is dropped."""
    import sqlglot
    from sqlglot import exp

    from pipeline.warehouse import LAKE_TABLES, discover_models

    staged = {}
    for model in discover_models().values():
        if model.stage == "staging":
            for table in model.source_deps:
                staged[table] = model
    missing = {}
    for table, schema in LAKE_TABLES.items():
        if table not in staged:
            missing[table] = ["(no staging model reads it)"]
            continue
        tree = sqlglot.parse_one(staged[table].sql, dialect="duckdb")
        named = {c.name for c in tree.find_all(exp.Column)}
        lost = [f.name for f in schema if f.name not in named]
        if lost:
            missing[table] = lost
    assert missing == {}


def test_the_dictionary_maps_every_lake_column_to_its_staging_column():
    """What `pos-etl docs` shows under "From the lake": every column of every lake table,
    and the name its staging model gives it, which that model has."""
    from pipeline.sqlrunner.models import source_columns
    from pipeline.warehouse import LAKE_TABLES, discover_models

    models = discover_models()
    mapped = {t.table: t for t in source_columns(models)}
    assert set(mapped) == set(LAKE_TABLES)
    assert {t: [f.name for f in schema if f.name not in mapped[t].columns]
            for t, schema in LAKE_TABLES.items()} == {t: [] for t in LAKE_TABLES}
    assert mapped["receipts"].renamed["tip"] == "tip_amount"
    assert mapped["receipt_items"].renamed["name"] == "product_name"


def spec_model(name: str) -> type[BaseModel]:
    """The spec's pydantic model of a resource, from whichever module of
    ``pipeline.pos_api.models`` declares it (none needs re-exporting for this test)."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(models.__path__):
        module = importlib.import_module(f"{models.__name__}.{info.name}")
        if isinstance(getattr(module, name, None), type):
            return getattr(module, name)
    raise LookupError(f"no spec model {name} in pipeline.pos_api.models")


def spec_resources() -> set[str]:
    """The spec resources the areas' lake tables are made of (``Receipt`` for a table of
    ``Receipt.items``): from the areas' registry, so a new area's resource is held to the
    spec like the others without a list to edit here."""
    from pipeline.areas import AREAS
    from pipeline.extract.schemas import sources_of

    return {source.split(".")[0] for area in AREAS if area.from_the_wire
            for schema in area.tables.values() for source in sources_of(schema)}


def _spec_paths(model: type[BaseModel], prefix: str) -> set[str]:
    """``Resource.path.to.leaf`` of every field of a spec resource (lists continue the path)."""
    paths = set()
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}"
        nested = _model_of(info.annotation)
        paths |= {path} if nested is None else _spec_paths(nested, path)
    return paths


def test_every_spec_field_has_its_place_in_the_lake():
    from pipeline.areas import SPEC_LANDING
    from pipeline.warehouse import LAKE_TABLES

    resources = spec_resources()
    assert {"Receipt", "Product", "ProductCategory", "Spot", "Menu", "Voucher"} <= resources
    spec = set().union(*(_spec_paths(spec_model(r), r) for r in resources))
    assert len(spec) >= 164
    assert spec - SPEC_LANDING.keys() == set(), "spec fields that land nowhere"
    assert SPEC_LANDING.keys() - spec == set(), "landings of no spec field"
    columns = {f"{table}.{f.name}" for table, schema in LAKE_TABLES.items() for f in schema}
    assert set(SPEC_LANDING.values()) - columns == set(), "landings in no lake column"


def test_every_landed_spec_field_holds_the_sandboxs_values(sandbox_url, tmp_path,
                                                          sandbox_keys):
    """A column that exists but is never filled is a dropped field too: after a load of
    the sandbox each landing column holds a value (the sandbox fills every field)."""
    from pipeline.areas import AREAS, SPEC_LANDING
    from pipeline.lake.store import Lake
    from tests.conftest import load_directly, make_settings

    settings = make_settings(sandbox_url, tmp_path / "data", voucher_url=sandbox_url)
    day = __import__("datetime").date(2026, 11, 20)
    load_directly(settings, day, day, build=False)  # the lake as a load leaves it
    empty = []
    lake = Lake(settings.warehouse.lake_dir)
    area_of = {t: area.name for area in AREAS for t in area.tables}
    for path, target in sorted(SPEC_LANDING.items()):
        table, column = target.split(".")
        area = area_of[table]
        values = [lake.read(area, table, p).column(column) for p in lake.partitions(area)]
        if not sum(len(v) - v.null_count for v in values):
            empty.append(path)
    # Fields the spec says are always null or that the sandbox never sets:
    assert empty == sorted(NEVER_FILLED)


NEVER_FILLED = {
    "Receipt.customer.id", "Receipt.customer.number", "Receipt.customer.name",  # spec: null
}
