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
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from samza_nb import services
from samza_nb.cli_args import (
    add_app_arguments,
    app_config,
    app_of,
    check_names,
    checked_plan,
    non_negative_seconds,
    positive_int,
)
from samza_nb.cli_drain import add_drain_command
from samza_nb.cli_hints import recovery_hint
from samza_nb.errors import SamzaNbError

if TYPE_CHECKING:
    from samza_nb.api import ExecutionPlan
    from samza_nb.job import Job

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
        # A cluster's address is its master then its hosts ("spark://…; hosts h1 … up, …").
        address, _, hosts = info.address.partition("; hosts ")
        line = f"{info.name:<10} {info.state:<11} {address}"
        if info.seconds is not None:
            line += f"  ({info.seconds:.1f} s)"
        print(line.rstrip())
        for host in hosts.split(", ") if hosts else ():
            print(f"{'':<10} host {host}")
        for log_file in info.log_files if info.state == "started" or info.is_failed else ():
            print(f"{'':<10} log {log_file}")


def _services(args: argparse.Namespace) -> int:
    names = args.names or None
    if args.action == "install":
        for name in services.install(names):
            print(f"{name:<10} ready")
        return 0
    if args.action == "up":
        _print_infos(services.up(names, timeout=args.timeout, hosts=args.hosts))
        print(f"env file   {services.env_file_path()}")
        return 0
    if args.action == "down":
        _print_infos(services.down(names))
        return 0
    infos = services.status(names)
    _print_infos(infos)
    env_file = services.env_file_path()
    print(f"env file   {env_file}" if env_file.exists() else "env file   none (nothing runs)")
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
            "and two workers) and cluster (simulated hosts in network namespaces, root only) "
            "start only when named. See docs/services.md."
        ),
    )
    parser.add_argument("action", choices=["install", "up", "down", "status"])
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help="zookeeper, kafka, azurite, spark, cluster"
    )
    parser.add_argument(
        "--hosts",
        type=positive_int,
        default=None,
        help="simulated hosts of `up cluster` (default 3)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds each service may take to start"
    )
    parser.set_defaults(handler=_services)


# -- applications: run, plan, drain ---------------------------------------------------------
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
        f"{rate:>10,.0f} msg/s  {job.state}"
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


def _without_rate(line: str) -> str:
    """A progress line without its rate, which changes with the time it was made."""
    return re.sub(r"[\d,]+ msg/s", "", line)


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


#: What py4j logs (with a traceback, on the root logger or its own) when the JVM a call was
#: waiting on went away, as it does when a stop signal reached the whole process group.
_PY4J_CALL_ENDED = (
    "Exception while sending command",
    "Exception occurred while shutting down connection",
    "KeyboardInterrupt while sending command",
)


def _py4j_call_kept(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(_PY4J_CALL_ENDED)


def _quiet_py4j_after_stop_signal() -> None:
    """After a stop signal, py4j's tracebacks for the JVM calls it ended are not news: the
    run reports the stop in one line."""
    for name in ("", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).addFilter(_py4j_call_kept)


def _check_job_home(plan: ExecutionPlan) -> None:
    """The job home (checkpoints, stores, the job's lease) exists or can be made, owner only."""
    from samza_nb.job.home import make_job_home

    make_job_home(plan)


def _check_run_options(args: argparse.Namespace, plan: ExecutionPlan) -> None:
    """The plan's names (cli_args.check_names), --processors and --grouper checked as run()
    would, before anything prints or starts."""
    from samza_nb.grouping.registry import check_grouper_name
    from samza_nb.job.preparation import initial_processors
    from samza_nb.job.run_state import check_until

    check_names(plan)
    check_until(_until(args.until))
    _check_job_home(plan)
    if (plan.config.get_str("job.coordinator.factory") or "embedded") == "embedded":
        initial_processors(plan.config, args.processors)
    if args.grouper is not None:
        check_grouper_name(args.grouper)


def _run(args: argparse.Namespace) -> int:
    from samza_nb.job import run
    from samza_nb.runtime.executors.interrupts import plain_interrupts

    app = app_of(args)
    config = app_config(args)
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
            _quiet_py4j_after_stop_signal()
            stopped_by.append(signal.SIGTERM)
            job.stop()

        signal.signal(signal.SIGTERM, terminated)
    started = time.perf_counter()
    last_epoch = -1
    last_line = ""
    hosted: dict[str, list[str]] = {}
    with plain_interrupts():  # Ctrl-C: a KeyboardInterrupt here, not PySpark's handler
        try:
            while not job.done:
                time.sleep(args.progress_interval)
                hosted = _print_task_moves(job, hosted)
                if job.epoch != last_epoch:
                    last_epoch = job.epoch
                    last_line = _progress_line(job, started)
                    print(last_line, flush=True)
        except KeyboardInterrupt:
            _quiet_py4j_after_stop_signal()
            stopped_by.append(signal.SIGINT)
            print("stopping after the current epoch ...", file=sys.stderr)
            job.stop()
        try:
            status = job.wait()
        except Exception as error:
            if not stopped_by or isinstance(error, SamzaNbError):
                raise
            # The signal reached Spark too (sent to the whole process group, as a terminal or
            # a service manager does): its JVM stopped under the epoch in flight, which
            # therefore did not commit. That is the stop asked for, not a failure to trace.
            name = signal.Signals(stopped_by[0]).name
            print(
                f"samza-nb: stopped by {name}; Spark ended with it ({type(error).__name__}), so the "
                f"epoch in flight did not commit and the next run repeats it",
                file=sys.stderr,
            )
            return 128 + int(stopped_by[0])
    final = _progress_line(job, started)
    if _without_rate(final) != _without_rate(last_line):  # the loop may have printed it already
        print(final)
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
    add_app_arguments(parser)
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
        "--wait-timeout", type=non_negative_seconds, default=None, help="seconds --wait may take"
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
    plan = checked_plan(args)
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
    add_app_arguments(parser)
    parser.add_argument("--format", choices=["text", "json", "svg"], default="text")
    parser.set_defaults(handler=_plan)


def _reset(args: argparse.Namespace) -> int:
    from samza_nb.job.reset import reset_job

    removed = reset_job(checked_plan(args), dry_run=not args.yes)
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
    add_app_arguments(parser)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``samza-nb``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except SamzaNbError as error:
        print(f"samza-nb: error: {error}{recovery_hint(error, getattr(args, 'app', None))}", file=sys.stderr)
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
