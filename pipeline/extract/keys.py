"""Nothing stored carries a key: the check every extraction's tables pass before a commit."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.pos_api.errors import ContractError


def refuse_keys(source, tables: Mapping[str, pa.Table], where: str,
                location_id: int | None) -> None:
    """``ContractError`` when a text field of what is about to be stored carries the key
    its answers were asked with (``source``: a ``PosSource``; the key as it is, or
    encoded): nothing of it is stored."""
    carried = fields_with_keys(tables, source.key_pattern(location_id))
    if carried:
        raise ContractError(
            f"{where}: field{'s' * (len(carried) > 1)} {', '.join(carried)} carr"
            f"{'y' if len(carried) > 1 else 'ies'} an API key (the POS echoed it into its "
            "data): not stored, nothing of it loaded; ask the POS vendor, then load it again",
            location_id=location_id)


def may_carry_keys(many: Iterable[Mapping[str, pa.Table]], pattern: str | None) -> bool:
    """Whether a text field of ``many`` (tables of several partitions) may hold a value
    that matches ``pattern``: one pass over all of them, so that only when it finds one
    are they asked one by one (``fields_with_keys``, which decides)."""
    return bool(pattern) and _any_match([c for tables in many for c in _chunks(tables)],
                                        pattern)


def fields_with_keys(tables: Mapping[str, pa.Table], pattern: str | None) -> list[str]:
    """``table.field`` of every text field (nested ones too) holding a value that matches
    ``pattern`` (a source's keys in every form it knows: ``Redactor.pattern``), ignoring
    case: a field that carries a key is never stored."""
    if not may_carry_keys([tables], pattern):  # one pass for all: none, mostly
        return []
    found = []  # which fields: asked only once one carries a key
    for name, table in tables.items():
        for column in table.column_names:
            for path, values in _texts(column, table.column(column)):
                if len(values) and pc.any(pc.match_substring_regex(
                        values, pattern, ignore_case=True)).as_py():
                    found.append(f"{name}.{path}")
    return found


def _texts(path: str, values: pa.ChunkedArray | pa.Array):
    """The text arrays within a column: itself, a struct's fields, a list's values."""
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        yield path, values
    elif pa.types.is_struct(kind):
        for i in range(kind.num_fields):
            yield from _texts(f"{path}.{kind.field(i).name}", pc.struct_field(values, i))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        yield from _texts(path, pc.list_flatten(values))


def _chunks(tables: Mapping[str, pa.Table]) -> list[pa.Array]:
    """Every text array of ``tables`` (nested ones too), as chunks."""
    found = []
    for table in tables.values():
        for column in table.column_names:
            for _, values in _texts(column, table.column(column)):
                found += values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    return found


def _any_match(chunks: list[pa.Array], pattern: str) -> bool:
    """Whether a value of ``chunks`` may match ``pattern`` (ignoring case): one search over
    the values' bytes joined into one text, each chunk's run of values apart from the next.
    A match within a value is found there as it is in the value; one that spans two values
    (two runs, or a null's bytes between) only sends the caller to match field by field,
    which decides. (Arrow prepares its regex for each array it is given and matches each
    value in a call of its own: over a partition's texts, twice the time of one search.)"""
    runs = []
    for chunk in chunks:
        _, offsets, data = chunk.buffers()[:3]
        if data is None or not len(chunk):
            continue
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        ends = np.frombuffer(offsets, width)[chunk.offset:chunk.offset + len(chunk) + 1]
        runs.append(memoryview(data)[int(ends[0]):int(ends[-1])])
    if not runs:
        return False
    text = b"\n".join(runs)
    one = pa.LargeStringArray.from_buffers(1, pa.py_buffer(np.array([0, len(text)], np.int64)),
                                           pa.py_buffer(text))
    return bool(pc.any(pc.match_substring_regex(one, pattern, ignore_case=True)).as_py())
