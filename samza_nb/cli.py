"""The ``samza-nb`` command.

Each subcommand is a small function that adds its parser to the shared subparsers and sets
``handler`` (``args -> exit code``); it is listed once in :data:`COMMANDS`. Expected failures
(:class:`~samza_nb.errors.SamzaNbError`) print one line (plus the service log's last lines)
and exit 1; bugs keep their traceback.

    samza-nb run module:app [--config file.properties] [--set k=v ...] [--until ...]
    samza-nb plan module:app [--config file.properties] [--format text|json|svg]
    samza-nb drain module:app [--config file.properties] | --job-home DIR  [--wait]
    samza-nb services install|up [NAMES...]|down [NAMES...]|status [NAMES...]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from samza_nb import services
from samza_nb.config import Config, json_config, properties_config
from samza_nb.errors import ConfigError, DrainError, SamzaNbError
from samza_nb.secrecy import mask_value

if TYPE_CHECKING:
    from samza_nb.api import ExecutionPlan, StreamApplication
    from samza_nb.metadata import MetadataStore
    from samza_nb.runtime import Job

__all__ = [
    "COMMANDS",
    "add_drain_command",
    "add_plan_command",
    "add_run_command",
    "add_services_command",
    "build_parser",
    "main",
]


def _print_infos(infos: Sequence[services.ServiceInfo]) -> None:
    for info in infos:
        # Addresses only: a ServiceInfo's env may carry an account key and is never printed.
        line = f"{info.name:<10} {info.state:<11} {info.address}"
        if info.seconds is not None:
            line += f"  ({info.seconds:.1f} s)"
        print(line.rstrip())
        for log_file in info.log_files if info.state == "started" or info.is_failed else ():
            print(f"{'':<10} log {log_file}")


def _services(args: argparse.Namespace) -> int:
    names = args.names or None
    if args.action == "install":
        for name in services.install(names):
            print(f"{name:<10} ready")
        return 0
    if args.action == "up":
        _print_infos(services.up(names, timeout=args.timeout))
        print(f"env file   {services.env_file_path()}")
        return 0
    if args.action == "down":
        _print_infos(services.down(names))
        return 0
    infos = services.status(names)
    _print_infos(infos)
    print(f"env file   {services.env_file_path()}")
    return 1 if any(info.is_failed for info in infos) else 0


def add_services_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``samza-nb services install|up|down|status [NAMES...]``."""
    parser = subparsers.add_parser(
        "services",
        help="start, stop and report the engine-room services (ZooKeeper, Azurite, Kafka, Spark)",
        description=(
            "Run the real services on 127.0.0.1 and free ports; their addresses go to one env "
            "file ($SAMZA_NB_SERVICES_ENV, default $SAMZA_NB_SERVICES_DIR/services.env). "
            "`up` without names starts zookeeper, kafka and azurite; spark (a standalone master "
            "and two workers) starts only when named. See docs/services.md."
        ),
    )
    parser.add_argument("action", choices=["install", "up", "down", "status"])
    parser.add_argument("names", nargs="*", metavar="NAME", help="zookeeper, kafka, azurite, spark")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds each service may take to start"
    )
    parser.set_defaults(handler=_services)


# -- applications: run, plan, drain ---------------------------------------------------------
def _config(args: argparse.Namespace) -> Config:
    """``--config file.properties`` with ``--set key=value`` overrides on top."""
    entries: dict[str, str] = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            msg = f"--config {args.config}: no such file"
            raise ConfigError(msg)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            msg = f"{path}: not UTF-8 text (byte {error.start}); save the config file as UTF-8"
            raise ConfigError(msg) from None
        if path.suffix == ".json":  # what start_processor writes: any value, newlines included
            entries.update(json_config(text, source=str(path)))
        else:
            entries.update(properties_config(text, source=str(path)))
    for assignment in args.set or ():
        key, equals, value = assignment.partition("=")
        if not equals or not key.strip():
            msg = f"--set {assignment!r} must be written key=value"
            raise ConfigError(msg)
        entries[key.strip()] = value.strip()
        if mask_value(key.strip(), value.strip()) != value.strip():
            print(
                f"samza-nb: warning: {key.strip()} holds a secret, on a command line any user of "
                "this machine can read (ps): keep it in the environment or a --config file only "
                "you can read",
                file=sys.stderr,
            )
    return Config(entries)


def _application(args: argparse.Namespace) -> StreamApplication:
    from samza_nb.api.loading import load_application

    # The application's module is found relative to where the command runs, like `python -m`.
    if "" not in sys.path:
        sys.path.insert(0, "")
    return load_application(args.app)


def _add_app_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("app", metavar="MODULE:APP", help="e.g. my_jobs.pages:app (an app or a function building one)")
    parser.add_argument("--config", metavar="FILE", help="a Samza-style .properties file (or a .json object of settings)")
    parser.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a config entry over the file (repeatable)"
    )


def _until(text: str) -> str | int:
    if text.isdigit():
        return int(text)
    return text


def _progress_line(job: Job, started: float) -> str:
    metrics = job.metrics()
    streams = metrics["streams"]
    read = sum(values.get("in", 0) for sid, values in streams.items() if job.plan.streams[sid].kind == "input")
    written = sum(values.get("out", 0) for sid, values in streams.items() if job.plan.streams[sid].kind == "output")
    lag = sum(values.get("lag", 0) for values in streams.values())
    seconds = time.perf_counter() - started
    rate = read / seconds if seconds > 0 else 0.0
    line = (
        f"epoch {job.epoch:>4}  read {read:>10,}  written {written:>10,}  lag {lag:>8,}  "
        f"{rate:>10,.0f} msg/s  {job.status().state}"
    )
    standbys = metrics.get("standbys", {})
    if standbys:
        behind = sum(s["lag_records"] for s in standbys.values())
        epochs = max(s["lag_epochs"] for s in standbys.values())
        line += f"  standbys {len(standbys)} behind {behind:,} records / {epochs} epochs"
    unplaced = metrics.get("unassigned_standbys", 0)
    if unplaced:  # e.g. a failover left fewer locations than the replication factor needs
        line += f"  standbys unassigned {unplaced} (too few locations)"
    return line


def _print_task_moves(job: Job, before: dict[str, list[str]]) -> dict[str, list[str]]:
    """Print which tasks this process's processors run whenever a new job model changes them
    (a peer joined or died, a rebalance); returns what they run now."""
    mine = job.processors
    now = {pid: sorted(container.tasks) for pid, container in job.job_model.containers.items() if pid in mine}
    for pid, tasks in sorted(now.items()):
        if before.get(pid) != tasks:
            gained = sorted(set(tasks) - set(before.get(pid, [])))
            lost = sorted(set(before.get(pid, [])) - set(tasks))
            change = "" if not before else f" (took {gained or 'none'}, gave up {lost or 'none'})"
            print(f"processor {pid} runs {len(tasks)} tasks: {', '.join(tasks) or 'none'}{change}", flush=True)
    return now


def _check_run_options(args: argparse.Namespace, plan: ExecutionPlan) -> None:
    """--processors, --grouper and the coordinator checked as run() would, before anything
    prints or starts."""
    from samza_nb.coordination.coordinator import coordinator_factory
    from samza_nb.grouping.registry import grouper_names
    from samza_nb.runtime.job_setup import initial_processors

    coordinator_factory(plan.config.get_str("job.coordinator.factory") or "embedded")
    if (plan.config.get_str("job.coordinator.factory") or "embedded") == "embedded":
        initial_processors(plan.config, args.processors)
    if args.grouper is not None and args.grouper not in grouper_names():
        from samza_nb.grouping.registry import get_grouper

        get_grouper(args.grouper)  # raises, naming the known groupers


def _run(args: argparse.Namespace) -> int:
    from samza_nb.runtime import run
    from samza_nb.runtime.interrupts import plain_interrupts

    app = _application(args)
    config = _config(args)
    plan = app.plan(config)
    _check_run_options(args, plan)  # before the plan prints: the error is the last line
    print(repr(plan))
    job = run(
        app,
        config,
        processors=args.processors,
        grouper=args.grouper,
        until=_until(args.until),
        background=True,
        executor=args.executor,
        lease_wait=args.wait,
        lease_timeout=args.wait_timeout,
    )
    store = job.metadata if job.lease is None else job.home  # a service's store, or the job home's
    print(f"run id {job.run_id}; metadata store {store}")
    stopped_by: list[int] = []  # the signal that stopped the job: its exit code says so
    if threading.current_thread() is threading.main_thread():
        # SIGTERM stops the job the same way Ctrl-C does: after the current epoch commits.
        def terminated(*_: Any) -> None:
            stopped_by.append(signal.SIGTERM)
            job.stop()

        signal.signal(signal.SIGTERM, terminated)
    started = time.perf_counter()
    last_epoch = -1
    hosted: dict[str, list[str]] = {}
    with plain_interrupts():  # Ctrl-C: a KeyboardInterrupt here, not PySpark's handler
        try:
            while not job.status().done:
                time.sleep(args.progress_interval)
                hosted = _print_task_moves(job, hosted)
                if job.epoch != last_epoch:
                    last_epoch = job.epoch
                    print(_progress_line(job, started), flush=True)
        except KeyboardInterrupt:
            stopped_by.append(signal.SIGINT)
            print("stopping after the current epoch ...", file=sys.stderr)
            job.stop()
        status = job.wait()
    print(_progress_line(job, started))
    metrics = job.metrics()
    for stream_id, info in sorted(job.plan.streams.items()):
        if info.kind == "output":
            print(f"output {stream_id}: {metrics['streams'][stream_id].get('out', 0):,} messages")
    tasks = metrics["tasks"].values()
    restores = sum(task["restores"] for task in tasks)
    restored = sum(task["restored_records"] for task in tasks)
    restore_seconds = sum(task["restore_seconds"] for task in tasks)
    print(f"store restores from changelogs: {restores} ({restored:,} records) in {restore_seconds:.2f} s")
    if metrics["workers_lost"]["count"]:
        lost = metrics["workers_lost"]
        print(f"Spark Python workers lost mid-epoch: {lost['count']} (job.spark.epoch.retries); last: {lost['last']}")
    print(f"job {status.state} after {status.epoch} epochs")
    # As a shell reports a command a signal ended: 130 after Ctrl-C, 143 after SIGTERM.
    return 128 + int(stopped_by[0]) if stopped_by else 0


def add_run_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``samza-nb run module:app [--config file.properties]``."""
    parser = subparsers.add_parser(
        "run",
        help="run an application on Spark until its inputs end (or --until)",
        description=(
            "Plan and run a StreamApplication on Spark (spark.master from the config, else local). "
            "Prints a progress line each second in which an epoch committed; Ctrl-C or SIGTERM "
            "stops after the current epoch commits (exit code 130 or 143). Drain it from another "
            "shell with `samza-nb drain`."
        ),
    )
    _add_app_arguments(parser)
    parser.add_argument(
        "--processors", type=int, default=None, help="processors (default job.container.count, 1)"
    )
    parser.add_argument(
        "--grouper", default=None, help="task grouper (default task.name.grouper.factory)"
    )
    parser.add_argument(
        "--wait", action="store_true", help="queue behind a run of the same job instead of failing"
    )
    parser.add_argument(
        "--wait-timeout", type=_non_negative_seconds, default=None, help="seconds --wait may take"
    )
    parser.add_argument(
        "--executor", choices=["spark", "local"], default="spark",
        help="where task epochs run: spark (default) or local (in this process, for debugging)",
    )
    parser.add_argument(
        "--until",
        default="end-of-stream",
        help="end-of-stream (default), caught-up, forever or a number of epochs",
    )
    parser.add_argument("--progress-interval", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.set_defaults(handler=_run)


def _plan(args: argparse.Namespace) -> int:
    plan = _checked_plan(args)
    if args.format == "json":
        print(plan.to_json())
    elif args.format == "svg":
        print(plan._repr_svg_())
    else:
        print(repr(plan))
    return 0


def add_plan_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``samza-nb plan module:app``."""
    parser = subparsers.add_parser(
        "plan",
        help="print an application's stages, streams and operators without running it",
        description="Plan a StreamApplication: stages split at every partition_by/broadcast.",
    )
    _add_app_arguments(parser)
    parser.add_argument("--format", choices=["text", "json", "svg"], default="text")
    parser.set_defaults(handler=_plan)


def _checked_plan(args: argparse.Namespace) -> ExecutionPlan:
    """The plan of APP with its config; a coordinator name that is not registered is refused
    here, before a command looks in the wrong place (reset, drain) for a job coordinated
    elsewhere."""
    from samza_nb.coordination.coordinator import coordinator_factory

    plan: ExecutionPlan = _application(args).plan(_config(args))
    coordinator_factory(plan.config.get_str("job.coordinator.factory") or "embedded")
    return plan


def _metadata_store_of(args: argparse.Namespace) -> Any:
    """The job's metadata store: ``--job-home`` names an embedded one; MODULE:APP with its
    config names whatever the job uses (``metadata.store.factory``: a ZooKeeper or Kafka store
    is reached from here as from the job's processes)."""
    from samza_nb.metadata import EmbeddedMetadataStore
    from samza_nb.runtime import job_home, metadata_store_path
    from samza_nb.runtime.job_setup import metadata_store_name, open_metadata_store

    if args.job_home:
        path = metadata_store_path(Path(args.job_home))
    elif args.app:
        plan = _checked_plan(args)
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


def _running_processors(plan: Any, store: Any) -> list[str] | None:
    """Who runs the job now: for the embedded coordinator the job home's lease holder, for
    ZooKeeper or Azure the processors registered live there; None when nothing tells."""
    from samza_nb.coordination.embedded_lease import EmbeddedJobLease
    from samza_nb.coordination.liveness import live_processors
    from samza_nb.metadata import EmbeddedMetadataStore
    from samza_nb.runtime import job_home

    live = None if plan is None else live_processors(plan.config)
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


def _current_run_id(plan: ExecutionPlan | None, store: MetadataStore) -> str:
    """The run id of the running job. A job records a new run id a moment after it took its
    lease (embedded) or its processors registered (ZooKeeper, Azure: the run id is the one
    they carry): a drain in between waits for it (bounded) instead of naming the ended run."""
    from samza_nb.coordination.liveness import live_processors
    from samza_nb.drain import carried_run_id, read_current_run_id

    started = time.monotonic()
    looks = 1  # embedded: the lease's holder (just asked by the caller) again once a second
    while True:
        # None for the embedded coordinator: its lease, not live processors, tells it runs.
        live = live_processors(plan.config) if plan is not None else None
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
            if _running_processors(plan, store) == []:
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


def _check_run_id(run_id: str, plan: ExecutionPlan | None, store: MetadataStore) -> None:
    """Refuse a --run-id that is neither the job's stored run id nor one its live processors
    carry: they would ignore its notification, which would stay in the store."""
    from samza_nb.coordination.liveness import live_processors
    from samza_nb.drain import read_run_id

    live = live_processors(plan.config) if plan is not None else None
    known = {read_run_id(store), *(live.run_ids if live is not None else ())} - {None, ""}
    if run_id not in known:
        shown = ", ".join(sorted(str(k) for k in known)) or "none recorded"
        msg = f"run {run_id!r} is not a run of this job (its runs: {shown}); nothing drained"
        raise DrainError(msg)


def _drain(args: argparse.Namespace) -> int:
    from samza_nb.drain import read_drain_notifications, write_drain_notification

    store = _metadata_store_of(args)
    plan = _checked_plan(args) if args.app and not args.job_home else None
    try:
        if _running_processors(plan, store) == []:
            # A notification now would stop the job's next run at once (a restart after a
            # stop or a crash keeps the run id).
            msg = "the job is not running (no processor of it is live), so there is nothing to drain"
            raise DrainError(msg)
        if args.run_id:
            _check_run_id(args.run_id, plan, store)
        run_id = args.run_id or _current_run_id(plan, store)
        notification_uuid = write_drain_notification(store, run_id)
        print(f"drain requested for run {run_id} (notification {notification_uuid})")
        if not args.wait:
            return 0
        # The job removes its run's notifications once its tasks have drained; with several
        # processor processes, the last of them may still be stopping: wait for it too.
        deadline = time.monotonic() + args.timeout
        while any(n.uuid == notification_uuid for n in read_drain_notifications(store)) or (
            _running_processors(plan, store) or []
        ):
            if time.monotonic() > deadline:
                msg = f"run {run_id} has not finished draining after {args.timeout:.0f} s; is it running?"
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
    parser.add_argument("--timeout", type=_non_negative_seconds, default=300.0, help="seconds --wait may take")
    parser.set_defaults(handler=_drain)


def _reset(args: argparse.Namespace) -> int:
    from samza_nb.runtime.reset import reset_job

    removed = reset_job(_checked_plan(args), dry_run=not args.yes)
    for line in removed:
        print(("deleted " if args.yes else "would delete ") + line)
    if not removed:
        print("nothing to reset: the job has kept nothing (has it run?)")
    elif not args.yes:
        print("nothing deleted: pass --yes to reset the job")
    return 0


def add_reset_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``samza-nb reset module:app --yes``."""
    parser = subparsers.add_parser(
        "reset",
        help="start a job over: delete its job home, intermediate streams and changelogs",
        description=(
            "Delete everything a job keeps between runs (its job home with checkpoints and "
            "stores, its intermediate streams and store changelogs, and on ZooKeeper or Azure "
            "its records in that metadata store), so its next run reads its inputs from the "
            "start. Refused while the job runs (on ZooKeeper or Azure: while any of its "
            "processors is live). Without --yes it only lists."
        ),
    )
    _add_app_arguments(parser)
    parser.add_argument("--yes", action="store_true", help="really delete")
    parser.set_defaults(handler=_reset)


#: Every subcommand: a function adding its parser to the shared subparsers.
COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_run_command,
    add_plan_command,
    add_drain_command,
    add_reset_command,
    add_services_command,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="samza-nb", description="Samza-style stream pipelines on Spark, from notebooks."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def _non_negative_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        msg = f"expected a number of seconds >= 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``samza-nb``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except SamzaNbError as error:
        print(f"samza-nb: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `samza-nb plan ... | head`: the reader left; no traceback. Python would report the
        # pipe again when it flushes stdout at exit, so stdout goes to /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
