"""Decoding a fetched batch of user messages in one pass: the task's read loop's fast path.

A task reads its input in batches of tens of thousands of records. When a batch holds user
messages only (the usual case), its values are decoded by one ``map`` over the serde's decoder
and its keys once per distinct key, and the KVs are built in C: no Python frame per message
until the message enters the operator chain. Anything unusual (a control message in the batch,
a value or key that does not decode) sends the batch back to the per-message loop, which
reports or skips the failing message with its offset.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import msgspec

from samza_nb.plan.kv import KV
from samza_nb.plan.serdes import JsonSerde, KVSerde

__all__ = ["BatchDecoder", "holds_control_messages"]

_kind = operator.itemgetter(0)
_key = operator.itemgetter(1)
_value = operator.itemgetter(2)
_new_tuple = tuple.__new__
_json_decode = msgspec.json.Decoder().decode
#: Keys that decode to these immutable types are shared by every message with the same bytes.
_SHAREABLE_KEY_TYPES = frozenset({str, int, float, bool, type(None)})


def holds_control_messages(records: Sequence[Sequence[Any]]) -> bool:
    """Whether any record of a fetched batch is a control message (kind 0 is a user message)."""
    return any(map(_kind, records))


def _decoder(serde: Any) -> Callable[[bytes], Any]:
    # The JSON serde's own from_bytes wraps msgspec to name the bytes in its error; a batch
    # that fails here is decoded again one message at a time, through the serde.
    return _json_decode if isinstance(serde, JsonSerde) else serde.from_bytes


class BatchDecoder:
    """Decodes every user message of a batch with a stream's serde, or raises (the caller then
    falls back to decoding one message at a time)."""

    def __init__(self, serde: Any) -> None:
        self._kv = isinstance(serde, KVSerde)
        if isinstance(serde, KVSerde):
            self._decode_value = _decoder(serde.value_serde)
            self._decode_key = _decoder(serde.key_serde)
        else:
            self._decode_value = _decoder(serde)
            self._decode_key = _json_decode

    def __call__(self, records: Sequence[Sequence[Any]]) -> list[Any]:
        values = list(map(self._decode_value, map(_value, records)))
        if not self._kv:
            return values
        keys = self._keys(list(map(_key, records)))
        return list(map(_new_tuple, repeat(KV), zip(keys, values, strict=True)))

    def _keys(self, raw: list[bytes | None]) -> list[Any]:
        decode = self._decode_key
        distinct = {key: None if key is None else decode(key) for key in set(raw)}
        if all(type(key) in _SHAREABLE_KEY_TYPES for key in distinct.values()):
            return list(map(distinct.__getitem__, raw))
        # A key that decodes to a list or a dict: each message gets its own copy.
        return [None if key is None else decode(key) for key in raw]
