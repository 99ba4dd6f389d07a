"""What a user's values become on their way through the engine: the stream's own serde on
every path, and window state that reads the same whichever epoch a pane fires in. Run on the
in-process executor."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.api.serdes import JsonSerde
from samza_nb.errors import TaskError
from samza_nb.plan.kv import from_storable, to_storable
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


class _Versioned(JsonSerde):
    """JSON with a version prefix: a subclass of the built-in serde with its own methods."""

    def to_bytes(self, value: Any) -> bytes:
        return b"v1:" + msgspec.json.encode(value)

    def from_bytes(self, data: bytes) -> Any:
        data = bytes(data)
        if not data.startswith(b"v1:"):
            msg = f"unversioned bytes {data!r}"
            raise ValueError(msg)
        return msgspec.json.decode(data[3:])


def test_a_subclass_of_the_json_serde_has_its_own_methods_called_on_every_path(
    system: EmbeddedSystem, tmp_path: Path
) -> None:
    system.create_stream("in", 1)
    system.write("in", [{"n": 1}, {"n": 2}], serde=_Versioned())
    system.end_stream("in")
    app = StreamApplication("versioned")
    out = app.output(system.output("out", partitions=1, serde=_Versioned()))
    (
        app.input(system.input("in", partitions=1, serde=_Versioned()))
        .partition_by(lambda m: m["n"], op_id="by-n")
        .map(lambda kv: {"n": kv.value["n"] * 10})
        .send_to(out)
    )
    job = run_local(app, {"job.home": str(tmp_path / "home")}, clock=StepClock(step_ms=1))
    assert [bytes(record.value) for _, record in system.read_records("out", 0, 0, 10)] == [
        b'v1:{"n":10}',
        b'v1:{"n":20}',
    ]
    assert job.collect("out")["value"].tolist() == [{"n": 10}, {"n": 20}]


@pytest.mark.parametrize("per_epoch", ["100", "1"])
def test_window_keys_and_aggregates_read_the_same_whichever_epoch_a_pane_fires_in(
    system: EmbeddedSystem, tmp_path: Path, per_epoch: str
) -> None:
    # One message an epoch: every pane is saved and read back from its store before it fires.
    system.create_stream("events", 1)
    system.write("events", [["a", 1], ["a", 1], ["b", 2]])
    system.end_stream("events")
    app = StreamApplication("pane-types")
    out = app.output(system.output("out", partitions=1))
    (
        app.input(system.input("events", partitions=1))
        .window(
            Windows.keyed_tumbling(
                lambda m: (m[0], m[1]),  # a tuple key
                timedelta(hours=1),
                initial=lambda: {"seen": ()},  # a tuple in the aggregate
                fold=lambda m, agg: {"seen": [*agg["seen"], m[1]], "was": type(agg["seen"]).__name__},
            ),
            op_id="w",
        )
        .map(lambda pane: [type(pane.key.key).__name__, pane.key.key, pane.message])
        .send_to(out)
    )
    config = {"job.home": str(tmp_path / "home"), "task.max.epoch.messages": per_epoch}
    job = run_local(app, config, until="end-of-stream", clock=StepClock(step_ms=1))
    assert sorted(job.collect("out")["value"].tolist()) == [
        ["list", ["a", 1], {"seen": [1, 1], "was": "list"}],
        ["list", ["b", 2], {"seen": [2], "was": "list"}],
    ]


def test_a_set_aggregate_fails_at_its_first_message_naming_the_window(system: EmbeddedSystem, tmp_path: Path) -> None:
    system.create_stream("events", 1)
    system.write("events", ["x", "y"])
    system.end_stream("events")
    app = StreamApplication("set-agg")
    out = app.output(system.output("out", partitions=1))
    app.input(system.input("events", partitions=1)).window(
        Windows.tumbling(timedelta(hours=1), initial=set, fold=lambda m, seen: seen | {m}), op_id="w"
    ).send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app, {"job.home": str(tmp_path / "home")}, clock=StepClock(step_ms=1))
    assert (failure.value.op_id, failure.value.offset) == ("set-agg-1-window-w", 0)
    assert "list" in str(failure.value)


@pytest.mark.parametrize("per_epoch", ["1", "1000"])
def test_a_kv_anywhere_in_an_aggregate_reads_back_as_a_kv(
    system: EmbeddedSystem, tmp_path: Path, per_epoch: str
) -> None:
    # KVs in a dict's values and in lists of the aggregate survive its store, in the epoch
    # that saved it or the next (joins keep their messages with the same functions).
    system.create_stream("events", 1)
    system.write("events", [["a", 1], ["a", 2], ["b", 3]])
    system.end_stream("events")
    app = StreamApplication("kv-inside")
    out = app.output(system.output("out", partitions=1))
    (
        app.input(system.input("events", partitions=1))
        .window(
            Windows.keyed_tumbling(
                lambda m: m[0],
                timedelta(hours=1),
                initial=lambda: {"last": None, "all": []},
                fold=lambda m, agg: {
                    "last": KV(m[0], {"at": KV("n", m[1])}),
                    "all": [*agg["all"], [KV("n", m[1])]],
                    "kinds": sorted({type(agg["last"]).__name__, *(type(t[0]).__name__ for t in agg["all"])}),
                    "mine": {"__kv__": m[1]},  # a user's dict that looks like the store's tag
                },
            ),
            op_id="w",
        )
        .map(lambda pane: pane.message)
        .send_to(out)
    )
    config = {"job.home": str(tmp_path / "home"), "task.max.epoch.messages": per_epoch}
    job = run_local(app, config, until="end-of-stream", clock=StepClock(step_ms=1))
    panes = sorted(job.collect("out")["value"].tolist(), key=lambda pane: len(pane["all"]))
    # The output stream is JSON (a KV is a list there); the fold saw KVs every time.
    assert [pane["kinds"] for pane in panes] == [["NoneType"], ["KV"]]
    assert panes[1]["last"] == ["a", {"at": ["n", 2]}]
    assert panes[1]["mine"] == {"__kv__": 2}


def test_a_kv_nested_in_a_dict_round_trips_through_a_store() -> None:
    value = {
        "last": KV("k", {"inner": KV(1, [KV(2, None)])}),
        "plain": {"x": [1, 2]},
        "looks-like-a-tag": {"__kv__": 5},
        "looks-like-the-escape": {"__kv_escaped__": {"__kv__": [1, 2]}},
        "t": (KV("a", 1),),  # a tuple keeps msgpack's array (a key's bytes never change)
    }
    stored = msgspec.msgpack.decode(msgspec.msgpack.encode(to_storable(value)))
    assert from_storable(stored) == {
        "last": KV("k", {"inner": KV(1, [KV(2, None)])}),
        "plain": {"x": [1, 2]},
        "looks-like-a-tag": {"__kv__": 5},
        "looks-like-the-escape": {"__kv_escaped__": {"__kv__": [1, 2]}},
        "t": [["a", 1]],
    }
    assert msgspec.msgpack.encode(to_storable(("page", KV("a", 1)))) == msgspec.msgpack.encode(("page", ("a", 1)))
    flat = {"page": "a", "n": 1}
    assert to_storable(flat) is flat and from_storable(flat) is flat  # no copy of plain values


@pytest.mark.parametrize(
    ("key", "value", "tags_in_bytes"),
    [
        ("page-1", [None, [{"auction": 1, "price": 30, "extra": "x" * 40}, {"auction": 2, "price": 30}]], False),
        (7, {"n": [1, 2.5, None, True, b"raw"], "t": ("a", 1)}, False),
        ("page-1", [KV("k", {"inner": KV(1, [KV(2, None)])}), {"looks-like-a-tag": {"__kv__": 5}}], True),
        ("page-1", {"looks-like-the-escape": {"__kv_escaped__": {"__kv__": [1, 2]}}}, True),
        ("page-1", {"text": "a message that says __kv__", "raw": b"__kv_escaped__"}, True),
        (KV("a", 1), [{"page": "a"}], True),
    ],
    ids=["plain-messages", "plain-values", "kvs", "escaped", "tag-text-in-values", "kv-key"],
)
def test_a_pane_reads_back_as_from_storable_gives_it_whether_or_not_its_bytes_hold_a_tag(
    key: Any, value: Any, tags_in_bytes: bool
) -> None:
    # Pane.decode skips from_storable's walk when the bytes cannot hold a tagged or escaped
    # map (a pane of thousands of plain messages): it reads back the same either way.
    from samza_nb.plan.kv import may_hold_tags
    from samza_nb.runtime.task.window_panes import Pane

    data = Pane(key, 10_000, value, count=2).encode()
    assert may_hold_tags(data) is tags_in_bytes
    stored_key, _ts, stored_value, *_rest = msgspec.msgpack.decode(data)
    read = Pane.decode(data)
    assert (read.key, read.value) == (from_storable(stored_key), from_storable(stored_value))
    assert read.key == key
