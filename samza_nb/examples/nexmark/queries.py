"""NEXMark queries as samza_nb applications over the ``nexmark`` stream.

q0  pass-through: every bid, unchanged.
q1  currency conversion: every bid with its price in euros (``price * 0.908``, rounded down).
q2  selection: (auction, price) of the bids on auctions whose id is a multiple of 123.
q3  local item suggestion: (name, city, state, auction id) of every auction in category 10
    whose seller is a person in OR, ID or CA (an unwindowed inner join on seller = person id).
    Persons (by id) and auctions (by seller) cross one shuffle each into a stream-stream join
    with ``keep="all"``, which keeps every message per key and side for ``Q3_TTL`` (an hour of
    processing time): an auction that reaches the join before its seller's person waits for
    it, so the result does not depend on how the sides interleave as long as a person and
    their auctions reach the join within the TTL of each other (samza_nb's default join,
    Samza's, keeps only the latest message per key and side and would lose such auctions).
    A TTL stream-stream join, not a table join: it is symmetric (either side may come first),
    needs no buffer beside the table, and bounds its state by the TTL.
q5  hot items: per hopping event-time window of 10 s every 2 s, the auction(s) with the most
    bids, as ``KV(window start, {"auction", "num"})`` (the SQL's rows, with their window);
    every auction tied for the most is a row (as in the nexmark repository's SQL,
    ``num >= max``). Bids cross one shuffle by auction into
    a keyed hopping window that counts them; the counts cross a second shuffle by window start
    into a tumbling window (one slide long) that keeps the maximum and who reached it.
q7  highest bid: per 10 s event-time window, every bid at the window's highest price, as
    ``KV(window start, bid)``: the highest price first, then the bids joined back to it (the
    nexmark repository's SQL joins the bids with ``MAX(price)`` per window; Beam's Query7
    gives the maximum to a scan of the window's bids as a side input). The maximum is global,
    computed in two phases as Flink's planner does: each task's highest price per window, then
    one shuffle to a single key and the highest of those. It is broadcast to every task, where
    a tumbling window keeps each of the window's bids (the join's state, as Flink's join keeps
    them) and, when the watermark passes the window's end, emits those at that price.
q8  new users: the persons who opened an auction in the same 10 s event-time window as they
    registered. Persons (by id) and auctions (by seller) cross one shuffle into one keyed
    event-time window (a windowed join): each pane folds "registered here" and "sold here".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.systems import EmbeddedSystem

__all__ = ["HOP_SIZE_MS", "HOP_SLIDE_MS", "Q3_STATES", "Q3_TTL", "QUERIES", "WINDOW_MS", "build_query"]

WINDOW_MS = 10_000
#: q5's hopping windows: the last 10 s, every 2 s (the nexmark repository's q5).
HOP_SIZE_MS, HOP_SLIDE_MS = 10_000, 2_000
#: q3's sellers' states, and how long its join keeps a person or auction (processing time).
Q3_STATES = ("OR", "ID", "CA")
Q3_TTL = timedelta(hours=1)


def _is_bid(event: dict[str, Any]) -> bool:
    return bool(event["type"] == "bid")


def _to_euro(bid: dict[str, Any]) -> dict[str, Any]:
    bid["price"] = bid["price"] * 908 // 1000
    return bid


def _q0(app: StreamApplication, events: Any, out: Any) -> None:
    events.filter(_is_bid).send_to(out)


def _q1(app: StreamApplication, events: Any, out: Any) -> None:
    events.filter(_is_bid).map(_to_euro).send_to(out)


def _q2(app: StreamApplication, events: Any, out: Any) -> None:
    (
        events.filter(lambda e: e["type"] == "bid" and e["auction"] % 123 == 0)
        .map(lambda bid: {"auction": bid["auction"], "price": bid["price"]})
        .send_to(out)
    )


def _q3(app: StreamApplication, events: Any, out: Any) -> None:
    persons = events.filter(
        lambda e: e["type"] == "person" and e["state"] in Q3_STATES
    ).partition_by(
        lambda p: p["id"], lambda p: {"name": p["name"], "city": p["city"], "state": p["state"]},
        op_id="persons-by-id",
    )
    auctions = events.filter(
        lambda e: e["type"] == "auction" and e["category"] == 10
    ).partition_by(lambda a: a["seller"], lambda a: a["id"], op_id="auctions-by-seller")
    persons.join(
        auctions, lambda person, auction: {**person.value, "id": auction.value},
        ttl=Q3_TTL, keep="all", op_id="sellers",
    ).send_to(out)


def _hottest(row: Any, best: Any) -> Any:
    num, auction = row.value["num"], row.value["auction"]
    if best is None or num > best[0]:
        return [num, [auction]]
    if num == best[0]:
        best[1].append(auction)
    return best


def _q5(app: StreamApplication, events: Any, out: Any) -> None:
    (
        events.filter(_is_bid)
        .partition_by(lambda bid: bid["auction"], lambda bid: bid["date_time"], op_id="bids-by-auction")
        .window(
            Windows.keyed_hopping(
                lambda kv: kv.key, HOP_SIZE_MS, HOP_SLIDE_MS, event_time=lambda kv: kv.value,
                initial=lambda: 0, fold=lambda kv, n: n + 1,
            ),
            op_id="bids-per-auction",
        )
        .map(lambda pane: {"start": int(pane.key.pane_id), "auction": pane.key.key, "num": pane.message})
        .partition_by(lambda row: row["start"], op_id="counts-by-window")
        # A hopping pane fires when the watermark passes its end, so its row carries the end's
        # last millisecond as event time: the slide-long tumbling pane that holds it closes on
        # the same watermark, after every upstream task's rows for the window arrived.
        .window(
            Windows.keyed_tumbling(
                lambda kv: kv.key, HOP_SLIDE_MS, initial=lambda: None, fold=_hottest,
                event_time=lambda kv: kv.value["start"] + HOP_SIZE_MS - 1,
            ),
            op_id="hottest",
        )
        .flat_map(lambda pane: [
            KV(pane.key.key, {"auction": auction, "num": pane.message[0]})
            for auction in sorted(pane.message[1])
        ])
        .send_to(out)
    )


def _highest_price(bid: Any, best: Any) -> Any:
    return bid["price"] if best is None or bid["price"] > best else best


def _highest_of(row: Any, best: Any) -> Any:
    price = row.value["price"]
    return price if best is None or price > best else best


def _bid_or_highest(message: Any, pane: Any) -> Any:
    if message["type"] == "bid":
        pane[1].append(message)
    else:
        pane[0] = message["price"]
    return pane


def _at_highest(pane: Any) -> list[KV]:
    highest, bids = pane.message
    start = int(pane.key.pane_id)
    return [KV(start, bid) for bid in bids if bid["price"] == highest]


def _q7(app: StreamApplication, events: Any, out: Any) -> None:
    bids = events.filter(_is_bid)
    highest = (
        # Each task's highest price per window first (Flink's local-global aggregation): one
        # row per task and window crosses the shuffle instead of every bid.
        bids.window(
            Windows.tumbling(
                WINDOW_MS, initial=lambda: None, fold=_highest_price,
                event_time=lambda bid: bid["date_time"],
            ),
            op_id="highest-here",
        )
        .map(lambda pane: {"start": int(pane.key.pane_id), "price": pane.message})
        .partition_by(lambda row: 0, op_id="all-windows")
        # As in q5: a row carries its window's last millisecond as event time, so the pane
        # that collects it closes on the watermark that follows every upstream task's rows.
        .window(
            Windows.tumbling(
                WINDOW_MS, initial=lambda: None, fold=_highest_of,
                event_time=lambda kv: kv.value["start"] + WINDOW_MS - 1,
            ),
            op_id="highest",
        )
        # The highest price carries its window's last millisecond as event time (as q5's rows
        # do): it lands in the pane of the bids it is joined with, and the watermark that
        # follows it on the broadcast stream closes that pane.
        .map(lambda pane: {
            "type": "highest", "price": pane.message,
            "date_time": int(pane.key.pane_id) + WINDOW_MS - 1,
        })
        .broadcast(op_id="highest-to-all")
    )
    (
        bids.merge(highest)
        .window(
            Windows.tumbling(
                WINDOW_MS, initial=lambda: [None, []], fold=_bid_or_highest,
                event_time=lambda message: message["date_time"],
            ),
            op_id="join-highest",
        )
        .flat_map(_at_highest)
        .send_to(out)
    )


def _registered_or_sold(kv: Any, acc: Any) -> Any:
    name, sold = acc
    if kv.value["type"] == "person":
        return [kv.value["name"], sold]
    return [name, True]


def _q8(app: StreamApplication, events: Any, out: Any) -> None:
    (
        events.filter(lambda e: e["type"] in ("person", "auction"))
        .partition_by(
            lambda e: e["id"] if e["type"] == "person" else e["seller"], op_id="by-person"
        )
        .window(
            Windows.keyed_tumbling(
                lambda kv: kv.key, WINDOW_MS, initial=lambda: [None, False],
                fold=_registered_or_sold, event_time=lambda kv: kv.value["date_time"],
            ),
            op_id="new-users",
        )
        .filter(lambda pane: pane.message[0] is not None and pane.message[1])
        .map(lambda pane: KV(pane.key.key, [int(pane.key.pane_id), pane.message[0]]))
        .send_to(out)
    )


QUERIES: dict[str, Callable[[StreamApplication, Any, Any], None]] = {
    "q0": _q0, "q1": _q1, "q2": _q2, "q3": _q3, "q5": _q5, "q7": _q7, "q8": _q8,
}


def build_query(
    query: str,
    system: EmbeddedSystem,
    *,
    partitions: int = 4,
    stream: str = "nexmark",
    config: dict[str, str] | None = None,
) -> StreamApplication:
    """The application of ``query`` reading ``stream``, writing ``<query>-out``."""
    app = StreamApplication(f"nexmark-{query}", job_id="1", config=config)
    events = app.input(system.input(stream, partitions=partitions))
    out = app.output(system.output(f"{query}-out", partitions=partitions))
    QUERIES[query](app, events, out)
    return app
