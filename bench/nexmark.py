"""NEXMark q0, q1, q2, q3, q5, q7, q8 on samza_nb (default config, Spark), beside Flink and bytewax.

For each query: N generated events (person : auction : bid = 1 : 3 : 46, event time 1 ms apart,
watermarks every 5 000 events, each event padded with ``extra`` to NEXMark's average sizes of
200, 500 and 100 bytes) in the embedded log, the query run to end of stream, its result checked
against the plain-Python reference, events/s and events/s per core printed beside the
published Flink 1.13 figures (nexmark repository README, "Throughput/Cores": 100M events from
Flink's own generator, 8 TaskManagers of one slot on worker machines of 8 cores and 32 GB,
cores counted by a CPU-usage collector on each worker). No Spark NEXMark figures were found
published to compare with. bytewax 0.21 (bench venv, 1 worker) runs every query on the same events as JSON
lines, as a bytewax user would write it: q0–q2 as plain steps; q3 as ``stateful_flat_map`` per
seller (a person, and the auctions waiting for it); q7 as ``fold_window`` keeping each
window's bids (``EventClock``, ``TumblingWindower``), then the bids at its highest price; q8
as ``fold_window`` over the same clock and windower; q5 as ``fold_window`` with ``SlidingWindower`` per
auction, then ``fold_final`` per window. Its results are checked against the reference too.

    .venv/bin/python bench/nexmark.py --events 200000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_venv  # noqa: E402
from _scratch import scratch_dir  # noqa: E402
from peers import shown_config  # noqa: E402

from samza_nb.examples.nexmark import build_query, generate, reference, write_events  # noqa: E402
from samza_nb.examples.nexmark.generator import size_in_bytes  # noqa: E402
from samza_nb.examples.nexmark.reference import result  # noqa: E402
from samza_nb.job import run  # noqa: E402
from samza_nb.runtime.executors.spark import get_spark  # noqa: E402
from samza_nb.systems import EmbeddedSystem  # noqa: E402

PARTITIONS = 4
QUERIES = "q0,q1,q2,q3,q5,q7,q8"
#: nexmark repository README, Flink 1.13: throughput per core (events/s).
FLINK_PER_CORE = {
    "q0": 155_020, "q1": 157_940, "q2": 175_210, "q3": 152_120, "q5": 22_140, "q7": 12_330,
    "q8": 146_140,
}

_BYTEWAX = '''
import json, sys, time
from datetime import datetime, timedelta, timezone
from pathlib import Path
import bytewax.operators as op
from bytewax.connectors.files import FileSource
from bytewax.dataflow import Dataflow
from bytewax.operators.windowing import EventClock, SlidingWindower, TumblingWindower, fold_window
from bytewax.testing import TestingSink, run_main

path, query, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SECOND = timedelta(seconds=1)
out = []
flow = Dataflow("nexmark")
events = op.map("decode", op.input("in", flow, FileSource(Path(path))), json.loads)


def clock():
    # Event time from the event; the watermark is the largest timestamp seen (the input is in
    # timestamp order), never moved by the wall clock.
    return EventClock(
        lambda e: EPOCH + timedelta(milliseconds=e["date_time"]), wait_for_system_duration=timedelta(0),
        now_getter=lambda: EPOCH, to_system_utc=lambda t: None,
    )


def keep_first(a, b):
    return a


def is_bid(e):
    return e["type"] == "bid"


if query == "q0":
    result = op.filter("bids", events, is_bid)
elif query == "q1":
    def to_euro(bid):
        bid["price"] = bid["price"] * 908 // 1000
        return bid
    result = op.map("euro", op.filter("bids", events, is_bid), to_euro)
elif query == "q2":
    result = op.map(
        "project",
        op.filter("sel", events, lambda e: e["type"] == "bid" and e["auction"] % 123 == 0),
        lambda b: {"auction": b["auction"], "price": b["price"]},
    )
elif query == "q3":
    def wanted(e):
        if e["type"] == "person":
            return e["state"] in ("OR", "ID", "CA")
        return e["type"] == "auction" and e["category"] == 10

    def row(p, a):
        return {"name": p["name"], "city": p["city"], "state": p["state"], "id": a["id"]}

    def match(state, e):
        person, waiting = state if state is not None else (None, [])
        if e["type"] == "person":
            return (e, []), [row(e, a) for a in waiting]
        if person is not None:
            return state, [row(person, e)]
        waiting.append(e)
        return (None, waiting), []

    keyed = op.key_on(
        "by-seller", op.filter("sel", events, wanted),
        lambda e: str(e["id"] if e["type"] == "person" else e["seller"]),
    )
    result = op.key_rm("rows", op.stateful_flat_map("join", keyed, match))
elif query == "q5":
    counts = fold_window(
        "bids-per-auction", op.key_on("by-auction", op.filter("bids", events, is_bid), lambda b: str(b["auction"])),
        clock(), SlidingWindower(10 * SECOND, 2 * SECOND, EPOCH), lambda: 0, lambda n, b: n + 1,
        keep_first, ordered=False,
    )

    def hottest(best, item):
        auction, num = item
        if best is None or num > best[0]:
            return [num, [auction]]
        if num == best[0]:
            best[1].append(auction)
        return best

    by_window = op.map("by-window", counts.down, lambda kv: (str(kv[1][0]), (int(kv[0]), kv[1][1])))
    top = op.fold_final("hottest", by_window, lambda: None, hottest)
    result = op.flat_map(
        "rows", top,
        lambda kv: [[int(kv[0]) * 2000, {"auction": a, "num": kv[1][0]}] for a in sorted(kv[1][1])],
    )
elif query == "q7":
    # The window's bids are kept, then joined back to their highest price (as samza_nb's q7
    # keeps them in its join's window and Flink in its join's state).
    def keep(bids, b):
        bids.append(b)
        return bids

    def at_highest(kv):
        window, bids = kv[1]
        highest = max(b["price"] for b in bids)
        return [[window * 10_000, b] for b in bids if b["price"] == highest]

    windows = fold_window(
        "window-bids", op.key_on("all", op.filter("bids", events, is_bid), lambda b: "all"), clock(),
        TumblingWindower(10 * SECOND, EPOCH), list, keep, lambda a, b: a + b, ordered=False,
    )
    result = op.flat_map("join-highest", windows.down, at_highest)
elif query == "q8":
    def registered_or_sold(acc, e):
        name, sold = acc
        if e["type"] == "person":
            return [e["name"], sold]
        return [name, True]

    keyed = op.key_on(
        "by-person", op.filter("sel", events, lambda e: e["type"] in ("person", "auction")),
        lambda e: str(e["id"] if e["type"] == "person" else e["seller"]),
    )
    users = fold_window(
        "new-users", keyed, clock(), TumblingWindower(10 * SECOND, EPOCH), lambda: [None, False],
        registered_or_sold, keep_first, ordered=False,
    )
    result = op.filter_map("rows", users.down, lambda kv: (
        [int(kv[0]), [kv[1][0] * 10_000, kv[1][1][0]]] if kv[1][1][0] is not None and kv[1][1][1] else None
    ))
op.output("out", op.map("encode", result, lambda row: json.dumps(row, sort_keys=True)), TestingSink(out))
started = time.perf_counter()
run_main(flow)
seconds = time.perf_counter() - started
Path(out_path).write_text("".join(line + "\\n" for line in out))
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


def bytewax_query(query: str, lines: Path, workdir: Path, expected: Counter[str]) -> tuple[float, bool] | None:
    """bytewax's seconds for ``query`` and whether its rows equal the reference (None: skipped)."""
    rows = workdir / f"bytewax-{query}.jsonl"
    peer = _peer_venv.run_script(_BYTEWAX, str(lines), query, str(rows))
    if peer is None:
        return None
    got = Counter(line for line in rows.read_text().splitlines() if line)
    return float(peer["seconds"]), got == expected


def average_sizes(events: list[dict]) -> dict[str, float]:
    """Each kind's average size as NEXMark counts it (the generator pads to 200, 500, 100)."""
    totals: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for event in events:
        totals[event["type"]] += size_in_bytes(event)
        counts[event["type"]] += 1
    return {kind: totals[kind] / counts[kind] for kind in counts}


def _rate(events: int, seconds: float | None) -> str:
    return f"{events / seconds:,.0f}" if seconds else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--queries", default=QUERIES)
    parser.add_argument("--no-venv", action="store_true", help="skip bytewax (bench venv)")
    args = parser.parse_args()
    events = generate(args.events)
    workdir = scratch_dir("samza-nb-nexmark-")
    lines = workdir / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in events))
    spark = get_spark()
    spark.sparkContext.parallelize(range(4), 4).count()  # start the JVM and Python workers
    # One small samza_nb run before the timed ones, as bench/peers.py does: the first query
    # would otherwise pay the workers' first epochs alone.
    samza_nb_query("q0", events[:20_000], workdir / "warm-up")
    cores = os.cpu_count() or 1
    rows: list[tuple[str, float, bool, tuple[float, bool] | None]] = []
    shown: dict[str, str] = {}
    for query in args.queries.split(","):
        seconds, ok, shown = samza_nb_query(query, events, workdir)
        peer = None if args.no_venv else bytewax_query(query, lines, workdir, reference(query, events))
        rows.append((query, seconds, ok, peer))
    print(f"NEXMark: {args.events:,} events, {PARTITIONS} partitions; Spark {spark.sparkContext.master}, "
          f"{cores} cores; load average {os.getloadavg()[0]:.1f}")
    print("samza_nb config: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    print("Flink/core: nexmark repository README (Flink 1.13, 100M events, 8 TaskManagers of 1 slot, "
          "8-core 32 GB workers); bytewax 0.21, 1 worker")
    sizes = average_sizes(events)
    print("event sizes (NEXMark's count, bytes): " + ", ".join(f"{kind} {size:.0f}" for kind, size in sizes.items()))
    print(f"{'query':<6} {'samza_nb ev/s':>14} {'per core':>10} {'Flink/core':>11} {'ratio':>6} "
          f"{'bytewax ev/s':>13} {'samza_nb/bytewax':>17}  results")
    failed = False
    for query, seconds, ok, peer in rows:
        rate = args.events / seconds
        per_core = rate / cores
        flink = FLINK_PER_CORE.get(query)
        flink_text = f"{flink:11,} {per_core / flink:6.2f}" if flink else f"{'not published':>11} {'-':>6}"
        checks = f"samza_nb {'= reference' if ok else 'DIFFERS'}"
        if peer is not None:
            bw_seconds, bw_ok = peer
            bytewax = f"{_rate(args.events, bw_seconds):>13} {bw_seconds / seconds:17.2f}"
            checks += f", bytewax {'= reference' if bw_ok else 'DIFFERS'}"
            failed = failed or not bw_ok
        else:
            bytewax = f"{'-':>13} {'-':>17}"
        failed = failed or not ok
        print(f"{query:<6} {rate:14,.0f} {per_core:10,.0f} {flink_text} {bytewax}  {checks}")
    if failed:
        msg = "a query's result differs from the reference"
        raise SystemExit(msg)


if __name__ == "__main__":
    main()
