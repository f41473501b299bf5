"""A disk that fills up under a load: exit 1, no traceback, and a line naming the path and
"no space left"; nothing committed before is lost. Dagster's storage full: ``status`` names
the run it stopped, and the next command once there is room marks that run failed. The lake
full: the summary names the partition and the lake, and ``--missing-only`` finishes once
there is room. On real (small) file systems, the CLI in its own process. Each disk is
mounted where one writer fills it, so which write meets the full disk first is not left
to timing."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from pos_sandbox.app import create_app
from pos_sandbox.server import serving
from tests.conftest import write_config
from tests.integration.test_dead_runs import ROOT, cli, environment

OCTOBER = ("load", "--start", "2026-10-01", "--end", "2026-10-31", "--no-catalog")


@pytest.fixture
def small_disk(tmp_path):
    """Mounts a tmpfs of a given size at a folder under ``tmp_path``, unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = []

    def mount(folder: Path, size: str) -> Path:
        folder.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                       check=True)
        mounted.append(folder)
        return folder

    yield mount
    for folder in reversed(mounted):
        if os.path.ismount(folder):
            subprocess.run(["umount", "-l", str(folder)], check=True)


def run(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(cli(config, *args), cwd=ROOT, env=environment(),
                          capture_output=True, text=True, timeout=300)


def test_dagsters_storage_full_is_one_line_and_the_stopped_run_is_named_then_failed(
        tmp_path, small_disk):
    home = small_disk(tmp_path / "data" / "dagster_home", "6m")
    ballast = home / "ballast"  # what the operator deletes to make room
    ballast.write_bytes(b"\0" * (5350 << 10))  # 750 KB left: a fresh home takes 350
    # (freed, the 6 MB hold the build's run: about 900 events of 83 models and checks)
    with serving(create_app()) as url:
        config = write_config(tmp_path, url)
        load = run(config, *OCTOBER)
    assert load.returncode == 1, load.stdout + load.stderr
    assert "Traceback" not in load.stderr
    last = load.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {home}: no space left on device ("), load.stdout + load.stderr
    assert "the next pos-etl command marks the run it stopped failed" in last

    ballast.unlink()
    status = run(config, "status")
    assert status.returncode == 1
    # the run the full disk stopped: the load's, or the build's it launched (timing)
    stopped = re.search(r"(load|warehouse)_job: its last run \S+ is still marked "
                        r"(started|not_started), but its process is gone", status.stdout)
    assert stopped, status.stdout
    build = run(config, "build")
    assert "died without finishing" in build.stderr, build.stderr
    assert "Traceback" not in build.stdout + build.stderr
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert not instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        failed = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert stopped.group(1) + "_job" in [run.job_name for run in failed]


def test_a_full_lake_names_the_partition_and_missing_only_finishes_once_there_is_room(
        tmp_path, small_disk):
    lake = small_disk(tmp_path / "data" / "lake", "1m")
    with serving(create_app()) as url:
        config = write_config(tmp_path, url)
        with open(config, "a") as fh:  # commits of 3 days: some before the disk fills
            fh.write("[lake]\ncommit_partitions = 3\n")
        load = run(config, *OCTOBER, "--no-models")
        assert load.returncode == 1, load.stdout + load.stderr
        assert "Traceback" not in load.stdout + load.stderr
        failed = [line for line in load.stdout.splitlines() if "FAILED lake__revenue" in line]
        assert len(failed) == 1, load.stdout
        assert "no space left on device writing location 1001's revenue of 2026-10-" \
               in failed[0], failed[0]
        assert f"to the lake {lake};" in failed[0]
        assert "the same command with --missing-only" in failed[0]
        done = int(load.stdout.split("revenue: failed with ")[1].split(" of 31")[0])
        assert 0 < done < 31, load.stdout

        # room: the lake moves to a disk with space, and the dates done are not fetched again
        subprocess.run(["cp", "-a", f"{lake}/.", str(tmp_path / "lake-copy")], check=True)
        subprocess.run(["umount", "-l", str(lake)], check=True)
        lake.rmdir()
        (tmp_path / "lake-copy").rename(lake)
        again = run(config, *OCTOBER, "--missing-only")
    assert again.returncode == 0, again.stdout + again.stderr
    kept = int(again.stdout.split(" of them committed before and not fetched again")[0]
               .rsplit(", ", 1)[1])
    assert done <= kept < 31, again.stdout
    assert "revenue: 31 of 31 partitions loaded" in again.stdout, again.stdout


def test_a_build_whose_record_fails_after_it_published_exits_0_and_says_so(
        tmp_path, monkeypatch, capsys):
    """Dagster's storage full right after the build published the new warehouse: the
    exit code says what happened to the warehouse (published: 0), a warning names the
    disk and the run; a failure before the publication stays exit 1. (The full storage is
    an error raised where the run's record fails, so the commands' instance is kept in
    memory: ``cli_instance_in_memory``.)"""
    import errno

    from pipeline.cli import main
    from pipeline.orchestration import loader
    from pipeline.warehouse.state import build_id
    from tests.conftest import cli_instance_in_memory

    with cli_instance_in_memory():
        monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
        monkeypatch.setenv("POS_ETL_DATA_DIR", str(tmp_path / "data"))
        assert main(["load", "--days", "1", "--no-catalog"]) == 0
        warehouse = tmp_path / "data" / "warehouse.duckdb"
        before = build_id(warehouse)
        real = loader.run_build
        full = OSError(errno.ENOSPC, "no space left on device (12 bytes free; Dagster's "
                                     "storage: database or disk is full)",
                       str(tmp_path / "data" / "dagster_home"))

        def published_then_full(*args, **kwargs):
            real(*args, **kwargs)
            raise full

        monkeypatch.setattr(loader, "run_build", published_then_full)
        capsys.readouterr()
        assert main(["build", "--full"]) == 0
        err = capsys.readouterr().err
        after = build_id(warehouse)
        assert after != before
        assert f"warning: the new warehouse was built, checked and published (build {after}, " \
               f"{warehouse}); then Dagster could not record the run: " in err
        assert "no space left on device" in err

        def full_before(*args, **kwargs):
            raise full

        monkeypatch.setattr(loader, "run_build", full_before)
        assert main(["build", "--full"]) == 1
        assert "error: " in capsys.readouterr().err and build_id(warehouse) == after

        def loaded_built_then_full(settings, *args, **kwargs):  # a load: its record is lost
            real(settings, full=True)
            raise full

        monkeypatch.setattr(loader, "run_load", loaded_built_then_full)
        assert main(["load", "--days", "1", "--no-catalog"]) == 1
        assert "warning: the new warehouse was built, checked and published" in \
            capsys.readouterr().err and build_id(warehouse) != after


def test_a_warehouse_disk_that_fills_during_a_build_keeps_the_old_one_and_says_how_full(
        tmp_path, small_disk):
    """Only the warehouse's disk is small (the lake and Dagster's home are elsewhere): a
    build that meets the full disk (wherever: a table, the checkpoint of its detach) fails
    in one line that names the free space, and the warehouse in place still answers; once
    there is room the next build is whole."""
    data = small_disk(tmp_path / "data", "48m")
    (tmp_path / "lake").mkdir()
    (data / "lake").symlink_to(tmp_path / "lake")
    env = environment() | {"DAGSTER_HOME": str(tmp_path / "home")}

    def pos_etl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(cli(config, *args), cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)

    with serving(create_app()) as url:
        config = write_config(tmp_path, url)
        load = pos_etl("load", "--start", "2026-10-30", "--end", "2026-10-31", "--no-catalog")
    assert load.returncode == 0, load.stdout + load.stderr

    def figures() -> list[tuple]:
        import duckdb

        with duckdb.connect(str(data / "warehouse.duckdb"), read_only=True) as con:
            return con.execute("select location_id, business_date, turnover_net "
                               "from fct_turnover_daily order by all").fetchall()

    before = figures()
    assert before
    ballast = data / "ballast"  # what the operator deletes to make room
    free = os.statvfs(data).f_bavail * os.statvfs(data).f_frsize
    ballast.write_bytes(b"\0" * (free - (256 << 10)))  # 256 KB left
    full = pos_etl("build", "--full")
    out = full.stdout + full.stderr
    assert full.returncode == 1, out
    assert "Traceback" not in out
    failed = [line for line in out.splitlines()
              if "warehouse build failed (the previous warehouse is kept)" in line]
    assert failed and re.search(rf"[\d.]+ MB free on the disk of {re.escape(str(data))}",
                                failed[0]), out
    assert figures() == before  # the warehouse in place answers as before

    ballast.unlink()
    again = pos_etl("build", "--full")
    assert again.returncode == 0, again.stdout + again.stderr
    assert figures() == before
