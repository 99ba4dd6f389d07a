"""Latency at a fixed input rate: from the write of an event to the append of its output.

A writer thread appends events to the embedded log at ``--rate`` events/s (every 10 ms a batch)
for ``--seconds``, each carrying its write time; the job runs continuously on Spark (default
config) and a poller reads the output stream every 5 ms, stamping each output when it first
sees it (so every figure includes up to 5 ms of polling). Three pipelines:

  stateless    map -> send_to: one epoch from write to append
  one shuffle  partition_by(user) -> map -> send_to: the message crosses the intermediate
               stream, which costs one more epoch (the floor: two epochs)
  window       1 s tumbling processing-time count per user: from the window's end to its
               pane's append (panes fire at the first epoch after their end)

The epoch floor is printed too: the median wall time of an epoch of the processor during the
run (Spark job overhead + reading, processing and committing).

    .venv/bin/python bench/latency.py --rate 10000 --seconds 10
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

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scratch import scratch_dir  # noqa: E402
from peers import shown_config  # noqa: E402

import samza_nb.runtime.processor.processor as processor_module  # noqa: E402
from samza_nb.api import KV, StreamApplication, Windows  # noqa: E402
from samza_nb.job import run  # noqa: E402
from samza_nb.runtime.executors.spark import get_spark  # noqa: E402
from samza_nb.systems import EmbeddedSystem  # noqa: E402

PARTITIONS = 4
WINDOW_MS = 1_000
_decode = msgspec.json.Decoder().decode


def _now_ms() -> float:
    return time.time() * 1000


def _pipeline(name: str, system: EmbeddedSystem, home: Path) -> StreamApplication:
    app = StreamApplication(f"latency-{name.replace(' ', '-')}", job_id="1", config={"job.home": str(home)})
    events = app.input(system.input("events", partitions=PARTITIONS))
    out = app.output(system.output("out", partitions=PARTITIONS))
    if name == "stateless":
        events.map(lambda e: {**e, "seen": True}).send_to(out)
    elif name == "one shuffle":
        (
            events.partition_by(lambda e: e["user"], op_id="by-user")
            .map(lambda kv: kv.value)
            .send_to(out)
        )
    else:
        (
            events.window(
                Windows.keyed_tumbling(lambda e: e["user"], WINDOW_MS, initial=lambda: 0,
                                       fold=lambda e, n: n + 1),
                op_id="count",
            )
            .map(lambda pane: KV(pane.key.key, {"end": int(pane.key.pane_id) + WINDOW_MS}))
            .send_to(out)
        )
    return app


def _writer(system: EmbeddedSystem, rate: int, seconds: float, stop: threading.Event) -> int:
    per_tick = max(1, rate // 100)
    written = 0
    started = time.perf_counter()
    tick = 0
    while time.perf_counter() - started < seconds and not stop.is_set():
        now = _now_ms()
        system.write(
            "events",
            [{"user": f"u{(written + i) % 97}", "t": now} for i in range(per_tick)],
        )
        written += per_tick
        tick += 1
        delay = started + tick / 100 - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    return written


def _poll(system: EmbeddedSystem, done: threading.Event, latencies: list[float], window: bool) -> None:
    offsets = dict.fromkeys(range(PARTITIONS), 0)
    while True:
        finished = done.is_set()
        for partition in range(PARTITIONS):
            for first, records in system.read_batches("out", partition, offsets[partition], 100_000):
                seen = _now_ms()
                for kind, _key, value, _ts in records:
                    if kind == 0:
                        message = _decode(value)
                        latencies.append(seen - (message["end"] if window else message["t"]))
                offsets[partition] = first + len(records)
        if finished:
            return
        time.sleep(0.005)


def _measure(name: str, rate: int, seconds: float) -> dict[str, Any]:
    workdir = scratch_dir("samza-nb-latency-")
    system = EmbeddedSystem("embedded", path=workdir / "log")
    system.create_stream("events", PARTITIONS)
    system.create_stream("out", PARTITIONS)
    app = _pipeline(name, system, workdir / "home")
    epochs: list[float] = []
    original = processor_module.StreamProcessor._one_epoch

    def timed(self: Any, model: Any, container: Any) -> bool:
        started = time.perf_counter()
        worked = original(self, model, container)
        if worked:
            epochs.append(time.perf_counter() - started)
        return bool(worked)

    processor_module.StreamProcessor._one_epoch = timed  # type: ignore[method-assign]
    try:
        job = run(app, until="end-of-stream", background=True)
        stop, done = threading.Event(), threading.Event()
        latencies: list[float] = []
        poller = threading.Thread(target=_poll, args=(system, done, latencies, name == "window"))
        poller.start()
        written = _writer(system, rate, seconds, stop)
        system.end_stream("events")
        job.wait(timeout=600)
        done.set()
        poller.join()
    finally:
        processor_module.StreamProcessor._one_epoch = original  # type: ignore[method-assign]
    latencies.sort()
    if name != "window" and len(latencies) != written:
        print(f"  {name}: {len(latencies)} outputs for {written} inputs")
    # The last panes fire on end of stream, before their window ends (a negative latency):
    # leave them out.
    if name == "window":
        latencies = [value for value in latencies if 0 <= value < 60_000]
    pick = (lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]) if latencies else (lambda q: float("nan"))
    return {
        "written": written, "outputs": len(latencies), "p50": pick(0.50), "p99": pick(0.99),
        "epoch": median(epochs) * 1000 if epochs else float("nan"), "config": shown_config(app.config),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=10_000, help="input events per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the input runs")
    args = parser.parse_args()
    spark = get_spark()
    spark.sparkContext.parallelize(range(4), 4).count()
    results = {name: _measure(name, args.rate, args.seconds) for name in ("stateless", "one shuffle", "window")}
    print(f"latency at {args.rate:,} events/s for {args.seconds:.0f} s, {PARTITIONS} partitions; "
          f"Spark {spark.sparkContext.master}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print("samza_nb config: " + ", ".join(f"{k}={v}" for k, v in results["stateless"]["config"].items()))
    print(f"{'pipeline':<12} {'p50 ms':>8} {'p99 ms':>8} {'epoch ms (median)':>18}  measured")
    for name, r in results.items():
        what = "window end -> pane append" if name == "window" else "write -> output append"
        print(f"{name:<12} {r['p50']:8.0f} {r['p99']:8.0f} {r['epoch']:18.0f}  {what}, "
              f"{r['outputs']:,} outputs of {r['written']:,} events")
    print("floor: stateless ~ 1 epoch, one shuffle ~ 2 epochs (the intermediate stream is read "
          "in the next epoch), window ~ 1 epoch after the window's end")


if __name__ == "__main__":
    main()
