"""The quickstart: count US page views per page in tumbling windows.

page-views -> filter(country == US) -> partition_by(page) -> keyed tumbling count -> page-counts

The count has ``merge=``, so each task counts the views it shuffles and sends one partial count
per page and epoch through the durable shuffle (plan/combining.py).

From a shell, over the default embedded system (``$SAMZA_NB_HOME``)::

    python -m samza_nb.examples.page_views --events 100000   # write the input
    samza-nb plan samza_nb.examples.page_views:app
    samza-nb run samza_nb.examples.page_views:app

Over Kafka (the input topic ``page-views`` has no end: run until caught up or drain)::

    python -m samza_nb.examples.page_views --kafka localhost:9092 --events 100000
    SAMZA_NB_KAFKA_BOOTSTRAP=localhost:9092 samza-nb run samza_nb.examples.page_views:kafka_app
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from datetime import timedelta
from typing import Any

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.systems import EmbeddedSystem, KafkaSystem, StreamSystem

__all__ = [
    "app",
    "build_app",
    "expected_counts",
    "generate_page_views",
    "kafka_app",
    "write_page_views",
]

COUNTRIES = ("US", "US", "US", "DE", "IN", "BR")


def generate_page_views(count: int, *, pages: int = 50, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` page-view events with a skewed page popularity (deterministic)."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(pages)]
    chosen = rng.choices(range(pages), weights=weights, k=count)
    return [
        {"user": f"user-{rng.randrange(10_000)}", "page": f"page-{page}", "country": rng.choice(COUNTRIES)}
        for page in chosen
    ]


def write_page_views(
    system: EmbeddedSystem | KafkaSystem,
    events: list[dict[str, Any]],
    *,
    partitions: int = 4,
    end: bool = True,
    stream: str = "page-views",
) -> None:
    """Create the ``page-views`` stream (if needed), write the events, optionally end it
    (embedded only: a Kafka topic has no end of stream)."""
    system.create_stream(stream, partitions)
    system.write(stream, events)
    if end and isinstance(system, EmbeddedSystem):
        system.end_stream(stream)


def expected_counts(events: list[dict[str, Any]]) -> dict[str, int]:
    """The plain-Python reference: US views per page."""
    return dict(Counter(event["page"] for event in events if event["country"] == "US"))


def build_app(
    system: StreamSystem,
    *,
    name: str = "page-views",
    partitions: int = 4,
    window: timedelta = timedelta(seconds=10),
    config: dict[str, str] | None = None,
    stream_prefix: str = "",
) -> StreamApplication:
    """The quickstart application over ``system``, reading ``{stream_prefix}page-views`` and
    writing ``{stream_prefix}page-counts``."""
    app = StreamApplication(name, job_id="1", config=config)
    views = app.input(system.input(f"{stream_prefix}page-views", partitions=partitions, serde="json"))
    counts = app.output(system.output(f"{stream_prefix}page-counts", partitions=partitions, serde="json"))
    (
        views.filter(lambda view: view["country"] == "US")
        .partition_by(lambda view: view["page"], lambda view: view, op_id="by-page")
        .window(
            Windows.keyed_tumbling(
                lambda kv: kv.key,
                window,
                initial=lambda: 0,
                fold=lambda kv, n: n + 1,
                # Counts add up: each task counts what it shuffles, and one partial count per
                # page and epoch crosses the shuffle (as Spark's reduceByKey combines).
                merge=lambda a, b: a + b,
            ),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return app


def app() -> StreamApplication:
    """The quickstart over the default embedded system (what ``samza-nb run`` loads)."""
    return build_app(EmbeddedSystem("embedded"))


def kafka_app() -> StreamApplication:
    """The quickstart over Kafka at ``$SAMZA_NB_KAFKA_BOOTSTRAP`` (client secrets, if any, in
    ``$SAMZA_NB_KAFKA_CONFIG_FILE``)."""
    return build_app(KafkaSystem("kafka"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write generated page views to the embedded system or to a Kafka topic."
    )
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--path", default=None, help="embedded system folder (default $SAMZA_NB_HOME/embedded)")
    parser.add_argument("--no-end", action="store_true", help="leave the stream open (unbounded)")
    parser.add_argument(
        "--kafka",
        metavar="BOOTSTRAP",
        default=None,
        help="write the topic page-views to this Kafka cluster instead (host:port[,host:port]; "
        "client secrets in $SAMZA_NB_KAFKA_CONFIG_FILE)",
    )
    parser.add_argument("--topic", default="page-views", help="Kafka topic (default page-views)")
    args = parser.parse_args(argv)
    events = generate_page_views(args.events, seed=args.seed)
    us = sum(expected_counts(events).values())
    if args.kafka:
        kafka = KafkaSystem("kafka", args.kafka)
        try:
            write_page_views(kafka, events, partitions=args.partitions, stream=args.topic)
        finally:
            kafka.close()
        print(f"wrote {len(events):,} page views ({us:,} from the US) to topic {args.topic!r} at {args.kafka}")
        return 0
    system = EmbeddedSystem("embedded", path=args.path)
    write_page_views(system, events, partitions=args.partitions, end=not args.no_end)
    print(f"wrote {len(events):,} page views ({us:,} from the US) to {system.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
