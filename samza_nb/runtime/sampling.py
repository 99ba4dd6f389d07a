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
    from samza_nb.runtime.operators import OperatorImpl

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
        impl.on_message = _sampling(impl.on_message, buffer)  # type: ignore[method-assign,assignment]
    return buffers


def _sampling(receive: Callable[[Any, Any], None], buffer: deque[str]) -> Callable[[Any, Any], None]:
    def on_message(message: Any, source: Any) -> None:
        buffer.append(_text(message))
        receive(message, source)

    return on_message
