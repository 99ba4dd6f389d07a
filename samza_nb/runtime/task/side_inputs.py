"""How a side-input record fills a table (LocalTable ``side_inputs``).

Without a ``side_input_processor``, a record is an entry as a Kafka compacted topic's record is
a Kafka Streams table's: its key is the table's key and its value the entry, a later record
replaces the entry, and a record with no value (a tombstone) deletes it. A message that is a
``KV``, or a dict with ``key`` and ``value``, is an entry too. A ``side_input_processor`` turns
each message into the entries to put instead (a None value deletes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.errors import SerdeError
from samza_nb.plan.kv import KV
from samza_nb.plan.serdes import KVSerde
from samza_nb.plan.tables import LocalTable
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.plan_systems import system_of
from samza_nb.runtime.task.context import TaskContext
from samza_nb.runtime.task.decoding import message_decoder
from samza_nb.runtime.task.operators import UserFunctionError
from samza_nb.systems.base import MessageKind

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

#: Messages a side input reads per fetch.
_READ_CHUNK = 50_000

__all__ = ["read_side_input", "side_input_entries", "side_input_message"]


def side_input_message(
    serde: Any, decode: Callable[[bytes | None, bytes], Any], key: bytes | None, value: bytes | None
) -> Any:
    """A side-input record as its table receives it. The stream's serde decodes it; a record
    with a key under a value-only serde is ``KV(key, message)`` (its key is the table's key, as
    a Kafka compacted topic's), the key read as JSON; a record with no value (a Kafka
    tombstone) is ``KV(key, None)``, which deletes the key's entry."""
    if value is None:
        if key is None:
            msg = "a side-input record has neither a key nor a value"
            raise SerdeError(msg)
        return KV(_side_input_key(serde, key), None)
    message = decode(key, value)
    if not isinstance(message, KV) and key is not None:
        message = KV(_side_input_key(serde, key), message)
    return message


def _side_input_key(serde: Any, key: bytes) -> Any:
    if isinstance(serde, KVSerde):
        return serde.key_serde.from_bytes(key)
    try:
        return msgspec.json.decode(key)
    except msgspec.DecodeError as error:
        shown = bytes(key[:40])
        msg = (
            f"the record's key {shown!r} is not JSON; for keys of plain text give the side-input "
            "stream a KV serde naming its key serde (serdes.kv(serdes.string(), serdes.json()))"
        )
        raise SerdeError(msg) from error


def side_input_entries(table: LocalTable, message: Any) -> Iterable[KV[Any, Any]]:
    if table.side_input_processor is not None:
        produced = table.side_input_processor(message)
        if produced is None:
            return []
        if isinstance(produced, KV):
            return [produced]
        return list(produced)
    if isinstance(message, KV):
        return [message]
    if isinstance(message, dict) and "key" in message and "value" in message:
        return [KV(message["key"], message["value"])]
    msg = "side input message is not a KV; give the LocalTable a side_input_processor"
    raise TypeError(msg)


def read_side_input(
    plan: ExecutionPlan, context: TaskContext, stream_id: str, partition: int, start: int, bound: int
) -> int:
    """Put the side-input records of ``stream_id``'s ``partition`` in ``[start, bound)`` into
    every table the stream fills; the offset read to. A record that fails is the table's
    failure at its offset (skipped under ``task.errors.skip``)."""
    system = system_of(plan, stream_id)
    serde = plan.streams[stream_id].serde
    decode = message_decoder(serde)
    tables = [t for t in plan.tables.values() if any(d.stream_id == stream_id for d in t.side_inputs)]
    key = ssp_key(stream_id, partition)
    offset = start
    while offset < bound:
        fetched = system.fetch(stream_id, partition, offset, bound, _READ_CHUNK)
        for first, records in fetched.batches:
            for index, (kind, rkey, value, _ts) in enumerate(records):
                if kind != MessageKind.USER:
                    continue
                context.position = (key, first + index)
                for table in tables:
                    try:
                        message = side_input_message(serde, decode, rkey, value)
                        view = context.table(table.table_id)
                        for entry in side_input_entries(table, message):
                            view.put(entry.key, entry.value)
                    except Exception as error:
                        if context.skip_errors:
                            context.skipped += 1
                            continue
                        raise UserFunctionError("table " + table.table_id, error, None) from error
        if fetched.next_offset <= offset:
            break
        offset = fetched.next_offset
    return offset
