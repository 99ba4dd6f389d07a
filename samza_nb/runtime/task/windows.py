"""Windows inside a task: tumbling, hopping and session panes, triggers, firing (SAMZA.md §11.2).

Windows use processing time: the epoch's timestamp, the same for every task of the epoch. A
pane's state lives in the task's store named by the window's op id, so it survives epochs and
moves with its changelog. Pending panes fire on end-of-stream and on drain (the SEP).

Event-time tumbling windows (``event_time=`` on the window, beyond Samza, SAMZA.md A.10) put a
message in the pane of its own timestamp and fire a pane when the operator's input watermark
passes the pane's end, so their results do not depend on epoch timing. Hopping windows (event
time only, also beyond Samza) put it in the pane of every window covering its timestamp and
fire the same way.

Within an epoch the panes stay in memory (loaded once, written back once at the end); a
message costs one fused call (see runtime/task/operators.py), its store key computed once per key.
The event-time receivers (tumbling and hopping) are in runtime/task/window_event_time.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.errors import SerdeError
from samza_nb.model.keys import check_partition_key
from samza_nb.plan.combining import PartialAggregate
from samza_nb.plan.kv import KV
from samza_nb.plan.operators import WindowOperatorSpec
from samza_nb.plan.windows import (
    AccumulationMode,
    FiringType,
    RepeatingTrigger,
    TimeTrigger,
    WindowKey,
    WindowPane,
    WindowType,
)
from samza_nb.runtime.task.operators import SKIPPED, OperatorImpl, from_storable, to_storable
from samza_nb.runtime.task.window_event_time import event_time_receiver, hopping_receiver
from samza_nb.runtime.task.window_panes import STABLE_KEY_TYPES, Pane, trigger_fires

if TYPE_CHECKING:
    from samza_nb.runtime.task.context import TaskContext

__all__ = ["WindowImpl"]

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode
#: A window receiver's key not computed yet.
_NO_KEY: Any = object()


class WindowImpl(OperatorImpl):
    """Processing-time windows; state in the store named by the op id."""

    def __init__(self, spec: WindowOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        window = spec.window
        assert window is not None
        self.window = window
        # What kind of window it is, read from its spec once.
        self.aggregating = window.is_aggregating
        self.event_time = window.is_event_time
        self.store = context.store(spec.op_id)
        self.panes: dict[bytes, Pane] = {}
        #: Within an epoch, the pane each key (of a stable scalar type) already touched: its
        #: next messages skip the store key and the per-epoch updates. Emptied whenever a
        #: pane fires (it may be deleted or reset) and when the panes are loaded.
        self._touched: dict[Any, tuple[bytes, Pane]] = {}
        self.deleted: set[bytes] = set()
        # Event-time messages the watermark had passed (their pane, or every window of a
        # hopping one, had fired) are counted in ``dropped``, as a map returning None is.

    def load(self) -> None:
        # In place: the fused receiver holds this dict.
        self._touched.clear()
        self.panes.clear()
        self.panes.update((key, Pane.decode(value)) for key, value in self.store.items())

    def save(self) -> None:
        for key in self.deleted:
            if key not in self.panes:
                self.store.delete(key)
        for key, pane in self.panes.items():
            if pane.dirty:
                try:
                    encoded = pane.encode()
                except (TypeError, ValueError, OverflowError) as error:
                    what = "aggregate" if self.aggregating else "messages"
                    msg = (
                        f"window operator {self.op_id}: the pane of key {pane.key!r} cannot be "
                        f"saved in its store: its {what} ({type(pane.value).__name__}) is not a "
                        f"value a store holds ({error}); initial= and fold= must return None, "
                        "bool, int, float, str, bytes, lists, dicts or KVs of them"
                    )
                    raise SerdeError(msg) from error
                self.store.put(key, encoded)
                pane.dirty = False
        self.deleted.clear()

    def store_key(self, key: Any, window_ts: int) -> bytes:
        if self.window.window_type is WindowType.SESSION:
            return _pack([to_storable(key)])
        return _pack([to_storable(key), window_ts])

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.receiver(source)(message)

    def new_pane(self, store_key: bytes, key: Any, window_ts: int, now: int) -> Pane | None:
        """A new pane of ``key`` at ``window_ts``, put in the panes; None when the window's
        ``initial`` raised (reported to ``failed``: skipped or raised)."""
        window = self.window
        try:
            first = window.initial() if window.initial is not None else None
            # The pane as its store gives it back (msgpack: a tuple or a set reads as a list), so
            # its key and aggregate read the same whether it fires in this epoch or a later one.
            if type(key) not in STABLE_KEY_TYPES:
                key = from_storable(_unpack(store_key)[0])
            if self.aggregating and type(first) not in STABLE_KEY_TYPES:
                first = from_storable(_unpack(_pack(to_storable(first))))
        except Exception as error:
            self.failed(error)
            return None
        pane = Pane(key, window_ts, first if self.aggregating else [], first_ts=now)
        pane.early_first_ts = now
        self.panes[store_key] = pane
        return pane

    def receiver(self, source: OperatorImpl | None) -> Callable[[Any], None]:
        receive = self._receiver
        if receive is None:
            receive = self._receiver = self._fuse()
        return receive

    def _checks_on_message(self) -> bool:
        """Whether a message can make a trigger fire. A tumbling window whose triggers are
        all the window's end (TimeTrigger) cannot: within an epoch the processing time is
        fixed and the message's pane is the current one, which ends after it; its panes fire
        on the timer at the end of the epoch."""
        window = self.window
        if window.window_type is not WindowType.TUMBLING or window.early_trigger is not None:
            return True
        return not isinstance(window.default_trigger, TimeTrigger)

    def _fuse(self) -> Callable[[Any], None]:
        if self.window.window_type is WindowType.HOPPING:
            return hopping_receiver(self)
        if self.event_time:
            return event_time_receiver(self)
        window = self.window
        now = self.context.now_ms
        key_fn, fold, merge = window.key_fn, window.fold, window.merge
        aggregating = self.aggregating
        session = window.window_type is WindowType.SESSION
        default = window.default_trigger
        tumbling_ts = now - now % window.size_ms
        panes, failed, op_id, check = self.panes, self.failed, self.op_id, self.check_triggers
        checks = self._checks_on_message()
        store_key_of = self.store_key
        stable = STABLE_KEY_TYPES
        touched = self._touched
        new_pane = self.new_pane
        # The store key of each key's pane in this epoch (keys of stable scalar types only).
        store_keys: dict[Any, bytes] = {}
        count = 0

        def receive(message: Any, key: Any = _NO_KEY, partial: Any = None) -> None:
            nonlocal count
            folded = 1 if partial is None else partial.count
            count += folded
            if key is _NO_KEY:
                try:
                    key = key_fn(message) if key_fn is not None else None
                except Exception as error:
                    failed(error)
                    return
            cached = type(key) in stable
            hit = touched.get(key) if cached else None
            if hit is None:
                try:
                    if cached:
                        store_key = store_keys.get(key)
                        if store_key is None:
                            store_key = store_keys[key] = store_key_of(key, tumbling_ts)
                    else:
                        check_partition_key(key, op_id)
                        store_key = store_key_of(key, tumbling_ts)
                except Exception as error:
                    failed(error)
                    return
                pane = panes.get(store_key)
                if pane is not None and session and trigger_fires(default, pane.count, pane.first_ts, pane.last_ts, pane.window_ts, now):
                    # The key was quiet for the gap (no epoch ran meanwhile: a later run, epochs
                    # spaced out): its session ended before this message, which starts another.
                    self._fire(store_key, pane, FiringType.DEFAULT)
                    pane = None
                if pane is None:
                    pane = new_pane(store_key, key, now if session else tumbling_ts, now)
                    if pane is None:
                        return
            else:
                store_key, pane = hit
            if aggregating:
                try:
                    if partial is None:
                        pane.value = fold(message, pane.value)  # type: ignore[misc]
                    else:
                        pane.value = merge(pane.value, partial.aggregate)  # type: ignore[misc]
                except Exception as error:
                    failed(error)
                    return
            else:
                pane.value.append(message)
            if hit is None:
                # The processing time is the epoch's: set by the pane's first message of the
                # epoch, the same for the ones after it.
                if pane.early_count == 0:
                    pane.early_first_ts = now
                pane.last_ts = now
                pane.dirty = True
                if cached:
                    touched[key] = (store_key, pane)
            pane.count += folded
            pane.early_count += folded
            if checks:
                check(store_key, pane, now)

        self.add_counter(lambda: count)
        if checks or session or not aggregating or key_fn is None:
            return receive if merge is None else self._merging(receive, receive)

        def receive_touched(message: Any) -> None:
            # The common case (an aggregating tumbling window without per-message triggers): a
            # key whose pane this epoch already touched only folds and counts; any other goes
            # the whole way above (which counts it).
            nonlocal count
            try:
                key = key_fn(message)
            except Exception as error:
                count += 1
                failed(error)
                return
            hit = touched.get(key) if type(key) in stable else None
            if hit is None:
                receive(message, key)
                return
            count += 1
            pane = hit[1]
            try:
                pane.value = fold(message, pane.value)  # type: ignore[misc]
            except Exception as error:
                failed(error)
                return
            pane.count += 1
            pane.early_count += 1

        return receive_touched if merge is None else self._merging(receive, receive_touched)

    def _merging(
        self, receive: Callable[..., None], fold_one: Callable[[Any], None]
    ) -> Callable[[Any], None]:
        """The receiver of a window with ``merge=``: a partial aggregate from a combined
        shuffle (plan/combining.py) is merged into the pane of its sample's key and counts
        its messages (all of them skipped when it is); any other message is folded."""
        context = self.context

        def receive_merging(message: Any) -> None:
            if type(message) is KV:
                partial = message[1]
                if type(partial) is PartialAggregate:
                    skipped = context.skipped
                    receive(KV(message[0], partial.sample), _NO_KEY, partial)
                    if context.skipped != skipped:
                        context.skipped += partial.count - 1
                        self.skipped += partial.count - 1
                    return
            fold_one(message)

        return receive_merging

    def handle_watermark(self, watermark: int) -> list[Any]:
        if self.event_time:
            # Panes whose end the watermark passed fire, oldest window first, then by key bytes
            # (the same order in every run).
            size = self.window.size_ms
            due = sorted(
                (pane.window_ts, store_key)
                for store_key, pane in self.panes.items()
                if pane.window_ts + size <= watermark
            )
            for _window_ts, store_key in due:
                self._fire(store_key, self.panes[store_key], FiringType.DEFAULT)
        return []

    def check_triggers(self, store_key: bytes, pane: Pane, now: int) -> None:
        window = self.window
        if not self.event_time and trigger_fires(
            window.default_trigger, pane.count, pane.first_ts, pane.last_ts, pane.window_ts, now
        ):
            self._fire(store_key, pane, FiringType.DEFAULT)
            return
        early = window.early_trigger
        if (
            early is not None
            and not pane.early_cancelled
            and pane.early_count > 0
            and trigger_fires(
                early, pane.early_count, pane.early_first_ts, pane.last_ts, pane.window_ts, now
            )
        ):
            self._fire(store_key, pane, FiringType.EARLY)

    def _fire(self, store_key: bytes, pane: Pane, firing: FiringType) -> None:
        window = self.window
        value = pane.value if self.aggregating else list(pane.value)
        self.emit(
            WindowPane(
                WindowKey(pane.key, str(pane.window_ts)), value, firing, window.accumulation_mode
            )
        )
        self._touched.clear()
        if firing is FiringType.DEFAULT:
            del self.panes[store_key]
            self.deleted.add(store_key)
            return
        pane.early_count = 0
        if not isinstance(window.early_trigger, RepeatingTrigger):
            pane.early_cancelled = True
        if window.accumulation_mode is AccumulationMode.DISCARDING:
            if self.aggregating and window.initial:
                initial = self.call(window.initial)
                pane.value = None if initial is SKIPPED else initial
            else:
                pane.value = None if self.aggregating else []
        pane.dirty = True

    def on_timer(self, now_ms: int) -> None:
        window = self.window
        if self.event_time and window.early_trigger is None:
            return  # only the watermark fires these panes (handle_watermark)
        for store_key, pane in sorted(self.panes.items(), key=lambda item: item[1].window_ts):
            if store_key in self.panes:
                self.check_triggers(store_key, pane, now_ms)

    def _flush_all(self) -> list[Any]:
        for store_key, pane in sorted(self.panes.items(), key=lambda item: item[1].window_ts):
            self._fire(store_key, pane, FiringType.DEFAULT)
        return []

    def handle_end_of_stream(self) -> list[Any]:
        return self._flush_all()

    def handle_drain(self) -> list[Any]:
        # SEP wins over Samza's code: pending panes are emitted on drain (DESIGN.md).
        return self._flush_all()
