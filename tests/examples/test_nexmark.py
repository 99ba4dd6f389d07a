"""NEXMark queries on samza_nb equal the plain-Python reference (small sizes, in-process)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from samza_nb.examples.nexmark import build_query, generate, reference, write_events
from samza_nb.examples.nexmark.reference import canonical
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

EVENTS = 3_000


def test_generator_keeps_the_standard_proportions() -> None:
    kinds = Counter(event["type"] for event in generate(5_000))
    assert kinds == {"person": 100, "auction": 300, "bid": 4_600}
    bids = [e for e in generate(5_000) if e["type"] == "bid"]
    hottest = Counter(bid["auction"] for bid in bids).most_common(1)[0][1]
    assert hottest > len(bids) / 10, "no hot auction"


@pytest.mark.parametrize("query", ["q0", "q1", "q2", "q7", "q8"])
def test_query_equals_the_reference(tmp_path: Path, query: str) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    # One event per 10 ms of event time: three 10 s windows.
    events = generate(EVENTS, gap_ms=10)
    write_events(system, events, partitions=2, chunk=500)
    run_local(build_query(query, system, partitions=2), until="end-of-stream")
    frame = system.read(f"{query}-out")
    if query in ("q7", "q8"):
        got = Counter(canonical([k, v]) for k, v in zip(frame["key"], frame["value"], strict=True))
    else:
        got = Counter(canonical(v) for v in frame["value"])
    expected = reference(query, events)
    assert expected, "an empty reference proves nothing"
    assert got == expected
