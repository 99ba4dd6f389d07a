"""Event-time tumbling windows: panes by the message's timestamp, fired by the watermark, with
results that do not depend on how the input is cut into epochs (in-process executor)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.errors import PlanError
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

SIZE = 10_000


def _events(count: int) -> list[dict[str, Any]]:
    # Timestamps move forward with some disorder inside a window's span.
    return [
        {"user": f"u{i % 5}", "ts": i * 700 + (i * 37) % 900}
        for i in range(count)
    ]


def _write(system: EmbeddedSystem, events: list[dict[str, Any]], *, end: bool) -> None:
    system.create_stream("clicks", 2)
    for part in range(2):
        mine = events[part::2]
        for start in range(0, len(mine), 10):
            chunk = mine[start : start + 10]
            system.write("clicks", chunk, partition=part)
            # A source watermark: nothing older than the chunk's smallest timestamp follows.
            later = mine[start + 10 :]
            if later:
                system.write_watermark("clicks", part, min(e["ts"] for e in later))
    if end:
        system.end_stream("clicks")


def _app(system: EmbeddedSystem, name: str) -> StreamApplication:
    app = StreamApplication(name, job_id="1")
    out = app.output(system.output(f"{name}-counts", partitions=1))
    (
        app.input(system.input("clicks", partitions=2))
        .partition_by(lambda e: e["user"], op_id="by-user")
        .window(
            Windows.keyed_tumbling(
                lambda kv: kv.key, SIZE, initial=lambda: 0, fold=lambda kv, n: n + 1,
                event_time=lambda kv: kv.value["ts"],
            ),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, [int(pane.key.pane_id), pane.message]))
        .send_to(out)
    )
    return app


def _reference(events: list[dict[str, Any]], watermark: int | None = None) -> Counter[tuple[str, int]]:
    counts: Counter[tuple[str, int]] = Counter()
    for event in events:
        start = event["ts"] - event["ts"] % SIZE
        if watermark is None or start + SIZE <= watermark:
            counts[(event["user"], start)] += 1
    return counts


def _panes(system: EmbeddedSystem, stream: str) -> Counter[tuple[str, int]]:
    frame = system.read(stream)
    panes: Counter[tuple[str, int]] = Counter()
    for key, (start, count) in zip(frame["key"], frame["value"], strict=True):
        assert (key, start) not in panes, "a pane fired twice"
        panes[(key, start)] = count
    return panes


@pytest.mark.parametrize("epoch_messages", ["25", "100000"])
def test_counts_per_event_time_window_do_not_depend_on_epochs(
    tmp_path: Path, epoch_messages: str
) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _events(160)
    _write(system, events, end=True)
    run_local(_app(system, "et"), {"task.max.epoch.messages": epoch_messages}, until="end-of-stream")
    assert _panes(system, "et-counts") == _reference(events)


def test_panes_fire_when_the_watermark_passes_their_end(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = _events(120)
    _write(system, events, end=False)
    run_local(_app(system, "wm"), until=6)
    # Only panes that ended before both partitions' last watermark have fired, each once.
    last = min(
        min(e["ts"] for e in events[part::2][-(len(events[part::2]) % 10 or 10):])
        for part in range(2)
    )
    fired = _panes(system, "wm-counts")
    assert fired, "no pane fired on the watermark"
    assert fired == _reference(events, watermark=last)


def test_late_messages_are_dropped(tmp_path: Path) -> None:
    # One stage: the window reads the source, so the watermark reaches it in log order (after
    # a shuffle, lateness also depends on how producers interleave, as in any stream system).
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("clicks", 1)
    system.write("clicks", [{"user": "a", "ts": 1_000}])
    system.write_watermark("clicks", 0, 25_000)
    # Behind the watermark: its pane [0, 10 s) already fired.
    system.write("clicks", [{"user": "a", "ts": 2_000}, {"user": "a", "ts": 30_000}])
    system.end_stream("clicks")
    app = StreamApplication("late", job_id="1")
    out = app.output(system.output("late-counts", partitions=1))
    (
        app.input(system.input("clicks", partitions=1))
        .window(
            Windows.keyed_tumbling(
                lambda e: e["user"], SIZE, initial=lambda: 0, fold=lambda e, n: n + 1,
                event_time=lambda e: e["ts"],
            ),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, [int(pane.key.pane_id), pane.message]))
        .send_to(out)
    )
    job = run_local(app, until="end-of-stream")
    assert _panes(system, "late-counts") == Counter({("a", 0): 1, ("a", 30_000): 1})
    window = next(op for op in job.metrics()["operator_counters"] if op.endswith("window-count"))
    assert job.metrics()["operator_counters"][window]["dropped"] == 1  # the late one, counted


def test_event_time_must_be_a_one_argument_function() -> None:
    with pytest.raises(PlanError, match="event_time"):
        Windows.tumbling(SIZE, event_time=lambda: 0)  # type: ignore[arg-type]


def _fired_pane_app(tmp_path: Path, name: str) -> tuple[EmbeddedSystem, StreamApplication]:
    """Two clicks of key b in the window [0, 10 s) and a source watermark at 20 s that fires
    its pane; the app counts clicks per key and event-time window into ``panes``."""
    from datetime import timedelta

    system = EmbeddedSystem("log", path=tmp_path / "log")
    system.create_stream("clicks", 1)
    system.write("clicks", [{"k": "b", "ts": 1000}, {"k": "b", "ts": 2000}])
    system.write_watermark("clicks", 0, 20_000)
    app = StreamApplication(name, job_id="1")
    (
        app.input(system.input("clicks", partitions=1))
        .window(Windows.keyed_tumbling(lambda m: m["k"], timedelta(seconds=10), initial=lambda: 0,
                                       fold=lambda m, n: n + 1, event_time=lambda m: m["ts"]), op_id="w")
        .map(lambda pane: [pane.key.key, pane.key.pane_id, pane.message])
        .send_to(app.output(system.output("panes", partitions=1)))
    )
    return system, app


@pytest.mark.parametrize("runs", [1, 2])
def test_a_late_message_is_dropped_whether_read_in_the_same_run_or_a_later_one(tmp_path: Path, runs: int) -> None:
    system, app = _fired_pane_app(tmp_path, "late-runs")
    if runs == 2:
        run_local(app, until="caught-up")  # the pane fires in this run; the next has a new run id
    system.write("clicks", [{"k": "b", "ts": 5000}])  # late: its pane fired at watermark 20 s
    system.end_stream("clicks")
    job = run_local(app, until="end-of-stream")
    assert [tuple(v) for v in job.collect("panes")["value"]] == [("b", "0", 2)]
    assert job.metrics()["operator_counters"]["late-runs-1-window-w"]["dropped"] == 1


def test_a_run_that_reads_its_input_again_starts_its_watermarks_over(tmp_path: Path) -> None:
    _system, app = _fired_pane_app(tmp_path, "again")
    run_local(app, until="caught-up")
    # samza.reset.offset: the next run reads from the oldest offset again; its messages are
    # not late for the watermark the first run reached.
    job = run_local(app, {"streams.clicks.samza.reset.offset": "true"}, until="caught-up")
    assert [tuple(v) for v in job.collect("panes")["value"]] == [("b", "0", 2), ("b", "0", 2)]
