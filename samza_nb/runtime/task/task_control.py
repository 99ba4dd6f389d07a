"""How one task epoch takes control messages (SAMZA.md §5.8): end-of-stream, drain and
watermarks arriving on its SSPs, aggregated per SSP and stream, re-broadcast from an
intermediate stream's aggregate partition, and handed to the stream's input operator; and the
drain entering the task when one was requested (the SEP's injection).

Beyond Samza's algorithm, an upstream task that ended never drains, so end-of-stream stands in
for drain where a drain needs it: an input partition that ended counts as drained, and an
intermediate stream's aggregate partition counts a producer that sent end-of-stream as drained
(without it, a drain of a job where one producer's inputs had all ended waited forever).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from samza_nb.model import SystemStream, SystemStreamPartition
from samza_nb.runtime.epoch import EpochAssignment
from samza_nb.runtime.task.context import TaskContext
from samza_nb.runtime.task.control import (
    LONG_MAX,
    ControlMessage,
    DrainMessage,
    DrainStates,
    EndOfStreamMessage,
    EndOfStreamStates,
    WatermarkMessage,
    WatermarkStates,
)
from samza_nb.runtime.task.operators import OperatorImpl

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["TaskControl"]


class TaskControl:
    """A task epoch's control state and what it does with each control message."""

    def __init__(
        self,
        plan: ExecutionPlan,
        assignment: EpochAssignment,
        context: TaskContext,
        control: dict[str, Any],
    ) -> None:
        self.plan = plan
        self.a = assignment
        self.context = context
        side_inputs = set(plan.side_inputs)
        #: The task's SSPs (side inputs aside) by (stream id, partition), and their streams,
        #: made once.
        self.ssps: dict[tuple[str, int], SystemStreamPartition] = {}
        self._streams: dict[str, SystemStream] = {}
        for stream_id, partition in assignment.ssps:
            if stream_id not in side_inputs:
                stream = self._streams.get(stream_id)
                if stream is None:
                    stream = self._streams[stream_id] = SystemStream(plan.streams[stream_id].system.name, stream_id)
                self.ssps[stream_id, partition] = stream.partition(partition)
        tracked = list(self.ssps.values())
        counts = assignment.producer_counts
        self.eos = EndOfStreamStates(tracked, counts)
        self.drains = DrainStates(tracked, counts)
        self.watermarks = WatermarkStates(
            tracked,
            counts,
            idle_timeout_ms=assignment.watermark_idle_timeout_ms,
            quorum_fraction=assignment.watermark_quorum,
            clock=lambda: assignment.now_ms,
        )
        self.eos.restore(control.get("eos", {}))
        self.drains.restore(control.get("drain", {}))
        self.watermarks.restore(control.get("watermarks", {}))
        #: Input SSPs (``ssp_key``) the drain entered.
        self.injected: set[str] = set(control.get("injected", []))
        self.inputs: dict[str, OperatorImpl] = {}
        # Which input streams ended and which drained (every partition of them the task
        # reads), for the operators: each reacts once all its input streams have. A stream the
        # task does not read counts as both, as it does for the states (no partition is left).
        unread = set(plan.input_operators) - set(self._streams)
        streams = self._streams.items()
        self.ended = context.ended_streams = unread | {s for s, ss in streams if self.eos.is_end_of_stream(ss)}
        self.drained = context.drained_streams = unread | {s for s, ss in streams if self.drains.is_drained(ss)}

    def snapshot(self) -> dict[str, Any]:
        return {
            "eos": self.eos.snapshot(),
            "drain": self.drains.snapshot(),
            "watermarks": self.watermarks.snapshot(),
            "injected": sorted(self.injected),
        }

    # -- arriving on an SSP ----------------------------------------------------------------
    def receive(self, stream_id: str, partition: int, message: ControlMessage) -> None:
        """Aggregate a control message arriving on an SSP (SAMZA.md §5.8)."""
        ssp = self.ssps[stream_id, partition]
        system_stream = self._streams[stream_id]
        input_impl = self.inputs[stream_id]
        # Upstream tasks send their named control messages to an intermediate stream's
        # aggregate partition; once that partition heard from all of them, it re-broadcasts
        # to the stream's other partitions. The aggregate partition alone decides: a task that
        # holds several partitions (all of them, with one task) hears the rest only after it.
        aggregated = message.task_name is not None and self.plan.streams[stream_id].kind == "intermediate"
        if isinstance(message, EndOfStreamMessage):
            if self.eos.update(message, ssp) and aggregated:
                self.context.writer(stream_id).broadcast_to_others(EndOfStreamMessage(), partition)
            if self._note(self.ended, stream_id, self.eos.is_end_of_stream(system_stream)):
                input_impl.on_end_of_stream()
            if aggregated and self.a.drain:
                self.count_ended_producers(stream_id, partition)
        elif isinstance(message, DrainMessage):
            if message.run_id != self.a.run_id:
                return  # another deployment's drain: ignored (SAMZA.md §6.5)
            done = self.drains.update(message, ssp)
            if aggregated and not done:
                done = self.drains.count_ended(ssp, self.eos.heard_from(ssp))
            if aggregated and done:
                self.context.writer(stream_id).broadcast_to_others(DrainMessage(message.run_id), partition)
            if self._note(self.drained, stream_id, self.drains.is_drained(system_stream)):
                input_impl.on_drain()
        elif isinstance(message, WatermarkMessage):
            before = self.watermarks.ssp_watermark(ssp)
            self.watermarks.update(message, ssp)
            if aggregated and (after := self.watermarks.ssp_watermark(ssp)) > before:
                self.context.writer(stream_id).broadcast_to_others(WatermarkMessage(after), partition)
            watermark = self.watermarks.get_watermark(system_stream)
            if watermark > input_impl.input_watermark:
                input_impl.on_watermark(watermark)

    # -- a drain requested -----------------------------------------------------------------
    def inject_drain(self, stream_id: str, partition: int, key: str) -> None:
        """After what was fetched, the +inf watermark and the drain message enter the task in
        memory, at its read position; the source log is never written. A partition that
        ended gets no watermark (the SEP injects into active partitions only) but counts as
        drained; a task whose inputs all ended never drains (it is at end-of-stream)."""
        ended = self.eos.is_ssp_done(self.ssps[stream_id, partition])
        if ended and self.eos.all_end_of_stream():
            return
        self.injected.add(key)
        self.context.position = None
        if self.plan.intermediate_streams and not ended:
            self.receive(stream_id, partition, WatermarkMessage(LONG_MAX))
        self.receive(stream_id, partition, DrainMessage(self.a.run_id))

    def count_ended_producers(self, stream_id: str, partition: int) -> None:
        """On an intermediate stream's aggregate partition, count the upstream tasks that sent
        end-of-stream as drained (they never send a drain); when that completes the partition,
        re-broadcast the drain and hand it on as a drain message would."""
        ssp = self.ssps[stream_id, partition]
        if self.drains.is_ssp_done(ssp) or self.eos.all_end_of_stream():
            return
        if not self.drains.count_ended(ssp, self.eos.heard_from(ssp)):
            return
        self.context.writer(stream_id).broadcast_to_others(DrainMessage(self.a.run_id), partition)
        if self._note(self.drained, stream_id, self.drains.is_drained(self._streams[stream_id])):
            self.inputs[stream_id].on_drain()

    @staticmethod
    def _note(streams: set[str], stream_id: str, done: bool) -> bool:
        """Keep in ``streams`` whether ``stream_id`` is ``done``; returns ``done``."""
        if done:
            streams.add(stream_id)
        else:
            streams.discard(stream_id)
        return done
