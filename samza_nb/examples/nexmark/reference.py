"""Each NEXMark query's result in plain Python, as a multiset the tests compare against."""

from __future__ import annotations

from collections import Counter
from typing import Any

from samza_nb.examples.nexmark.queries import HOP_SIZE_MS, HOP_SLIDE_MS, Q3_STATES, WINDOW_MS

__all__ = ["KEYED", "canonical", "reference", "result"]

#: Queries whose output rows are KVs (compared as ``[key, value]``).
KEYED = frozenset({"q5", "q7", "q8"})


def canonical(value: Any) -> str:
    """A hashable, order-free form of a result row."""
    import json

    return json.dumps(value, sort_keys=True)


def result(query: str, frame: Any) -> Counter[str]:
    """A query's output (a frame with ``key`` and ``value`` columns) in the reference's form."""
    if query in KEYED:
        return Counter(canonical([k, v]) for k, v in zip(frame["key"], frame["value"], strict=True))
    return Counter(canonical(v) for v in frame["value"])


def reference(query: str, events: list[dict[str, Any]]) -> Counter[str]:
    bids = [e for e in events if e["type"] == "bid"]
    if query == "q0":
        return Counter(canonical(b) for b in bids)
    if query == "q1":
        return Counter(canonical({**b, "price": b["price"] * 908 // 1000}) for b in bids)
    if query == "q2":
        return Counter(
            canonical({"auction": b["auction"], "price": b["price"]})
            for b in bids if b["auction"] % 123 == 0
        )
    if query == "q3":
        persons = {e["id"]: e for e in events if e["type"] == "person" and e["state"] in Q3_STATES}
        return Counter(
            canonical({"name": p["name"], "city": p["city"], "state": p["state"], "id": a["id"]})
            for a in events
            if a["type"] == "auction" and a["category"] == 10 and (p := persons.get(a["seller"]))
        )
    if query == "q5":
        counts: Counter[tuple[int, int]] = Counter()
        for b in bids:
            ts = b["date_time"]
            start = ts - ts % HOP_SLIDE_MS
            while start > ts - HOP_SIZE_MS:
                counts[(start, b["auction"])] += 1
                start -= HOP_SLIDE_MS
        most: dict[int, int] = {}
        for (start, _auction), num in counts.items():
            most[start] = max(most.get(start, 0), num)
        return Counter(
            canonical([start, {"auction": auction, "num": num}])
            for (start, auction), num in counts.items() if num == most[start]
        )
    if query == "q7":
        highest: dict[int, int] = {}
        for b in bids:
            start = b["date_time"] - b["date_time"] % WINDOW_MS
            highest[start] = max(highest.get(start, 0), b["price"])
        return Counter(
            canonical([start, b]) for b in bids
            if b["price"] == highest[start := b["date_time"] - b["date_time"] % WINDOW_MS]
        )
    if query == "q8":
        names: dict[tuple[int, int], str] = {}
        sold: set[tuple[int, int]] = set()
        for e in events:
            start = e["date_time"] - e["date_time"] % WINDOW_MS
            if e["type"] == "person":
                names[(e["id"], start)] = e["name"]
            elif e["type"] == "auction":
                sold.add((e["seller"], start))
        return Counter(
            canonical([person, [start, name]])
            for (person, start), name in names.items() if (person, start) in sold
        )
    msg = f"unknown query {query!r}"
    raise ValueError(msg)
