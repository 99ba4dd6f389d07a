"""Operator ids exactly as SAMZA.md §11.1: ``{app}-{job_id}-{opcode}-{user id or counter}``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.errors import PlanError
from samza_nb.plan.operators import OpCode

from ._support import Streams


def test_get_next_op_id_increments_on_every_id() -> None:
    # TestStreamApplicationDescriptorImpl: app "appName", id "1234".
    app = StreamApplication("appName", job_id="1234")
    assert app._allocate_op_id(OpCode.MERGE) == "appName-1234-merge-0"
    assert app._allocate_op_id(OpCode.JOIN, "customName") == "appName-1234-join-customName"
    assert app._allocate_op_id(OpCode.MAP) == "appName-1234-map-2"


def test_job_graph_json_generator_example(streams: Streams) -> None:
    # TestJobGraphJsonGenerator: job "test-app", id 1.
    app = StreamApplication("test-app", job_id="1")
    page_views = app.input(streams.input("input1"))
    output = app.output(streams.output("output1"))
    keyed = page_views.partition_by(lambda m: m["country"], op_id="keyed-by-country")
    counted = keyed.window(
        Windows.keyed_tumbling(
            lambda kv: kv.key, timedelta(seconds=10), initial=lambda: 0, fold=lambda m, n: n + 1
        ),
        op_id="count-by-country",
    )
    mapped = counted.map(lambda pane: KV(pane.key.key, pane.message))
    sent = mapped.send_to(output)

    assert page_views.op_id == "test-app-1-input-0"
    assert keyed.op_id == "test-app-1-partition_by-keyed-by-country"
    assert keyed.spec.op_id == "test-app-1-input-2"  # the hidden intermediate input operator
    assert counted.op_id == "test-app-1-window-count-by-country"
    assert mapped.op_id == "test-app-1-map-4"
    assert sent.op_id == "test-app-1-send_to-5"
    assert app.operator_ids == [
        "test-app-1-input-0",
        "test-app-1-partition_by-keyed-by-country",
        "test-app-1-input-2",
        "test-app-1-window-count-by-country",
        "test-app-1-map-4",
        "test-app-1-send_to-5",
    ]
    plan = app.plan()
    assert plan.operator_ids == app.operator_ids
    assert plan.intermediate_streams == {"test-app-1-partition_by-keyed-by-country": 64}


def test_outputs_take_no_id_and_user_ids_consume_the_counter(streams: Streams) -> None:
    app = StreamApplication("app", job_id="7")
    first = app.input(streams.input("input1"))
    app.output(streams.output("output1"))
    joined = first.map(lambda m: m).join(first.filter(bool), lambda a, b: a, ttl=1000, op_id="j")
    assert joined.op_id == "app-7-join-j"
    assert first.flat_map(lambda m: [m]).op_id == "app-7-flat_map-4"


@pytest.mark.parametrize("user_id", ["", "   ", None])
def test_blank_user_id_is_numbered(user_id: str | None) -> None:
    app = StreamApplication("a")
    assert app._allocate_op_id(OpCode.MAP, user_id) == "a-1-map-0"


def test_user_id_is_trimmed() -> None:
    app = StreamApplication("a")
    assert app._allocate_op_id(OpCode.JOIN, "  j1 ") == "a-1-join-j1"


@pytest.mark.parametrize("user_id", ["foo bar", "a.b", "x/y", "tab\tid", "ü"])
def test_user_ids_with_special_characters_are_rejected(user_id: str) -> None:
    app = StreamApplication("a")
    with pytest.raises(PlanError, match="special characters") as info:
        app._allocate_op_id(OpCode.WINDOW, user_id)
    assert repr(user_id) in str(info.value)


def test_duplicate_full_ids_are_rejected() -> None:
    app = StreamApplication("a")
    app._allocate_op_id(OpCode.JOIN, "dup")
    with pytest.raises(PlanError, match="duplicate operator ID 'a-1-join-dup'"):
        app._allocate_op_id(OpCode.JOIN, "dup")
    # The same user id under another opcode is another full id.
    assert app._allocate_op_id(OpCode.WINDOW, "dup") == "a-1-window-dup"


def test_intermediate_stream_id_is_the_op_id(streams: Streams) -> None:
    app = StreamApplication("a", job_id="2")
    source = app.input(streams.input("input1"))
    shuffled = source.partition_by(lambda m: m, op_id="p")
    everyone = source.broadcast(op_id="b")
    plan = app.plan()
    assert shuffled.op_id == "a-2-partition_by-p"
    assert everyone.op_id == "a-2-broadcast-b"
    assert set(plan.intermediate_streams) == {"a-2-partition_by-p", "a-2-broadcast-b"}
    assert plan.input_operators["a-2-partition_by-p"].op_id == "a-2-input-2"
    assert plan.input_operators["a-2-broadcast-b"].op_id == "a-2-input-4"
