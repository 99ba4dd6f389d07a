"""How a task decodes what it reads: a whole fetched batch at once, or one message at a time.

The batch path is the read loop's fast path. A task reads its input in batches of tens of thousands of records. When a batch holds user
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
from typing import Any, NamedTuple

import msgspec

from samza_nb.plan.combining import partial_aggregate_error
from samza_nb.plan.kv import KV
from samza_nb.plan.serdes import JsonSerde, KVSerde
from samza_nb.systems.batch_format import StoredBatch

__all__ = ["BatchDecoder", "holds_control_messages", "message_decoder", "raw_decoder", "serde_error"]

_kind = operator.itemgetter(0)
_key = operator.itemgetter(1)
_value = operator.itemgetter(2)
_new_tuple = tuple.__new__
_json_decode = msgspec.json.Decoder().decode
#: Keys that decode to these immutable types are shared by every message with the same bytes.
_SHAREABLE_KEY_TYPES = frozenset({str, int, float, bool, type(None)})
#: Distinct keys a per-message decoder keeps decoded within a task epoch.
_KEY_CACHE_LIMIT = 100_000


def holds_control_messages(records: Sequence[Sequence[Any]]) -> bool:
    """Whether any record of a fetched batch is a control message (kind 0 is a user message)."""
    if isinstance(records, StoredBatch):
        return not records.user_messages_only()
    return any(map(_kind, records))


def raw_decoder(serde: Any) -> Callable[[bytes], Any]:
    """``serde.from_bytes``; for the built-in JSON serde, msgspec's decoder itself (the serde's
    own from_bytes wraps it to name the bytes in its error: see :func:`serde_error`)."""
    return _json_decode if type(serde) is JsonSerde else serde.from_bytes


def _checked_decoder(serde: Any) -> Callable[[bytes], Any]:
    """:func:`raw_decoder`, falling back to the serde itself (for its error message) only
    when the bytes do not decode."""
    if type(serde) is not JsonSerde:
        return serde.from_bytes

    def json_from_bytes(data: bytes) -> Any:
        try:
            return _json_decode(data)
        except msgspec.DecodeError:
            return serde.from_bytes(data)

    return json_from_bytes


def serde_error(serde: Any, value: bytes, error: Exception) -> Exception:
    """The error to report for a message that did not decode: the JSON serde's own (which
    names the bytes) when the fast path used msgspec directly."""
    inner = serde.value_serde if isinstance(serde, KVSerde) else serde
    if type(inner) is JsonSerde and isinstance(value, bytes | memoryview):
        partial = partial_aggregate_error(bytes(value))
        if partial is not None:
            return partial
    if isinstance(error, msgspec.DecodeError) and type(serde) is JsonSerde:
        try:
            serde.from_bytes(value)
        except Exception as serde_failure:
            return serde_failure
    return error


def message_decoder(serde: Any) -> Callable[[bytes | None, bytes | None], Any]:
    """One message at a time: ``(key bytes, value bytes) -> message`` (a KV for a KV serde; a
    record without a value, a Kafka tombstone, is None as its message or value, as in Samza).
    Keys repeat (pages, users): a key that decodes to an immutable scalar is decoded once per
    decoder (one per task epoch and stream)."""
    if not isinstance(serde, KVSerde):
        value_only = serde.from_bytes
        return lambda key, value: None if value is None else value_only(value)
    key_decode = _checked_decoder(serde.key_serde)
    value_decode = _checked_decoder(serde.value_serde)
    keys: dict[bytes, Any] = {}
    shareable = _SHAREABLE_KEY_TYPES

    def decode_kv(key: bytes | None, value: bytes | None) -> Any:
        if value is None:  # no value (a Kafka tombstone): None, as Samza passes a null message
            return KV(None if key is None else key_decode(key), None)
        if key is None:
            return KV(None, value_decode(value))
        decoded = keys.get(key, keys)
        if decoded is keys:
            decoded = key_decode(key)
            if type(decoded) in shareable and len(keys) < _KEY_CACHE_LIMIT:
                keys[key] = decoded
        return KV(decoded, value_decode(value))

    return decode_kv


class BatchDecoder:
    """Decodes every user message of a batch with a stream's serde, or raises (the caller then
    falls back to decoding one message at a time)."""

    def __init__(self, serde: Any) -> None:
        self._kv = isinstance(serde, KVSerde)
        if isinstance(serde, KVSerde):
            self._decode_value = raw_decoder(serde.value_serde)
            self._decode_key = raw_decoder(serde.key_serde)
        else:
            self._decode_value = raw_decoder(serde)
            self._decode_key = _json_decode
        #: Key bytes -> decoded key (shareable types only), kept across the batches of this
        #: decoder (one task epoch and stream): a batch whose keys are all known is
        #: looked up in one pass. Given up when most batches bring new keys.
        self._known: dict[bytes | None, Any] = {None: None}
        self._batches = 0
        self._misses = 0

    def __call__(self, records: Sequence[Sequence[Any]]) -> list[Any]:
        # The embedded log's batches hand over their columns: no record tuple is built.
        columns = records if isinstance(records, StoredBatch) else None
        values = list(
            map(self._decode_value, columns.values if columns is not None else map(_value, records))
        )
        if not self._kv:
            return values
        keys = self._keys(columns.keys if columns is not None else list(map(_key, records)))
        return list(map(_new_tuple, repeat(KV), zip(keys, values, strict=True)))

    def _keys(self, raw: list[bytes | None]) -> list[Any]:
        known = self._known
        self._batches += 1
        if self._misses < 4 or self._misses * 2 <= self._batches:
            try:
                return list(map(known.__getitem__, raw))
            except KeyError:
                self._misses += 1
        decode = self._decode_key
        distinct = {key: None if key is None else decode(key) for key in set(raw)}
        if all(type(key) in _SHAREABLE_KEY_TYPES for key in distinct.values()):
            if len(known) + len(distinct) <= _KEY_CACHE_LIMIT:
                known.update(distinct)
            return list(map(distinct.__getitem__, raw))
        # A key that decodes to a list or a dict: each message gets its own copy.
        return [None if key is None else decode(key) for key in raw]


class StreamDecoders(NamedTuple):
    """What a task epoch decodes one stream's messages with: ``batch`` a fetched batch at a
    time; ``one`` a message at a time, ``(key bytes, value bytes) -> message`` (a KV for a KV
    serde); ``value`` a value-only serde's own decoder (None for a KV serde)."""

    batch: BatchDecoder
    one: Callable[[bytes | None, bytes | None], Any]
    value: Callable[[bytes], Any] | None


def stream_decoders(serde: Any) -> StreamDecoders:
    """The decoders of a stream with ``serde``, for one task epoch."""
    value = None if isinstance(serde, KVSerde) else raw_decoder(serde)
    return StreamDecoders(BatchDecoder(serde), message_decoder(serde), value)
