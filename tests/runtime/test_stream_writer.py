"""StreamWriter: an epoch's records per partition, by columns, in the order they were sent."""

from __future__ import annotations

from samza_nb.runtime.task.context import StreamWriter
from samza_nb.runtime.task.control import EndOfStreamMessage, WatermarkMessage, control_from_payload
from samza_nb.systems.base import MessageKind
from samza_nb.systems.batch_format import decode_batch, encode_batch


def test_control_messages_keep_their_place_among_user_messages() -> None:
    writer = StreamWriter("Partition 0", 3, "s", 2)
    writer.write_to(1, b"k1", b"v1")
    writer.send_control_to(1, WatermarkMessage(42, "Partition 0"))
    writer.write_to(1, None, b"v2")
    writer.send_control_to(1, EndOfStreamMessage("Partition 0"))

    stored = decode_batch(encode_batch(writer.buffers[1].records()))

    kinds = [kind for kind, _key, _value, _ts in stored]
    assert kinds == [MessageKind.USER, MessageKind.WATERMARK, MessageKind.USER, MessageKind.END_OF_STREAM]
    assert [(key, value) for kind, key, value, _ts in stored if kind == MessageKind.USER] == [
        (b"k1", b"v1"),
        (None, b"v2"),
    ]
    watermark = control_from_payload(stored[1][0], stored[1][2])
    assert isinstance(watermark, WatermarkMessage)
    assert watermark.timestamp == 42
    assert writer.count == 2
    assert list(writer.buffers) == [1]


def test_clear_drops_the_records_and_a_keyed_write_lands_where_its_key_says() -> None:
    writer = StreamWriter("Partition 0", 0, "s", 4)
    writer.write_keyed(b'"page-1"', b"{}")
    (partition,) = writer.buffers
    assert partition == writer.place(b'"page-1"')
    assert len(writer.buffers[partition]) == 1

    writer.clear()

    assert len(writer.buffers[partition]) == 0
    assert writer.buffers[partition].records().values == []
