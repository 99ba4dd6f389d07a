"""(b) of bench/kafka.py: the quickstart pipeline in Quix Streams, the Python peer.

Run in a venv of its own (``pip install quixstreams``), never imported by samza_nb:

    QUIX_VENV/bin/python bench/kafka_quix.py BOOTSTRAP INPUT_TOPIC EVENTS [--current]

Same shape as samza_nb's: filter US views → ``group_by`` page (a repartition topic) → one-hour
tumbling count per page (RocksDB window state with a changelog topic) → output topic. It stops
after an inactivity timeout and prints the seconds from its start to the last message it
processed (the last line of its output).
"""

from __future__ import annotations

import sys
import time
import uuid
from datetime import timedelta
from typing import Any

from _scratch import scratch_dir

INACTIVITY_S = 5.0


def main() -> None:
    from quixstreams import Application

    bootstrap, topic, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
    app = Application(
        broker_address=bootstrap,
        consumer_group=f"{topic}-quix-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest",
        processing_guarantee="at-least-once",
        state_dir=str(scratch_dir("bench-quix-")),
        loglevel="WARNING",
    )
    views = app.topic(topic, value_deserializer="json")
    counts = app.topic(f"{topic}-quix-counts", value_serializer="json")
    last = [0.0]
    processed = [0]

    def seen(value: Any) -> None:
        processed[0] += 1
        last[0] = time.perf_counter()

    frame = app.dataframe(views)
    frame = frame.filter(lambda view: view["country"] == "US")
    frame = frame.group_by("page")
    frame = frame.update(seen)
    windows = frame.tumbling_window(timedelta(hours=1)).count()
    # final(): a window's count goes out when the window closes, as samza_nb's tumbling windows
    # emit; current() (--current) would emit an update per message.
    frame = windows.current() if "--current" in sys.argv else windows.final()
    frame.to_topic(counts)
    started = time.perf_counter()
    app.run(timeout=INACTIVITY_S)
    print(f"quix: {processed[0]:,} US views counted from {events:,} events", file=sys.stderr)
    print(f"{last[0] - started:.3f}")


if __name__ == "__main__":
    main()
