"""Every validation error: a PlanError at the user's call, naming the operator and the fix."""

from __future__ import annotations

from datetime import timedelta

import pytest

from samza_nb.api import LocalTable, MessageStream, StreamApplication, Windows, serdes
from samza_nb.errors import ConfigError, PlanError

from ._support import FakeDescriptor, FakeSystem, Streams

HERE = "test_validation.py:"


def _app(streams: Streams, name: str = "v") -> tuple[StreamApplication, MessageStream]:
    app = StreamApplication(name)
    return app, app.input(streams.input("input1"))


# -- op ids --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "opcode"),
    [
        (lambda s: s.partition_by(lambda m: m), "partition_by"),
        (lambda s: s.window(Windows.tumbling(1000)), "window"),
        (lambda s: s.join(s.map(lambda m: m), lambda a, b: a, ttl=10), "join"),
        (lambda s: s.broadcast(), "broadcast"),
        (lambda s: s.partition_by(lambda m: m, op_id="  "), "partition_by"),
    ],
)
def test_op_id_is_required(streams: Streams, call, opcode: str) -> None:
    app, source = _app(streams)
    before = list(app.operator_ids)
    with pytest.raises(PlanError) as info:
        call(source)
    message = str(info.value)
    assert message.startswith(f"{opcode} on stream 'v-1-input-0' (at ")
    assert HERE in message and "needs an op_id" in message and f".{opcode}(" in message
    # A failed call takes no id (only the helper map of the join case did).
    assert [i for i in app.operator_ids if "map" not in i] == before


def test_bad_op_id_characters(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(
        PlanError, match=r"operator id 'by page' of partition_by \(at .*test_validation"
    ):
        source.partition_by(lambda m: m, op_id="by page")


def test_op_id_must_be_a_string(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(PlanError, match="window.*op_id must be a string"):
        source.window(Windows.tumbling(10), op_id=3)  # type: ignore[arg-type]


def test_duplicate_op_id_names_the_id(streams: Streams) -> None:
    _, source = _app(streams)
    source.window(Windows.tumbling(10), op_id="w")
    with pytest.raises(
        PlanError, match=r"duplicate operator ID 'v-1-window-w' at window \(at .*test_validation"
    ):
        source.window(Windows.tumbling(20), op_id="w")


def test_duplicate_partition_by_id(streams: Streams) -> None:
    _, source = _app(streams)
    source.partition_by(lambda m: m, op_id="p")
    with pytest.raises(PlanError, match="'v-1-partition_by-p'"):
        source.map(lambda m: m).partition_by(lambda m: m, op_id="p")


def test_intermediate_stream_id_clashing_with_a_declared_stream(tmp_path) -> None:
    system = FakeSystem()
    app = StreamApplication("v")
    app.output(FakeDescriptor(system, "v-1-partition_by-p", partitions=1))
    source = app.input(FakeDescriptor(system, "in", partitions=1))
    with pytest.raises(
        PlanError, match="partition_by 'v-1-partition_by-p'.*already a declared stream"
    ):
        source.partition_by(lambda m: m, op_id="p")


# -- joins -----------------------------------------------------------------------------------
def test_join_with_itself(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(
        PlanError, match=r"join 'v-1-join-self' \(at .*\): cannot join a MessageStream with itself"
    ):
        source.join(source, lambda a, b: a, ttl=100, op_id="self")


def test_mismatched_join_partitions(streams: Streams) -> None:
    app, source = _app(streams)
    other = app.input(streams.input("input3"))
    source.join(other, lambda a, b: a, ttl=100, op_id="j").sink(print)
    with pytest.raises(PlanError) as info:
        app.plan()
    message = str(info.value)
    assert "'v-1-join-j'" in message and HERE in message
    assert "Expected: 64, Actual: 32" in message and "partition_by" in message


def test_join_with_a_table_needs_join_table(streams: Streams) -> None:
    app, source = _app(streams)
    table = app.table(LocalTable("t"))
    with pytest.raises(PlanError, match="join 'v-1-join-j'.*join_table"):
        source.join(table, lambda a, b: a, ttl=1, op_id="j")  # type: ignore[arg-type]


def test_a_table_named_like_a_windows_store_is_refused(streams: Streams) -> None:
    app, source = _app(streams)
    table = app.table(LocalTable("v-1-window-w"))
    source.send_to(table)
    source.window(Windows.tumbling(1000, initial=lambda: 0, fold=lambda m, n: n + 1), op_id="w").sink(print)
    with pytest.raises(PlanError, match=r"operator 'v-1-window-w' would keep its state in the store 'v-1-window-w', "
                                        r"which is already the store of table 'v-1-window-w'"):
        app.plan()


def test_a_store_name_too_long_for_a_folder_is_refused(streams: Streams) -> None:
    app, source = _app(streams)
    source.window(Windows.tumbling(1000, initial=lambda: 0, fold=lambda m, n: n + 1), op_id="w" * 300).sink(print)
    with pytest.raises(PlanError, match=r"is named 311 bytes long; keep it to 200"):
        app.plan()


@pytest.mark.parametrize("ttl", [0, -5, timedelta(0), "10s"])
def test_bad_ttl(streams: Streams, ttl: object) -> None:
    app, source = _app(streams)
    other = source.map(lambda m: m)
    with pytest.raises(PlanError, match=r"join 'v-1-join-j' \(at .*\): ttl"):
        source.join(other, lambda a, b: a, ttl=ttl, op_id="j")  # type: ignore[arg-type]


# -- another app's streams, outputs and tables -------------------------------------------------
def test_streams_of_another_app(streams: Streams) -> None:
    app_a, a = _app(streams, "a")
    app_b, b = _app(streams, "b")
    with pytest.raises(PlanError, match=r"join 'a-1-join-j'.*belongs to app 'b', not 'a'"):
        a.join(b, lambda x, y: x, ttl=1, op_id="j")
    with pytest.raises(PlanError, match=r"merge 'a-1-merge-1'.*belongs to app 'b'"):
        a.merge(b)
    out_b = app_b.output(streams.output("output1"))
    with pytest.raises(PlanError, match=r"send_to 'a-1-send_to-1'.*output belongs to app 'b'"):
        a.send_to(out_b)
    table_b = app_b.table(LocalTable("t"))
    with pytest.raises(PlanError, match=r"join 'a-1-join-1'.*table 't' belongs to app 'b'"):
        a.join_table(table_b, lambda m, kv: m)
    with pytest.raises(PlanError, match=r"send_to 'a-1-send_to-1'.*register table 't' first"):
        a.send_to(table_b.spec)


# -- functions -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "name", "what"),
    [
        (lambda s: s.map(3), "map 'v-1-map-1'", "fn must be a function"),
        (lambda s: s.filter("x"), "filter 'v-1-filter-1'", "fn must be a function"),
        (lambda s: s.flat_map(lambda: []), "flat_map 'v-1-flat_map-1'", "must accept 1 positional"),
        (lambda s: s.sink(None), "sink 'v-1-sink-1'", "fn must be a function"),
        (lambda s: s.partition_by(None, op_id="p"), "partition_by 'v-1-partition_by-p'", "key_fn"),
        (
            lambda s: s.partition_by(len, lambda a, b: a, op_id="p"),
            "partition_by 'v-1-partition_by-p'",
            "value_fn",
        ),
        (
            lambda s: s.join(s.map(len), lambda a: a, ttl=1, op_id="j"),
            "join 'v-1-join-j'",
            "join_fn",
        ),
        (
            lambda s: s.join(s.map(len), lambda a, b: a, ttl=1, op_id="j", key_fn=1),
            "join 'v-1-join-j'",
            "key_fn",
        ),
    ],
)
def test_bad_functions(streams: Streams, call, name: str, what: str) -> None:
    _, source = _app(streams)
    with pytest.raises(PlanError) as info:
        call(source)
    message = str(info.value)
    assert message.startswith(name) and what in message and HERE in message


def test_bad_window_fold(streams: Streams) -> None:
    with pytest.raises(
        PlanError,
        match=r"Windows.tumbling \(at .*\): fold .*2 positional arguments \(message, aggregate\)",
    ):
        Windows.tumbling(1000, initial=lambda: 0, fold=lambda n: n)
    with pytest.raises(PlanError, match="both initial= and fold="):
        Windows.tumbling(1000, initial=lambda: 0)


def test_window_needs_a_window_spec(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(
        PlanError, match=r"window 'v-1-window-w' \(at .*\): window must be built with Windows"
    ):
        source.window(1000, op_id="w")  # type: ignore[arg-type]


def test_side_input_processor_must_be_callable(streams: Streams) -> None:
    app, _ = _app(streams)
    with pytest.raises(PlanError, match="table 't'.*side_input_processor"):
        app.table(LocalTable("t", side_input_processor=42))  # type: ignore[arg-type]


# -- serdes ------------------------------------------------------------------------------------
def test_partition_by_needs_a_kv_serde(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(PlanError, match=r"partition_by 'v-1-partition_by-p' .*needs a KV serde"):
        source.partition_by(lambda m: m, op_id="p", serde=serdes.json())  # type: ignore[arg-type]


def test_unknown_serde_names_the_stream(streams: Streams) -> None:
    app = StreamApplication("v")
    with pytest.raises(PlanError, match="unknown serde 'xml' for input stream 'clicks'"):
        app.input(streams.system.input("clicks", partitions=1, serde="xml"))
    with pytest.raises(PlanError, match="not a serde for broadcast 'v-1-broadcast-b'"):
        app.input(streams.input("input1")).broadcast(op_id="b", serde=object())  # type: ignore[arg-type]


# -- declarations ----------------------------------------------------------------------------
def test_send_to_an_undeclared_descriptor(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(PlanError, match=r"send_to 'v-1-send_to-1'.*declare the output first"):
        source.send_to(streams.output("output1"))  # type: ignore[arg-type]


def test_streams_are_declared_once(streams: Streams) -> None:
    app, _ = _app(streams)
    with pytest.raises(PlanError, match="input stream 'input1'.*already an input"):
        app.input(streams.input("input1"))
    with pytest.raises(PlanError, match="output stream 'input1'.*already an input"):
        app.output(streams.system.output("input1", partitions=1))
    with pytest.raises(PlanError, match="output descriptor"):
        app.input(streams.output("output1"))
    with pytest.raises(PlanError, match="takes a descriptor"):
        app.input("clicks")


def test_tables_are_registered_once(streams: Streams) -> None:
    app, _ = _app(streams)
    table = LocalTable("t")
    assert app.table(table) is app.table(table)
    with pytest.raises(PlanError, match="table 't'.*already registered"):
        app.table(LocalTable("t"))


def test_operators_after_sink(streams: Streams) -> None:
    _, source = _app(streams)
    end = source.sink(print)
    assert end.op_id == "v-1-sink-1"
    with pytest.raises(PlanError, match=r"map \(at .*\): stream 'v-1-sink-1' comes from sink"):
        end.map(lambda m: m)


def test_merge_takes_streams(streams: Streams) -> None:
    _, source = _app(streams)
    with pytest.raises(PlanError, match="merge_all"):
        source.merge([source])  # type: ignore[arg-type]
    with pytest.raises(PlanError, match="merge_all.*at least one"):
        MessageStream.merge_all([])


# -- planning ----------------------------------------------------------------------------------
def test_bad_partition_count_in_a_descriptor() -> None:
    app = StreamApplication("v")
    with pytest.raises(PlanError, match="input stream 'clicks'.*positive int, got 0"):
        app.input(FakeDescriptor(FakeSystem(), "clicks", partitions=0))


def test_missing_stream_without_partitions() -> None:
    system = FakeSystem(name="kafka")
    app = StreamApplication("v")
    app.input(FakeDescriptor(system, "clicks")).sink(print)
    with pytest.raises(
        PlanError, match=r"input stream 'clicks' does not exist in system 'kafka'.*partitions=N"
    ):
        app.plan()


def test_non_positive_intermediate_partitions(streams: Streams) -> None:
    app, source = _app(streams)
    source.partition_by(lambda m: m, op_id="p").sink(print)
    # Refused when the config is built, before planning: one line with the allowed range.
    with pytest.raises(ConfigError, match="job.intermediate.stream.partitions='0': expected an integer from 1"):
        app.plan({"job.intermediate.stream.partitions": 0})


def test_batch_mode_with_host_affinity(streams: Streams) -> None:
    app, source = _app(streams)
    source.sink(print)
    with pytest.raises(PlanError, match="host affinity.*BATCH"):
        app.plan({"app.mode": "BATCH", "job.host-affinity.enabled": "true"})


def test_unknown_default_system(streams: Streams) -> None:
    app, source = _app(streams)
    source.partition_by(lambda m: m, op_id="p").sink(print)
    with pytest.raises(
        PlanError, match=r"job.default.system='kafka'.*partition_by 'v-1-partition_by-p'"
    ):
        app.plan({"job.default.system": "kafka"})


def test_app_name_and_config_checks() -> None:
    with pytest.raises(PlanError, match="app name 'page views'"):
        StreamApplication("page views")
    with pytest.raises(PlanError, match="job_id"):
        StreamApplication("a", job_id="1.0")
    with pytest.raises(ConfigError, match="app.name='b'"):
        StreamApplication("a", config={"app.name": "b"})
    with pytest.raises(ConfigError, match="did you mean"):
        StreamApplication("a", config={"job.intermediate.stream.partition": 3})
    assert StreamApplication("a", job_id=2).job_id == "2"  # type: ignore[arg-type]
