"""The quickstart: count US page views per page in tumbling windows.

page-views -> filter(country == US) -> partition_by(page) -> keyed tumbling count -> page-counts
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from typing import Any

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.systems import EmbeddedSystem

__all__ = ["build_app", "expected_counts", "generate_page_views", "write_page_views"]

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
    system: EmbeddedSystem, events: list[dict[str, Any]], *, partitions: int = 4, end: bool = True
) -> None:
    """Create the ``page-views`` stream (if needed), write the events, optionally end it."""
    system.create_stream("page-views", partitions)
    system.write("page-views", events)
    if end:
        system.end_stream("page-views")


def expected_counts(events: list[dict[str, Any]]) -> dict[str, int]:
    """The plain-Python reference: US views per page."""
    return dict(Counter(event["page"] for event in events if event["country"] == "US"))


def build_app(
    system: EmbeddedSystem,
    *,
    name: str = "page-views",
    partitions: int = 4,
    window: timedelta = timedelta(seconds=10),
    config: dict[str, str] | None = None,
) -> StreamApplication:
    """The quickstart application over ``system``."""
    app = StreamApplication(name, job_id="1", config=config)
    views = app.input(system.input("page-views", partitions=partitions, serde="json"))
    counts = app.output(system.output("page-counts", partitions=partitions, serde="json"))
    (
        views.filter(lambda view: view["country"] == "US")
        .partition_by(lambda view: view["page"], lambda view: view, op_id="by-page")
        .window(
            Windows.keyed_tumbling(
                lambda kv: kv.key, window, initial=lambda: 0, fold=lambda kv, n: n + 1
            ),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return app
