"""Event-time hopping windows: a message counts in every window covering its timestamp, panes
fire on the watermark, results do not depend on epochs and survive a restart from the
changelog (in-process executor)."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Triggers, Windows
from samza_nb.errors import PlanError
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

SIZE, SLIDE = 10_000, 2_000


def _events(count: int) -> list[dict[str, Any]]:
    # Timestamps move forward with some disorder inside a slide's span.
    return [{"user": f"u{i % 5}", "ts": i * 300 + (i * 37) % 900} for i in range(count)]


def _write(system: EmbeddedSystem, events: list[dict[str, Any]], *, end: bool = True) -> None:
    system.create_stream("clicks", 2)
    for part in range(2):
        mine = events[part::2]
        for start in range(0, len(mine), 10):
            system.write("clicks", mine[start : start + 10], partition=part)
            later = mine[start + 10 :]
            if later:
                system.write_watermark("clicks", part, min(e["ts"] for e in later))
    if end:
        system.end_stream("clicks")


def _app(system: EmbeddedSystem, name: str, size: int = SIZE, slide: int = SLIDE) -> StreamApplication:
    app = StreamApplication(name, job_id="1")
    out = app.output(system.output(f"{name}-counts", partitions=1))
    (
        app.input(system.input("clicks", partitions=2))
        .partition_by(lambda e: e["user"], op_id="by-user")
        .window(
            Windows.keyed_hopping(
                lambda kv: kv.key, size, slide, initial=lambda: 0, fold=lambda kv, n: n + 1,
                event_time=lambda kv: kv.value["ts"],
            ),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, [int(pane.key.pane_id), pane.message]))
        .send_to(out)
    )
    return app


def _reference(events: list[dict[str, Any]], size: int = SIZE, slide: int = SLIDE) -> Counter[tuple[str, int]]:
    counts: Counter[tuple[str, int]] = Counter()
    for event in events:
        ts = event["ts"]
        for start in range(ts - ts % slide - (size // slide + 1) * slide, ts + 1, slide):
            if start <= ts < start + size:
                counts[(event["user"], start)] += 1
    return counts


def _panes(system: EmbeddedSystem, stream: str) -> Counter[tuple[str, int]]:
    frame = system.read(stream)
    panes: Counter[tuple[str, int]] = Counter()
    for key, (start, count) in zip(frame["key"], frame["value"], strict=True):
        assert (key, start) not in panes, "a pane fired twice"
        panes[(key, start)] = count
    return panes


@pytest.mark.parametrize(("epoch_messages", "size", "slide"), [
    ("25", SIZE, SLIDE), ("100000", SIZE, SLIDE), ("40", 7_000, 3_000), ("40", 5_000, 5_000),
])
def test_counts_per_hopping_window_do_not_depend_on_epochs(
    tmp_path: Path, epoch_messages: str, size: int, slide: int
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _events(160)
    _write(system, events)
    run_local(_app(system, "hop", size, slide), {"task.max.epoch.messages": epoch_messages},
              until="end-of-stream")
    expected = _reference(events, size, slide)
    assert max(n for n in expected.values()) > 1
    assert _panes(system, "hop-counts") == expected


def test_hopping_panes_survive_a_restart_from_their_changelog(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _events(200)
    _write(system, events[:120], end=False)
    app = _app(system, "hop-restart")
    first = run_local(app, {"task.max.epoch.messages": "30"}, until=4)
    assert _panes(system, "hop-restart-counts"), "no pane fired before the restart"
    shutil.rmtree(first.store_root)  # the local stores are gone: the changelog restores them
    for part in range(2):
        system.write_watermark("clicks", part, min(e["ts"] for e in events[120:]))
        system.write("clicks", events[120:][part::2], partition=part)
    system.end_stream("clicks")
    run_local(app, {"task.max.epoch.messages": "30"}, until="end-of-stream")
    assert _panes(system, "hop-restart-counts") == _reference(events)


def test_a_drain_fires_every_open_hopping_pane(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _events(120)
    _write(system, events, end=False)  # no end of stream: only the drain closes the panes
    config = {"task.max.epoch.messages": "1000", "job.drain-monitor.poll.interval.ms": "20"}
    job = run_local(_app(system, "hop-drain"), config, until="forever", background=True)
    deadline = time.monotonic() + 60
    while job.epoch < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert job.drain(wait=True, timeout=120).state == "drained"
    assert _panes(system, "hop-drain-counts") == _reference(events)


def _late_run(tmp_path: Path, name: str, watermark: int, late_ts: int) -> tuple[EmbeddedSystem, int]:
    """A click at 1 s, the watermark, a click at ``late_ts``, the end; counted in hopping
    windows. Returns the log and the window's ``dropped`` counter."""
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("clicks", 1)
    system.write("clicks", [{"user": "a", "ts": 1_000}])
    system.write_watermark("clicks", 0, watermark)
    system.write("clicks", [{"user": "a", "ts": late_ts}])
    system.end_stream("clicks")
    app = StreamApplication(name, job_id="1")
    out = app.output(system.output(f"{name}-counts", partitions=1))
    (
        app.input(system.input("clicks", partitions=1))
        .window(
            Windows.hopping(SIZE, SLIDE, initial=lambda: 0, fold=lambda e, n: n + 1,
                            event_time=lambda e: e["ts"]),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, [int(pane.key.pane_id), pane.message]))
        .send_to(out)
    )
    job = run_local(app, until="end-of-stream")
    counters = job.metrics()["operator_counters"]
    window = next(op for op in counters if op.endswith("window-count"))
    return system, counters[window]["dropped"]


def test_a_late_message_joins_only_its_windows_still_open(tmp_path: Path) -> None:
    # The windows ending by 6 s (from -8, -6, -4 s) fired.
    system, dropped = _late_run(tmp_path, "late-hop", watermark=6_000, late_ts=1_500)
    assert _panes(system, "late-hop-counts") == Counter(
        {(None, -8_000): 1, (None, -6_000): 1, (None, -4_000): 1, (None, -2_000): 2, (None, 0): 2}
    )
    assert dropped == 0  # two windows still took it


def test_a_message_every_window_of_which_fired_is_dropped_and_counted(tmp_path: Path) -> None:
    # Every window holding 2 s has fired.
    system, dropped = _late_run(tmp_path, "gone-hop", watermark=25_000, late_ts=2_000)
    assert sum(_panes(system, "gone-hop-counts").values()) == 5  # the first message's 5 windows
    assert dropped == 1


def test_an_early_trigger_fires_each_hopping_pane_before_the_watermark(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("clicks", 1)
    system.write("clicks", [{"user": "a", "ts": 1_000}, {"user": "a", "ts": 2_500}])
    system.end_stream("clicks")
    app = StreamApplication("early-hop", job_id="1")
    out = app.output(system.output("early-hop-panes", partitions=1))
    (
        app.input(system.input("clicks", partitions=1))
        .window(
            Windows.hopping(4_000, SLIDE, initial=lambda: 0, fold=lambda e, n: n + 1,
                            event_time=lambda e: e["ts"], early_trigger=Triggers.count(2)),
            op_id="count",
        )
        .map(lambda pane: [int(pane.key.pane_id), pane.message, pane.trigger_type.value])
        .send_to(out)
    )
    run_local(app, until="end-of-stream")
    rows = sorted(tuple(row) for row in system.read("early-hop-panes")["value"])
    # Only the window from 0 s holds both messages: an early pane at the second, then the
    # final one; the windows from -2 s and 2 s hold one each.
    assert rows == [(-2_000, 1, "DEFAULT"), (0, 2, "DEFAULT"), (0, 2, "EARLY"), (2_000, 1, "DEFAULT")]


@pytest.mark.parametrize(("size", "slide", "event_time", "match"), [
    (SIZE, 0, lambda e: e["ts"], "keyed_hopping.*slide must be positive"),
    (SIZE, SIZE + 1, lambda e: e["ts"], "keyed_hopping.*slide .10001 ms. must not exceed size"),
    (0, SLIDE, lambda e: e["ts"], "keyed_hopping.*size must be positive"),
    (SIZE, SLIDE, None, "keyed_hopping.*event-time only"),
])
def test_hopping_arguments_are_checked(size: int, slide: int, event_time: Any, match: str) -> None:
    with pytest.raises(PlanError, match=match):
        Windows.keyed_hopping(lambda e: e["user"], size, slide, event_time=event_time)
