"""MessageStream operators: the specs they build and how they are wired (SAMZA.md §11.2)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from samza_nb.api import KV, LocalTable, MessageStream, StreamApplication, Windows, serdes
from samza_nb.plan.functions import identity, kv_key
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    FilterOperatorSpec,
    FlatMapOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    MapOperatorSpec,
    MergeOperatorSpec,
    OpCode,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    SinkOperatorSpec,
    StreamTableJoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.systems import EmbeddedSystem


@pytest.fixture
def system(tmp_path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path)


@pytest.fixture
def app() -> StreamApplication:
    return StreamApplication("ops")


@pytest.fixture
def views(app: StreamApplication, system: EmbeddedSystem) -> MessageStream:
    return app.input(system.input("views", partitions=4))


def test_input_operator(views: MessageStream) -> None:
    spec = views.spec
    assert isinstance(spec, InputOperatorSpec)
    assert (spec.op_id, spec.opcode, spec.stream_id, spec.system_name) == (
        "ops-1-input-0",
        OpCode.INPUT,
        "views",
        "embedded",
    )
    assert spec.serde == serdes.json() and not spec.is_intermediate


@pytest.mark.parametrize(
    ("method", "spec_type", "opcode"),
    [
        ("map", MapOperatorSpec, OpCode.MAP),
        ("flat_map", FlatMapOperatorSpec, OpCode.FLAT_MAP),
        ("filter", FilterOperatorSpec, OpCode.FILTER),
        ("sink", SinkOperatorSpec, OpCode.SINK),
    ],
)
def test_stateless_operators(
    views: MessageStream, method: str, spec_type: type, opcode: OpCode
) -> None:
    def fn(message: object) -> object:
        return message

    result = getattr(views, method)(fn)
    assert isinstance(result, MessageStream)
    assert isinstance(result.spec, spec_type)
    assert result.spec.opcode is opcode and result.spec.fn is fn  # type: ignore[attr-defined]
    assert result.op_id == f"ops-1-{opcode.value}-1"
    assert views.spec.next_ops == [result.spec]


def test_user_location_is_the_callers_line(views: MessageStream) -> None:
    mapped = views.map(lambda m: m)
    location = mapped.spec.user_location
    assert location is not None and location.endswith(f"test_message_stream.py:{_line() - 2}")
    assert (
        views.spec.user_location is not None
        and "test_message_stream.py" in views.spec.user_location
    )


def _line() -> int:
    import inspect

    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def test_partition_by_builds_a_shuffle_and_a_hidden_input(views: MessageStream) -> None:
    keyed = views.partition_by(lambda v: v["page"], op_id="by-page")
    shuffle = views.spec.next_ops[0]
    assert isinstance(shuffle, PartitionByOperatorSpec)
    assert shuffle.stream_id == shuffle.op_id == keyed.op_id == "ops-1-partition_by-by-page"
    assert shuffle.value_fn is identity
    assert shuffle.serde == serdes.kv(serdes.json(), serdes.json())
    assert shuffle.next_ops == []  # the intermediate stream separates the stages
    reader = keyed.spec
    assert isinstance(reader, InputOperatorSpec) and reader.is_intermediate
    assert (reader.op_id, reader.stream_id) == ("ops-1-input-2", shuffle.stream_id)
    custom = serdes.kv(serdes.string(), serdes.json())
    other = views.partition_by(len, len, op_id="p2", serde=custom)
    assert other.spec.serde is custom  # type: ignore[attr-defined]


def test_broadcast(views: MessageStream) -> None:
    everyone = views.broadcast(op_id="all")
    shuffle = views.spec.next_ops[0]
    assert isinstance(shuffle, BroadcastOperatorSpec)
    assert shuffle.stream_id == everyone.op_id == "ops-1-broadcast-all"
    assert shuffle.serde == serdes.json()
    assert everyone.spec.is_intermediate  # type: ignore[attr-defined]


def test_merge(views: MessageStream, app: StreamApplication, system: EmbeddedSystem) -> None:
    clicks = app.input(system.input("clicks", partitions=4))
    assert views.merge() is views  # no operator (Samza)
    merged = views.merge(clicks)
    assert isinstance(merged.spec, MergeOperatorSpec)
    assert views.spec.next_ops == clicks.spec.next_ops == [merged.spec]
    assert MessageStream.merge_all([views]) is views
    third = views.map(lambda m: m)
    all_three = MessageStream.merge_all([views, clicks, third])
    assert merged.op_id == "ops-1-merge-2" and all_three.op_id == "ops-1-merge-4"
    assert third.spec.next_ops == [all_three.spec]


def test_stream_stream_join(
    views: MessageStream, app: StreamApplication, system: EmbeddedSystem
) -> None:
    clicks = app.input(system.input("clicks", partitions=4))
    joined = views.join(clicks, lambda v, c: (v, c), ttl=timedelta(minutes=2), op_id="vc")
    spec = joined.spec
    assert isinstance(spec, JoinOperatorSpec)
    assert spec.left is views.spec and spec.right is clicks.spec
    assert spec.left_key_fn is kv_key and spec.right_key_fn is kv_key
    assert spec.ttl_ms == 120_000
    assert views.spec.next_ops == clicks.spec.next_ops == [spec]
    custom = views.join(clicks, lambda v, c: v, ttl=5, op_id="c", key_fn=len, other_key_fn=str)
    assert custom.spec.left_key_fn is len and custom.spec.right_key_fn is str  # type: ignore[attr-defined]


def test_tables(views: MessageStream, app: StreamApplication) -> None:
    table = app.table(LocalTable("profiles"))
    assert table.table_id == "profiles" and table.app is app
    written = views.map(lambda v: KV(v["user"], v)).send_to(table)
    assert isinstance(written.spec, SendToTableOperatorSpec)
    assert written.spec.table is table.spec and written.spec.opcode is OpCode.SEND_TO
    enriched = views.join_table(table.spec, lambda v, kv: v)  # a registered LocalTable works too
    spec = enriched.spec
    assert isinstance(spec, StreamTableJoinOperatorSpec)
    assert spec.table is table.spec and spec.key_fn is kv_key
    assert spec.op_id == "ops-1-join-3"


def test_send_to_output_passes_messages_on(
    views: MessageStream, app: StreamApplication, system: EmbeddedSystem
) -> None:
    out = app.output(system.output("out", partitions=2, serde=serdes.kv("string", "json")))
    assert (out.stream_id, out.partitions, out.system_name) == ("out", 2, "embedded")
    sent = views.send_to(out)
    spec = sent.spec
    assert isinstance(spec, OutputOperatorSpec)
    assert (spec.op_id, spec.stream_id, spec.system_name) == ("ops-1-send_to-1", "out", "embedded")
    assert isinstance(spec.serde, serdes.KVSerde)
    again = sent.send_to(out)  # fan-out of writes
    assert spec.next_ops == [again.spec]


def test_window(views: MessageStream) -> None:
    window = Windows.tumbling(timedelta(seconds=5))
    windowed = views.window(window, op_id="w")
    assert isinstance(windowed.spec, WindowOperatorSpec)
    assert windowed.spec.window is window and windowed.op_id == "ops-1-window-w"


def test_issue_example(tmp_path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path)
    app = StreamApplication("page-views", job_id="1", config=None)
    views = app.input(system.input("page-views", partitions=4, serde="json"))
    counts = app.output(system.output("counts", partitions=4, serde="json"))
    (views.filter(lambda v: v["country"] == "US")
          .partition_by(lambda v: v["page"], lambda v: v, op_id="by-page")
          .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=10),
                                         initial=lambda: 0, fold=lambda kv, n: n + 1), op_id="count")
          .map(lambda pane: KV(pane.key.key, pane.message))
          .send_to(counts))  # fmt: skip
    plan = app.plan()
    assert plan.intermediate_streams == {"page-views-1-partition_by-by-page": 4}
    assert len(plan.stages) == 2
    assert plan.window_ms == 10_000
