"""A stateful app with a large store: a running count per user in a LocalTable.

events -> KV(user, event) -> join the table (the user's count so far) -> count + 1
       -> the table (one entry per user: the store grows with the number of users)
       -> user-counts (KV(user, count); the last count of a user is its total)

Used by the hot standby notebook (08) and ``bench/failover.py``: the store holds one key per
user, so restore time after a failover shows whether it grows with the state.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from samza_nb.api import KV, LocalTable, StreamApplication
from samza_nb.systems import EmbeddedSystem, StreamSystem

__all__ = ["build_app", "expected_totals", "generate_events", "totals_of", "write_events"]


def generate_events(count: int, *, users: int, seed: int = 11) -> list[dict[str, Any]]:
    """``count`` events over ``users`` users; every user appears once before any repeats
    when ``count >= users`` (so the store ends with exactly ``users`` keys)."""
    rng = random.Random(seed)
    order = [f"user-{i}" for i in range(min(count, users))]
    order += [f"user-{rng.randrange(users)}" for _ in range(count - len(order))]
    return [{"user": user, "n": index} for index, user in enumerate(order)]


def write_events(system: EmbeddedSystem, events: list[dict[str, Any]], *, partitions: int = 4,
                 end: bool = True) -> None:
    """Create ``events`` (if needed), write them keyed by user, optionally end the stream."""
    system.create_stream("events", partitions)
    system.write("events", events, key_fn=lambda event: event["user"])
    if end:
        system.end_stream("events")


def expected_totals(events: list[dict[str, Any]]) -> dict[str, int]:
    """The plain-Python reference: events per user."""
    return dict(Counter(event["user"] for event in events))


def totals_of(frame: Any) -> dict[str, int]:
    """Per user, the highest count the job emitted (its total)."""
    if len(frame) == 0:
        return {}
    return {str(k): int(v) for k, v in frame.groupby("key")["value"].max().to_dict().items()}


def build_app(system: StreamSystem, *, name: str = "user-counts", partitions: int = 4,
              config: dict[str, str] | None = None) -> StreamApplication:
    app = StreamApplication(name, job_id="1", config=config)
    table = app.table(LocalTable("counts"))
    counts = app.output(system.output("user-counts", partitions=partitions, serde="json"))
    counted = (
        app.input(system.input("events", partitions=partitions, serde="json"))
        .map(lambda event: KV(event["user"], event))
        .join_table(table, lambda kv, row: KV(kv.key, (row.value if row else 0) + 1))
    )
    counted.send_to(table)
    counted.send_to(counts)
    return app
