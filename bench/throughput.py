"""Throughput: page views through map -> filter -> partition_by -> keyed window count.

Measured in one run, on the same events:
  (a) samza_nb reading the embedded system, on local Spark;
  (b) the same logic hand-written with PySpark's RDD API over JSON-lines files, shuffling whole
      events like partition_by does (partitionBy on the key, then a per-key fold in
      mapPartitions; no map-side combine);
  (c) the same user functions in a plain Python loop over decoded events (the floor).
Prints events/s and the ratios a/b and a/c.

    .venv/bin/python bench/throughput.py --events 1000000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.examples.page_views import generate_page_views
from samza_nb.runtime import run
from samza_nb.runtime.spark import get_spark
from samza_nb.systems import EmbeddedSystem

PARTITIONS = 4


def enrich(view: dict[str, Any]) -> dict[str, Any]:
    view["mobile"] = view["user"].endswith(("1", "3"))
    return view


def is_us(view: dict[str, Any]) -> bool:
    return bool(view["country"] == "US")


def page_of(view: dict[str, Any]) -> str:
    return str(view["page"])


def samza_nb_run(system: EmbeddedSystem) -> tuple[float, dict[str, int]]:
    app = StreamApplication("bench-throughput")
    views = app.input(system.input("page-views", partitions=PARTITIONS))
    counts = app.output(system.output("bench-counts", partitions=PARTITIONS))
    (
        views.map(enrich)
        .filter(is_us)
        .partition_by(page_of, op_id="by-page")
        .window(
            Windows.keyed_tumbling(lambda kv: kv.key, timedelta(hours=1), initial=lambda: 0,
                                   fold=lambda kv, n: n + 1),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    started = time.perf_counter()
    job = run(app, {"task.max.epoch.messages": "1000000"}, until="end-of-stream")
    seconds = time.perf_counter() - started
    frame = job.collect("bench-counts")
    return seconds, {str(k): int(v) for k, v in frame.groupby("key")["value"].sum().items()}


def rdd_run(spark: Any, folder: Path) -> tuple[float, dict[str, int]]:
    def fold(items: Any) -> Any:
        totals: dict[str, int] = {}
        for page, _view in items:
            totals[page] = totals.get(page, 0) + 1
        return iter(totals.items())

    started = time.perf_counter()
    result = (
        spark.sparkContext.textFile(str(folder))
        .map(json.loads)
        .map(enrich)
        .filter(is_us)
        .keyBy(page_of)
        .partitionBy(PARTITIONS)
        .mapPartitions(fold)
        .collect()
    )
    return time.perf_counter() - started, dict(result)


def python_run(lines: list[bytes]) -> tuple[float, dict[str, int]]:
    started = time.perf_counter()
    totals: Counter[str] = Counter()
    for line in lines:
        view = enrich(json.loads(line))
        if is_us(view):
            totals[page_of(view)] += 1
    return time.perf_counter() - started, dict(totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    events = generate_page_views(args.events)
    workdir = Path(tempfile.mkdtemp(prefix="samza-nb-bench-"))
    system = EmbeddedSystem("embedded", path=workdir / "log")
    system.create_stream("page-views", PARTITIONS)
    system.write("page-views", events)
    system.end_stream("page-views")
    folder = workdir / "jsonl"
    folder.mkdir()
    lines = [json.dumps(event).encode() for event in events]
    for part in range(PARTITIONS):
        (folder / f"part-{part}.jsonl").write_bytes(b"\n".join(lines[part::PARTITIONS]) + b"\n")
    spark = get_spark()  # the session run() uses too (local[*]: both cores here)
    rdd_run(spark, folder)  # warm up the Python workers once, as a notebook session would be
    seconds_a, totals_a = samza_nb_run(system)
    seconds_b, totals_b = rdd_run(spark, folder)
    seconds_c, totals_c = python_run(lines)
    assert totals_a == totals_b == totals_c, "the three runs disagree"
    rate = {name: args.events / s for name, s in (("a", seconds_a), ("b", seconds_b), ("c", seconds_c))}
    print(f"events: {args.events:,} on {PARTITIONS} partitions, local[*]")
    print(f"(a) samza_nb embedded : {seconds_a:7.2f} s  {rate['a']:>12,.0f} events/s")
    print(f"(b) PySpark RDD       : {seconds_b:7.2f} s  {rate['b']:>12,.0f} events/s")
    print(f"(c) plain Python loop : {seconds_c:7.2f} s  {rate['c']:>12,.0f} events/s")
    print(f"a/b = {rate['a'] / rate['b']:.2f}   a/c = {rate['a'] / rate['c']:.2f}   (target a/b >= 0.5)")


if __name__ == "__main__":
    main()
