"""Operator implementations: what each operator spec does inside a task (SAMZA.md §5.8, §11.2).

Every task hosts the whole DAG. An implementation receives a message with ``on_message`` and
pushes results to its next operators. Control propagation follows §5.8: an operator reacts to
end-of-stream or drain only when all of its input streams have ended or drained, and passes the
minimum output watermark of its upstream operators on (operators of branches this task does not
consume count as +inf). The stateless operators live in runtime/task/stateless.py, the stream
writers (send_to, partition_by, broadcast) in runtime/task/stream_writers.py, windows in
runtime/task/windows.py, joins and tables in runtime/task/joins.py.

Every user function (and every user serde) is called through :meth:`OperatorImpl.call` (or,
on the fused hot path, inside a ``try`` around that call alone): a failure becomes a
:class:`UserFunctionError` naming the operator, or, with ``task.errors.skip``, is counted and
the message dropped (:data:`SKIPPED`).

The hot path: an upstream operator hands each message to a *receiver*, one plain callable per
edge, built once per task epoch (:meth:`OperatorImpl.receiver`). A chain of map, flat_map,
filter and sink operators is compiled into one generated function (runtime/task/fusion.py), so a
message passes it in one frame, and the task hands a decoded batch to it in one call
(:meth:`OperatorImpl.batch_emitter`). send_to and partition_by build a closure that calls the
user function and then the next receiver directly: no method lookup, no per-message
bookkeeping object (CPython's ``try`` costs nothing until it raises). A chain is never fused
across a shuffle: partition_by ends it by writing to its intermediate stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from samza_nb.plan.kv import from_storable, to_storable
from samza_nb.plan.operators import InputOperatorSpec, OperatorSpec
from samza_nb.runtime.task.control import LONG_MAX, WATERMARK_NOT_EXIST
from samza_nb.runtime.task.fusion import CompiledChain, chain_from, compile_chain, one_by_one

if TYPE_CHECKING:
    from samza_nb.runtime.task.context import TaskContext

__all__ = [
    "SKIPPED",
    "OperatorImpl",
    "TaskOperators",
    "UserFunctionError",
    "from_storable",
    "to_storable",
]


class _Skipped:
    def __repr__(self) -> str:
        return "SKIPPED"


#: What :meth:`OperatorImpl.call` returns when a user function failed and the message is skipped.
SKIPPED: Final = _Skipped()


class UserFunctionError(Exception):
    """A user function or serde raised; carries the operator id (the task adds SSP and offset)."""

    def __init__(self, op_id: str, error: BaseException, user_location: str | None):
        super().__init__(op_id, error)
        self.op_id = op_id
        self.error = error
        self.user_location = user_location


Receiver = Callable[[Any], None]


def _drop(message: Any) -> None:
    """The receiver of an operator without next operators."""


class OperatorImpl:
    """Base implementation: identity on messages, default control handling."""

    def __init__(self, spec: OperatorSpec, context: TaskContext):
        self.spec = spec
        self.op_id = spec.op_id
        self.context = context
        self.next_ops: list[OperatorImpl] = []
        self.prev_ops: list[OperatorImpl] = []
        self.input_streams: set[str] = set()
        self.used_in_task = False
        self.input_watermark = WATERMARK_NOT_EXIST
        self.output_watermark = WATERMARK_NOT_EXIST
        self.eos_handled = False
        self.drain_handled = False
        self.messages_in = 0
        #: Messages whose user function raised and that ``task.errors.skip`` skipped.
        self.skipped = 0
        #: Messages a map or flat_map dropped by returning None (Samza's rule).
        self.dropped = 0
        self._emitter: Receiver | None = None
        self._receiver: Receiver | None = None
        self._chain: CompiledChain | None = None
        #: Whether ``job.show`` samples what this operator receives (runtime/task/sampling.py):
        #: a tapped operator starts a compiled chain of its own and takes no batches.
        self.tapped = False
        #: This epoch's message counters of the closures and compiled chains this operator
        #: runs in (its :meth:`count` adds them up).
        self._counters: list[Callable[[], int]] = []

    # -- messages --------------------------------------------------------------------------
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.emit(message)

    def receiver(self, source: OperatorImpl | None) -> Receiver:
        """The callable ``source`` hands each of its messages to (stateless operators return
        one fused closure, whatever the source; joins tell their sides apart by it)."""
        on_message = self.on_message
        return lambda message: on_message(message, source)

    def emitter(self) -> Receiver:
        """One callable that pushes a message to every next operator (built once, on first
        use, when the graph is wired)."""
        emitter = self._emitter
        if emitter is None:
            receivers = [op.receiver(self) for op in self.next_ops]
            if not receivers:
                emitter = _drop
            elif len(receivers) == 1:
                emitter = receivers[0]
            else:

                def emitter(message: Any) -> None:
                    for receive in receivers:
                        receive(message)

            self._emitter = emitter
        return emitter

    def emit(self, message: Any) -> None:
        self.emitter()(message)

    def batch_emitter(self) -> CompiledChain | None:
        """The compiled chain that receives everything this operator emits, when it hands
        its messages to exactly one (the task then pushes a decoded batch in one call)."""
        if self.tapped or len(self.next_ops) != 1:
            return None
        following = self.next_ops[0]
        if not isinstance(following, _FusedImpl) or following.step is None or following.tapped:
            return None
        if len(following.prev_ops) != 1:
            return None
        return following.chain()

    def feeds(self) -> tuple[Receiver, Callable[[list[Any]], None], Callable[[], int]]:
        """What the task hands this (input) operator's messages to: one message, a decoded
        batch in one call (the compiled chain after it, else message by message), and how
        many messages of the last batch went in."""
        push = self.emitter()
        chain = self.batch_emitter()
        run_batch, entered = (chain.run, chain.entered) if chain is not None else one_by_one(push)
        return push, run_batch, entered

    def emit_all(self, messages: Iterable[Any]) -> None:
        emit = self.emitter()
        for message in messages:
            emit(message)

    def count(self) -> int:
        """Messages this operator received in this task epoch."""
        return self.messages_in + sum(counter() for counter in self._counters)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``; a failure raises UserFunctionError, or returns SKIPPED (and counts
        the message) when the task skips failing messages."""
        try:
            return fn(*args)
        except Exception as error:
            return self.failed(error)

    def add_counter(self, counter: Callable[[], int]) -> None:
        """Count, in :attr:`messages_in`, the messages a fused receiver of this operator takes
        (``counter`` returns how many so far)."""
        self._counters.append(counter)

    def failed(self, error: Exception) -> Any:
        """A user function of this operator raised ``error``: count and skip the message
        (returns SKIPPED) when the task skips failures, else raise UserFunctionError."""
        if self.context.skip_errors:
            self.context.skipped += 1
            self.skipped += 1
            return SKIPPED
        raise UserFunctionError(self.op_id, error, self.spec.user_location) from error

    # -- control ---------------------------------------------------------------------------
    def handle_end_of_stream(self) -> list[Any]:
        return []

    def handle_drain(self) -> list[Any]:
        return []

    def handle_watermark(self, watermark: int) -> list[Any]:
        return []

    def on_timer(self, now_ms: int) -> None:
        """Processing-time tick at the end of every epoch (windows fire here)."""

    def end_epoch(self) -> None:
        """After every operator's timer: append what this operator still holds for its
        stream (a combining partition_by's partial aggregates)."""

    def on_end_of_stream(self) -> None:
        if self.eos_handled or not self.input_streams <= self.context.ended_streams:
            return
        self.eos_handled = True
        self.emit_all(self.handle_end_of_stream())
        for op in self.next_ops:
            op.on_end_of_stream()

    def on_drain(self) -> None:
        if self.drain_handled or not self.input_streams <= self.context.drained_streams:
            return
        self.drain_handled = True
        self.emit_all(self.handle_drain())
        for op in self.next_ops:
            op.on_drain()

    def on_watermark(self, watermark: int) -> None:
        if not isinstance(self.spec, InputOperatorSpec):
            watermark = min(
                (op.output_watermark if op.used_in_task else LONG_MAX) for op in self.prev_ops
            )
        if watermark <= self.input_watermark:
            return
        self.input_watermark = watermark
        self.emit_all(self.handle_watermark(watermark))
        if watermark > self.output_watermark:
            self.output_watermark = watermark
            for op in self.next_ops:
                op.on_watermark(watermark)

    def snapshot(self) -> dict[str, Any]:
        return {
            "in": self.input_watermark,
            "out": self.output_watermark,
            "eos": self.eos_handled,
            "drain": self.drain_handled,
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.input_watermark = int(snapshot.get("in", WATERMARK_NOT_EXIST))
        self.output_watermark = int(snapshot.get("out", WATERMARK_NOT_EXIST))
        self.eos_handled = bool(snapshot.get("eos", False))
        self.drain_handled = bool(snapshot.get("drain", False))

    def load(self) -> None:
        """Read operator state from the task's stores at the start of an epoch."""

    def save(self) -> None:
        """Write operator state to the task's stores at the end of an epoch."""


class InputImpl(OperatorImpl):
    pass


def _doing(impls: Iterable[OperatorImpl], hook: str) -> list[OperatorImpl]:
    """The operators whose kind does something at ``hook`` (overrides OperatorImpl's)."""
    base = getattr(OperatorImpl, hook)
    return [impl for impl in impls if getattr(type(impl), hook) is not base]


class TaskOperators:
    """A task's operators by op id, and what the task does with all of them at once: their
    epoch hooks (each called only on the operators whose kind does something there) and their
    control state and counts."""

    def __init__(self, impls: dict[str, OperatorImpl]):
        self.impls = impls
        self._loads = _doing(impls.values(), "load")
        self._saves = _doing(impls.values(), "save")
        self._timers = _doing(impls.values(), "on_timer")
        self._epoch_ends = _doing(impls.values(), "end_epoch")

    def load(self) -> None:
        for impl in self._loads:
            impl.load()

    def save(self) -> None:
        for impl in self._saves:
            impl.save()

    def end_epoch(self, now_ms: int) -> None:
        """Every operator's processing-time tick, then what each still holds is appended."""
        for impl in self._timers:
            impl.on_timer(now_ms)
        for impl in self._epoch_ends:
            impl.end_epoch()

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {op_id: impl.snapshot() for op_id, impl in self.impls.items()}

    def restore(self, state: dict[str, dict[str, Any]]) -> None:
        for op_id, impl in self.impls.items():
            if op_id in state:
                impl.restore(state[op_id])

    def counts(self) -> dict[str, int]:
        """Messages each operator received in this task epoch."""
        return {op_id: impl.count() for op_id, impl in self.impls.items()}


class _FusedImpl(OperatorImpl):
    """A stateless operator: one closure per task epoch, or, for an operator with a ``step``
    (map, filter, flat_map, sink), a place in a compiled chain (runtime/task/fusion.py)."""

    #: The operator's step in a compiled chain; None for operators that build a closure.
    step: str | None = None

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.receiver(source)(message)

    def receiver(self, source: OperatorImpl | None) -> Receiver:
        receive = self._receiver
        if receive is None:
            if self.step is not None:
                receive = self._receiver = self.chain().receive
            else:
                receive = self._receiver = self._fuse(self.emitter(), self.failed)
        return receive

    def chain(self) -> CompiledChain:
        """The compiled chain that starts at this operator (built once per task epoch)."""
        compiled = self._chain
        if compiled is None:
            ops = chain_from(self)
            last = ops[-1]
            emit = last.emitter() if last.next_ops else None  # type: ignore[attr-defined]
            compiled = self._chain = compile_chain(ops, emit)
            for position, op in enumerate(ops):
                op._counters.append(compiled.counter(position))  # type: ignore[attr-defined]
        return compiled

    def step_function(self) -> Callable[[Any], Any]:
        """The user function this operator's step calls."""
        return self.spec.fn  # type: ignore[attr-defined]

    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        raise NotImplementedError
