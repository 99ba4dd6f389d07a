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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from samza_nb.errors import SerdeError
from samza_nb.plan.combining import CombinedValueSerde
from samza_nb.plan.kv import KV, from_storable, to_storable
from samza_nb.plan.operators import WindowOperatorSpec
from samza_nb.runtime.operators import UserFunctionError

if TYPE_CHECKING:
    from samza_nb.runtime.context import TaskContext

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
    """One task epoch's groups of a combining partition_by."""

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
        self._key_fn = window.key_fn
        self._initial = window.initial
        self._fold = window.fold
        self._context = context
        self._where_of = where_of
        self._counted_skip = counted_skip
        #: (partition key, window key) -> [partition key, sample bytes, aggregate, count]
        self.groups: dict[tuple[Any, Any], list[Any]] = {}
        self.add = self._adder()

    def _adder(self) -> Callable[[Any, bytes], bool]:
        """``add(key, value_bytes)``: fold one message into its group; False when it
        must go as a plain message (a key or window key of another type). A failing window
        function is skipped or raised. One closure with everything it uses in locals: it runs
        once per shuffled message."""
        key_fn, initial, fold, failed = self._key_fn, self._initial, self._fold, self._failed
        groups, flush = self.groups, self.flush
        grouped, window_key_types, stored_as_is = _GROUPED_TYPES, _WINDOW_KEY_TYPES, _STORED_AS_IS
        decode = _json_decode

        def add(key: Any, value_bytes: bytes) -> bool:
            if type(key) not in grouped:
                return False
            message = _new_tuple(KV, (key, decode(value_bytes)))
            try:
                window_key = key_fn(message) if key_fn is not None else None
            except Exception as error:
                failed(error)
                return True
            if type(window_key) not in window_key_types:
                return False
            group = groups.get((key, window_key))
            if group is not None:
                try:
                    group[2] = fold(message, group[2])
                except Exception as error:
                    failed(error)
                    return True
                group[3] += 1
                return True
            try:
                aggregate = initial()
                if type(aggregate) not in stored_as_is:
                    # As a new pane reads it: a tuple or a set comes back from a store as a list.
                    aggregate = from_storable(_unpack(_pack(to_storable(aggregate))))
                aggregate = fold(message, aggregate)
            except Exception as error:
                failed(error)
                return True
            if len(groups) >= GROUP_LIMIT:
                flush()
            groups[(key, window_key)] = [key, value_bytes, aggregate, 1]
            return True

        return add

    def flush(self) -> None:
        """Append every group's partial aggregate to its partition's buffer, in the order the
        groups started (the same in a retried epoch)."""
        groups = self.groups
        if not groups:
            return
        partial_bytes = CombinedValueSerde.partial_bytes
        for key, sample, aggregate, count in groups.values():
            try:
                record = partial_bytes(sample, aggregate, count)
            except SerdeError as error:
                msg = f"window operator {self.window_op.op_id}: key {key!r}: {error}"
                raise SerdeError(msg) from error
            key_bytes, append_key, append_value = self._where_of(key)
            append_key(key_bytes)
            append_value(record)
        groups.clear()

    def _failed(self, error: Exception) -> None:
        if self._context.skip_errors:
            self._counted_skip()
            return
        window_op = self.window_op
        raise UserFunctionError(window_op.op_id, error, window_op.user_location) from error

