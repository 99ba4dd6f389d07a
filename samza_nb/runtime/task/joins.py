"""Joins and tables inside a task: stream-stream joins within a TTL, stream-table joins and
send_to(table) (SAMZA.md §11.2). Each side of a join keeps the latest message per key in a store
of its own (``<op id>-L`` and ``<op id>-R``); a table is a store named by its table id.

A join with ``keep="all"`` (beyond Samza) keeps every message per key and side within the TTL,
in the same two stores (one entry per key: the list of ``[packed message, stored at]``). Within an
epoch the lists it touches stay decoded in memory and are written back once at its end; once
per TTL the stores are swept of expired messages, so keys never seen again do not stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.model.keys import check_partition_key
from samza_nb.plan.kv import KV, unpack_storable
from samza_nb.plan.operators import (
    JoinOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)
from samza_nb.runtime.task.operators import SKIPPED, OperatorImpl, from_storable, to_storable

if TYPE_CHECKING:
    from samza_nb.runtime.task.context import TaskContext

__all__ = ["JoinImpl", "SendToTableImpl", "TableJoinImpl"]

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


def _packed(value: Any) -> bytes:
    return _pack(to_storable(value))


def _packed_entry(message: Any, stored_at: int) -> bytes:
    return _pack([to_storable(message), stored_at])


class JoinImpl(OperatorImpl):
    """Stream-stream join: the latest message per key and side (or every one, ``keep_all``),
    joined within ``ttl``."""

    def __init__(self, spec: JoinOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.join_spec = spec
        self.left_store = context.store(f"{spec.op_id}-L")
        self.right_store = context.store(f"{spec.op_id}-R")
        self.left_impl: OperatorImpl | None = None
        #: keep_all: the decoded lists of this epoch by (is left, store key), and which changed.
        self._kept: dict[tuple[bool, bytes], list[list[Any]]] = {}
        self._changed: set[tuple[bool, bytes]] = set()
        #: keep_all: when the stores were last swept (kept in the operator's checkpointed
        #: state, as the implementation lives one epoch).
        self._swept_at: int | None = None

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        spec = self.join_spec
        is_left = source is not None and source.spec is spec.left
        key_fn = spec.left_key_fn if is_left else spec.right_key_fn
        key = self.call(key_fn, message) if key_fn is not None else message.key
        if key is None:  # no key joins nothing (as in Samza): counted as dropped, not lost silently
            self.dropped += 1
            return
        if key is SKIPPED or self.call(check_partition_key, key, self.op_id) is SKIPPED:
            return
        now = self.context.now_ms
        # A key or message the join's state cannot hold (an int past 64 bits, a custom class)
        # is this operator's failure at this message: named, and skipped under task.errors.skip.
        store_key = self.call(_packed, key)
        if store_key is SKIPPED:
            return
        if spec.keep_all:
            self._join_all(message, is_left, store_key, now)
            return
        mine, other = (
            (self.left_store, self.right_store) if is_left else (self.right_store, self.left_store)
        )
        entry = self.call(_packed_entry, message, now)
        if entry is SKIPPED:
            return
        mine.put(store_key, entry)
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


    # -- keep="all" ------------------------------------------------------------------------
    def _kept_list(self, is_left: bool, store_key: bytes, cutoff: int) -> list[list[Any]]:
        """The messages kept for ``store_key`` on one side, without those stored at or before
        ``cutoff`` (expired)."""
        slot = (is_left, store_key)
        kept = self._kept.get(slot)
        if kept is None:
            stored = (self.left_store if is_left else self.right_store).get(store_key)
            kept = self._kept[slot] = _unpack(stored) if stored is not None else []
        if kept and kept[0][1] <= cutoff:
            kept[:] = [entry for entry in kept if entry[1] > cutoff]
            self._changed.add(slot)
        return kept

    def _join_all(self, message: Any, is_left: bool, store_key: bytes, now: int) -> None:
        cutoff = now - self.join_spec.ttl_ms
        # Packed now: later operators may change the message object, the kept copy must not.
        packed = self.call(_packed, message)
        if packed is SKIPPED:
            return
        mine = self._kept_list(is_left, store_key, cutoff)
        mine.append([packed, now])
        self._changed.add((is_left, store_key))
        join_fn = self.join_spec.join_fn
        assert join_fn is not None
        for stored, _at in self._kept_list(not is_left, store_key, cutoff):
            other = unpack_storable(stored)
            left, right = (message, other) if is_left else (other, message)
            result = self.call(join_fn, left, right)
            if result is not None and result is not SKIPPED:
                self.emit(result)

    def load(self) -> None:
        self._kept.clear()
        self._changed.clear()

    def save(self) -> None:
        for is_left, store_key in self._changed:
            store = self.left_store if is_left else self.right_store
            kept = self._kept[(is_left, store_key)]
            if kept:
                store.put(store_key, _pack(kept))
            else:
                store.delete(store_key)
        self._changed.clear()

    def snapshot(self) -> dict[str, Any]:
        state = super().snapshot()
        if self._swept_at is not None:
            state["swept"] = self._swept_at
        return state

    def restore(self, snapshot: dict[str, Any]) -> None:
        super().restore(snapshot)
        swept = snapshot.get("swept")
        self._swept_at = int(swept) if swept is not None else None

    def on_timer(self, now_ms: int) -> None:
        """keep_all: once per TTL (and in the first epoch of a deployment, which starts
        without the operator's state), drop the expired messages of every key from both
        stores."""
        spec = self.join_spec
        if not spec.keep_all:
            return
        if self._swept_at is not None and now_ms < self._swept_at + spec.ttl_ms:
            return
        self._swept_at = now_ms
        self.save()
        self._kept.clear()
        cutoff = now_ms - spec.ttl_ms
        for store in (self.left_store, self.right_store):
            for store_key, stored in list(store.items()):
                kept = _unpack(stored)
                live = [entry for entry in kept if entry[1] > cutoff]
                if not live:
                    store.delete(store_key)
                elif len(live) < len(kept):
                    store.put(store_key, _pack(live))


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
            # A key the table cannot hold is this operator's failure at this message.
            key_bytes = self.call(self.table.encode_key, key)
            if key_bytes is SKIPPED:
                return
            value = self.table.get_encoded(key_bytes)
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
