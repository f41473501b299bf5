"""The runs ``pos-etl`` executes in its own process, and what a dead one leaves behind.

A run killed with ``kill -9``, by the OOM killer or a power loss never writes its end:
Dagster keeps it ``STARTED`` and keeps the pool slots its steps claimed. Four such
builds used to take every slot of the pool ``warehouse`` for good. So each CLI run is
tagged with its host, process id and process start time, and before a command runs a job
it looks for runs of this host whose process is gone: each is marked failed and its
slots are freed (Dagster's instance API, as its run monitoring daemon does for finished
runs), and the command says so in one line. A run still alive is never touched; a
command that finds a pool full of live runs says so and waits, and Ctrl-C or SIGTERM
stops it.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import dagster as dg
import psutil

from pipeline.core import stops

HOST_TAG, PID_TAG, STARTED_TAG = "pos_etl/host", "pos_etl/pid", "pos_etl/process_started"
IN_PROGRESS = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
               dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
            dg.DagsterRunStatus.CANCELED]
POLL_SECONDS = 1.0
STOPPED = "stopped (Ctrl-C or SIGTERM)"
"""What an interrupt is called where the signal is not known (a run worker; a report
read from a run's events)."""


def process_tags() -> dict[str, str]:
    """The tags that let a later command tell whether this process is still alive."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid()),
            STARTED_TAG: repr(psutil.Process().create_time())}


def _alive(tags: dict[str, str]) -> bool:
    try:
        process = psutil.Process(int(tags[PID_TAG]))
        return repr(process.create_time()) == tags[STARTED_TAG] \
            and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, KeyError, ValueError):
        return False
    except psutil.AccessDenied:  # another user's live process
        return True


def is_dead(tags: dict[str, str]) -> bool:
    """Was this run started by a ``pos-etl`` process of this host that is gone?"""
    return tags.get(HOST_TAG) == socket.gethostname() and not _alive(tags)


def reap_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the runs of this host whose process is gone, free the pool slots they
    and any finished run still hold; one line of what was done per run."""
    said = []
    host = socket.gethostname()
    for run in instance.get_runs(dg.RunsFilter(statuses=IN_PROGRESS, tags={HOST_TAG: host})):
        if _alive(run.tags):
            continue
        instance.report_run_failed(
            run, f"the process of this run (pid {run.tags.get(PID_TAG)} on {host}) is gone: "
                 "killed or crashed before the run ended; marked failed by pos-etl")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        said.append(f"run {run.run_id[:8]} ({run.job_name}, pid {run.tags.get(PID_TAG)}) "
                    "died without finishing (killed or crashed): marked failed, its pool "
                    "slots freed")
    holders = instance.event_log_storage.get_concurrency_run_ids()
    if holders:
        for run in instance.get_runs(dg.RunsFilter(run_ids=list(holders), statuses=FINISHED)):
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            said.append(f"run {run.run_id[:8]} ({run.job_name}) had ended "
                        f"({run.status.value.lower()}) but still held pool slots: freed")
    return said


def wait_for_pools(instance: dg.DagsterInstance, pools: Iterable[str],
                   say: Callable[[str], None]) -> None:
    """Return once each pool has a free slot, saying once what it waits for. Dead runs
    are reaped on every poll, so a holder that dies meanwhile frees its slots."""
    waiting_for: str | None = None
    while True:
        full = []
        for pool in pools:
            info = instance.event_log_storage.get_concurrency_info(pool)
            if info.slot_count and len(info.claimed_slots) >= info.slot_count:
                runs = sorted({s.run_id[:8] for s in info.claimed_slots})
                full.append(f"pool {pool!r} ({len(info.claimed_slots)} of {info.slot_count} "
                            f"slots taken by run(s) {', '.join(runs)})")
        if not full:
            return
        if waiting_for != (now := "; ".join(full)):
            waiting_for = now
            say(f"waiting for a free slot: {now}; Ctrl-C stops")
        time.sleep(POLL_SECONDS)
        for line in reap_dead_runs(instance):
            say(line)


def stop_reason() -> str:
    """What stopped this process, as the CLI says it: its own record of signals
    (``pipeline.core.stops``) tells Ctrl-C from SIGTERM; a run worker has no record."""
    seen = stops.seen()
    if signal.SIGTERM in seen:
        return "stopped (SIGTERM)"
    if signal.SIGINT in seen:
        return "stopped (Ctrl-C)"
    return STOPPED


@contextmanager
def stopped_by_name(context: dg.OpExecutionContext) -> Iterator[None]:
    """A step's body: an interrupt that stops it marks its run as being canceled, with
    the reason, before it goes on up. Dagster then ends the run ``CANCELED`` as for a
    termination asked for in the UI, instead of failing it with "Execution was
    interrupted unexpectedly. No user initiated termination request was found". A run
    already being canceled (the UI's Terminate) keeps its own reason."""
    try:
        yield
    except BaseException as exc:
        if stops.is_interrupt(exc):
            run = context.instance.get_run_by_id(context.run_id)
            if run is not None and run.status not in (dg.DagsterRunStatus.CANCELING,
                                                      *FINISHED):
                context.instance.report_run_canceling(run, message=stop_reason())
        raise
