"""Control messages and their per-task states (SAMZA.md §5)."""

from __future__ import annotations

import pytest

from samza_nb.errors import JobError
from samza_nb.model import SystemStream, SystemStreamPartition
from samza_nb.runtime.task.control import (
    LONG_MAX,
    DrainMessage,
    DrainStates,
    EndOfStreamMessage,
    EndOfStreamStates,
    WatermarkMessage,
    WatermarkStates,
    aggregate_partition,
    control_from_payload,
    control_to_payload,
)

S = "kafka"


def ssp(stream: str, partition: int) -> SystemStreamPartition:
    return SystemStreamPartition(S, stream, partition)


def test_control_payloads_match_samza_shapes() -> None:
    assert control_to_payload(EndOfStreamMessage("task-1")) == b'{"taskName":"task-1","version":1}'
    assert (
        control_to_payload(WatermarkMessage(123, "task-1"))
        == b'{"timestamp":123,"taskName":"task-1","version":1}'
    )
    assert (
        control_to_payload(DrainMessage("run-1", "task-1"))
        == b'{"taskName":"task-1","version":1,"runId":"run-1"}'
    )
    watermark = WatermarkMessage(LONG_MAX)
    assert control_from_payload(watermark.kind, control_to_payload(watermark)) == watermark
    with pytest.raises(JobError, match="message type 0 is not a control message type"):
        control_from_payload(0, b"{}")


def test_aggregate_partition_uses_java_hash_and_abs_remainder() -> None:
    assert aggregate_partition("test-stream", 4) == 1
    assert all(0 <= aggregate_partition(f"s{i}", 3) < 3 for i in range(50))


@pytest.mark.parametrize("states_class", [EndOfStreamStates, DrainStates])
def test_completion_states_need_every_producer(states_class: type) -> None:
    ssps = [ssp("input", 0), ssp("input", 1), ssp("intermediate", 0)]
    states = states_class(ssps, {SystemStream(S, "intermediate"): 2})
    done = states.all_end_of_stream if states_class is EndOfStreamStates else states.are_all_streams_drained
    stream_done = states.is_end_of_stream if states_class is EndOfStreamStates else states.is_drained
    message = EndOfStreamMessage if states_class is EndOfStreamStates else (lambda t=None: DrainMessage("r", t))
    states.update(message(), ssp("input", 0))
    assert not stream_done(SystemStream(S, "input"))
    states.update(message(), ssp("input", 1))
    assert stream_done(SystemStream(S, "input"))
    states.update(message("task-0"), ssp("intermediate", 0))
    states.update(message("task-0"), ssp("intermediate", 0))  # duplicates are idempotent
    assert not stream_done(SystemStream(S, "intermediate"))
    assert not done()
    states.update(message("task-1"), ssp("intermediate", 0))
    assert stream_done(SystemStream(S, "intermediate"))
    assert done()
    # A stream the task has no partition of is vacuously done.
    assert stream_done(SystemStream(S, "other"))
    with pytest.raises(JobError, match="not one of this task's tracked partitions"):
        states.update(message(), ssp("side", 0))


def test_completion_state_snapshot_round_trips() -> None:
    states = EndOfStreamStates([ssp("i", 0)], {"i": 2})
    states.update(EndOfStreamMessage("a"), ssp("i", 0))
    copy = EndOfStreamStates([ssp("i", 0)], {"i": 2})
    copy.restore(states.snapshot())
    copy.update(EndOfStreamMessage("b"), ssp("i", 0))
    assert copy.all_end_of_stream()


def test_watermark_states_source_and_aggregated() -> None:
    now = [0]
    states = WatermarkStates(
        [ssp("input", 0), ssp("input", 1), ssp("int", 0)],
        {SystemStream(S, "int"): 2},
        clock=lambda: now[0],
    )
    states.update(WatermarkMessage(3), ssp("input", 0))
    assert states.get_watermark(SystemStream(S, "input")) == -1  # partition 1 has none yet
    states.update(WatermarkMessage(5), ssp("input", 1))
    assert states.get_watermark(SystemStream(S, "input")) == 3
    states.update(WatermarkMessage(4, "task-0"), ssp("int", 0))
    assert states.get_watermark(SystemStream(S, "int")) == -1  # waiting for task-1
    states.update(WatermarkMessage(3, "task-1"), ssp("int", 0))
    assert states.get_watermark(SystemStream(S, "int")) == 3
    states.update(WatermarkMessage(2, "task-1"), ssp("int", 0))  # smaller: ignored, never regresses
    assert states.get_watermark(SystemStream(S, "int")) == 3
    assert states.get_watermark(SystemStream(S, "absent")) == -1


def test_watermark_idle_timeout_quorum() -> None:
    now = [0]
    states = WatermarkStates(
        [ssp("int", 0)], {SystemStream(S, "int"): 4}, idle_timeout_ms=100,
        quorum_fraction=0.5, clock=lambda: now[0],
    )
    states.update(WatermarkMessage(10, "a"), ssp("int", 0))
    states.update(WatermarkMessage(20, "b"), ssp("int", 0))
    assert states.get_watermark(SystemStream(S, "int")) == -1  # 2 of 4, idle timeout not reached
    now[0] = 150
    states.update(WatermarkMessage(30, "b"), ssp("int", 0))
    # quorum of 2 reached after the idle timeout: min over tasks heard = 10
    assert states.get_watermark(SystemStream(S, "int")) == 10
    now[0] = 300
    states.update(WatermarkMessage(40, "b"), ssp("int", 0))
    # 10 <= current watermark: recompute over tasks active in the last 100 ms: only b (1 < 2) -> -1
    assert states.get_watermark(SystemStream(S, "int")) == 10
