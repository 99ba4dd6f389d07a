"""Kafka read throughput: 200,000 page views in a 4-partition topic.

Measured in one run, on the same topic:
  (c) the floor: the faster of two ways one confluent-kafka process reads the topic, decoding
      each event (JSON) and counting the US views per page: (c0) one consumer assigned the 4
      partitions, (c1) the partitions one after another (faster on Tansu);
  (k) KafkaSystem.fetch, the runtime's read path (headers, dedup, batches), 4 partitions one
      after the other, with the same decoding and counting;
  (i) the same records appended as an intermediate stream (headers, (producer, seq) per append
      of 5,000) and fetched back with deduplication.
and the whole quickstart pipeline (filter → partition_by page → keyed tumbling count → output
topic) run by samza_nb from ``run()`` to its drained end (windows flushed, counts checked):
  (a)  at-least-once (checkpoints in the metadata store);
  (a') task.processing.guarantee=exactly-once (one Kafka transaction per task epoch);
  (m), (m') the same two with the count's ``merge=`` (README's quickstart: each task counts the
       views it shuffles and sends partial counts, plan/combining.py); (a) and (a') shuffle every
       US view, as Quix Streams' ``group_by`` does.
Task epochs run on Spark (``--executor spark``, the default: the product path) or in this
process (``--executor local``). Before anything is timed, one untimed run of the pipeline on
a small topic starts the Spark session and its Python workers: the first job of a process
pays them (tens of seconds on a loaded machine), and whichever guarantee ran first used to
carry that cost. Each of ``--rounds`` rounds runs the rows (``--rows``, default all four), the
order alternating; each row gives the fastest run, in brackets the slowest, and the median
run's seconds (compare trees by the medians of many rounds: a run is about a second, and the
fastest of a few is noisy). Ratios printed: a/c, a'/c, m/c and m'/c.
(b) Quix Streams runs the same pipeline (bench/kafka_quix.py) in the same run, after the
samza_nb rounds, in a venv of its own: ``bench/.quix-venv``, created with pip on first use
(``--quix-python PATH`` names another interpreter, ``--no-quix`` skips it). Ratios a/b, a'/b
(it runs when both a and a' do).

    .venv/bin/python bench/kafka.py --events 200000 [--rounds 2] [--rows a,a',m,m'] [--bootstrap host:port] [--skip-pipeline] [--no-quix]

The broker is --bootstrap, else $SAMZA_NB_KAFKA_BOOTSTRAP, else the services env file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections import Counter

import _quix_venv
import msgspec
from _scratch import scratch_dir
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from samza_nb.examples.page_views import expected_counts, generate_page_views
from samza_nb.services import read_service_env
from samza_nb.systems import KafkaSystem

PARTITIONS = 4
_decode = msgspec.json.Decoder().decode


def bootstrap_address(given: str | None) -> str:
    if given:
        return given
    env = os.environ.get("SAMZA_NB_KAFKA_BOOTSTRAP") or read_service_env().get("SAMZA_NB_KAFKA_BOOTSTRAP")
    if not env:
        msg = "no Kafka broker: pass --bootstrap or start one (samza-nb services up kafka)"
        raise SystemExit(msg)
    return env


def _floor_consumer(bootstrap: str, topic: str) -> Consumer:
    """A plain consumer, tuned as samza_nb's own are: a fetch that reaches a partition's end
    waits at most 10 ms for more (librdkafka's default of 500 ms holds every read that ends at
    the end offset on Tansu)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": topic + "-floor",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 10,
        }
    )


def _count(messages: list, counts: Counter[str]) -> int:
    """Decode and count the US views of ``messages``; returns how many events they held."""
    seen = 0
    for message in messages:
        if message.error() is not None:
            continue
        view = _decode(message.value())
        seen += 1
        if view["country"] == "US":
            counts[view["page"]] += 1
    return seen


def floor(bootstrap: str, topic: str, events: int) -> tuple[float, Counter[str]]:
    """(c): one plain consumer assigned every partition; seconds from assign to the last
    event counted. It knows how many events there are, so it stops at the last one rather than
    waiting for the partitions' end events (a broker holds a fetch at a partition's end for up
    to fetch.wait.max.ms, which would count against the floor)."""
    consumer = _floor_consumer(bootstrap, topic)
    counts: Counter[str] = Counter()
    seen = 0
    started = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    deadline = time.monotonic() + 120
    while seen < events and time.monotonic() < deadline:
        # What is queued at once; wait (for one message) only when nothing is.
        seen += _count(consumer.consume(num_messages=10_000, timeout=0) or consumer.consume(num_messages=1, timeout=0.5), counts)
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed, counts


def floor_by_partition(bootstrap: str, topic: str, sizes: dict[int, int]) -> tuple[float, Counter[str]]:
    """(c1): the partitions one after another, a consumer each (``sizes``: events per
    partition, counted before); seconds from the first assign to the last event. On Tansu this
    is the faster way to read a topic: a consumer assigned every partition gets 2-3x less."""
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    for partition, size in sorted(sizes.items()):
        consumer = _floor_consumer(bootstrap, topic)
        consumer.assign([TopicPartition(topic, partition, 0)])
        seen, deadline = 0, time.monotonic() + 120
        while seen < size and time.monotonic() < deadline:
            seen += _count(consumer.consume(num_messages=10_000, timeout=0) or consumer.consume(num_messages=1, timeout=0.5), counts)
        consumer.close()
    return time.perf_counter() - started, counts


def system_fetch(system: KafkaSystem, topic: str) -> tuple[float, Counter[str]]:
    """(k): KafkaSystem.fetch, partition after partition, up to the newest offsets."""
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    newest = system.newest_offsets(topic)
    for partition, bound in sorted(newest.items()):
        offset = 0
        while offset < bound:
            fetched = system.fetch(topic, partition, offset, bound, 100_000)
            for _first, records in fetched.batches:
                for record in records:
                    view = _decode(record.value)
                    if view["country"] == "US":
                        counts[view["page"]] += 1
            if fetched.next_offset <= offset:
                break
            offset = fetched.next_offset
    return time.perf_counter() - started, counts


def intermediate_round_trip(system: KafkaSystem, topic: str, source: str) -> tuple[float, float, int]:
    """(i): the records of ``source`` appended as an intermediate stream would be (headers,
    (producer, seq) per append of 5,000), then fetched with deduplication; seconds for each."""
    batches = []
    for partition in range(PARTITIONS):
        bound = system.newest_offsets(source)[partition]
        offset = 0
        while offset < bound:
            fetched = system.fetch(source, partition, offset, bound, 5_000)
            batches.extend((partition, records) for _first, records in fetched.batches)
            offset = fetched.next_offset
    system.create_stream(topic, PARTITIONS)
    started = time.perf_counter()
    for seq, (partition, records) in enumerate(batches):
        system.append(topic, partition, records, producer=f"task-{partition}", producer_seq=seq)
    append_s = time.perf_counter() - started
    started = time.perf_counter()
    count = 0
    newest = system.newest_offsets(topic)
    for partition, bound in newest.items():
        offset = 0
        while offset < bound:
            fetched = system.fetch(topic, partition, offset, bound, 100_000)
            count += fetched.messages
            offset = fetched.next_offset
    return append_s, time.perf_counter() - started, count


def pipeline(
    system: KafkaSystem,
    topic: str,
    name: str,
    variant: tuple[str, bool],
    executor: str,
    expected: Counter[str] | dict[str, int],
) -> float:
    """(a)/(a')/(m)/(m'): seconds from run() to the drained end; the output counts are
    checked. ``variant`` is (guarantee, whether the count has ``merge=``); ``name`` is the
    application's: a fresh one per run (exactly-once keeps its checkpoints in a Kafka topic
    named after it)."""
    guarantee, merge = variant
    from datetime import timedelta

    from samza_nb.api import KV, StreamApplication, Windows
    from samza_nb.job import run

    app = StreamApplication(name, job_id="1")
    views = app.input(system.input(topic, partitions=PARTITIONS, serde="json"))
    out = app.output(system.output(f"{name}-counts", partitions=PARTITIONS, serde="json"))
    (
        views.filter(lambda view: view["country"] == "US")
        .partition_by(lambda view: view["page"], lambda view: view, op_id="by-page")
        .window(
            Windows.keyed_tumbling(lambda kv: kv.key, timedelta(hours=1), initial=lambda: 0,
                                   fold=lambda kv, n: n + 1,
                                   merge=(lambda a, b: a + b) if merge else None),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    config = {
        "job.home": str(scratch_dir("bench-kafka-")),
        "task.processing.guarantee": guarantee,
        "job.drain-monitor.poll.interval.ms": "50",
    }
    started = time.perf_counter()
    job = run(app, config, until="forever", background=True, executor=executor)
    caught_up = job.wait_caught_up(timeout=600)
    assert caught_up.state == "running", caught_up
    drained = job.drain(wait=True, timeout=600)
    elapsed = time.perf_counter() - started
    assert drained.state == "drained", drained
    frame = job.collect(f"{name}-counts")
    counts: Counter[str] = Counter()
    for key, value in zip(frame["key"], frame["value"], strict=True):
        counts[key] += value
    assert counts == expected, f"the {guarantee} pipeline (merge={merge}) counted wrong"
    return elapsed


def quix(python: str, bootstrap: str, topic: str, events: int) -> float:
    """(b): bench/kafka_quix.py in its own interpreter; it prints the seconds to its last message."""
    import subprocess
    from pathlib import Path

    script = Path(__file__).with_name("kafka_quix.py")
    done = subprocess.run(
        [python, str(script), bootstrap, topic, str(events)],
        capture_output=True, text=True, timeout=900, check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


#: (guarantee, merge=) of (a), (a'), (m) and (m').
VARIANTS = (("at-least-once", False), ("exactly-once", False), ("at-least-once", True), ("exactly-once", True))
ROWS = dict(zip(("a", "a'", "m", "m'"), VARIANTS, strict=True))


def warm_up(system: KafkaSystem, topic: str, executor: str) -> None:
    """One untimed run of the pipeline on a small topic: the Spark session, its resident
    Python workers and their imports start here, not inside a timed run."""
    events = generate_page_views(2_000)
    system.create_stream(topic, PARTITIONS)
    system.write(topic, events)
    pipeline(system, topic, f"{topic}-warm-up", VARIANTS[0], executor, expected_counts(events))


def timed_rounds(
    system: KafkaSystem, topic: str, executor: str, rounds: int, expected: Counter[str] | dict[str, int],
    variants: tuple[tuple[str, bool], ...] = VARIANTS,
) -> dict[tuple[str, bool], list[float]]:
    """Seconds of each variant's runs; round r runs them in order, then reversed."""
    seconds: dict[tuple[str, bool], list[float]] = {variant: [] for variant in variants}
    for round_ in range(rounds):
        order = variants if round_ % 2 == 0 else variants[::-1]
        for variant in order:
            guarantee, merge = variant
            name = f"{topic}-{guarantee}{'-merge' if merge else ''}-{round_}"
            seconds[variant].append(pipeline(system, topic, name, variant, executor, expected))
    return seconds


def rate_range(events: int, seconds: list[float]) -> str:
    """The fastest run's events/s and, in brackets, the slowest's; the median run's seconds."""
    return (f"{events / min(seconds):>12,.0f} events/s [{events / max(seconds):,.0f}]"
            f"  median {statistics.median(seconds):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--executor", default="spark", choices=["spark", "local"])
    parser.add_argument("--rounds", type=int, default=2, help="runs of each guarantee, order alternating")
    parser.add_argument("--skip-pipeline", action="store_true", help="only the read paths")
    parser.add_argument("--quix-python", default=None, help="interpreter of a venv with quixstreams "
                        "(default: bench/.quix-venv, made on first use)")
    parser.add_argument("--no-quix", action="store_true", help="skip the Quix Streams row")
    parser.add_argument("--rows", default="a,a',m,m'",
                        help="the pipeline rows to run, of a,a',m,m' (Quix Streams needs a and a')")
    args = parser.parse_args()
    rows = [row.strip() for row in args.rows.split(",") if row.strip()]
    if not rows or not set(rows) <= set(ROWS):
        parser.error(f"--rows: name rows of {', '.join(ROWS)}, got {args.rows!r}")
    bootstrap = bootstrap_address(args.bootstrap)
    topic = f"bench-page-views-{uuid.uuid4().hex[:8]}"
    # Explicit retention configs: Tansu reports only the configs a topic was created with, and
    # Quix Streams derives its repartition topic's configs from the input's.
    system = KafkaSystem(
        "kafka", bootstrap, topic_config={"retention.ms": "604800000", "retention.bytes": "-1"}
    )
    events = generate_page_views(args.events)
    expected = expected_counts(events)
    try:
        system.create_stream(topic, PARTITIONS)
        started = time.perf_counter()
        system.write(topic, events)
        write_s = time.perf_counter() - started
        all_s, all_counts = floor(bootstrap, topic, len(events))
        each_s, each_counts = floor_by_partition(bootstrap, topic, system.newest_offsets(topic))
        floor_s = min(all_s, each_s)
        fetch_s, fetch_counts = system_fetch(system, topic)
        assert all_counts == expected, "the floor consumer counted wrong"
        assert each_counts == expected, "the floor consumer (partition by partition) counted wrong"
        assert fetch_counts == expected, "KafkaSystem.fetch counted wrong"
        append_s, dedup_s, copied = intermediate_round_trip(system, topic + "-intermediate", topic)
        assert copied == len(events), "the intermediate copy lost or duplicated records"
        print(f"events: {len(events):,} in {PARTITIONS} partitions of {topic} at {bootstrap}")
        print(f"write  KafkaSystem.write        {len(events) / write_s:>12,.0f} events/s")
        print(f"(c0)   one consumer, all partitions {len(events) / all_s:>8,.0f} events/s")
        print(f"(c1)   one consumer, by partition   {len(events) / each_s:>8,.0f} events/s")
        print(f"(c)    confluent-kafka floor    {len(events) / floor_s:>12,.0f} events/s  (the faster of c0, c1)")
        print(f"(k)    KafkaSystem.fetch        {len(events) / fetch_s:>12,.0f} events/s  k/c = {floor_s / fetch_s:.2f}")
        print(f"(i)    append with headers      {len(events) / append_s:>12,.0f} events/s")
        print(f"(i)    fetch with dedup         {len(events) / dedup_s:>12,.0f} events/s")
        if args.skip_pipeline:
            return
        print(f"pipeline: executor={args.executor}, {args.rounds} rounds after an untimed warm-up; "
              "fastest [slowest]")
        warm_up(system, topic + "-warm", args.executor)
        seconds = timed_rounds(system, topic, args.executor, args.rounds, expected, tuple(ROWS[r] for r in rows))
        titles = {"a": "samza_nb at-least-once", "a'": "samza_nb exactly-once",
                  "m": "at-least-once, merge=", "m'": "exactly-once, merge="}
        for row in rows:
            runs = seconds[ROWS[row]]
            print(f"{'(' + row + ')':<7}{titles[row]:<24} {rate_range(len(events), runs)}  "
                  f"{row}/c = {floor_s / min(runs):.2f}")
        quix_python = None if args.no_quix or not {"a", "a'"} <= set(rows) else (
            args.quix_python or _quix_venv.ensure())
        if quix_python is not None:
            a_s, eo_s = min(seconds[ROWS["a"]]), min(seconds[ROWS["a'"]])
            b_s = quix(str(quix_python), bootstrap, topic, len(events))
            print(f"(b)    Quix Streams             {len(events) / b_s:>12,.0f} events/s  "
                  f"a/b = {b_s / a_s:.2f}  a'/b = {b_s / eo_s:.2f}")
    finally:
        system.close()
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [name for name in admin.list_topics(timeout=10).topics if topic in name]
        for future in admin.delete_topics(topics).values():
            future.result(timeout=30)


if __name__ == "__main__":
    main()
