"""A combining partition_by inside a task: folds what it shuffles per (partition key, window
key) for the window that alone reads its stream, and appends one partial aggregate per group
(plan/combining.py says when and what a partial aggregate is).

Each message is still checked as a plain partition_by checks it: its key, and its value
encoded with the stream's serde (a value that does not encode fails or is skipped the same
way). The window's own functions then run here on what the window would have read: the key
and the value decoded from those bytes (a fresh object, as the window's: a dataclass reads as
a dict, a tuple as a list). ``initial()`` runs once per group and epoch (its result read back
as a store gives it, as a new pane's), ``fold(KV(key, value), aggregate)`` per message; a
failure names the window operator, and ``task.errors.skip`` counts it on the window. The
encoded value of a group's first message is its sample. A message whose key or window key is
not a str or an int goes as a plain message.

The groups are appended when the task epoch ends, before any control message the
partition_by sends (end-of-stream, watermark, drain), and whenever 100,000 groups are held.

When neither window function can read the value (plan/message_reads.py), what the window
reads of a message is its key alone, and the window key function is one that calls nothing:
the same key gives the same window key and the same ``KV(key, None)``. A key's group is then
found with one lookup once its first message placed it (its key checked, its window key
computed); the value is still encoded and the fold still called for every message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from samza_nb.errors import SerdeError
from samza_nb.plan.combining import CombinedValueSerde
from samza_nb.plan.kv import KV, from_storable, to_storable
from samza_nb.plan.message_reads import MessageReads, message_reads
from samza_nb.plan.operators import WindowOperatorSpec
from samza_nb.runtime.task.operators import UserFunctionError

if TYPE_CHECKING:
    from samza_nb.runtime.task.context import TaskContext

__all__ = ["Placed", "ShuffleCombiner"]

#: Groups held before they are appended (Flink's mini-batch size, about).
GROUP_LIMIT: Final = 100_000
# Keys a JSON or string key serde gives back as they were (bytes read back as base64 text).
_GROUPED_TYPES: Final = frozenset({str, int})
_WINDOW_KEY_TYPES: Final = frozenset({str, int, type(None)})
_STORED_AS_IS: Final = frozenset({str, int, float, bool, type(None), bytes})
_json_decode = msgspec.json.Decoder().decode
_new_tuple = tuple.__new__
_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode

#: A key's bytes and the appends of its partition's key and value columns.
Placed = tuple[bytes | None, Callable[[bytes | None], None], Callable[[bytes], None]]


class ShuffleCombiner:
    """One task epoch's groups of a combining partition_by, and its receiver."""

    def __init__(
        self,
        window_op: WindowOperatorSpec,
        context: TaskContext,
        where_of: Callable[[Any], Placed],
        counted_skip: Callable[[], None],
    ) -> None:
        window = window_op.window
        assert window is not None and window.initial is not None and window.fold is not None
        self.window_op = window_op
        self._window = window
        self._context = context
        self._where_of = where_of
        self._counted_skip = counted_skip
        #: partition key -> window key -> [sample bytes, aggregate, count], in the order the
        #: groups started.
        self.groups: dict[Any, dict[Any, list[Any]]] = {}
        #: partition key -> (the KV the window functions read, its group), for windows whose
        #: functions read only the key (see the module).
        self._by_key: dict[Any, tuple[KV, list[Any]]] = {}
        self._held = 0

    def receiver(
        self,
        key_fn: Callable[[Any], Any],
        value_fn: Callable[[Any], Any] | None,
        encode: Callable[[Any], bytes],
        encode_failed: Callable[[Any, Exception], None],
        plain_where: Callable[[Any], Placed],
        unset: Any,
    ) -> tuple[Callable[[Any], None], Callable[[], int]]:
        """The partition_by's receiver and its message counter. A message's key and value are
        computed, its key checked and its value encoded as a plain partition_by does, in the
        same order (a failure is the partition_by's, through ``encode_failed(value, error)``,
        the value ``unset`` when it was not computed; ``plain_where(key)`` checks and places
        a key that is not grouped). The rest is folded into its group: one closure with
        everything in locals (it runs once per shuffled message)."""
        window = self._window
        window_key_fn, initial, fold = window.key_fn, window.initial, window.fold
        assert initial is not None and fold is not None
        failed, where_of = self._failed, self._where_of
        groups = self.groups
        grouped, window_key_types, stored_as_is = _GROUPED_TYPES, _WINDOW_KEY_TYPES, _STORED_AS_IS
        decode = _json_decode
        # Whether the value must be decoded for the window's functions (plan/message_reads.py:
        # the aggregates they apply operators to are Python's own types, as a store reads them).
        value_read = MessageReads.ALL in (message_reads(window_key_fn), message_reads(fold, arity=2))
        # Without the value, a window key is the key's alone (the function calls nothing).
        by_key: dict[Any, tuple[KV, list[Any]]] | None = None if value_read else self._by_key
        checked: set[Any] = set()  # grouped keys whose bytes encoded this epoch
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            value = unset
            where = None
            known = None
            try:
                key = key_fn(message)
                value = value_fn(message) if value_fn is not None else message
                if type(key) not in grouped:
                    where = plain_where(key)
                elif by_key is not None and (known := by_key.get(key)) is not None:
                    pass  # checked when its group started
                elif key not in checked:
                    where_of(key)
                    checked.add(key)
                value_bytes = encode(value)
            except Exception as error:
                encode_failed(value, error)
                return
            group: list[Any] | None
            if known is not None:
                kv, group = known
            else:
                if where is None:
                    # What the window would read: the key, and the value as the serde reads it.
                    kv = _new_tuple(KV, (key, decode(value_bytes) if value_read else None))
                    try:
                        window_key = window_key_fn(kv) if window_key_fn is not None else None
                    except Exception as error:
                        failed(error)
                        return
                    if type(window_key) not in window_key_types:
                        where = where_of(key)
                if where is not None:  # a plain message
                    where[1](where[0])
                    where[2](value_bytes)
                    return
                by_window = groups.get(key)
                group = None if by_window is None else by_window.get(window_key)
                if group is None:
                    try:
                        aggregate = initial()
                        if type(aggregate) not in stored_as_is:
                            # As a new pane reads it: a tuple or a set reads back as a list.
                            aggregate = from_storable(_unpack(_pack(to_storable(aggregate))))
                        aggregate = fold(kv, aggregate)
                    except Exception as error:
                        failed(error)
                        return
                    if self._held >= GROUP_LIMIT:
                        # The group limit: an aggregate that cannot be stored fails here,
                        # at the message that started the next group (the error names the
                        # window and the key).
                        self.flush()
                        by_window = None
                    if by_window is None:
                        by_window = groups[key] = {}
                    started = by_window[window_key] = [value_bytes, aggregate, 1]
                    if by_key is not None:
                        by_key[key] = (kv, started)
                    self._held += 1
                    return
                if by_key is not None:
                    by_key[key] = (kv, group)
            try:
                group[1] = fold(kv, group[1])
            except Exception as error:
                failed(error)
                return
            group[2] += 1

        return receive, lambda: count

    def flush(self) -> None:
        """Append every group's partial aggregate to its partition's buffer: key by key in the
        order the keys' first groups started, each key's groups in the order they started
        (the same in a retried epoch)."""
        groups = self.groups
        if not groups:
            return
        partial_bytes = CombinedValueSerde.partial_bytes
        for key, by_window in groups.items():
            key_bytes, append_key, append_value = self._where_of(key)
            for sample, aggregate, count in by_window.values():
                try:
                    record = partial_bytes(sample, aggregate, count)
                except SerdeError as error:
                    msg = f"window operator {self.window_op.op_id}: key {key!r}: {error}"
                    raise SerdeError(msg) from error
                append_key(key_bytes)
                append_value(record)
        groups.clear()
        self._by_key.clear()
        self._held = 0

    def _failed(self, error: Exception) -> None:
        if self._context.skip_errors:
            self._counted_skip()
            return
        window_op = self.window_op
        raise UserFunctionError(window_op.op_id, error, window_op.user_location) from error
