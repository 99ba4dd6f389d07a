"""The planner: SAMZA.md §11.4 partition inference and every scenario of §11.5."""

from __future__ import annotations

from datetime import timedelta

import pytest

from samza_nb.api import (
    KV,
    LocalTable,
    MessageStream,
    PlanWarning,
    StreamApplication,
    Windows,
    serdes,
)
from samza_nb.errors import ConfigError, PlanError, UnknownOperatorError
from samza_nb.plan.operators import InputOperatorSpec, MapOperatorSpec
from samza_nb.plan.planner import MAX_INFERRED_PARTITIONS

from ._support import FakeDescriptor, FakeSystem, Streams


def _join(a: MessageStream, b: MessageStream, op_id: str) -> MessageStream:
    return a.join(b, lambda x, y: (x, y), ttl=timedelta(seconds=1), op_id=op_id)


def _key(message: object) -> object:
    return message


# -- §11.5: partition inference ----------------------------------------------------------------
def test_intermediate_takes_max_of_inputs_and_outputs(streams: Streams) -> None:
    app = StreamApplication("test-app")
    out = app.output(streams.output("output1"))
    app.input(streams.input("input1")).partition_by(_key, op_id="p1").map(lambda m: m).send_to(out)
    plan = app.plan()
    assert plan.intermediate_streams == {"test-app-1-partition_by-p1": 64}
    assert plan.inputs == {"input1": 64}
    assert plan.outputs == {"output1": 8}


def test_job_intermediate_stream_partitions_wins(streams: Streams) -> None:
    app = StreamApplication("test-app", config={"job.intermediate.stream.partitions": 10})
    out = app.output(streams.output("output1"))
    app.input(streams.input("input1")).partition_by(_key, op_id="p1").map(lambda m: m).send_to(out)
    assert app.plan().intermediate_streams == {"test-app-1-partition_by-p1": 10}
    # Plan-time overrides work the same way.
    plain = StreamApplication("other")
    o = plain.output(streams.output("output1"))
    plain.input(streams.input("input1")).partition_by(_key, op_id="p1").send_to(o)
    plan = plain.plan({"job.intermediate.stream.partitions": "10"})
    assert plan.intermediate_streams == {"other-1-partition_by-p1": 10}


def test_stream_mode_ignores_the_batch_cap(streams: Streams) -> None:
    app = StreamApplication("test-app")
    out = app.output(streams.output("output1"))
    app.input(streams.input("input4")).partition_by(_key, op_id="p1").send_to(out)
    assert app.plan().intermediate_streams == {"test-app-1-partition_by-p1": 512}


def test_batch_mode_caps_inferred_partitions_at_256(streams: Streams) -> None:
    app = StreamApplication("test-app", config={"app.mode": "BATCH"})
    out = app.output(streams.output("output1"))
    app.input(streams.input("input4")).partition_by(_key, op_id="p1").send_to(out)
    plan = app.plan()
    assert plan.intermediate_streams == {"test-app-1-partition_by-p1": MAX_INFERRED_PARTITIONS}
    assert plan.config["streams.test-app-1-partition_by-p1.samza.offset.default"] == "oldest"


def test_batch_cap_does_not_apply_to_the_configured_count(streams: Streams) -> None:
    app = StreamApplication(
        "test-app", config={"app.mode": "BATCH", "job.intermediate.stream.partitions": 1000}
    )
    app.input(streams.input("input4")).partition_by(_key, op_id="p1").sink(print)
    assert app.plan().intermediate_streams == {"test-app-1-partition_by-p1": 1000}


def test_stream_stream_joins_force_the_joined_input_count(streams: Streams) -> None:
    # input1.map ⋈ input2.partitionBy("p1"); input3.partitionBy("p2") ⋈ the same p1 stream.
    app = StreamApplication("test-app")
    out1 = app.output(streams.output("output1"))
    out2 = app.output(streams.output("output2"))
    p1 = app.input(streams.input("input2")).partition_by(_key, op_id="p1")
    _join(app.input(streams.input("input1")).map(lambda m: m), p1, "j1").send_to(out1)
    p2 = app.input(streams.input("input3")).partition_by(_key, op_id="p2")
    _join(p2, p1, "j2").send_to(out2)
    plan = app.plan()
    assert plan.intermediate_streams == {
        "test-app-1-partition_by-p1": 64,
        "test-app-1-partition_by-p2": 64,
    }
    assert set(plan.join_streams["test-app-1-join-j1"]) == {"input1", "test-app-1-partition_by-p1"}


def test_complex_join_chain_resolves_every_intermediate(streams: Streams) -> None:
    # input1 ⋈ p2(input2); p3(input3) ⋈ p4(input4); p2 ⋈ p3.
    app = StreamApplication("test-app")
    out = app.output(streams.output("output1"))
    input1 = app.input(streams.input("input1"))
    p2 = app.input(streams.input("input2")).partition_by(_key, op_id="p2")
    p3 = app.input(streams.input("input3")).partition_by(_key, op_id="p3")
    p4 = app.input(streams.input("input4")).partition_by(_key, op_id="p4")
    _join(input1, p2, "j1").send_to(out)
    _join(p3, p4, "j2").send_to(out)
    _join(p2, p3, "j3").send_to(out)
    assert set(app.plan().intermediate_streams.values()) == {64}


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 2, 0), (2, 1, 0), (1, 0, 2)])
def test_joined_groups_fixpoint_is_order_independent(tmp_path, order: tuple[int, ...]) -> None:
    # Sets {e1 (known 64), e2?}, {e3?, e4?}, {e2?, e3?} → e2, e3, e4 all 64 (SAMZA.md §11.4.5).
    system = FakeSystem(counts={})
    app = StreamApplication("fix", config={"job.intermediate.stream.partitions": 3})
    e1 = app.input(FakeDescriptor(system, "e1", partitions=64))
    small = app.input(FakeDescriptor(system, "small", partitions=2))
    e2 = small.partition_by(_key, op_id="e2")
    e3 = small.partition_by(_key, op_id="e3")
    e4 = small.partition_by(_key, op_id="e4")
    joins = [(e1, e2), (e3, e4), (e2, e3)]
    for index in order:
        a, b = joins[index]
        _join(a, b, f"j{index}").sink(print)
    plan = app.plan()
    assert plan.intermediate_streams == {f"fix-1-partition_by-{e}": 64 for e in ("e2", "e3", "e4")}


def test_stream_table_join_through_send_to_edges(streams: Streams) -> None:
    # input2.partitionBy("p1") → sendTo(t); input1.partitionBy("p2") ⋈ t ⋈ input3 → both 32.
    app = StreamApplication("test-app")
    out = app.output(streams.output("output1"))
    table = app.table(LocalTable("t"))
    app.input(streams.input("input2")).partition_by(_key, op_id="p1").send_to(table)
    joined = (
        app.input(streams.input("input1"))
        .partition_by(_key, op_id="p2")
        .join_table(table, lambda m, kv: m)
    )
    _join(joined, app.input(streams.input("input3")), "j").send_to(out)
    plan = app.plan()
    assert plan.intermediate_streams == {
        "test-app-1-partition_by-p1": 32,
        "test-app-1-partition_by-p2": 32,
    }


def test_stream_table_join_with_side_input(streams: Streams) -> None:
    # Side input input1 (64) on t; input2.partitionBy("p1") ⋈ t → 64.
    app = StreamApplication("test-app")
    out = app.output(streams.output("output1"))
    table = app.table(LocalTable("t", side_inputs=(streams.input("input1"),)))
    app.input(streams.input("input2")).partition_by(_key, op_id="p1").join_table(
        table, lambda m, kv: m
    ).send_to(out)
    plan = app.plan()
    assert plan.intermediate_streams == {"test-app-1-partition_by-p1": 64}
    assert plan.side_inputs == {"input1": 64}
    assert plan.side_input_tables == {"input1": ("t",)}
    assert plan.streams["input1"].kind == "side_input"
    side_op = plan.input_operators["input1"]
    assert isinstance(side_op, InputOperatorSpec) and side_op.stream_id == "input1"
    assert side_op.op_id not in plan.operators  # side inputs feed the table, not the DAG
    assert "input1" not in plan.inputs


def test_direct_join_of_differently_partitioned_inputs_fails(streams: Streams) -> None:
    app = StreamApplication("test-app")
    _join(app.input(streams.input("input1")), app.input(streams.input("input3")), "j").sink(print)
    with pytest.raises(
        PlanError, match=r"'input3' for the join 'test-app-1-join-j'.*Expected: 64, Actual: 32"
    ):
        app.plan()


def test_send_to_table_then_join_with_other_input_fails(streams: Streams) -> None:
    # input1.sendTo(t); input1 ⋈ t ⋈ input2 (16) → error.
    app = StreamApplication("test-app")
    table = app.table(LocalTable("t"))
    input1 = app.input(streams.input("input1"))
    input1.send_to(table)
    joined = input1.join_table(table, lambda m, kv: m)
    _join(joined, app.input(streams.input("input2")), "j").sink(print)
    with pytest.raises(PlanError, match="test-app-1-join-j.*Expected: 64, Actual: 16"):
        app.plan()


def test_table_side_input_must_match_the_joined_stream(streams: Streams) -> None:
    # input1 (64) ⋈ t with side input input2 (16) → error.
    app = StreamApplication("test-app")
    table = app.table(LocalTable("t", side_inputs=(streams.input("input2"),)))
    app.input(streams.input("input1")).join_table(table, lambda m, kv: m).sink(print)
    with pytest.raises(PlanError, match="test-app-1-join-1.*Expected: 64, Actual: 16"):
        app.plan()


def test_join_then_send_to_the_same_table_terminates(streams: Streams) -> None:
    app = StreamApplication("test-app")
    table = app.table(LocalTable("t"))
    p1 = app.input(streams.input("input1")).partition_by(_key, op_id="p1")
    p1.join_table(table, lambda m, kv: m).send_to(table)
    plan = app.plan()
    assert plan.intermediate_streams == {"test-app-1-partition_by-p1": 64}


def test_broadcast_streams_have_one_partition_and_force_joins(streams: Streams) -> None:
    app = StreamApplication("test-app")
    rules = app.input(streams.input("input2")).broadcast(op_id="rules")
    p1 = app.input(streams.input("input1")).partition_by(_key, op_id="p1")
    _join(p1, rules, "j").sink(print)
    plan = app.plan()
    assert plan.intermediate_streams == {
        "test-app-1-broadcast-rules": 1,
        "test-app-1-partition_by-p1": 1,
    }
    assert plan.streams["test-app-1-broadcast-rules"].is_broadcast
    assert plan.config["task.broadcast.inputs"] == "system1.test-app-1-broadcast-rules#0"


# -- partition counts from the system ----------------------------------------------------------
def test_planner_asks_the_system_when_the_descriptor_has_no_count() -> None:
    system = FakeSystem(counts={"clicks": 6, "out": 3})
    app = StreamApplication("ask")
    out = app.output(FakeDescriptor(system, "out"))
    app.input(FakeDescriptor(system, "clicks")).partition_by(_key, op_id="p").send_to(out)
    app.input(FakeDescriptor(system, "given", partitions=2)).sink(print)
    plan = app.plan()
    assert plan.inputs == {"clicks": 6, "given": 2}
    assert plan.outputs == {"out": 3}
    assert plan.intermediate_streams == {"ask-1-partition_by-p": 6}
    assert system.asked == ["clicks", "out"]  # never for streams with a count
    assert plan.streams["ask-1-partition_by-p"].system is system


def test_planner_uses_the_embedded_system_for_existing_streams(tmp_path) -> None:
    from samza_nb.systems import EmbeddedSystem

    system = EmbeddedSystem("embedded", path=tmp_path)
    system.create_stream("clicks", 3)
    app = StreamApplication("emb")
    app.input(system.input("clicks")).sink(print)
    assert app.plan().inputs == {"clicks": 3}


# -- config, window interval, stages and producers ---------------------------------------------
def test_generated_intermediate_stream_config(streams: Streams) -> None:
    app = StreamApplication("test-app")
    app.input(streams.input("input1")).partition_by(_key, op_id="p1").sink(print)
    config = app.plan().config
    prefix = "streams.test-app-1-partition_by-p1.samza."
    assert config[prefix + "system"] == "system1"
    assert config[prefix + "physical.name"] == "test-app-1-partition_by-p1"
    assert config[prefix + "intermediate"] == "true"
    assert config[prefix + "delete.committed.messages"] == "true"
    assert config[prefix + "priority"] == "2147483647"
    assert prefix + "offset.default" not in config
    assert config["job.default.system"] == "system1"
    assert config["app.name"] == "test-app" and config["job.id"] == "1"


def test_batch_mode_run_id_suffixes_physical_names(streams: Streams) -> None:
    app = StreamApplication("test-app", config={"app.mode": "BATCH", "app.run.id": "r42"})
    app.input(streams.input("input1")).partition_by(_key, op_id="p1").sink(print)
    plan = app.plan()
    info = plan.streams["test-app-1-partition_by-p1"]
    assert info.physical_name == "test-app-1-partition_by-p1-r42"
    assert (
        plan.config["streams.test-app-1-partition_by-p1.samza.physical.name"] == info.physical_name
    )


def test_default_system_from_config(tmp_path) -> None:
    from samza_nb.systems import EmbeddedSystem

    first = EmbeddedSystem("first", path=tmp_path / "a")
    second = EmbeddedSystem("second", path=tmp_path / "b")
    app = StreamApplication("sys", config={"job.default.system": "second"})
    app.table(LocalTable("t", side_inputs=(second.input("side", partitions=2),)))
    app.input(first.input("in", partitions=2)).partition_by(_key, op_id="p").sink(print)
    plan = app.plan()
    assert plan.streams["sys-1-partition_by-p"].system is second
    assert plan.input_operators["sys-1-partition_by-p"].system_name == "second"
    no_config = StreamApplication("sys2")
    no_config.table(LocalTable("t", side_inputs=(second.input("side", partitions=2),)))
    no_config.input(first.input("in", partitions=2)).partition_by(_key, op_id="p").sink(print)
    assert no_config.plan().streams["sys2-1-partition_by-p"].system is first


def test_task_window_ms_is_the_gcd_of_windows_and_join_ttls(streams: Streams) -> None:
    # 8, 16, 1600 and 252 ms → 4 ms.
    app = StreamApplication("test-app")
    p1 = app.input(streams.input("input1")).partition_by(_key, op_id="p1")
    p2 = app.input(streams.input("input2")).partition_by(_key, op_id="p2")
    p1.window(Windows.tumbling(8), op_id="w8").sink(print)
    p2.window(
        Windows.keyed_session(lambda kv: kv.key, timedelta(milliseconds=16)), op_id="w16"
    ).sink(print)
    p1.join(p2, lambda a, b: a, ttl=1600, op_id="j1").sink(print)
    p2.join(p1, lambda a, b: a, ttl=timedelta(milliseconds=252), op_id="j2").sink(print)
    plan = app.plan()
    assert plan.window_ms == 4
    assert plan.config["task.window.ms"] == "4"


def test_user_task_window_ms_wins(streams: Streams) -> None:
    app = StreamApplication("test-app", config={"task.window.ms": 100})
    app.input(streams.input("input1")).window(Windows.tumbling(8), op_id="w").sink(print)
    assert app.plan().window_ms == 100
    assert StreamApplication("none").plan().window_ms is None


def test_stages_split_at_every_shuffle(streams: Streams) -> None:
    app = StreamApplication("page-views")
    out = app.output(streams.output("output1"))
    (
        app.input(streams.input("input1"))
        .filter(lambda v: True)
        .partition_by(lambda v: v["page"], op_id="by-page")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, 10_000), op_id="count")
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    plan = app.plan()
    assert [stage.operators for stage in plan.stages] == [
        ("page-views-1-input-0", "page-views-1-filter-1", "page-views-1-partition_by-by-page"),
        (
            "page-views-1-input-3",
            "page-views-1-window-count",
            "page-views-1-map-5",
            "page-views-1-send_to-6",
        ),
    ]
    first, second = plan.stages
    assert first.input_streams == ("input1",)
    assert first.output_streams == ("page-views-1-partition_by-by-page",)
    assert second.input_streams == ("page-views-1-partition_by-by-page",)
    assert second.output_streams == ("output1",)
    assert plan.stage_of("page-views-1-map-5") is second


def test_joins_and_merges_keep_their_inputs_in_one_stage(streams: Streams) -> None:
    app = StreamApplication("s")
    a = app.input(streams.input("input1"))
    b = app.input(streams.input("input4"))
    c = app.input(streams.input("input2"))
    a.merge(c).sink(print)
    b.sink(print)
    plan = app.plan()
    assert [stage.input_streams for stage in plan.stages] == [("input1", "input2"), ("input4",)]


def test_producer_streams_follow_samza_5_5(streams: Streams) -> None:
    # int1 ← {input1, input2}; int2 ← {input2, input3}; traversal stops at the shuffle.
    app = StreamApplication("prod")
    input1 = app.input(streams.input("input1"))
    input2 = app.input(streams.input("input2"))
    input3 = app.input(streams.input("input3"))
    int1 = input1.merge(input2).partition_by(_key, op_id="int1")
    input2.merge(input3.map(lambda m: m)).partition_by(_key, op_id="int2")
    int1.partition_by(_key, op_id="int3").sink(print)
    plan = app.plan({"job.intermediate.stream.partitions": 4})
    assert plan.producer_streams("prod-1-partition_by-int1") == {"input1", "input2"}
    assert plan.producer_streams("prod-1-partition_by-int2") == {"input2", "input3"}
    assert plan.producer_streams("prod-1-partition_by-int3") == {"prod-1-partition_by-int1"}
    assert plan.producer_streams("input1") == set()


def test_runtime_contract(streams: Streams) -> None:
    app = StreamApplication("rt")
    kv_serde = serdes.kv(serdes.string(), serdes.json())
    out = app.output(streams.system.output("kv-out", partitions=8, serde=kv_serde))
    table = app.table(LocalTable("t"))
    keyed = app.input(streams.input("input1")).partition_by(_key, op_id="p")
    keyed.send_to(table)
    keyed.send_to(out)
    plan = app.plan()
    assert set(plan.input_operators) == {"input1", "rt-1-partition_by-p"}
    assert set(plan.streams) == {"input1", "kv-out", "rt-1-partition_by-p"}
    info = plan.streams["rt-1-partition_by-p"]
    assert (info.kind, info.partitions, info.is_broadcast) == ("intermediate", 64, False)
    assert isinstance(info.serde, serdes.KVSerde)
    assert plan.streams["kv-out"].serde == serdes.kv(serdes.string(), serdes.json())
    assert plan.streams["input1"].kind == "input"
    assert plan.tables == {"t": table.spec}
    assert set(plan.operators) == set(plan.operator_ids)
    assert plan.input_operators["rt-1-partition_by-p"].is_intermediate


def test_plan_is_a_snapshot(streams: Streams) -> None:
    app = StreamApplication("snap")
    source = app.input(streams.input("input1"))
    source.map(lambda m: m)
    plan = app.plan()
    source.filter(bool)
    assert len(plan.operators) == 2
    spec = plan.operators["snap-1-input-0"]
    assert [n.op_id for n in spec.next_ops] == ["snap-1-map-1"]
    assert isinstance(spec.next_ops[0], MapOperatorSpec)
    assert spec is not source.spec
    assert len(app.plan().operators) == 3


def test_join_sides_are_rewired_in_the_snapshot(streams: Streams) -> None:
    app = StreamApplication("snap")
    a = app.input(streams.input("input1")).partition_by(_key, op_id="a")
    b = app.input(streams.input("input4")).partition_by(_key, op_id="b").map(lambda m: m)
    joined = a.join(b, lambda x, y: x, ttl=5, op_id="j")
    plan = app.plan({"job.intermediate.stream.partitions": 1})
    spec = plan.operators[joined.op_id]
    assert spec.left is plan.operators[a.spec.op_id]  # type: ignore[attr-defined]
    assert spec.right is plan.operators[b.op_id]  # type: ignore[attr-defined]


# -- warnings, not errors ----------------------------------------------------------------------
def test_unused_inputs_outputs_and_tables_warn(streams: Streams) -> None:
    app = StreamApplication("w")
    app.input(streams.input("input1"))
    app.output(streams.output("output1"))
    app.table(LocalTable("t"))
    with pytest.warns(PlanWarning) as record:
        plan = app.plan()
    messages = [str(w.message) for w in record]
    assert any("input 'input1'" in m for m in messages)
    assert any("output 'output1'" in m for m in messages)
    assert any("table 't'" in m for m in messages)
    assert all(w.filename == __file__ for w in record)  # points at the app.plan() call
    assert plan.inputs == {"input1": 64}


def test_bad_app_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="app.mode"):
        StreamApplication("m", config={"app.mode": "MICRO"}).plan()


def test_operators_are_found_by_full_or_short_op_id() -> None:
    from samza_nb.examples.page_views import build_app
    from samza_nb.systems import EmbeddedSystem

    plan = build_app(EmbeddedSystem("embedded", path="/nonexistent-never-opened")).plan()
    assert plan.operator("window-count") is plan.operator("page-views-1-window-count")
    assert plan.stage_of("window-count").id == plan.stage_of("page-views-1-window-count").id == 1
    assert plan.stage_of("filter-1").id == 0
    with pytest.raises(UnknownOperatorError, match="no operator 'window-cuont'") as raised:
        plan.stage_of("window-cuont")
    assert str(raised.value).startswith("no operator")  # not quoted as a KeyError's would be
