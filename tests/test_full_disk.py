"""A disk that fills up under a load: one line naming the path and "no space left",
exit 1, no traceback; ``status`` names the run it stopped, and the next command once
there is room marks that run failed. On a real (small) file system, the CLI in its own
process."""

from __future__ import annotations

import os
import subprocess

import dagster as dg
import pytest

from pos_sandbox.app import create_app
from pos_sandbox.server import serving
from tests.conftest import write_config
from tests.test_dead_runs import ROOT, cli, environment


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs: what a load of a month fills before it is done."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_full_disk_is_one_line_and_the_stopped_run_is_named_then_failed(small_disk):
    ballast = small_disk / "ballast"  # what the operator deletes to make room
    ballast.write_bytes(b"\0" * (1 << 20))
    with serving(create_app()) as url:
        config = write_config(small_disk, url)
        load = subprocess.run(cli(config, "load", "--start", "2026-10-01", "--end",
                                  "2026-10-31", "--no-catalog"), cwd=ROOT,
                              env=environment(), capture_output=True, text=True, timeout=300)
    home = small_disk / "data" / "dagster_home"
    assert load.returncode == 1, load.stdout + load.stderr
    assert "Traceback" not in load.stderr
    last = load.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {home}: no space left on device ("), last
    assert "the next pos-etl command marks the run it stopped failed" in last

    ballast.unlink()
    status = subprocess.run(cli(config, "status"), cwd=ROOT, env=environment(),
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 1
    assert "load_job: its last run" in status.stdout
    assert "is still marked started, but its process is gone" in status.stdout
    build = subprocess.run(cli(config, "build"), cwd=ROOT, env=environment(),
                           capture_output=True, text=True, timeout=300)
    assert "died without finishing" in build.stderr, build.stderr
    # 1 MB is not room enough for a warehouse: the build says so by the file's name
    assert "Traceback" not in build.stdout + build.stderr
    assert build.returncode == 0 or ".building.wal\": No space left on device" in build.stdout
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert not instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        failed = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert "load_job" in [run.job_name for run in failed]
