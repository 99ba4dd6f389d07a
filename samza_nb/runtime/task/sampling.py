"""Sampling inside the tasks: the latest messages an operator received, for ``job.show(op)``.

A stream can be read back from its system, but what an operator in the middle of a stage sees
exists only inside the task (and a consumed intermediate stream may already be deleted by
retention). While someone looks (``job.show(op_id)``), the job asks its tasks to keep the last
``n`` messages each tapped operator received; a task returns them with its epoch result, as
short text (``repr``, cut to :data:`MAX_CHARS`), and the job keeps the newest ``n`` of all
tasks. Untapped operators are untouched: sampling costs nothing when nobody asked for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from samza_nb.runtime.task.operators import OperatorImpl

__all__ = ["MAX_CHARS", "tap_operators"]

#: The longest text kept of one sampled message.
MAX_CHARS = 300


def _text(message: Any) -> str:
    text = repr(message)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def tap_operators(impls: Mapping[str, OperatorImpl], wanted: Mapping[str, int]) -> dict[str, deque[str]]:
    """Make each wanted operator keep its last ``n`` received messages; returns op id → the
    buffer (oldest first) it fills."""
    buffers: dict[str, deque[str]] = {}
    for op_id, count in wanted.items():
        impl = impls.get(op_id)
        if impl is None or count <= 0:
            continue
        buffer: deque[str] = deque(maxlen=count)
        buffers[op_id] = buffer
        _tap(impl, buffer)
    return buffers


def _tap(impl: OperatorImpl, buffer: deque[str]) -> None:
    """Messages reach an operator through the receiver its upstream operators build (the fused
    hot path bypasses ``on_message``); an input operator gets its messages from the task, which
    pushes them to its emitter. Wrap whichever one this operator's messages go through (before
    the task wires anything, so the wrapper is what gets built in). A tapped operator is
    never inside someone else's compiled chain, nor fed batches past its wrapper."""
    impl.tapped = True
    if impl.prev_ops:
        build = impl.receiver

        def receiver(source: Any) -> Callable[[Any], None]:
            return _sampling(build(source), buffer)

        impl.receiver = receiver  # type: ignore[method-assign]
    else:
        emitter = impl.emitter
        sampled: list[Callable[[Any], None]] = []  # built once, like the emitter it wraps

        def tapped_emitter() -> Callable[[Any], None]:
            if not sampled:
                sampled.append(_sampling(emitter(), buffer))
            return sampled[0]

        impl.emitter = tapped_emitter  # type: ignore[method-assign]


def _sampling(receive: Callable[[Any], None], buffer: deque[str]) -> Callable[[Any], None]:
    def sampled(message: Any) -> None:
        buffer.append(_text(message))
        receive(message)

    return sampled
