"""Scaling: the quickstart pipeline over 4, 16 and 64 partitions and 1, 2 and 4 logical
processors (default config otherwise), and the per-epoch overhead as the task count grows.

For each cell: N page views (JSON) in the embedded log, the job run to end of stream on the
notebook's Spark; events/s and the peak resident memory of the whole process tree (driver,
Spark's JVM and its Python workers, sampled every 50 ms; the Python workers' share apart).
Then, per partition count, the median wall time of an epoch that reads nothing (the fixed
cost: one Spark job, each task opening its store and committing its checkpoint).

    .venv/bin/python bench/scaling.py --events 200000
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scratch import scratch_dir  # noqa: E402
from peers import shown_config  # noqa: E402

import samza_nb.runtime.processor.processor as processor_module  # noqa: E402
from samza_nb.examples.page_views import build_app, expected_counts, generate_page_views  # noqa: E402
from samza_nb.job import run  # noqa: E402
from samza_nb.runtime.executors.spark import get_spark  # noqa: E402
from samza_nb.systems import EmbeddedSystem  # noqa: E402

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _proportional_bytes(pid: int) -> int:
    """The process's proportional set size (its resident pages, shared ones divided among
    their sharers); RSS where the kernel has no smaps_rollup."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE


def _tree_rss() -> tuple[int, int]:
    """(bytes resident in this process and all its descendants, of which Python workers).

    Proportional set size: Python workers fork from one daemon and share its pages, which
    plain RSS would count once per worker."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmd:
                commands[int(entry)] = cmd.read().decode(errors="replace")
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    total = workers = 0
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            rss = _proportional_bytes(pid)
        except OSError:
            continue
        total += rss
        command = commands.get(pid, "")
        # python -m <daemon module> (spark-submit's JVM also names the module, in a --conf)
        if any(name in command for name in ("-m\x00pyspark.daemon", "pyspark/worker", "-m\x00samza_nb.runtime.executors.spark_daemon")):
            workers += rss
    return total, workers


class _PeakMemory:
    def __init__(self) -> None:
        self.peak = (0, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            now = _tree_rss()
            self.peak = (max(self.peak[0], now[0]), max(self.peak[1], now[1]))
            time.sleep(0.05)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _cell(events: list[dict[str, Any]], partitions: int, processors: int) -> tuple[float, int, int, dict[str, str]]:
    workdir = scratch_dir("samza-nb-scaling-")
    system = EmbeddedSystem("embedded", path=workdir / "log")
    system.create_stream("page-views", partitions)
    system.write("page-views", events)
    system.end_stream("page-views")
    app = build_app(system, partitions=partitions, config={"job.home": str(workdir / "home")})
    with _PeakMemory() as memory:
        started = time.perf_counter()
        job = run(app, processors=processors, until="end-of-stream")
        seconds = time.perf_counter() - started
    frame = job.collect("page-counts")
    got = {str(k): int(v) for k, v in frame.groupby("key")["value"].sum().items()}
    if got != expected_counts(events):
        msg = f"{partitions} partitions, {processors} processors: counts differ from the reference"
        raise SystemExit(msg)
    return seconds, memory.peak[0], memory.peak[1], shown_config(app.config)


def _epoch_overhead(partitions: int, epochs: int = 5) -> float:
    """Median wall time of an epoch of one processor whose tasks read nothing."""
    workdir = scratch_dir("samza-nb-scaling-")
    system = EmbeddedSystem("embedded", path=workdir / "log")
    system.create_stream("page-views", partitions)
    app = build_app(system, partitions=partitions, config={"job.home": str(workdir / "home")})
    times: list[float] = []
    original = processor_module.StreamProcessor._one_epoch

    def timed(self: Any, model: Any, container: Any) -> bool:
        started = time.perf_counter()
        try:
            return bool(original(self, model, container))
        finally:
            times.append(time.perf_counter() - started)

    processor_module.StreamProcessor._one_epoch = timed  # type: ignore[method-assign]
    try:
        run(app, until=epochs)
    finally:
        processor_module.StreamProcessor._one_epoch = original  # type: ignore[method-assign]
    return median(times[1:] or times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--partitions", default="4,16,64")
    parser.add_argument("--processors", default="1,2,4")
    args = parser.parse_args()
    events = generate_page_views(args.events)
    spark = get_spark()
    spark.sparkContext.parallelize(range(4), 4).count()
    partition_counts = [int(p) for p in args.partitions.split(",")]
    rows = []
    shown: dict[str, str] = {}
    for partitions in partition_counts:
        for processors in (int(p) for p in args.processors.split(",")):
            seconds, peak, workers, shown = _cell(events, partitions, processors)
            rows.append((partitions, processors, seconds, peak, workers))
    overhead = {partitions: _epoch_overhead(partitions) for partitions in partition_counts}
    print(f"scaling: {args.events:,} page views; Spark {spark.sparkContext.master}, {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("samza_nb config: " + ", ".join(f"{k}={v}" for k, v in shown.items() if k != "job.container.count"))
    base = rows[0][2]
    print(f"{'partitions':>10} {'processors':>10} {'seconds':>8} {'events/s':>10} {'vs first':>9} "
          f"{'peak PSS MB':>12} {'Python workers MB':>18}")
    for partitions, processors, seconds, peak, workers in rows:
        print(f"{partitions:>10} {processors:>10} {seconds:8.2f} {args.events / seconds:10,.0f} "
              f"{base / seconds:9.2f} {peak / 2**20:12.0f} {workers / 2**20:18.0f}")
    print("per-epoch overhead (an epoch that reads nothing, one processor):")
    for partitions, seconds in overhead.items():
        print(f"  {partitions:>3} tasks: {seconds * 1000:6.0f} ms  ({seconds * 1000 / partitions:5.1f} ms per task)")


if __name__ == "__main__":
    main()
