"""Joins and tables inside a task: stream-stream joins within a TTL, stream-table joins and
send_to(table) (SAMZA.md §11.2). Each side of a join keeps the latest message per key in a store
of its own (``<op id>-L`` and ``<op id>-R``); a table is a store named by its table id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.plan.keys import check_partition_key
from samza_nb.plan.kv import KV
from samza_nb.plan.operators import (
    JoinOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)
from samza_nb.runtime.operators import SKIPPED, OperatorImpl, from_storable, to_storable

if TYPE_CHECKING:
    from samza_nb.runtime.context import TaskContext

__all__ = ["JoinImpl", "SendToTableImpl", "TableJoinImpl"]

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


class JoinImpl(OperatorImpl):
    """Stream-stream join: the latest message per key and side, joined within ``ttl``."""

    def __init__(self, spec: JoinOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.join_spec = spec
        self.left_store = context.store(f"{spec.op_id}-L")
        self.right_store = context.store(f"{spec.op_id}-R")
        self.left_impl: OperatorImpl | None = None

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        spec = self.join_spec
        is_left = source is not None and source.spec is spec.left
        key_fn = spec.left_key_fn if is_left else spec.right_key_fn
        key = self.call(key_fn, message) if key_fn is not None else message.key
        if key is None or key is SKIPPED or self.call(check_partition_key, key, self.op_id) is SKIPPED:
            return
        now = self.context.now_ms
        store_key = _pack(to_storable(key))
        mine, other = (
            (self.left_store, self.right_store) if is_left else (self.right_store, self.left_store)
        )
        mine.put(store_key, _pack([to_storable(message), now]))
        stored = other.get(store_key)
        if stored is None:
            return
        other_message, stored_at = _unpack(stored)
        if stored_at <= now - spec.ttl_ms:
            return
        other_message = from_storable(other_message)
        left, right = (message, other_message) if is_left else (other_message, message)
        result = self.call(spec.join_fn, left, right)  # type: ignore[arg-type]
        if result is not None and result is not SKIPPED:
            self.emit(result)


class TableJoinImpl(OperatorImpl):
    def __init__(self, spec: StreamTableJoinOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.table_spec = spec
        table = spec.table
        assert table is not None
        self.table = context.table(table.table_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        spec = self.table_spec
        key = self.call(spec.key_fn, message) if spec.key_fn is not None else message.key
        if key is SKIPPED:
            return
        record = None
        if key is not None:
            value = self.table.get(key)
            if value is not None:
                record = KV(key, value)
        result = self.call(spec.join_fn, message, record)  # type: ignore[arg-type]
        if result is not None and result is not SKIPPED:
            self.emit(result)


class SendToTableImpl(OperatorImpl):
    def __init__(self, spec: SendToTableOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        table = spec.table
        assert table is not None
        self.table = context.table(table.table_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.call(self._put, message)

    def _put(self, message: Any) -> None:
        if not isinstance(message, KV):
            msg = f"send_to(table) needs KV messages, got {type(message).__name__}"
            raise TypeError(msg)
        self.table.put(message.key, message.value)
