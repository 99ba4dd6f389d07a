"""Drain latency: epochs and seconds from a drain notification to the job stopped.

For 0, 1, 2 and 3 shuffles (map -> [partition_by -> map] x N -> keyed tumbling count -> output)
on a continuous input (a writer appends page views while the job runs), measured in one run:
  - drain: ``job.drain()``; epochs counted from the epoch during which a processor's
    DrainMonitor saw the notification to the last epoch (target: at most shuffles + 2);
  - baseline: ``job.stop()`` on the same pipeline (stop after the current epoch, no drain);
and checks that the window counts sum to every source message read (nothing lost on drain).

    .venv/bin/python bench/drain.py [--shuffles 0 1 2 3] [--rate 20000]
"""

from __future__ import annotations

import argparse
import threading
import time
from datetime import timedelta
from typing import Any

from _scratch import scratch_dir

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.examples.page_views import generate_page_views
from samza_nb.job import Job, run
from samza_nb.runtime.executors.spark import get_spark
from samza_nb.systems import EmbeddedSystem

PARTITIONS = 4
WARM_EPOCHS = 3


def build(system: EmbeddedSystem, name: str, shuffles: int) -> StreamApplication:
    app = StreamApplication(name)
    stream = app.input(system.input(f"{name}-in", partitions=PARTITIONS, serde="json")).map(lambda v: v)
    for hop in range(shuffles):
        key = "page" if hop == shuffles - 1 else "user"
        stream = stream.partition_by(
            lambda v, key=key: v[key], lambda v: v, op_id=f"hop-{hop}"
        ).map(lambda kv: kv.value)
    counts = app.output(system.output(f"{name}-out", partitions=PARTITIONS, serde="json"))
    (
        stream.window(
            Windows.keyed_tumbling(
                lambda v: v["page"], timedelta(minutes=10), initial=lambda: 0, fold=lambda v, n: n + 1
            ),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return app


class Writer(threading.Thread):
    """Appends page views at ``rate`` per second until stopped (bounded in count and time)."""

    def __init__(self, system: EmbeddedSystem, stream_id: str, rate: int, limit: int = 2_000_000):
        super().__init__(daemon=True)
        self.system, self.stream_id, self.rate, self.limit = system, stream_id, rate, limit
        self.stop_event = threading.Event()
        self.written = 0

    def run(self) -> None:
        events = generate_page_views(max(1, self.rate // 10), seed=1)
        deadline = time.monotonic() + 600
        while not self.stop_event.is_set() and self.written < self.limit and time.monotonic() < deadline:
            self.system.write(self.stream_id, events)
            self.written += len(events)
            self.stop_event.wait(0.1)


def measure(system: EmbeddedSystem, shuffles: int, rate: int, mode: str) -> dict[str, Any]:
    name = f"drain-{mode}-{shuffles}"
    system.create_stream(f"{name}-in", PARTITIONS)
    writer = Writer(system, f"{name}-in", rate)
    writer.start()
    config = {"job.drain-monitor.poll.interval.ms": 50, "task.max.epoch.messages": 20_000}
    job: Job = run(build(system, name, shuffles), config, until="forever", background=True)
    deadline = time.monotonic() + 300
    while job.epoch < WARM_EPOCHS:
        if job.status().done or time.monotonic() > deadline:
            writer.stop_event.set()
            job.wait(timeout=60)  # raises the job's error
            msg = f"{name} ended before warming up: {job.status()}"
            raise RuntimeError(msg)
        time.sleep(0.02)
    started = time.perf_counter()
    if mode == "drain":
        job.drain()
        status = job.wait(timeout=300)
    else:
        status = job.stop()
    seconds = time.perf_counter() - started
    writer.stop_event.set()
    writer.join()
    read = job.metrics()["streams"][f"{name}-in"]["in"]
    counted = int(job.collect(f"{name}-out")["value"].sum())
    seen = job.drain_seen_epoch if mode == "drain" else None
    return {
        "state": status.state,
        "seconds": seconds,
        "epochs": job.epoch - seen if seen is not None else None,
        "read": read,
        "counted": counted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shuffles", type=int, nargs="*", default=[0, 1, 2, 3])
    parser.add_argument("--rate", type=int, default=20_000, help="page views per second written")
    args = parser.parse_args()
    get_spark()
    system = EmbeddedSystem("embedded", path=scratch_dir("samza-nb-bench-drain-"))
    print(f"{'shuffles':>8} {'drain epochs':>12} {'target':>6} {'drain s':>8} {'stop s':>7} "
          f"{'drain/stop':>10} {'read':>9} {'counted':>9}")
    for shuffles in args.shuffles:
        drained = measure(system, shuffles, args.rate, "drain")
        stopped = measure(system, shuffles, args.rate, "stop")
        lost = "" if drained["counted"] == drained["read"] else "  LOST MESSAGES"
        print(
            f"{shuffles:>8} {drained['epochs']:>12} {shuffles + 2:>6} {drained['seconds']:>8.2f} "
            f"{stopped['seconds']:>7.2f} {drained['seconds'] / stopped['seconds']:>10.2f} "
            f"{drained['read']:>9,} {drained['counted']:>9,}{lost}",
            flush=True,
        )


if __name__ == "__main__":
    main()
