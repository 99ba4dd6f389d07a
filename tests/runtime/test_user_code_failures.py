"""Every failure of user code reaches the driver as one TaskError naming operator, task, stream
partition and offset, with the original exception as ``__cause__``; ``task.errors.skip`` applies
on every path. Run on the in-process executor (the Spark path is covered in test_engine.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import LocalTable, StreamApplication, Windows
from samza_nb.drain import write_drain_notification
from samza_nb.errors import TaskError
from samza_nb.job import metadata_store_path
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.plan.kv import KV
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


class _FailingSerde:
    """A user serde whose decode raises a plain ValueError (not a SerdeError)."""

    def to_bytes(self, value: Any) -> bytes:
        return str(value).encode()

    def from_bytes(self, data: bytes) -> Any:
        if data == b"13":
            msg = "unlucky number"
            raise ValueError(msg)
        return int(data)


class _FailingEncoder(_FailingSerde):
    def to_bytes(self, value: Any) -> bytes:
        if value == 30:
            msg = "cannot encode 30"
            raise RuntimeError(msg)
        return str(value).encode()


def _numbers(system: EmbeddedSystem, values: list[int], *, end: bool = True) -> None:
    system.create_stream("numbers", 1)
    system.write("numbers", values, serde=_FailingSerde())
    if end:
        system.end_stream("numbers")


def test_a_custom_serde_raising_any_exception_on_read_is_a_task_error(system: EmbeddedSystem) -> None:
    _numbers(system, [1, 2, 13, 4])
    app = StreamApplication("serde-in")
    out = app.output(system.output("out", partitions=1))
    app.input(system.input("numbers", partitions=1, serde=_FailingSerde())).send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app)
    error = failure.value
    assert (error.op_id, error.task, error.ssp, error.offset) == ("serde-in-1-input-0", "Partition 0", "numbers#0", 2)
    assert isinstance(error.__cause__, ValueError) and str(error.__cause__) == "unlucky number"
    assert "ValueError: unlucky number" in (error.worker_traceback or "")
    skipped = run_local(app, {"task.errors.skip": "true"})
    assert sorted(skipped.collect("out")["value"]) == [1, 2, 4]
    assert skipped.metrics()["tasks"]["Partition 0"]["skipped"] == 1


def test_failures_past_the_first_decoded_slice_of_a_stored_batch_name_their_own_offsets(
    system: EmbeddedSystem,
) -> None:
    # One stored batch of 3,000 messages is decoded and run a slice at a time
    # (runtime/task/task.py): an undecodable value at offset 2,500 and a map failing at offset 1,500
    # are both past the first slice.
    values = list(range(100, 3100))
    values[2500] = 13
    _numbers(system, values)
    app = StreamApplication("slices")
    out = app.output(system.output("out", partitions=1))
    app.input(system.input("numbers", partitions=1, serde=_FailingSerde())).map(
        lambda n: n if n != 1600 else n // 0
    ).send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app)
    assert (failure.value.op_id, failure.value.offset) == ("slices-1-map-1", 1500)
    skipped = run_local(app, {"task.errors.skip": "true"})
    assert sorted(skipped.collect("out")["value"]) == [n for n in values if n not in (13, 1600)]
    assert skipped.metrics()["tasks"]["Partition 0"]["skipped"] == 2
    assert skipped.metrics()["tasks"]["Partition 0"]["messages_in"] == 3000

    decode_only = StreamApplication("slices-decode")
    decode_out = decode_only.output(system.output("decode-out", partitions=1))
    decode_only.input(system.input("numbers", partitions=1, serde=_FailingSerde())).send_to(decode_out)
    with pytest.raises(TaskError) as failure:
        run_local(decode_only)
    assert (failure.value.op_id, failure.value.offset) == ("slices-decode-1-input-0", 2500)


def test_a_custom_serde_raising_on_write_is_a_task_error_at_the_output(system: EmbeddedSystem) -> None:
    _numbers(system, [1, 3, 5])
    app = StreamApplication("serde-out")
    out = app.output(system.output("out", partitions=1, serde=_FailingEncoder()))
    app.input(system.input("numbers", partitions=1, serde=_FailingSerde())).map(lambda n: n * 10).send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app)
    error = failure.value
    assert error.op_id is not None and "send_to" in error.op_id
    assert (error.ssp, error.offset) == ("numbers#0", 1)
    assert isinstance(error.__cause__, RuntimeError)
    skipped = run_local(app, {"task.errors.skip": "true"})
    assert sorted(skipped.collect("out")["value"]) == [10, 50]


def _window_then(system: EmbeddedSystem, name: str, after: Any) -> StreamApplication:
    app = StreamApplication(name)
    out = app.output(system.output(f"{name}-out", partitions=1))
    (
        app.input(system.input("numbers", partitions=1, serde=_FailingSerde()))
        .window(Windows.tumbling(timedelta(seconds=1), initial=lambda: 0, fold=lambda n, s: s + n), op_id="sum")
        .map(after)
        .send_to(out)
    )
    return app


def _explode(pane: Any) -> Any:
    msg = f"pane {pane.message} refused"
    raise KeyError(msg)


def test_a_function_failing_when_a_processing_time_window_fires(system: EmbeddedSystem) -> None:
    _numbers(system, [1, 2, 3], end=False)
    app = _window_then(system, "timer", _explode)
    with pytest.raises(TaskError, match="while firing timers") as failure:
        run_local(app, until=5, clock=StepClock(step_ms=1_500))
    error = failure.value
    assert (error.op_id or "").startswith("timer-1-map") and error.task == "Partition 0"
    assert error.ssp is None and isinstance(error.__cause__, KeyError)
    job = run_local(app, {"task.errors.skip": "true"}, until=5, clock=StepClock(step_ms=1_500))
    assert job.metrics()["tasks"]["Partition 0"]["skipped"] >= 1
    assert job.collect("timer-out").empty


def test_a_function_failing_while_a_drain_flushes_windows(system: EmbeddedSystem, tmp_path: Path) -> None:
    _numbers(system, [1, 2, 3], end=False)
    app = _window_then(system, "drainfail", _explode)
    # Huge windows never fire by time: only the drain flushes them.
    first = run_local(app, until=1, clock=StepClock(step_ms=1))
    store = EmbeddedMetadataStore(metadata_store_path(first.plan))
    write_drain_notification(store, first.run_id)  # the same deployment resumes and drains
    with pytest.raises(TaskError) as failure:
        run_local(app, until="end-of-stream", clock=StepClock(step_ms=1))
    assert (failure.value.op_id or "").startswith("drainfail-1-map")
    assert isinstance(failure.value.__cause__, KeyError)


def test_a_side_input_processor_failing_names_the_table_and_offset(system: EmbeddedSystem) -> None:
    system.create_stream("profiles", 1)
    system.write("profiles", [{"key": "a", "value": 1}, {"key": "b", "value": "bad"}])
    system.end_stream("profiles")
    system.create_stream("clicks", 1)
    system.write("clicks", [{"user": "a"}])
    system.end_stream("clicks")

    def to_entry(message: Any) -> KV[str, int]:
        return KV(message["key"], int(message["value"]))

    app = StreamApplication("sides")
    table = app.table(LocalTable("profiles-table", side_inputs=(system.input("profiles", partitions=1),),
                                 side_input_processor=to_entry))
    out = app.output(system.output("joined", partitions=1))
    (
        app.input(system.input("clicks", partitions=1))
        .join_table(table, lambda click, record: [click["user"], record.value if record else None],
                    key_fn=lambda click: click["user"])
        .send_to(out)
    )
    with pytest.raises(TaskError) as failure:
        run_local(app)
    error = failure.value
    assert error.op_id == "table profiles-table" and (error.ssp, error.offset) == ("profiles#0", 1)
    assert isinstance(error.__cause__, ValueError)


def _parts_of(n: int) -> Any:
    """A flat_map that is a generator failing half-way for 6, and returns no iterable for 3."""
    if n == 3:
        return 5

    def parts() -> Any:
        for i in range(3):
            if n == 6 and i == 2:
                msg = "no third part of 6"
                raise ValueError(msg)
            yield n * 10 + i

    return parts()


def _exploding_app(system: EmbeddedSystem, name: str) -> StreamApplication:
    app = StreamApplication(name)
    out = app.output(system.output(f"{name}-out", partitions=1))
    app.input(system.input("items", partitions=1)).flat_map(_parts_of).send_to(out)
    return app


def test_a_flat_map_failing_while_its_results_are_read_names_the_operator_and_is_skipped(
    system: EmbeddedSystem,
) -> None:
    system.create_stream("items", 1)
    system.write("items", list(range(8)))
    system.end_stream("items")
    with pytest.raises(TaskError, match=r"operator stopped-1-flat_map-1 failed .* offset 3: TypeError") as raised:
        run_local(_exploding_app(system, "stopped"))
    assert raised.value.op_id == "stopped-1-flat_map-1"
    job = run_local(_exploding_app(system, "skipping"), {"task.errors.skip": "true"})
    # 3 and 6 are skipped whole: none of 6's first two parts went out.
    kept = [n * 10 + i for n in range(8) if n not in (3, 6) for i in range(3)]
    assert sorted(system.read_frame("skipping-out")["value"]) == kept
    counters = job.metrics()["operator_counters"]["skipping-1-flat_map-1"]
    assert (counters["in"], counters["skipped"], counters["errors"]) == (8, 2, 2)


class _Tally:
    """An aggregate a store cannot hold."""


def test_a_window_aggregate_a_store_cannot_hold_names_the_operator_and_key(system: EmbeddedSystem) -> None:
    system.create_stream("items", 1)
    system.write("items", [1, 2, 3])
    app = StreamApplication("tallies")
    (
        app.input(system.input("items", partitions=1))
        .window(Windows.keyed_tumbling(lambda n: n % 2, timedelta(hours=1), initial=lambda: 0,
                                       fold=lambda n, tally: _Tally()), op_id="tally")
        .map(lambda pane: KV(str(pane.key.key), 1))
        .send_to(app.output(system.output("tallies-out", partitions=1)))
    )
    with pytest.raises(TaskError, match=r"saving state: SerdeError: window operator tallies-1-window-tally: "
                                        r"the pane of key \d cannot be saved .*aggregate \(_Tally\)"):
        run_local(app, until="caught-up")


def _two_sides(system: EmbeddedSystem, left: list[Any], right: list[Any]) -> None:
    for name, messages in (("a", left), ("b", right)):
        system.create_stream(name, 1)
        system.write(name, messages)
        system.end_stream(name)


@pytest.mark.parametrize("keep", ["latest", "all"])
def test_a_message_a_join_cannot_keep_names_the_join_and_offset_and_is_skipped(
    system: EmbeddedSystem, keep: str
) -> None:
    # An int past 64 bits travels in JSON but not in the join's msgpack state.
    _two_sides(system, [{"k": "x", "n": 1}, {"k": "x", "n": 2**64}, {"k": "x", "n": 3}], [{"k": "x"}])
    app = StreamApplication("joins")
    out = app.output(system.output("out", partitions=1))
    left = app.input(system.input("a", partitions=1))
    right = app.input(system.input("b", partitions=1))
    left.join(
        right, lambda mine, other: mine["n"], ttl=timedelta(hours=1), op_id="j",
        key_fn=lambda m: m["k"], other_key_fn=lambda m: m["k"], keep=keep,  # type: ignore[arg-type]
    ).send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app, clock=StepClock(step_ms=1))
    error = failure.value
    assert (error.op_id, error.ssp, error.offset) == ("joins-1-join-j", "a#0", 1)
    skipped = run_local(app, {"task.errors.skip": "true"}, clock=StepClock(step_ms=1))
    assert skipped.metrics()["tasks"]["Partition 0"]["skipped"] == 1
    assert 2**64 not in skipped.collect("out")["value"].tolist()


def test_a_table_key_with_no_stable_bytes_names_the_operator_or_table_and_is_skipped(system: EmbeddedSystem) -> None:
    # A dict key is its JSON (a compacted topic's object keys keep their order); NaN and sets
    # have no stable bytes.
    _two_sides(system, [{"user": "a"}, {"user": ["x", "y"]}, {"user": {"id": 1}}, {"user": "b"}],
               [{"key": "a", "value": 1}, {"key": "nan", "value": 2}, {"key": {"id": 1}, "value": 3}])
    app = StreamApplication("tablekeys")
    table = app.table(LocalTable("t", side_inputs=(system.input("b", partitions=1),),
                                 side_input_processor=lambda m: [KV(float("nan") if m["key"] == "nan" else m["key"], m["value"])]))
    out = app.output(system.output("out", partitions=1))
    app.input(system.input("a", partitions=1)).join_table(
        table, lambda click, record: [str(click["user"]), record.value if record else None],
        key_fn=lambda click: frozenset(click["user"]) if isinstance(click["user"], list) else click["user"],
    ).send_to(out)
    with pytest.raises(TaskError) as failure:
        run_local(app)
    assert (failure.value.op_id, failure.value.ssp, failure.value.offset) == ("table t", "b#0", 1)
    assert "NaN" in str(failure.value)
    skipped = run_local(app, {"task.errors.skip": "true"})
    assert sorted(map(tuple, skipped.collect("out")["value"])) == [("a", 1), ("b", None), ("{'id': 1}", 3)]
    # The NaN entry, and the click keyed by a set (the join names itself).
    assert skipped.metrics()["tasks"]["Partition 0"]["skipped"] == 2
