"""NEXMark queries on samza_nb equal the plain-Python reference (small sizes, in-process)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from samza_nb.examples.nexmark import build_query, generate, reference, write_events
from samza_nb.examples.nexmark.generator import AVERAGE_SIZES, size_in_bytes
from samza_nb.examples.nexmark.reference import result
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

EVENTS = 3_000


def test_generator_keeps_the_standard_proportions() -> None:
    kinds = Counter(event["type"] for event in generate(5_000))
    assert kinds == {"person": 100, "auction": 300, "bid": 4_600}
    bids = [e for e in generate(5_000) if e["type"] == "bid"]
    hottest = Counter(bid["auction"] for bid in bids).most_common(1)[0][1]
    assert hottest > len(bids) / 10, "no hot auction"


@pytest.mark.parametrize("query", ["q0", "q1", "q2", "q3", "q5", "q7", "q8"])
def test_query_equals_the_reference(tmp_path: Path, query: str) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    # One event per 10 ms of event time: three 10 s windows.
    events = generate(EVENTS, gap_ms=10)
    write_events(system, events, partitions=2, chunk=500)
    run_local(build_query(query, system, partitions=2), until="end-of-stream")
    got = result(query, system.read(f"{query}-out"))
    expected = reference(query, events)
    assert expected, "an empty reference proves nothing"
    assert got == expected


def test_q5_keeps_every_auction_tied_for_the_most_bids(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    placed = [(100, 1), (200, 2), (300, 3), (2_500, 1), (2_600, 2), (2_700, 2), (12_100, 1), (12_200, 3)]
    bids = [
        {"type": "bid", "auction": auction, "bidder": 0, "price": 1, "date_time": ts}
        for ts, auction in placed
    ]
    write_events(system, bids, partitions=2, chunk=3)
    run_local(build_query("q5", system, partitions=2), until="end-of-stream")
    expected = reference("q5", bids)
    starts = Counter(json.loads(row)[0] for row in expected)
    assert max(starts.values()) >= 2, "no tie in the reference"
    assert result("q5", system.read("q5-out")) == expected


def test_q7_joins_back_every_bid_at_the_highest_price_of_its_window(tmp_path: Path) -> None:
    """q7 emits each bid at its window's highest price, wherever its task: bids tied at the
    highest price in different partitions all come out, and a bid at a price that is the
    highest of another window does not."""
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    placed = [  # (date_time, auction, bidder, price), round robin over two partitions
        (100, 9, 1, 60), (200, 4, 8, 50), (300, 4, 2, 70), (400, 6, 1, 70),
        (10_100, 5, 5, 50), (10_200, 5, 3, 60), (10_300, 2, 9, 10), (10_400, 1, 1, 20),
    ]
    bids = [
        {"type": "bid", "auction": auction, "bidder": bidder, "price": price, "date_time": ts}
        for ts, auction, bidder, price in placed
    ]
    write_events(system, bids, partitions=2, chunk=4)
    run_local(build_query("q7", system, partitions=2), until="end-of-stream")
    expected = reference("q7", bids)
    assert result("q7", system.read("q7-out")) == expected
    rows = sorted((start, bid["date_time"]) for start, bid in map(json.loads, expected))
    assert rows == [(0, 300), (0, 400), (10_000, 10_200)]


def test_q7_reference_is_the_highest_price_joined_back_to_the_bids() -> None:
    """The reference itself, against a direct reading of the nexmark SQL: the bids whose price
    equals the MAX(price) of their 10 s window."""
    bids = [e for e in generate(EVENTS, gap_ms=10) if e["type"] == "bid"]
    windows: dict[int, list[dict[str, Any]]] = {}
    for bid in bids:
        windows.setdefault(bid["date_time"] // 10_000 * 10_000, []).append(bid)
    joined = [
        [start, bid] for start, members in windows.items()
        for bid in members if bid["price"] == max(b["price"] for b in members)
    ]
    assert len(windows) == 3
    assert Counter(json.dumps(row, sort_keys=True) for row in joined) == reference("q7", bids)


def test_events_carry_nexmarks_average_sizes_in_their_extra_field() -> None:
    events = generate(20_000)
    sizes: dict[str, list[int]] = {}
    for event in events:
        assert isinstance(event["extra"], str)
        sizes.setdefault(event["type"], []).append(size_in_bytes(event))
    for kind, average in AVERAGE_SIZES.items():
        mean = sum(sizes[kind]) / len(sizes[kind])
        assert abs(mean - average) <= 0.02 * average, (kind, mean)
        assert max(sizes[kind]) - min(sizes[kind]) > 0.1 * average, "padding drawn, not fixed"
    assert AVERAGE_SIZES == {"person": 200, "auction": 500, "bid": 100}
    # A bid's size counts each number as 8 bytes and each string by its length.
    bid = next(e for e in events if e["type"] == "bid")
    strings = len(bid["channel"]) + len(bid["url"]) + len(bid["extra"])
    assert size_in_bytes(bid) == 4 * 8 + strings


def _q3_events() -> list[dict[str, Any]]:
    events = generate(6_000, gap_ms=10)
    sellers = Counter(
        e["seller"] for e in events if e["type"] == "auction" and e["category"] == 10
    )
    assert max(sellers.values()) > 1, "a join keeping one auction per seller would pass too"
    return events


@pytest.mark.parametrize("persons", ["first", "last"])
def test_q3_does_not_depend_on_whether_persons_or_auctions_come_first(
    tmp_path: Path, persons: str
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _q3_events()
    people = [e for e in events if e["type"] == "person"]
    others = [e for e in events if e["type"] != "person"]
    write_events(system, people + others if persons == "first" else others + people,
                 partitions=2, chunk=1_000)
    run_local(build_query("q3", system, partitions=2), until="end-of-stream")
    expected = reference("q3", events)
    assert sum(expected.values()) > 10
    assert result("q3", system.read("q3-out")) == expected


def test_q3_auctions_wait_for_their_person_across_a_restart(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _q3_events()
    write_events(system, [e for e in events if e["type"] != "person"], partitions=2, end=False)
    app = build_query("q3", system, partitions=2)
    first = run_local(app, until="caught-up")
    assert not len(system.read("q3-out")), "no person yet, nothing joined"
    shutil.rmtree(first.store_root)  # the waiting auctions come back from the changelog
    people = [e for e in events if e["type"] == "person"]
    for part in range(2):
        system.write("nexmark", people[part::2], partition=part)
    system.end_stream("nexmark")
    run_local(app, until="end-of-stream")
    assert result("q3", system.read("q3-out")) == reference("q3", events)
