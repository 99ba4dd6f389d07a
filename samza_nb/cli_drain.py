"""``samza-nb drain``: write a drain notification for a job's current run, and wait for it.

The job is named by ``module:app`` (with its config: a ZooKeeper, Azure or Kafka metadata store
is reached from here as from the job's processes) or by an embedded job's ``--job-home``. A
drain is refused when no processor of the job is live (the notification would stop its next
run at once) and names the run the job runs now, never an ended one.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from samza_nb.cli_args import checked_plan, non_negative_seconds
from samza_nb.errors import ConfigError, DrainError

if TYPE_CHECKING:
    from samza_nb.api import ExecutionPlan
    from samza_nb.coordination.liveness import LiveProcessors
    from samza_nb.metadata import MetadataStore

__all__ = ["add_drain_command"]


def _metadata_store_of(args: argparse.Namespace, plan: ExecutionPlan | None) -> Any:
    """The job's metadata store: ``--job-home`` names an embedded one; the ``plan`` of
    MODULE:APP with its config names whatever the job uses (``metadata.store.factory``: a
    ZooKeeper or Kafka store is reached from here as from the job's processes)."""
    from samza_nb.job import job_home, metadata_store_path
    from samza_nb.job.preparation import metadata_store_name, open_metadata_store
    from samza_nb.metadata import EmbeddedMetadataStore

    if args.job_home:
        path = metadata_store_path(Path(args.job_home))
    elif plan is not None:
        if metadata_store_name(plan.config) != "embedded":
            return open_metadata_store(plan.config, job_home(plan))
        path = metadata_store_path(plan)
    else:
        msg = "name the job: MODULE:APP (with its --config) or --job-home DIR"
        raise ConfigError(msg)
    if not path.is_file():
        msg = f"no metadata store at {path}: has this job run yet?"
        raise DrainError(msg)
    return EmbeddedMetadataStore(path)


def _live(plan: ExecutionPlan | None) -> LiveProcessors | None:
    """The live processors of a ZooKeeper or Azure job (one read of its coordination state);
    None for the embedded coordinator, or without a plan."""
    from samza_nb.coordination.liveness import live_processors

    return None if plan is None else live_processors(plan.config)


def _running_processors(plan: Any, store: Any, live: LiveProcessors | None) -> list[str] | None:
    """Who runs the job now: for the embedded coordinator the job home's lease holder, for
    ZooKeeper or Azure the processors registered live there (``live``, read by the caller);
    None when nothing tells."""
    from samza_nb.coordination.embedded_lease import EmbeddedJobLease
    from samza_nb.job import job_home
    from samza_nb.metadata import EmbeddedMetadataStore

    if live is not None:
        return live.ids
    if isinstance(store, EmbeddedMetadataStore):
        home = store.path.parent
    elif plan is not None:
        home = job_home(plan)
    else:
        return None
    holder = EmbeddedJobLease(home, store).holder()
    return [] if holder is None else [holder]


#: How long ``samza-nb drain`` waits for a job that holds its lease to record its run id.
_RUN_ID_WAIT_S = 15.0


def _current_run_id(plan: ExecutionPlan | None, store: MetadataStore, live: LiveProcessors | None) -> str:
    """The run id of the running job. A job records a new run id a moment after it took its
    lease (embedded) or its processors registered (ZooKeeper, Azure: the run id is the one
    they carry): a drain in between waits for it (bounded) instead of naming the ended run.
    ``live``: the caller's read of the live processors, for the first look."""
    from samza_nb.drain import carried_run_id, read_current_run_id

    started = time.monotonic()
    looks = 1  # embedded: the lease's holder (just asked by the caller) again once a second
    first = True
    while True:
        # None for the embedded coordinator: its lease, not live processors, tells it runs.
        live = live if first else _live(plan)
        first = False
        distributed = live is not None
        if live is not None:
            if not live.ids:
                msg = "no processor of the job is live any more: nothing to drain"
                raise DrainError(msg)
            run_id = carried_run_id(store, live.run_ids)
        else:
            run_id = read_current_run_id(store)
        if run_id is not None:
            return run_id
        if not distributed and time.monotonic() - started >= looks:
            looks += 1
            if _running_processors(plan, store, None) == []:
                msg = "the job's run has ended (drained or finished) and no processor is live: nothing to drain"
                raise DrainError(msg)
        if time.monotonic() - started > _RUN_ID_WAIT_S:
            why = (
                f"processors {', '.join(live.ids)} are live but carry no one run id (a deployment "
                "starting, or one ending beside the next)"
                if live is not None
                else "the job's last run ended (drained or finished) and the next has not recorded its own"
            )
            msg = f"no current run id within {_RUN_ID_WAIT_S:g} s: {why}; pass --run-id"
            raise DrainError(msg)
        time.sleep(0.5 if distributed else 0.1)


def _check_run_id(run_id: str, store: MetadataStore, live: LiveProcessors | None) -> None:
    """Refuse a --run-id that is neither the job's stored run id nor one its live processors
    carry: they would ignore its notification, which would stay in the store."""
    from samza_nb.drain import read_run_id

    known = {read_run_id(store), *(live.run_ids if live is not None else ())} - {None, ""}
    if run_id not in known:
        shown = ", ".join(sorted(str(k) for k in known)) or "none recorded"
        msg = f"run {run_id!r} is not a run of this job (its runs: {shown}); nothing drained"
        raise DrainError(msg)


def _drain(args: argparse.Namespace) -> int:
    from samza_nb.drain import read_drain_notifications, write_drain_notification

    plan = checked_plan(args) if args.app and not args.job_home else None
    store = _metadata_store_of(args, plan)
    try:
        live = _live(plan)  # one read of the coordination state for the checks below
        if _running_processors(plan, store, live) == []:
            # A notification now would stop the job's next run at once (a restart after a
            # stop or a crash keeps the run id).
            msg = "the job is not running (no processor of it is live), so there is nothing to drain"
            raise DrainError(msg)
        if args.run_id:
            _check_run_id(args.run_id, store, live)
        run_id = args.run_id or _current_run_id(plan, store, live)
        notification_uuid = write_drain_notification(store, run_id)
        print(f"drain requested for run {run_id} (notification {notification_uuid})")
        if not args.wait:
            return 0
        # The job removes its run's notifications once its tasks have drained; with several
        # processor processes, the last of them may still be stopping: wait for it too.
        deadline = time.monotonic() + args.timeout
        while any(n.uuid == notification_uuid for n in read_drain_notifications(store)) or (
            _running_processors(plan, store, _live(plan)) or []
        ):
            if time.monotonic() > deadline:
                msg = (
                    f"run {run_id} has not finished draining after {args.timeout:.0f} s; is it "
                    "running, with job.drain-monitor.enabled on (a job run without its drain "
                    "monitor never sees the notification)?"
                )
                raise DrainError(msg)
            time.sleep(0.5)
        print(f"run {run_id} drained and stopped")
        return 0
    finally:
        store.close()


def add_drain_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``samza-nb drain`` against a job's metadata store."""
    parser = subparsers.add_parser(
        "drain",
        help="stop a running job gracefully: finish what it read, flush windows, then stop",
        description=(
            "Write a drain notification (namespace samza-drain-v1) for the job's run id into its "
            "metadata store; every processor's DrainMonitor picks it up (Drain SEP)."
        ),
    )
    parser.add_argument("app", nargs="?", metavar="MODULE:APP", help="the job's application")
    parser.add_argument("--config", metavar="FILE", help="the .properties file the job runs with")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="a config entry over the file")
    parser.add_argument("--job-home", metavar="DIR", help="the job's folder (holds metadata.sqlite3)")
    parser.add_argument("--run-id", help="the run to drain (default: the job's current run id)")
    parser.add_argument("--wait", action="store_true", help="wait until the job has drained and stopped")
    parser.add_argument("--timeout", type=non_negative_seconds, default=300.0, help="seconds --wait may take")
    parser.set_defaults(handler=_drain)
