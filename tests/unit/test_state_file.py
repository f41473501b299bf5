"""The build's state file is carried from build to build without the free space a build
left in it (deletes, tables made anew)."""

import duckdb

from pipeline.warehouse.state import FREE_SHARE_KEPT, copy_state


def _blocks(path) -> tuple[int, int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select total_blocks, free_blocks from pragma_database_size()"
                           ).fetchone()


def _rows(path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select * from _state.receipt_keys order by all").fetchall()


def test_a_state_file_mostly_free_is_written_anew_and_one_in_use_is_copied(tmp_path):
    source = tmp_path / "old.duckdb"
    with duckdb.connect(str(source)) as con:
        con.execute("create schema _state")
        con.execute("create table _state.dropped as select range as n, md5(range::varchar) "
                    "as t from range(400000)")
        con.execute("create table _state.receipt_keys as select range as n, "
                    "md5(range::varchar) as transaction_id from range(100000)")
        con.execute("checkpoint")
        con.execute("drop table _state.dropped")
        con.execute("checkpoint")
    total, free = _blocks(source)
    assert free / total > FREE_SHARE_KEPT

    compact = tmp_path / "compact.duckdb"
    copy_state(source, compact)
    assert _rows(compact) == _rows(source)
    total_after, free_after = _blocks(compact)
    assert free_after / total_after <= FREE_SHARE_KEPT
    assert compact.stat().st_size < source.stat().st_size / 2

    again = tmp_path / "again.duckdb"  # little free space: a plain copy, byte for byte
    copy_state(compact, again)
    assert again.read_bytes() == compact.read_bytes()
