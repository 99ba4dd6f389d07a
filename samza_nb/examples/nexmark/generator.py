"""The NEXMark event generator (after the Beam/Flink generator, simplified).

Out of every 50 events one is a person, 3 are auctions and 46 are bids. Event time advances
by ``gap_ms`` per event (1 ms: 10 000 events per 10 s window). Hot keys as in NEXMark: half of
the bids go to the latest "hot" auction, a quarter of the auctions are sold by a hot seller and
a quarter of the bids come from a hot bidder; the rest pick recent auctions and persons.

Every event carries NEXMark's ``extra`` padding: a string of lowercase letters that brings the
event's size to the generator's configured average (200 bytes a person, 500 an auction, 100 a
bid), each event's padding drawn within ±20% of what its average needs, as the nexmark
repository's ``StringsGenerator.nextExtra`` does. The size is counted as NEXMark counts it:
8 bytes for each number and a string's length for each string (``size_in_bytes``); the
``type`` tag is the envelope, not a field.
"""

from __future__ import annotations

import random
from typing import Any

from samza_nb.systems import EmbeddedSystem

__all__ = ["AVERAGE_SIZES", "generate", "size_in_bytes", "write_events"]

PROPORTION = 50
PERSONS, AUCTIONS = 1, 3  # bids: the remaining 46 of every 50
HOT_AUCTION_RATIO, HOT_SELLER_RATIO, HOT_BIDDER_RATIO = 2, 4, 4
HOT_RATIO = 100  # a hot id is a multiple of this
_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle")
#: NEXMark's average event sizes in bytes (GeneratorConfig's avgPersonByteSize, avgAuctionByteSize
#: and avgBidByteSize defaults), reached with each event's ``extra`` field.
AVERAGE_SIZES = {"person": 200, "auction": 500, "bid": 100}
#: Paddings are slices of one random string: drawing each letter would cost more than the rest
#: of the generator.
_PAD_SOURCE = 1 << 16


def size_in_bytes(event: dict[str, Any]) -> int:
    """The event's size as NEXMark counts it: 8 bytes a number, a string's length a string."""
    return sum(
        len(value) if isinstance(value, str) else 8 for name, value in event.items() if name != "type"
    )


def _padded(event: dict[str, Any], rng: random.Random, letters: str) -> dict[str, Any]:
    """``event`` with its ``extra`` field, sized as ``nextExtra`` sizes it."""
    wanted = AVERAGE_SIZES[event["type"]] - size_in_bytes(event)
    length = 0
    if wanted > 0:
        delta = round(wanted * 0.2)
        length = wanted - delta + (rng.randrange(2 * delta) if delta else 0)
    start = rng.randrange(len(letters) - length)
    event["extra"] = letters[start : start + length]
    return event


def generate(count: int, *, seed: int = 42, gap_ms: int = 1, first_ts: int = 0) -> list[dict[str, Any]]:
    """``count`` events as dicts with a ``type`` of person, auction or bid (deterministic)."""
    rng = random.Random(seed)
    letters = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=_PAD_SOURCE))
    events: list[dict[str, Any]] = []
    persons = auctions = 0
    for n in range(count):
        ts = first_ts + n * gap_ms
        slot = n % PROPORTION
        if slot < PERSONS or persons == 0:
            events.append(_padded({
                "type": "person", "id": persons, "name": f"person-{persons}",
                "email": f"p{persons}@example.com", "credit_card": f"{rng.randrange(10**15):016d}",
                "city": rng.choice(_CITIES), "state": rng.choice(_STATES), "date_time": ts,
            }, rng, letters))
            persons += 1
        elif slot < PERSONS + AUCTIONS or auctions == 0:
            if rng.randrange(HOT_SELLER_RATIO) > 0:
                seller = rng.randrange(max(1, persons - 10), persons) if persons > 1 else 0
            else:
                seller = (persons - 1) // HOT_RATIO * HOT_RATIO
            initial = rng.randrange(1, 1000)
            events.append(_padded({
                "type": "auction", "id": auctions, "item_name": f"item-{auctions}",
                "description": "", "initial_bid": initial, "reserve": initial * 2,
                "date_time": ts, "expires": ts + 10_000 + rng.randrange(20_000), "seller": seller,
                "category": 10 + rng.randrange(5),
            }, rng, letters))
            auctions += 1
        else:
            if rng.randrange(HOT_AUCTION_RATIO) > 0:
                auction = (auctions - 1) // HOT_RATIO * HOT_RATIO
            else:
                auction = rng.randrange(max(0, auctions - 100), auctions)
            if rng.randrange(HOT_BIDDER_RATIO) > 0:
                bidder = rng.randrange(max(0, persons - 100), persons)
            else:
                bidder = (persons - 1) // HOT_RATIO * HOT_RATIO
            events.append(_padded({
                "type": "bid", "auction": auction, "bidder": bidder,
                "price": rng.randrange(1, 100_000), "channel": f"channel-{rng.randrange(4)}",
                "url": f"https://nexmark/{rng.randrange(1000)}", "date_time": ts,
            }, rng, letters))
    return events


def write_events(
    system: EmbeddedSystem,
    events: list[dict[str, Any]],
    *,
    stream: str = "nexmark",
    partitions: int = 4,
    chunk: int = 5_000,
    end: bool = True,
) -> None:
    """Write the events round robin over ``partitions``, each chunk followed by a source
    watermark per partition (the smallest timestamp still to come), then end the stream."""
    system.create_stream(stream, partitions)
    for start in range(0, len(events), chunk):
        part = events[start : start + chunk]
        for p in range(partitions):
            system.write(stream, part[p::partitions], partition=p)
        rest = events[start + chunk :]
        if rest:
            for p in range(partitions):
                system.write_watermark(stream, p, rest[0]["date_time"])
    if end:
        system.end_stream(stream)
