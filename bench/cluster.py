"""The quickstart on a Spark standalone cluster against local mode, one run.

Both modes run bench/peers.py's samza_nb job (the quickstart, default config, ``merge=``) over
the same N page views in the embedded log, on the same cores of this one host:

  local    ``spark.master=local[C]`` (C: the cluster's cores): the notebook's path, with
           resident Python workers (the default on a local master)
  cluster  ``spark.master`` set to the Spark standalone service (``samza-nb services up spark``:
           a master and two one-core workers on 127.0.0.1), as docs/cluster.md and
           docs/services.md show a cluster user; resident workers are for local masters only,
           so each epoch is a Spark job of its own, run by the cluster's executors

A process holds one SparkContext, so each mode runs in a driver process of its own (this
script with ``--serve``), which writes its own copy of the input and warms up with one untimed
run on 50K views (the JVM, the executors, the Python workers). Then ``--rounds`` rounds run
both modes one after the other, the order alternating; every run's counts are checked against
plain Python. Printed: each mode's fastest and slowest run, and cluster/local from the fastest
(the issue's target: the cluster within 2x of local mode on the same host count).

The master is ``--master``, else ``$SAMZA_NB_SPARK_MASTER_URL``, else the services env file's;
with none of them, the bench starts the spark service itself (in ``$SAMZA_NB_SERVICES_DIR``,
as ``make bench`` sets it) and stops it at its end.

    .venv/bin/samza-nb services up spark
    .venv/bin/python bench/cluster.py --events 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # noqa: E402
from _scratch import scratch_dir  # noqa: E402
from peers import PARTITIONS, samza_nb_run  # noqa: E402

from samza_nb import services  # noqa: E402
from samza_nb.errors import ServiceError  # noqa: E402
from samza_nb.examples.page_views import generate_page_views  # noqa: E402
from samza_nb.runtime.executors.masters import is_local_master  # noqa: E402
from samza_nb.services import read_service_env  # noqa: E402
from samza_nb.systems import EmbeddedSystem  # noqa: E402

#: A served driver answers each request with one line starting with this.
_RESULT = "cluster-bench-result "
#: The standalone service's workers: 2 x 1 core (samza_nb/services/spark.py).
CLUSTER_CORES = 2
WARM_UP_EVENTS = 50_000


def _expected(views: list[dict[str, Any]]) -> dict[str, int]:
    return dict(Counter(v["page"] for v in views if v["country"] == "US"))


def _write_log(path: Path, views: list[dict[str, Any]]) -> EmbeddedSystem:
    system = EmbeddedSystem("embedded", path=path)
    system.create_stream("page-views", PARTITIONS)
    system.write("page-views", views)
    system.end_stream("page-views")
    return system


def serve(master: str, events: int, workdir: Path) -> None:
    """A driver on ``master``: answers each ``run`` line on stdin with one timed run."""
    from pyspark import cloudpickle

    from samza_nb.runtime.executors.spark import get_spark

    # The job's functions live in bench/peers.py, which no Python worker can import (the
    # standalone executors do not share this process's sys.path): they travel by value, as
    # functions of a notebook's __main__ do.
    cloudpickle.register_pickle_by_value(peers)
    config = {"spark.master": master}
    spark = get_spark(config)
    views = generate_page_views(events)
    system = _write_log(workdir / "log", views)
    warm = _write_log(workdir / "warm-up-log", views[:WARM_UP_EVENTS])
    samza_nb_run(warm, workdir / "warm-up-home", config=config)
    print(_RESULT + json.dumps({"ready": spark.sparkContext.master}), flush=True)
    attempt = 0
    for line in sys.stdin:
        if line.strip() != "run":
            break
        attempt += 1
        (seconds, totals), _shown = samza_nb_run(system, workdir / "home", attempt, config=config)
        print(_RESULT + json.dumps({"seconds": seconds, "totals": totals}), flush=True)


class Driver:
    """A ``--serve`` process for one mode, its answers read on a thread (bounded waits)."""

    def __init__(self, name: str, master: str, events: int, workdir: Path):
        self.name = name
        self.master = master
        folder = workdir / name
        folder.mkdir()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", master, "--events", str(events), "--workdir", str(folder)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(_RESULT):
                self._answers.put(json.loads(line[len(_RESULT):]))
        self._answers.put(None)  # the process ended

    def answer(self, timeout: float) -> dict[str, Any]:
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            msg = f"the {self.name} driver did not answer within {timeout:g} s"
            raise TimeoutError(msg) from None
        if answer is None:
            msg = f"the {self.name} driver exited ({self.process.wait(timeout=10)}); its stderr is above"
            raise RuntimeError(msg)
        return answer

    def run(self, timeout: float) -> tuple[float, dict[str, int]]:
        assert self.process.stdin is not None
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        done = self.answer(timeout)
        return float(done["seconds"]), {str(k): int(v) for k, v in done["totals"].items()}

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def _cluster_master(given: str | None) -> tuple[str, bool]:
    """The standalone master, and whether this bench started the spark service for it."""
    master = given or os.environ.get("SAMZA_NB_SPARK_MASTER_URL")
    if master:
        return master, False
    try:
        master = read_service_env().get("SAMZA_NB_SPARK_MASTER_URL")
    except ServiceError:
        master = None  # no env file yet
    if master:
        return master, False
    print("no Spark standalone master given or running: starting the spark service", flush=True)
    (info,) = services.up(["spark"], timeout=180)
    return read_service_env()["SAMZA_NB_SPARK_MASTER_URL"], info.state == "started"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per mode, alternating")
    parser.add_argument("--master", help="the standalone master (default: the spark service's)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a driver may take per answer")
    parser.add_argument("--serve", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.events, Path(args.workdir))
        return
    cluster_master, started_service = _cluster_master(args.master)
    try:
        _compare(args, cluster_master)
    finally:
        if started_service:
            services.down(["spark"])


def _compare(args: argparse.Namespace, cluster_master: str) -> None:
    workdir = scratch_dir("samza-nb-cluster-")
    expected = _expected(generate_page_views(args.events))
    drivers = [
        Driver("local", f"local[{CLUSTER_CORES}]", args.events, workdir),
        Driver("cluster", cluster_master, args.events, workdir),
    ]
    runs: dict[str, list[float]] = {driver.name: [] for driver in drivers}
    wrong: list[str] = []
    started = time.monotonic()
    load_at_start = os.getloadavg()[0]
    try:
        for driver in drivers:
            driver.answer(args.timeout)  # started and warmed up
        for round_ in range(args.rounds):
            for driver in drivers if round_ % 2 == 0 else drivers[::-1]:
                seconds, totals = driver.run(args.timeout)
                runs[driver.name].append(seconds)
                if totals != expected:
                    wrong.append(f"{driver.name} round {round_ + 1}")
    finally:
        for driver in drivers:
            driver.stop()
    print(f"quickstart: {args.events:,} page views, {PARTITIONS} partitions, {args.rounds} rounds "
          f"(order alternating) in {time.monotonic() - started:.0f} s; {os.cpu_count()} cores; "
          f"load average {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"{'mode':<8} {'master':<28} {'resident workers':<17} {'fastest s':>10} {'slowest s':>10} {'events/s':>10}")
    for driver in drivers:
        times = runs[driver.name]
        resident = "on" if is_local_master(driver.master) else "off"
        print(f"{driver.name:<8} {driver.master:<28} {resident:<17} {min(times):10.2f} {max(times):10.2f} "
              f"{args.events / min(times):10,.0f}")
    ratio = min(runs["cluster"]) / min(runs["local"])
    print(f"cluster / local (seconds, fastest runs): {ratio:.2f}; every round's counts "
          f"{'equal plain Python' if not wrong else 'DIFFER: ' + ', '.join(wrong)}")
    if wrong:
        msg = f"counts differ from plain Python: {wrong}"
        raise SystemExit(msg)


if __name__ == "__main__":
    main()
