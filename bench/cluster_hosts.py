"""The quickstart on Kafka across 1, 2 and 3 simulated hosts, and the seconds a host loss costs.

On the simulated cluster (``samza-nb services up cluster``, docs/cluster.md: hosts h1..h3, each a
network namespace with one one-core Spark worker under one master, the cluster's own ZooKeeper
and Kafka broker), the quickstart job (samza_nb/examples/page_views.py, 4 partitions on Kafka,
its 10 s windows) reads ``--events`` page views with its driver on h1 and its task epochs on the
executors of N hosts, for N = 1, 2, 3 in the same run:

  throughput  N hosts' executors: ``spark.cores.max=N`` with one core per worker, so the master
              gives the job one executor on each of N hosts (the bench checks which, and fails
              if it is not N). Each N is a driver process of its own (a Spark application's
              cores are fixed when it starts), warmed by an untimed run on a small topic; then
              timed from ``run()`` until the job has caught up (every input read, no lag on any
              stream); drained, and the counts checked against plain Python. Printed: events/s
              per N and scaling efficiency, throughput_N / (N x throughput_1).
  failover    with 3 hosts, in the 3-host driver after its timed run: once a third of a fresh
              input is read, the bench SIGKILLs a host that holds tasks and is not the driver's
              (``SimCluster.kill``, the highest-numbered such host). From the kill: seconds until
              every task of the lost host processed messages again on another host (its stores
              restored there from the changelog), and until the job caught up; the run's total
              against the same events without a loss. Drained and checked as above.

Each timed run's topic is fresh; ``task.max.epoch.messages`` is small so that a run is many
epochs (the kill lands mid-run). The hosts share this machine's cores: efficiency here measures
what the runtime gives up as hosts are added on a fixed CPU, not a real cluster's speed-up.
Every wait is bounded (``--timeout`` per answer, ``--budget`` in all). Needs root, as the
cluster does; without it the bench says so and exits. Uses the running cluster (and brings a
killed host back at its end), else starts one of 3 hosts and removes it at its end.

    sudo .venv/bin/samza-nb services up cluster --hosts 3      # optional: else the bench starts it
    sudo .venv/bin/python bench/cluster_hosts.py --events 30000
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scratch import scratch_dir  # noqa: E402

#: A driver's answers on stdout start with this (Spark and logging may print there too).
_ANSWER = "hosts-bench-answer "
PARTITIONS = 4
WARM_UP_EVENTS = 2_000
#: The fraction of the input read when the failover run kills a host.
KILL_AT = 1 / 3
#: Seconds between two looks at a running job's metrics.
POLL_S = 0.1
EXECUTOR_WAIT_S = 120.0
HOST_COUNTS = (1, 2, 3)


# -- the driver: one process per host count, on h1 --------------------------------------------


def _job_config(prefix: str, cores: int, epoch_messages: int) -> dict[str, str]:
    return {
        # Below the host's private disk: each executor host keeps its tasks' stores on its own.
        "job.home": str(Path(os.environ["SAMZA_NB_HOST_ROOT"]) / "jobs" / prefix),
        "task.max.epoch.messages": str(epoch_messages),
        "job.drain-monitor.poll.interval.ms": "100",
        "spark.master": os.environ["SAMZA_NB_SPARK_MASTER"],
        # One core per worker: N cores are one executor on each of N hosts.
        "spark.cores.max": str(cores),
        "spark.executor.memory": "512m",
        "spark.locality.wait": "10s",  # as docs/cluster.md: a task waits this long for its host
    }


class _Served:
    """The driver's side: commands read on a thread (bounded waits), answers on stdout."""

    def __init__(self, cores: int, events: int, epoch_messages: int, timeout: float) -> None:
        from samza_nb.examples.page_views import expected_counts, generate_page_views
        from samza_nb.services import read_service_env
        from samza_nb.systems import KafkaSystem

        self.cores, self.epoch_messages, self.timeout = cores, epoch_messages, timeout
        self.views = generate_page_views(events)
        self.expected = expected_counts(self.views)
        self.bootstrap = read_service_env()["SAMZA_NB_KAFKA_BOOTSTRAP"]
        self.system = KafkaSystem("kafka", bootstrap_servers=self.bootstrap)
        self.commands: queue.Queue[str | None] = queue.Queue()
        self.runs = 0
        threading.Thread(target=self._read_commands, daemon=True).start()

    def _read_commands(self) -> None:
        for line in sys.stdin:
            self.commands.put(line.strip())
        self.commands.put(None)

    @staticmethod
    def answer(**data: Any) -> None:
        print(_ANSWER + json.dumps(data), flush=True)

    def start(self) -> None:
        """The session on the cluster's master with N cores, once N executor hosts are up."""
        from samza_nb.examples.page_views import expected_counts
        from samza_nb.runtime.executors.cluster_epochs import executor_hosts
        from samza_nb.runtime.executors.spark import get_spark

        config = _job_config("session", self.cores, self.epoch_messages)
        context = get_spark(config, app_name=f"hosts-bench-{self.cores}").sparkContext
        deadline = time.monotonic() + EXECUTOR_WAIT_S
        while len(executor_hosts(context)) < self.cores and time.monotonic() < deadline:
            time.sleep(0.2)
        hosts = executor_hosts(context)
        if len(hosts) != self.cores:
            msg = f"{self.cores} executor hosts wanted, {hosts} registered in {EXECUTOR_WAIT_S:g} s"
            raise SystemExit(msg)
        self.context = context
        views = self.views[:WARM_UP_EVENTS]
        self._run(views, expected_counts(views))  # untimed: Python workers and imports start
        self.answer(ready=hosts)

    def _prefix(self) -> str:
        self.runs += 1
        return f"hb{os.getpid()}n{self.cores}r{self.runs}"

    def _job(self, views: list[dict[str, Any]]) -> tuple[Any, str, str]:
        from samza_nb.examples.page_views import build_app
        from samza_nb.job import run

        prefix = self._prefix()
        topic = f"{prefix}-page-views"
        self.system.create_stream(topic, PARTITIONS)
        self.system.write(topic, views)
        app = build_app(self.system, name=f"{prefix}-pages", stream_prefix=f"{prefix}-")
        config = _job_config(prefix, self.cores, self.epoch_messages)
        return run(app, config, until="forever", background=True, executor="spark"), prefix, topic

    def _progress(self, job: Any, topic: str, events: int, started: float) -> tuple[dict[str, Any], bool]:
        """The job's metrics now, and whether it has caught up; fails past the timeout."""
        metrics = job.metrics()
        streams = metrics["streams"]
        if streams[topic].get("in", 0) >= events and all(e.get("lag", 0) == 0 for e in streams.values()):
            return metrics, True
        if time.monotonic() - started > self.timeout:
            msg = f"not caught up in {self.timeout:g} s: {streams}; {job.status()}"
            raise SystemExit(msg)
        return metrics, False

    def _finish(self, job: Any, prefix: str, expected: dict[str, int]) -> bool:
        """Drain, compare the counts with plain Python's, delete the run's topics."""
        from confluent_kafka.admin import AdminClient

        drained = job.drain(wait=True, timeout=self.timeout)
        frame = job.collect(f"{prefix}-page-counts")
        totals: dict[str, int] = {}
        for key, value in zip(frame["key"], frame["value"], strict=True):
            totals[key] = totals.get(key, 0) + value
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        mine = [name for name in admin.list_topics(timeout=10).topics if name.startswith(prefix)]
        for future in admin.delete_topics(mine).values() if mine else []:
            with contextlib.suppress(Exception):  # a leftover topic costs nothing here
                future.result(timeout=30)
        return bool(drained.state == "drained" and totals == expected)

    def _run(self, views: list[dict[str, Any]], expected: dict[str, int]) -> tuple[float, bool]:
        started = time.monotonic()
        job, prefix, topic = self._job(views)
        while not self._progress(job, topic, len(views), started)[1]:
            time.sleep(POLL_S)
        seconds = time.monotonic() - started
        return seconds, self._finish(job, prefix, expected)

    def timed(self) -> None:
        seconds, exact = self._run(self.views, self.expected)
        self.answer(seconds=seconds, exact=exact)

    def failover(self) -> None:
        """The timed run with a host killed (by the bench) a third of the way through."""
        from samza_nb.runtime.executors.cluster_epochs import this_host

        events = len(self.views)
        started = time.monotonic()
        job, prefix, topic = self._job(self.views)
        metrics, _ = self._progress(job, topic, events, started)
        while metrics["streams"][topic].get("in", 0) < events * KILL_AT:
            time.sleep(POLL_S)
            metrics, _ = self._progress(job, topic, events, started)
        hosts = _task_hosts(job)
        mine = this_host()
        victim = max((h for h in set(hosts.values()) if h != mine), key=_host_order)
        lost = sorted(task for task, host in hosts.items() if host == victim)
        # Samples from here on, the first before the kill; the bench sends the kill's
        # wall-clock time once the master saw the host go.
        samples = [(time.time(), _messages_in(metrics), hosts)]
        self.answer(kill=victim, tasks=lost)
        caught_up = False
        while not caught_up:
            metrics, caught_up = self._progress(job, topic, events, started)
            samples.append((time.time(), _messages_in(metrics), _task_hosts(job)))
            if not caught_up:
                time.sleep(POLL_S)
        seconds = time.monotonic() - started
        killed_at = self._killed_at()
        before = {task: max((s[1][task] for s in samples if s[0] <= killed_at), default=0) for task in lost}
        moved: dict[str, float | None] = {}
        for task in lost:  # the first look after the kill with the task elsewhere and further on
            moved[task] = next(
                (t - killed_at for t, counts, where in samples
                 if t > killed_at and where.get(task) != victim and counts[task] > before[task]),
                None,
            )
        restores = {task: job.metrics()["tasks"][task]["restored_records"] for task in lost}
        exact = self._finish(job, prefix, self.expected)
        self.answer(
            seconds=seconds, exact=exact, victim=victim, moved=moved, restored_records=restores,
            caught_up_after_kill=samples[-1][0] - killed_at,
            look_s=statistics.median(b[0] - a[0] for a, b in itertools.pairwise(samples)),
        )

    def _killed_at(self) -> float:
        line = self.commands.get(timeout=self.timeout)
        if not line or not line.startswith("killed "):
            msg = f"expected the kill's time from the bench, got {line!r}"
            raise SystemExit(msg)
        return float(line.split()[1])


def _host_order(address: str) -> tuple[int, ...]:
    return tuple(int(part) for part in address.split(".") if part.isdigit())


def _messages_in(metrics: dict[str, Any]) -> dict[str, int]:
    return {task: int(entry["messages_in"]) for task, entry in metrics["tasks"].items()}


def _task_hosts(job: Any) -> dict[str, str]:
    """Task name -> the host that runs its epochs (its stores are there)."""
    placed = job._executor.cluster.task_hosts()
    return {key.rpartition("/")[2]: host for key, host in placed.items()}


def serve(cores: int, events: int, epoch_messages: int, timeout: float) -> None:
    served = _Served(cores, events, epoch_messages, timeout)
    served.start()
    try:
        while (command := served.commands.get(timeout=timeout)) in ("run", "failover"):
            if command == "run":
                served.timed()
            else:
                served.failover()
    finally:
        served.context.stop()  # the master frees this application's cores for the next driver


# -- the bench: drivers on h1, the kill from here ---------------------------------------------


class Driver:
    """A ``--serve`` process on host h1 for one host count; its answers read on a thread."""

    def __init__(self, cluster: Any, cores: int, args: argparse.Namespace, logs: Path) -> None:
        self.cores = cores
        self.log = logs / f"driver-{cores}-hosts.log"
        argv = [sys.executable, __file__, "--serve", str(cores), "--events", str(args.events),
                "--epoch-messages", str(args.epoch_messages), "--timeout", str(args.timeout)]
        host = cluster.host("h1")
        with self.log.open("w") as stderr:
            self.process = subprocess.Popen(
                cluster.command(host, argv), env={**os.environ, **cluster.host_environment(host)},
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                start_new_session=True,  # its Spark JVM is in its group: stopped with it
            )
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(_ANSWER):
                self._answers.put(json.loads(line[len(_ANSWER):]))
        self._answers.put(None)

    def answer(self, timeout: float) -> dict[str, Any]:
        try:
            answer = self._answers.get(timeout=max(timeout, 1.0))
        except queue.Empty:
            answer = None
        if answer is None:
            tail = self.log.read_text(errors="replace")[-3000:]
            msg = f"the {self.cores}-host driver gave no answer within {timeout:.0f} s:\n{tail}"
            raise SystemExit(msg)
        return answer

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def _cluster() -> tuple[Any, bool]:
    """The running 3-host cluster, or one started here; and whether it was started here."""
    from samza_nb import services
    from samza_nb.services import ServicesHome
    from samza_nb.services.cluster import SimCluster

    cluster = SimCluster(ServicesHome.resolve(), hosts=3)
    if cluster.status().state == "running":
        if len(cluster.hosts) < max(HOST_COUNTS):
            msg = f"the running cluster has {len(cluster.hosts)} hosts; this bench needs 3"
            raise SystemExit(msg)
        return cluster, False
    print("no cluster running: starting one of 3 hosts (samza-nb services up cluster)", flush=True)
    services.up(["cluster"], hosts=3, timeout=300)
    return cluster, True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--epoch-messages", type=int, default=1_000, help="task.max.epoch.messages")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a driver may take per answer")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds the whole bench may take")
    parser.add_argument("--no-failover", action="store_true", help="only the throughput runs")
    parser.add_argument("--serve", type=int, metavar="HOSTS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.events, args.epoch_messages, args.timeout)
        return
    if os.geteuid() != 0:
        print("bench/cluster_hosts.py: skipped, the simulated cluster needs root (docs/cluster.md)")
        return
    cluster, started_here = _cluster()
    try:
        _measure(cluster, args)
    finally:
        if started_here:
            from samza_nb import services

            services.down(["cluster"])


def _measure(cluster: Any, args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.budget
    logs = scratch_dir("samza-nb-hosts-")
    load_at_start = os.getloadavg()
    seconds: dict[int, float] = {}
    executors: dict[int, list[str]] = {}
    failover: dict[str, Any] | None = None
    wrong: list[str] = []
    names = {host.address: host.name for host in cluster.hosts}
    for cores in HOST_COUNTS:
        driver = Driver(cluster, cores, args, logs)
        try:
            executors[cores] = driver.answer(min(args.timeout, deadline - time.monotonic()))["ready"]
            driver.send("run")
            done = driver.answer(min(args.timeout, deadline - time.monotonic()))
            seconds[cores] = float(done["seconds"])
            if not done["exact"]:
                wrong.append(f"{cores} hosts")
            if cores == max(HOST_COUNTS) and not args.no_failover:
                failover = _failover(cluster, driver, args, deadline, names)
                if not failover["exact"]:
                    wrong.append("failover")
        finally:
            driver.stop()
    load_at_end = os.getloadavg()
    _report(args, seconds, executors, failover, names, wrong, (load_at_start, load_at_end))


def _failover(
    cluster: Any, driver: Driver, args: argparse.Namespace, deadline: float, names: dict[str, str]
) -> dict[str, Any]:
    driver.send("failover")
    victim = driver.answer(min(args.timeout, deadline - time.monotonic()))["kill"]
    killed_at = time.time()
    try:
        cluster.kill(names[victim])
        driver.send(f"killed {killed_at}")
        return driver.answer(min(args.timeout, deadline - time.monotonic()))
    finally:
        if victim not in cluster.alive_worker_addresses():
            cluster.restart(names[victim])  # the cluster as it was, for whoever uses it next


def _report(
    args: argparse.Namespace,
    seconds: dict[int, float],
    executors: dict[int, list[str]],
    failover: dict[str, Any] | None,
    names: dict[str, str],
    wrong: list[str],
    loads: tuple[tuple[float, ...], tuple[float, ...]],
) -> None:
    print(f"quickstart on Kafka: {args.events:,} page views, {PARTITIONS} partitions, "
          f"task.max.epoch.messages={args.epoch_messages}, driver on h1, one 1-core executor per "
          f"host (spark.cores.max=N), after an untimed {WARM_UP_EVENTS:,}-view run per driver; "
          f"{os.cpu_count()} cores shared by every host; load average {loads[0][0]:.1f} "
          f"(5 min {loads[0][1]:.1f}) at the start, {loads[1][0]:.1f} at the end")
    print(f"{'hosts':>5} {'executors on':<16} {'seconds':>8} {'events/s':>9} {'per host':>9} {'efficiency':>10}")
    one = args.events / seconds[1]
    for cores, taken in seconds.items():
        rate = args.events / taken
        on = ",".join(names.get(address, address) for address in executors[cores])
        print(f"{cores:>5} {on:<16} {taken:8.2f} {rate:9,.0f} {rate / cores:9,.0f} {rate / (cores * one):10.2f}")
    print("efficiency = events/s with N hosts / (N x events/s with 1 host)")
    if failover is not None:
        victim = names.get(failover["victim"], failover["victim"])
        moved = failover["moved"]
        back = [value for value in moved.values() if value is not None]
        print(f"failover: {victim} SIGKILLed at {KILL_AT:.0%} of the input read, 3 hosts -> 2; "
              f"its tasks {sorted(moved)} processing again on other hosts after "
              + (f"{max(back):.2f} s (first {min(back):.2f} s)" if len(back) == len(moved) else f"(not all seen: {moved})")
              + f"; restored records {failover['restored_records']}; one look at the job's "
              f"metrics every {failover['look_s']:.2f} s (median)")
        print(f"failover: caught up {failover['caught_up_after_kill']:.2f} s after the kill; the run "
              f"took {failover['seconds']:.2f} s against {seconds[3]:.2f} s without a loss "
              f"({failover['seconds'] / seconds[3]:.2f}x)")
    print(f"every run's counts {'equal plain Python' if not wrong else 'DIFFER: ' + ', '.join(wrong)}")
    if wrong:
        msg = f"counts differ from plain Python: {wrong}"
        raise SystemExit(msg)


if __name__ == "__main__":
    main()
