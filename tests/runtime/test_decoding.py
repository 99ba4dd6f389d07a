"""The read loop's fast path: a batch of user messages decoded in one pass."""

from __future__ import annotations

import msgspec
import pytest

from samza_nb.plan.kv import KV
from samza_nb.plan.serdes import JsonSerde, KVSerde
from samza_nb.runtime.decoding import BatchDecoder, holds_control_messages
from samza_nb.systems.base import MessageKind

encode = msgspec.json.encode


def test_values_of_a_plain_stream_decode_in_order() -> None:
    records = [(MessageKind.USER, None, encode({"n": n}), None) for n in range(4)]
    assert BatchDecoder(JsonSerde())(records) == [{"n": n} for n in range(4)]


def test_kv_streams_share_scalar_keys_but_not_mutable_ones() -> None:
    decode = BatchDecoder(KVSerde(JsonSerde(), JsonSerde()))
    scalar = decode([(MessageKind.USER, encode("page-1"), encode(n), None) for n in range(3)])
    assert scalar == [KV("page-1", 0), KV("page-1", 1), KV("page-1", 2)]
    assert all(type(message) is KV for message in scalar)
    mutable = decode([(MessageKind.USER, encode({"a": 1}), encode(n), None) for n in range(2)])
    assert mutable[0].key == mutable[1].key == {"a": 1}
    assert mutable[0].key is not mutable[1].key  # a user mutating one key must not change the other
    assert decode([(MessageKind.USER, None, encode(1), None)]) == [KV(None, 1)]


def test_a_value_that_does_not_decode_raises_for_the_per_message_loop() -> None:
    records = [(MessageKind.USER, None, encode(1), None), (MessageKind.USER, None, b"{not json", None)]
    with pytest.raises(msgspec.DecodeError):
        BatchDecoder(JsonSerde())(records)


def test_control_messages_are_noticed() -> None:
    user = (MessageKind.USER, None, b"1", None)
    assert not holds_control_messages([user, user])
    assert holds_control_messages([user, (MessageKind.WATERMARK, None, b"", 5)])
