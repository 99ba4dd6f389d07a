"""Control messages (end-of-stream, watermark, drain) and the per-task state that aggregates
them (SAMZA.md §5).

Control messages travel in-band on intermediate streams. A message's kind (Samza's MessageType
ordinal, :class:`~samza_nb.systems.base.MessageKind`) travels beside its payload, not as the
type byte Samza writes before it (§5.2): it is a field of the record on the embedded log and the
``samza.kind`` header on Kafka (absent for user messages). The payload is the user serde bytes
for a user message and Jackson-style JSON for a control message (``taskName``, ``version``,
``timestamp`` or ``runId``; see :func:`control_to_payload`). A null task name means "from a
source, or re-broadcast by an aggregator".

The state classes follow §5.6–5.7 exactly, with two decisions of DESIGN.md: updating an SSP a
task does not track is a clear error (Samza dereferences null), and producer counts come from
active tasks only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from samza_nb.errors import JobError
from samza_nb.model import SystemStream, SystemStreamPartition
from samza_nb.systems.base import MessageKind
from samza_nb.systems.partitioning import java_string_hash

__all__ = [
    "LONG_MAX",
    "WATERMARK_NOT_EXIST",
    "ControlMessage",
    "DrainMessage",
    "DrainStates",
    "EndOfStreamMessage",
    "EndOfStreamStates",
    "WatermarkMessage",
    "WatermarkStates",
    "aggregate_partition",
    "control_from_payload",
    "control_of_run",
    "control_to_payload",
]

LONG_MAX = 2**63 - 1
"""Java's Long.MAX_VALUE: the +inf watermark a drain injects."""

WATERMARK_NOT_EXIST = -1

_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode


@dataclass(frozen=True)
class ControlMessage:
    """Base of control messages; ``task_name`` is None for source or re-broadcast messages."""

    task_name: str | None = None
    version: int = 1

    kind = -1


@dataclass(frozen=True)
class EndOfStreamMessage(ControlMessage):
    kind = MessageKind.END_OF_STREAM


@dataclass(frozen=True, init=False)
class WatermarkMessage(ControlMessage):
    timestamp: int = WATERMARK_NOT_EXIST

    kind = MessageKind.WATERMARK

    def __init__(self, timestamp: int, task_name: str | None = None, version: int = 1):
        object.__setattr__(self, "timestamp", int(timestamp))
        object.__setattr__(self, "task_name", task_name)
        object.__setattr__(self, "version", version)


@dataclass(frozen=True, init=False)
class DrainMessage(ControlMessage):
    run_id: str = ""

    kind = MessageKind.DRAIN

    def __init__(self, run_id: str, task_name: str | None = None, version: int = 1):
        object.__setattr__(self, "run_id", run_id)
        object.__setattr__(self, "task_name", task_name)
        object.__setattr__(self, "version", version)


def control_to_payload(message: ControlMessage) -> bytes:
    """The JSON payload of a control message, with Samza's field names and order (§5.2)."""
    if isinstance(message, WatermarkMessage):
        fields: dict[str, Any] = {
            "timestamp": message.timestamp,
            "taskName": message.task_name,
            "version": message.version,
        }
    elif isinstance(message, DrainMessage):
        fields = {"taskName": message.task_name, "version": message.version, "runId": message.run_id}
    else:
        fields = {"taskName": message.task_name, "version": message.version}
    return _json_encode(fields)


def control_from_payload(kind: int, payload: bytes) -> ControlMessage:
    """Decode a control message of type ``kind`` from its JSON payload."""
    fields = _json_decode(payload)
    task_name = fields.get("taskName")
    version = int(fields.get("version", 1))
    if kind == MessageKind.WATERMARK:
        return WatermarkMessage(int(fields["timestamp"]), task_name, version)
    if kind == MessageKind.END_OF_STREAM:
        return EndOfStreamMessage(task_name, version)
    if kind == MessageKind.DRAIN:
        return DrainMessage(str(fields.get("runId") or ""), task_name, version)
    msg = f"message type {kind} is not a control message type (1 watermark, 2 eos, 3 drain)"
    raise JobError(msg)


def aggregate_partition(stream_name: str, partition_count: int) -> int:
    """The partition every upstream task sends its control messages of ``stream_name`` to:
    ``|javaHash(name) rem P|`` with Java's signed remainder (§5.4).

    >>> aggregate_partition("test-stream", 4)
    1
    """
    if partition_count <= 0:
        msg = f"stream {stream_name!r} has no partitions"
        raise JobError(msg)
    h = java_string_hash(stream_name)
    remainder = abs(h) % partition_count
    return remainder


class _CompletionStates:
    """EndOfStreamStates and DrainStates share this algorithm (§5.6)."""

    def __init__(
        self,
        ssps: Iterable[SystemStreamPartition],
        producer_task_counts: Mapping[SystemStream, int] | Mapping[str, int],
    ):
        self._expected: dict[SystemStreamPartition, int] = {}
        self._heard: dict[SystemStreamPartition, set[str]] = {}
        self._done: dict[SystemStreamPartition, bool] = {}
        #: Each SSP's key in a snapshot.
        self._names: dict[SystemStreamPartition, str] = {}
        for ssp in ssps:
            self._expected[ssp] = _producer_count(producer_task_counts, ssp)
            self._heard[ssp] = set()
            self._done[ssp] = False
            self._names[ssp] = str(ssp)

    def update(self, message: ControlMessage, ssp: SystemStreamPartition) -> bool:
        """Count ``message`` arriving on ``ssp``; whether ``ssp`` is done now."""
        if ssp not in self._done:
            msg = f"{type(self).__name__}: {ssp} is not one of this task's tracked partitions"
            raise JobError(msg)
        if message.task_name is not None:
            heard = self._heard[ssp]
            heard.add(message.task_name)
            self._done[ssp] = len(heard) == self._expected[ssp]
        else:
            self._done[ssp] = True
        return self._done[ssp]

    def _stream_done(self, system_stream: SystemStream) -> bool:
        return all(
            done
            for ssp, done in self._done.items()
            if ssp.system == system_stream.system and ssp.stream == system_stream.stream
        )

    def _all_done(self) -> bool:
        return all(self._done.values())

    def is_ssp_done(self, ssp: SystemStreamPartition) -> bool:
        return self._done.get(ssp, False)

    def heard_from(self, ssp: SystemStreamPartition) -> frozenset[str]:
        """The upstream tasks whose named message arrived on ``ssp``."""
        return frozenset(self._heard.get(ssp, ()))

    def details(self) -> dict[SystemStreamPartition, tuple[bool, tuple[str, ...], int]]:
        """Per SSP: (done, upstream tasks heard from, upstream tasks expected)."""
        return {
            ssp: (self._done[ssp], tuple(sorted(self._heard[ssp])), self._expected[ssp])
            for ssp in sorted(self._done)
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            name: {"done": self._done[ssp], "heard": sorted(self._heard[ssp])}
            for ssp, name in self._names.items()
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        for ssp, name in self._names.items():
            entry = snapshot.get(name)
            if entry:
                self._done[ssp] = bool(entry["done"])
                self._heard[ssp] = set(entry["heard"])


class EndOfStreamStates(_CompletionStates):
    """Which of a task's SSPs reached end-of-stream."""

    def is_end_of_stream(self, system_stream: SystemStream) -> bool:
        return self._stream_done(system_stream)

    def all_end_of_stream(self) -> bool:
        return self._all_done()


class DrainStates(_CompletionStates):
    """Which of a task's SSPs are drained."""

    def count_ended(self, ssp: SystemStreamPartition, ended: frozenset[str]) -> bool:
        """Count the upstream tasks ``ended`` (they sent end-of-stream on ``ssp`` and never
        drain) as drained there; whether that completed ``ssp``."""
        expected = self._expected.get(ssp, 0)
        if self._done.get(ssp, True) or expected == 0:
            return False
        self._done[ssp] = len(self._heard[ssp] | ended) >= expected
        return self._done[ssp]

    def is_drained(self, system_stream: SystemStream) -> bool:
        return self._stream_done(system_stream)

    def are_all_streams_drained(self) -> bool:
        return self._all_done()


def _producer_count(counts: Mapping[Any, int], ssp: SystemStreamPartition) -> int:
    """The producers of ``ssp``'s stream, keyed by SystemStream (a tuple, so the plain pair
    finds it) or by stream name."""
    count = counts.get((ssp.system, ssp.stream))
    return int(counts.get(ssp.stream, 0) if count is None else count)


class _WatermarkState:
    __slots__ = ("created", "expected", "last_update", "quorum", "timestamps", "watermark")

    def __init__(self, expected: int, quorum_fraction: float, now: int):
        self.expected = expected
        self.quorum = int(expected * quorum_fraction)
        self.created = now
        self.timestamps: dict[str, int] = {}
        self.last_update: dict[str, int] = {}
        self.watermark = WATERMARK_NOT_EXIST


class WatermarkStates:
    """Per-SSP watermarks of one task, aggregated over upstream producers (§5.7)."""

    def __init__(
        self,
        ssps: Iterable[SystemStreamPartition],
        producer_task_counts: Mapping[SystemStream, int] | Mapping[str, int],
        idle_timeout_ms: int = -1,
        quorum_fraction: float = 0.5,
        clock: Callable[[], int] | None = None,
    ):
        self._clock = clock or (lambda: int(time.time() * 1000))
        self._idle_timeout_ms = idle_timeout_ms
        now = self._clock()
        self._states = {
            ssp: _WatermarkState(_producer_count(producer_task_counts, ssp), quorum_fraction, now)
            for ssp in ssps
        }
        #: Each SSP's key in a snapshot.
        self._names = {ssp: str(ssp) for ssp in self._states}

    def update(self, message: WatermarkMessage, ssp: SystemStreamPartition) -> None:
        state = self._states.get(ssp)
        if state is None:
            msg = f"WatermarkStates: {ssp} is not one of this task's tracked partitions"
            raise JobError(msg)
        timestamp = message.timestamp
        task = message.task_name
        now = self._clock()
        if task is None:
            state.watermark = max(state.watermark, timestamp)
            return
        previous = state.timestamps.get(task)
        if previous is None or previous <= timestamp:
            state.timestamps[task] = timestamp
            state.last_update[task] = now
        idle = self._idle_timeout_ms
        can_update = len(state.timestamps) == state.expected or (
            idle > 0 and now - state.created >= idle and len(state.timestamps) >= state.quorum
        )
        if not can_update:
            return
        lowest = min(state.timestamps.values())
        if lowest <= state.watermark and idle > 0:
            active = [
                ts for name, ts in state.timestamps.items() if state.last_update[name] > now - idle
            ]
            lowest = min(active) if active and len(active) >= state.quorum else WATERMARK_NOT_EXIST
        state.watermark = max(state.watermark, lowest)

    def ssp_watermark(self, ssp: SystemStreamPartition) -> int:
        """The watermark of one partition, aggregated over its upstream producers."""
        state = self._states.get(ssp)
        return state.watermark if state is not None else WATERMARK_NOT_EXIST

    def get_watermark(self, system_stream: SystemStream) -> int:
        marks = [
            state.watermark
            for ssp, state in self._states.items()
            if ssp.system == system_stream.system and ssp.stream == system_stream.stream
        ]
        return min(marks) if marks else WATERMARK_NOT_EXIST

    def snapshot(self) -> dict[str, Any]:
        return {
            self._names[ssp]: {
                "watermark": state.watermark,
                "timestamps": state.timestamps,
                "lastUpdate": state.last_update,
                "created": state.created,
            }
            for ssp, state in self._states.items()
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        for ssp, state in self._states.items():
            entry = snapshot.get(self._names[ssp])
            if entry:
                state.watermark = int(entry["watermark"])
                state.timestamps = {k: int(v) for k, v in entry["timestamps"].items()}
                state.last_update = {k: int(v) for k, v in entry["lastUpdate"].items()}
                state.created = int(entry["created"])


def control_of_run(control: dict[str, Any], run_id: str, *, rewound: bool) -> dict[str, Any]:
    """The committed control state a task epoch of run ``run_id`` starts from. A new deployment
    (run id) starts with fresh drain and watermark state; the end-of-stream of bounded inputs
    carries over, and so does each operator's input watermark (a floor: an event-time pane that
    fired in an earlier run does not open again for a late message), unless the run reads older
    input again (``rewound``: an input starts below its checkpoint). The +inf watermark of a
    drain is not a floor: every pane fired then, and the next deployment starts its watermarks
    over."""
    if control.get("runId") in (None, run_id):
        if not rewound:
            return control
        # The same deployment reads older input again (samza.reset.offset after a stop, an
        # input made again): what it reads is not late for the watermarks it had.
        operators = {
            op_id: {key: value for key, value in state.items() if key != "in"}
            for op_id, state in control.get("operators", {}).items()
        }
        return {key: value for key, value in control.items() if key != "watermarks"} | {"operators": operators}

    def carried(state: dict[str, Any]) -> dict[str, Any]:
        floor = state.get("in")
        keep = not rewound and floor is not None and floor < LONG_MAX
        return {"eos": state.get("eos", False)} | ({"in": floor} if keep else {})

    return {
        "eos": control.get("eos", {}),
        "operators": {op_id: carried(state) for op_id, state in control.get("operators", {}).items()},
    }
