"""NEXMark q0, q1, q2, q5, q7, q8 on samza_nb (default config, Spark), beside Flink and bytewax.

For each query: N generated events (person : auction : bid = 1 : 3 : 46, event time 1 ms apart,
watermarks every 5 000 events) in the embedded log, the query run to end of stream, its result
checked against the plain-Python reference, events/s and events/s per core printed beside the
published Flink 1.13 figures (nexmark repository, events/s per core). bytewax (bench venv) runs
the queries it expresses as plain dataflow steps (q0, q1, q2), reading the same events as JSON
lines, 1 worker.

    .venv/bin/python bench/nexmark.py --events 200000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_venv  # noqa: E402
from peers import shown_config  # noqa: E402

from samza_nb.examples.nexmark import build_query, generate, reference, write_events  # noqa: E402
from samza_nb.examples.nexmark.reference import result  # noqa: E402
from samza_nb.runtime import run  # noqa: E402
from samza_nb.runtime.spark import get_spark  # noqa: E402
from samza_nb.systems import EmbeddedSystem  # noqa: E402

PARTITIONS = 4
FLINK_PER_CORE = {"q0": 155_000, "q1": 158_000, "q2": 175_000, "q3": 152_000, "q5": 22_140, "q7": 12_000, "q8": 146_000}

_BYTEWAX = '''
import json, sys, time
from pathlib import Path
import bytewax.operators as op
from bytewax.connectors.files import FileSource
from bytewax.dataflow import Dataflow
from bytewax.testing import TestingSink, run_main

path, query = sys.argv[1], sys.argv[2]
out = []
flow = Dataflow("nexmark")
events = op.map("decode", op.input("in", flow, FileSource(Path(path))), json.loads)
if query == "q0":
    result = op.filter("bids", events, lambda e: e["type"] == "bid")
elif query == "q1":
    def to_euro(bid):
        bid["price"] = bid["price"] * 908 // 1000
        return bid
    result = op.map("euro", op.filter("bids", events, lambda e: e["type"] == "bid"), to_euro)
else:
    result = op.map(
        "project",
        op.filter("sel", events, lambda e: e["type"] == "bid" and e["auction"] % 123 == 0),
        lambda b: {"auction": b["auction"], "price": b["price"]},
    )
op.output("out", op.map("encode", result, json.dumps), TestingSink(out))
started = time.perf_counter()
run_main(flow)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rows": len(out)}))
'''


def samza_nb_query(query: str, events: list[dict], workdir: Path) -> tuple[float, bool, dict[str, str]]:
    system = EmbeddedSystem("embedded", path=workdir / query / "log")
    write_events(system, events, partitions=PARTITIONS)
    app = build_query(query, system, partitions=PARTITIONS, config={"job.home": str(workdir / query / "home")})
    started = time.perf_counter()
    run(app, until="end-of-stream")
    seconds = time.perf_counter() - started
    got = result(query, system.read(f"{query}-out"))
    return seconds, got == reference(query, events), shown_config(app.config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--queries", default="q0,q1,q2,q5,q7,q8")
    parser.add_argument("--no-venv", action="store_true", help="skip bytewax (bench venv)")
    args = parser.parse_args()
    events = generate(args.events)
    workdir = Path(tempfile.mkdtemp(prefix="samza-nb-nexmark-"))
    lines = workdir / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in events))
    spark = get_spark()
    spark.sparkContext.parallelize(range(4), 4).count()  # start the JVM and Python workers
    cores = os.cpu_count() or 1
    rows = []
    shown: dict[str, str] = {}
    for query in args.queries.split(","):
        seconds, ok, shown = samza_nb_query(query, events, workdir)
        peer = None
        if not args.no_venv and query in ("q0", "q1", "q2"):
            peer = _peer_venv.run_script(_BYTEWAX, str(lines), query)
        rows.append((query, seconds, ok, peer))
    print(f"NEXMark: {args.events:,} events, {PARTITIONS} partitions; Spark {spark.sparkContext.master}, "
          f"{cores} cores; load average {os.getloadavg()[0]:.1f}")
    print("samza_nb config: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    print(f"{'query':<6} {'samza_nb ev/s':>14} {'per core':>10} {'Flink/core':>11} {'ratio':>6} "
          f"{'bytewax ev/s':>13} {'samza_nb/bytewax':>17}  result")
    for query, seconds, ok, peer in rows:
        rate = args.events / seconds
        per_core = rate / cores
        flink = FLINK_PER_CORE.get(query)
        bytewax = f"{args.events / peer['seconds']:13,.0f} {rate / (args.events / peer['seconds']):17.2f}" if peer else f"{'-':>13} {'-':>17}"
        print(f"{query:<6} {rate:14,.0f} {per_core:10,.0f} {flink:11,} {per_core / flink:6.2f} {bytewax}  "
              f"{'= reference' if ok else 'DIFFERS from the reference'}")
    if not all(ok for _q, _s, ok, _p in rows):
        msg = "a query's result differs from the reference"
        raise SystemExit(msg)


if __name__ == "__main__":
    main()
