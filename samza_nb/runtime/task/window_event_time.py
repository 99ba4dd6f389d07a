"""Event-time windows' receivers: which panes a timestamped message goes to (SAMZA.md A.10).

An event-time tumbling window puts a message in the pane of its own timestamp; a hopping one
in the pane of every window covering it. A message whose pane (every pane, for a hopping
window) the operator's input watermark already passed is late: dropped and counted in the
operator's ``dropped``. The watermark fires the panes (``WindowImpl.handle_watermark``); the
processing-time receivers and the firing live with the operator in runtime/task/windows.py.
Each receiver is one fused call per message (runtime/task/operators.py), its store keys
computed once per (key, window).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from samza_nb.model.keys import check_partition_key
from samza_nb.runtime.task.window_panes import STABLE_KEY_TYPES, PaneHolder

__all__ = ["event_time_receiver", "hopping_receiver"]


def event_time_receiver(op: PaneHolder) -> Callable[[Any], None]:
    """Event-time tumbling panes: the pane of the message's timestamp; a message for a
    pane the watermark already passed is late and dropped (counted in ``dropped``)."""
    window = op.window
    now = op.context.now_ms
    size = window.size_ms
    key_fn, fold, timestamp_of = window.key_fn, window.fold, window.event_time
    aggregating = window.is_aggregating
    panes, failed, op_id, check = op.panes, op.failed, op.op_id, op.check_triggers
    checks = window.early_trigger is not None
    store_key_of = op.store_key
    stable = STABLE_KEY_TYPES
    store_keys: dict[tuple[Any, int], bytes] = {}
    new_pane = op.new_pane
    count = 0

    def receive(message: Any) -> None:
        nonlocal count
        count += 1
        try:
            key = key_fn(message) if key_fn is not None else None
            timestamp = int(timestamp_of(message))  # type: ignore[misc]
            window_ts = timestamp - timestamp % size
            if type(key) in stable:
                store_key = store_keys.get((key, window_ts))
                if store_key is None:
                    store_key = store_keys[(key, window_ts)] = store_key_of(key, window_ts)
            else:
                check_partition_key(key, op_id)
                store_key = store_key_of(key, window_ts)
        except Exception as error:
            failed(error)
            return
        if window_ts + size <= op.input_watermark:
            op.dropped += 1
            return
        pane = panes.get(store_key)
        if pane is None:
            pane = new_pane(store_key, key, window_ts, now)
            if pane is None:
                return
        if aggregating:
            try:
                pane.value = fold(message, pane.value)  # type: ignore[misc]
            except Exception as error:
                failed(error)
                return
        else:
            pane.value.append(message)
        if pane.early_count == 0:
            pane.early_first_ts = now
        pane.count += 1
        pane.early_count += 1
        pane.last_ts = now
        pane.dirty = True
        if checks:
            check(store_key, pane, now)

    op.add_counter(lambda: count)
    return receive


def hopping_receiver(op: PaneHolder) -> Callable[[Any], None]:
    """Event-time hopping panes: the message goes to the pane of every window covering
    its timestamp (starts at multiples of the slide, latest first). Windows the watermark
    already passed are skipped; the rest take it (one that no window takes counts in
    ``dropped``)."""
    window = op.window
    now = op.context.now_ms
    size = window.size_ms
    slide = window.slide_ms or size
    key_fn, fold, timestamp_of = window.key_fn, window.fold, window.event_time
    aggregating = window.is_aggregating
    panes, failed, op_id, check = op.panes, op.failed, op.op_id, op.check_triggers
    checks = window.early_trigger is not None
    store_key_of = op.store_key
    stable = STABLE_KEY_TYPES
    store_keys: dict[tuple[Any, int], bytes] = {}
    new_pane = op.new_pane
    count = 0

    def receive(message: Any) -> None:
        nonlocal count
        count += 1
        try:
            key = key_fn(message) if key_fn is not None else None
            timestamp = int(timestamp_of(message))  # type: ignore[misc]
            cached = type(key) in stable
            if not cached:
                check_partition_key(key, op_id)
        except Exception as error:
            failed(error)
            return
        watermark = op.input_watermark
        window_ts = latest = timestamp - timestamp % slide
        while window_ts > timestamp - size:
            if window_ts + size <= watermark:
                # This window and every earlier one have fired: dropped if it was the latest.
                if window_ts == latest:
                    op.dropped += 1
                return
            if cached:
                store_key = store_keys.get((key, window_ts))
                if store_key is None:
                    store_key = store_keys[(key, window_ts)] = store_key_of(key, window_ts)
            else:
                store_key = store_key_of(key, window_ts)
            pane = panes.get(store_key)
            if pane is None:
                pane = new_pane(store_key, key, window_ts, now)
                if pane is None:
                    return
            if aggregating:
                try:
                    pane.value = fold(message, pane.value)  # type: ignore[misc]
                except Exception as error:
                    failed(error)
                    return
            else:
                pane.value.append(message)
            pane.count += 1
            pane.dirty = True
            if checks:
                # Only early triggers read these (the watermark fires the pane).
                if pane.early_count == 0:
                    pane.early_first_ts = now
                pane.early_count += 1
                pane.last_ts = now
                check(store_key, pane, now)
            window_ts -= slide

    op.add_counter(lambda: count)
    return receive
