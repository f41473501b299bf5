"""Two warehouse files taking turns (#44, item 3): a night brings the file the last build
replaced up to date in place instead of copying the whole warehouse; readers keep the
file they opened; a kill at any step leaves a whole warehouse, and the next build is right."""

import os
import shutil
import subprocess
import sys
import textwrap
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.lake.store import Lake
from pipeline.warehouse import build_warehouse
from pipeline.warehouse.plan import PARTS, STATE_SCHEMA
from pipeline.warehouse.standby import DIRTY, standby_path
from pipeline.warehouse.state import build_id, state_dir
from tests.conftest import fingerprints, loaded_warehouse
from tests.venvs import tool_env

ROOT = Path(__file__).resolve().parents[2]
DAYS = [date(2026, 11, 17), date(2026, 11, 18), date(2026, 11, 19), date(2026, 11, 20)]


@pytest.fixture(scope="module")
def loaded(sandbox_url, tmp_path_factory):
    settings = loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("standby") / "data",
                                DAYS[0], DAYS[-1], [1001, 1002])
    return settings.warehouse.lake_dir


@pytest.fixture
def lake(loaded, tmp_path):
    copy = tmp_path / "lake"
    shutil.copytree(loaded, copy)
    return copy


def reload(lake: Path, location: int, day: date) -> None:
    """A night's load of a day again: the same receipts in a new load."""
    part = {"location_id": location, "business_date": day.isoformat()}
    tables = {t: Lake(lake).read("revenue", t, part) for t in REVENUE_TABLES}
    Lake(lake).write("revenue", tables, part)


def rows(path: Path) -> dict[str, tuple[int, int]]:
    """Every stored model's rows: their count and the sum of their hashes
    (``fingerprints``)."""
    return fingerprints(path)


def inode(path: Path) -> int:
    return path.stat().st_ino


def test_nights_take_turns_between_two_files_and_equal_a_full_rebuild(lake, tmp_path):
    target = tmp_path / "warehouse.duckdb"
    first = build_warehouse(lake, target)
    assert first.built_on == "new" and not standby_path(target).exists()
    one = inode(target)
    reload(lake, 1001, DAYS[1])
    second = build_warehouse(lake, target)  # no standby yet: a copy of the file in place
    assert second.built_on == "copy" and inode(standby_path(target)) == one
    two = inode(target)
    reload(lake, 1002, DAYS[2])
    third = build_warehouse(lake, target)
    # the first file, brought level with the second and up to date: no copy of the history
    assert third.built_on == "standby" and third.rebuilt_partitions == {"revenue": 1}
    assert inode(target) == one and inode(standby_path(target)) == two
    assert not (state_dir(target) / DIRTY).exists()
    full = build_warehouse(lake, tmp_path / "full.duckdb", full=True)
    assert rows(target) == rows(full.path)
    # changed in place, it is still a file the DuckDB BI tools bundle opens
    oldest = tool_env("duckdb-1.1", ["duckdb==1.1.3"]) / "bin" / "python"
    opened = subprocess.run([str(oldest), "-c", "import duckdb, sys; print(duckdb.connect("
                             "sys.argv[1], read_only=True).execute('select count(*) from "
                             "fct_receipts').fetchone()[0])", str(target)],
                            capture_output=True, text=True, timeout=120)
    assert opened.stdout.strip() == str(rows(target)["main.fct_receipts"][0]), opened.stderr
    # nothing changed: the standby catches up and computes nothing
    again = build_warehouse(lake, target)
    assert again.built_on == "standby" and again.rebuilt_partitions == {"revenue": 0}
    assert inode(target) == two and rows(target) == rows(full.path)
    states = sorted(p.name for p in state_dir(target).iterdir())
    assert len(states) == 3 and "standby.duckdb" in states  # two state files and it


READER = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    query = "select count(*), sum(turnover_net) from fct_turnover_daily"
    print(con.execute(query).fetchone(), flush=True)
    sys.stdin.readline()
    print(con.execute(query).fetchone(), flush=True)
""")


def test_a_standby_a_reader_holds_is_left_alone_and_the_night_copies(lake, tmp_path):
    target = tmp_path / "warehouse.duckdb"
    for n in range(3):
        reload(lake, 1001, DAYS[n])
        build_warehouse(lake, target)
    with subprocess.Popen([sys.executable, "-c", READER, str(target)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as reader:
        seen = reader.stdout.readline()
        held = inode(target)
        reload(lake, 1002, DAYS[0])
        assert build_warehouse(lake, target).built_on == "standby"  # the other file
        assert inode(standby_path(target)) == held
        reload(lake, 1002, DAYS[1])
        night = build_warehouse(lake, target)  # the standby is the reader's: copied
        assert night.built_on == "copy" and inode(target) != held
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline() == seen  # the reader's file never changed
    assert build_warehouse(lake, target).built_on == "standby"
    # a connection of the build's own process holds its file as much as another's
    with duckdb.connect(str(target), read_only=True) as con:
        build_warehouse(lake, target)
        assert build_warehouse(lake, target).built_on == "copy"
        assert con.execute("select count(*) from fct_turnover_daily").fetchone()[0] == 8
    assert rows(target) == rows(build_warehouse(lake, tmp_path / "full.duckdb",
                                                full=True).path)


def test_the_standby_of_the_release_before_is_not_used_the_night_copies(lake, tmp_path):
    """After an upgrade the first build makes a new file; the standby is then the last
    release's file, its state of another format: the next night copies, and the one after
    takes turns again."""
    target = tmp_path / "warehouse.duckdb"
    build_warehouse(lake, target)
    reload(lake, 1001, DAYS[1])
    build_warehouse(lake, target)
    standby_state = state_dir(target) / f"{build_id(standby_path(target))}.duckdb"
    with duckdb.connect(str(standby_state)) as con:  # as the release before wrote it
        con.execute(f"update {STATE_SCHEMA}.meta set value = '6' where key = 'format'")
        con.execute(f"alter table {STATE_SCHEMA}.{PARTS} rename to parts")
    reload(lake, 1002, DAYS[2])
    assert build_warehouse(lake, target).built_on == "copy"
    reload(lake, 1002, DAYS[3])
    assert build_warehouse(lake, target).built_on == "standby"
    assert rows(target) == rows(build_warehouse(lake, tmp_path / "full.duckdb",
                                                full=True).path)


KILLED = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    import pipeline.warehouse.standby as standby
    from pipeline.warehouse import build_warehouse

    step, at = 0, int(sys.argv[3])
    def dying(call):
        def run(*args, **kwargs):
            global step
            step += 1
            if step == at:
                os._exit(9)  # killed: no finally, no cleanup
            return call(*args, **kwargs)
        return run
    if sys.argv[4] == "publish":
        standby.os = type("os", (), {"replace": staticmethod(dying(os.replace)),
                                     "link": staticmethod(dying(os.link)),
                                     "fsync": os.fsync, "path": os.path})
    else:  # killed after it brought the standby level, while it computes
        catch_up = standby.catch_up
        import pipeline.warehouse.build as build
        def then_die(*args):
            catch_up(*args)
            os._exit(9)
        build.catch_up = then_die
    build_warehouse(Path(sys.argv[1]), Path(sys.argv[2]))
""")


@pytest.fixture(scope="module")
def two_nights(loaded, tmp_path_factory):
    """A warehouse and its standby after two nights, the lake's next night loaded and not
    yet built; the rows of the warehouse then, and of a full build of that lake."""
    folder = tmp_path_factory.mktemp("two-nights")
    lake, target = folder / "lake", folder / "warehouse.duckdb"
    shutil.copytree(loaded, lake)
    for n in range(2):
        reload(lake, 1001, DAYS[n])
        build_warehouse(lake, target)
    reload(lake, 1002, DAYS[3])
    full = build_warehouse(lake, tmp_path_factory.mktemp("full") / "full.duckdb", full=True)
    return folder, rows(target), rows(full.path)


@pytest.mark.parametrize(("at", "where"), [(1, "publish"), (2, "publish"), (3, "publish"),
                                           (4, "publish"), (5, "publish"), (0, "changing")])
def test_a_build_killed_at_any_step_leaves_a_whole_warehouse_and_the_next_is_right(
        two_nights, tmp_path, at, where):
    made, before, after = two_nights
    shutil.copytree(made, tmp_path, dirs_exist_ok=True)  # each kill on its own copy
    lake, target = tmp_path / "lake", tmp_path / "warehouse.duckdb"
    assert standby_path(target).exists() and rows(target) == before
    killed = subprocess.run([sys.executable, "-c", KILLED, str(lake), str(target), str(at),
                             where], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert killed.returncode == 9, killed.stderr
    # readers find a whole warehouse: the old one, or the new one once it was switched in
    assert rows(target) in (before, after)
    assert os.access(target, os.R_OK)
    again = build_warehouse(lake, target)
    assert rows(target) == after
    # a standby the killed build changed and did not publish is not trusted: copied; one
    # it published is the warehouse, and the file it replaced the standby
    assert again.built_on == ("standby" if at == 5 else "copy")
    assert inode(standby_path(target)) != inode(target)
    assert not (state_dir(target) / DIRTY).exists()
    # and the nights after take turns again
    assert build_warehouse(lake, target).built_on == "standby"
    assert rows(target) == after


def digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a digest of its bytes."""
    import hashlib

    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_builds_in_a_hard_linked_copy_never_change_the_original(lake, tmp_path):
    """A data folder copied with ``cp -al`` shares every file's data with the original:
    builds in the copy (and a Dagster instance opened there) leave every byte of the
    original as it was, and the original's own nights still take turns."""
    from pipeline.orchestration.instance import prepare_home

    original = tmp_path / "data"
    target = original / "warehouse.duckdb"
    shutil.copytree(lake, original / "lake")
    for n in range(2):  # a warehouse and its standby
        reload(original / "lake", 1001, DAYS[n])
        build_warehouse(original / "lake", target)
    assert standby_path(target).exists()
    prepare_home(original / "dagster_home")
    (original / "dagster_home" / "history.db").write_bytes(b"runs of the original")
    before = digests(original)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-al", str(original), str(copy)], check=True)
    for n in range(3):  # nights in the copy: each would take turns in place
        reload(copy / "lake", 1002, DAYS[n])
        build_warehouse(copy / "lake", copy / "warehouse.duckdb")
    prepare_home(copy / "dagster_home")
    (copy / "dagster_home" / "history.db").open("r+b").write(b"runs of the copy")
    assert digests(original) == before
    assert rows(copy / "warehouse.duckdb") == rows(build_warehouse(
        copy / "lake", tmp_path / "full.duckdb", full=True).path)
    reload(original / "lake", 1001, DAYS[2])
    assert build_warehouse(original / "lake", target).built_on in ("standby", "copy")
    assert rows(target) == rows(build_warehouse(original / "lake", tmp_path / "o.duckdb",
                                                full=True).path)
