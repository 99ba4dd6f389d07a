"""The read loop's fast path: a batch of user messages decoded in one pass."""

from __future__ import annotations

import msgspec
import pytest

from samza_nb.plan.kv import KV
from samza_nb.plan.serdes import JsonSerde, KVSerde
from samza_nb.runtime.task.decoding import BatchDecoder, holds_control_messages
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


def test_keys_known_from_earlier_slices_decode_the_same_and_new_keys_still_decode() -> None:
    decode = BatchDecoder(KVSerde(JsonSerde(), JsonSerde()))
    first = decode([(MessageKind.USER, encode(f"page-{n % 3}"), encode(n), None) for n in range(6)])
    again = decode([(MessageKind.USER, encode(f"page-{n % 3}"), encode(n), None) for n in range(6)])
    assert again == first == [KV(f"page-{n % 3}", n) for n in range(6)]
    mixed = decode([(MessageKind.USER, encode(key), encode(1), None) for key in ("page-0", "new", None)])
    assert mixed == [KV("page-0", 1), KV("new", 1), KV(None, 1)]
    # A mutable key is never kept: each message still gets its own copy.
    lists = [decode([(MessageKind.USER, encode([1]), encode(n), None) for n in range(2)]) for _ in range(2)]
    assert lists[1][0].key == [1] and lists[1][0].key is not lists[1][1].key


def test_one_by_one_counts_the_failing_message_as_entered() -> None:
    from samza_nb.runtime.task.fusion import one_by_one

    seen: list[int] = []

    def push(message: int) -> None:
        if message == 3:
            raise ValueError(message)
        seen.append(message)

    run, entered = one_by_one(push)
    run([1, 2])
    assert entered() == 2
    with pytest.raises(ValueError):
        run([0, 1, 2, 3, 4, 5])
    assert entered() == 4  # messages 0..3: the failing one's offset is the last entered


def test_a_record_without_a_value_decodes_to_none_as_samza_passes_it() -> None:
    """A Kafka tombstone in an input: Samza hands user code a null message rather than
    failing the serde; a KV stream gets KV(key, None). (The fast path's batch decode fails on
    it and the read loop decodes that slice one message at a time.)"""
    from samza_nb.runtime.task.decoding import message_decoder

    assert message_decoder(JsonSerde())(None, None) is None
    assert message_decoder(JsonSerde())(None, encode({"n": 1})) == {"n": 1}
    decode_kv = message_decoder(KVSerde(JsonSerde(), JsonSerde()))
    assert decode_kv(encode("k"), None) == KV("k", None)
    assert decode_kv(None, None) == KV(None, None)
    with pytest.raises(TypeError):
        BatchDecoder(JsonSerde())([(MessageKind.USER, None, None, None)])
